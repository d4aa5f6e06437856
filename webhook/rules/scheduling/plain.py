"""PodGroup specs that certainly pass the declarative rules, told apart cheaply (a sound shortcut).

A PodGroup's spec is judged by the field engine (``fields.podgroup_spec`` over ``Field``
objects, ``declarative.py``): one object per field visited, each with its Go type, ratcheting
and gatekeeping. On CREATE there is nothing to ratchet, and almost every PodGroup is a gang or
basic policy, the defaulted disruption mode, a workload reference and a few claims.
:func:`is_plain_podgroup_spec` answers "would the engine report nothing?" for that common shape
in one walk that builds nothing. It is conservative: a spec with a key it does not model (the
gated ``schedulingConstraints`` and ``parentCompositePodGroupName``, the v1alpha2
``podGroupTemplateRef``, anything unknown), or a value of an unexpected Python type, is left to
the engine, which then reports exactly what it always did. UPDATE never takes it.

What it accepts, with the tag of each field that makes it valid (docs/rules.md, PG-*):
- ``workloadRef``: null, or an object whose ``workloadName`` is a DNS subdomain and
  ``templateName`` a DNS label (both required);
- ``schedulingPolicy``: exactly one of ``basic`` (an object) and ``gang`` (an object whose
  ``minCount`` is an int32 of at least 1);
- ``resourceClaims``: null or at most 4 objects with unique DNS-label names and exactly one of
  ``resourceClaimName`` / ``resourceClaimTemplateName``, a DNS subdomain;
- ``disruptionMode``: exactly one of ``single`` / ``all``, an object;
- ``priorityClassName`` null, "" or a DNS subdomain; ``priority`` null or an int32 of at most
  1000000000; ``preemptionPolicy`` null, or one of its two values with its gate on.

``tests/rules/test_podgroup_plain.py`` checks that every spec it lets through gets no error from
the engine, over the bench PodGroup with each field replaced by bad values and the differential
generator's PodGroups.
"""

from __future__ import annotations

from typing import Any

from webhook.gates import FeatureGates, Gate
from webhook.rules.names import is_label, is_subdomain
from webhook.rules.scheduling.declarative import INT32_MAX, INT32_MIN
from webhook.rules.scheduling.fields import HIGHEST_USER_PRIORITY, PREEMPTION_POLICIES, RESOURCE_CLAIMS_MAX

SPEC_KEYS = frozenset({"workloadRef", "schedulingPolicy", "resourceClaims", "disruptionMode",
                       "priorityClassName", "priority", "preemptionPolicy"})
CLAIM_MEMBERS = ("resourceClaimName", "resourceClaimTemplateName")


def is_plain_podgroup_spec(spec: Any, gates: FeatureGates) -> bool:
    """Whether a PodGroupSpec (CREATE) certainly gets no error from the declarative rules."""
    if type(spec) is not dict or not SPEC_KEYS.issuperset(spec):
        return False
    return (_plain_reference(spec.get("workloadRef")) and _plain_policy(spec.get("schedulingPolicy"))
            and _plain_claims(spec.get("resourceClaims")) and _one_object(spec.get("disruptionMode"), ("single", "all"))
            and _plain_priorities(spec, gates))


def _plain_reference(ref: Any) -> bool:
    if ref is None:
        return True
    if type(ref) is not dict:
        return False
    workload, template = ref.get("workloadName"), ref.get("templateName")
    return is_subdomain(workload) and is_label(template)


def _one_object(union: Any, members: tuple[str, str]) -> bool:
    """A union struct with exactly one member set, and that member an object."""
    if type(union) is not dict:
        return False
    a, b = union.get(members[0]), union.get(members[1])
    return (a is None) != (b is None) and type(a if a is not None else b) is dict


def _plain_policy(policy: Any) -> bool:
    if not _one_object(policy, ("basic", "gang")):
        return False
    gang = policy.get("gang")
    if gang is None:
        return True
    count = gang.get("minCount")
    return type(count) is int and 1 <= count <= INT32_MAX


def _plain_claims(claims: Any) -> bool:
    if claims is None:
        return True
    if type(claims) is not list or len(claims) > RESOURCE_CLAIMS_MAX:
        return False
    seen: set[str] = set()
    for c in claims:
        if type(c) is not dict:
            return False
        name = c.get("name")
        if not is_label(name) or name in seen:
            return False
        seen.add(name)
        by_name, by_template = c.get(CLAIM_MEMBERS[0]), c.get(CLAIM_MEMBERS[1])
        if (by_name is None) == (by_template is None):
            return False
        if not is_subdomain(by_name if by_name is not None else by_template):
            return False
    return True


def _plain_priorities(spec: dict[str, Any], gates: FeatureGates) -> bool:
    cls = spec.get("priorityClassName")
    if cls is not None and cls != "" and not is_subdomain(cls):
        return False
    priority = spec.get("priority")
    if priority is not None and not (type(priority) is int and INT32_MIN <= priority <= HIGHEST_USER_PRIORITY):
        return False
    policy = spec.get("preemptionPolicy")
    return policy is None or (policy in PREEMPTION_POLICIES and type(policy) is str
                              and gates.enabled(Gate.POD_GROUP_PREEMPTION_POLICY))
