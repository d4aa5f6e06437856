"""The ResourceClaims a pod uses: named claims found, template claims made as the controller makes them.

Pure. A ``resourceClaimName`` entry names a claim that must exist (shared with every other pod
naming it). A ``resourceClaimTemplateName`` entry gets a claim of its own per pod, made from the
template as kube-controller-manager's resourceclaim controller makes it, except for the name:
upstream generates ``<pod>-<entry>-<5 random characters>`` (both parts shortened in proportion
past 57 characters); ours is the same without the random part, so the same input always gives
the same names. A pod that already has the claim (``status.resourceClaimStatuses``, a live
pod) uses that one. An entry that matches an entry of the pod's PodGroup exactly (same name, same
reference) uses the PodGroup's claim instead (DRAWorkloadResourceClaims): one per PodGroup,
shared by its pods, named ``<podgroup>-<entry>`` the same way. References are looked up in
the input objects first, then in the cluster state (``Lookup``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webhook.allocator.engine import claims_from_template
from webhook.gates import FeatureGates, Gate
from webhook.raw import as_dict, as_list
from webhook.state.base import ClusterSnapshot

GENERATED_BASE_MAX = 57
"""The controller's longest ``generateName`` base (63 minus the hyphen and 5 random characters)."""


def _ns(obj: Any) -> str:
    ns = as_dict(as_dict(obj).get("metadata")).get("namespace")
    return ns if isinstance(ns, str) and ns else "default"


def _name(obj: Any) -> str:
    name = as_dict(as_dict(obj).get("metadata")).get("name")
    return name if isinstance(name, str) else ""


class Lookup:
    """ResourceClaims, ResourceClaimTemplates and PodGroups by (kind, namespace, name): the input
    objects first, then the cluster state (an object written without a namespace is in
    "default"). Each kind of the state is indexed on first use."""

    def __init__(self, snapshot: ClusterSnapshot, extra: Iterable[dict[str, Any]] = ()) -> None:
        self.snapshot = snapshot
        self.extra: dict[tuple[str, str, str], dict[str, Any]] = {}
        for o in extra:
            if isinstance(o, dict):
                self.extra.setdefault((str(o.get("kind")), _ns(o), _name(o)), o)
        self._state: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}

    def find(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        got = self.extra.get((kind, namespace, name))
        if got is not None:
            return got
        index = self._state.get(kind)
        if index is None:
            index = self._state[kind] = {}
            for o in self.snapshot.of(kind):
                index.setdefault((_ns(o), _name(o)), o)
        return index.get((namespace, name))


def generated_name(owner: str, entry: str) -> str:
    """The controller's claim name base for ``entry`` of ``owner`` (a pod or a PodGroup),
    without its random suffix."""
    base = f"{owner}-{entry}-"
    if len(base) <= GENERATED_BASE_MAX:
        return base[:-1]
    n = len(base)
    return owner[:len(owner) * GENERATED_BASE_MAX // n] + "-" + entry[:len(entry) * GENERATED_BASE_MAX // n]


@dataclass(frozen=True)
class ClaimUse:
    """One ``spec.resourceClaims`` entry of a pod and the claim it uses."""

    entry: str
    key: str
    """``namespace/name`` of the ResourceClaim."""
    claim: dict[str, Any]
    """The claim (found, or made from its template)."""
    shared: bool
    """Named, or the PodGroup's: other pods may use the same claim."""


def pod_claims(pod: dict[str, Any], lookup: Lookup, group: dict[str, Any] | None,
               gates: FeatureGates) -> tuple[list[ClaimUse], list[str]]:
    """The claims of ``pod`` (entries in order) and a note per reference that is not found.

    ``group`` is the pod's PodGroup (None: none, or not found). Never raises.
    """
    ns, name = _ns(pod), _name(pod)
    spec = as_dict(pod.get("spec"))
    have = {as_dict(s).get("name"): as_dict(s).get("resourceClaimName")
            for s in as_list(as_dict(pod.get("status")).get("resourceClaimStatuses"))}
    group_refs = _group_refs(group) if group is not None and gates.enabled(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS) \
        else {}
    out: list[ClaimUse] = []
    notes: list[str] = []
    for entry in as_list(spec.get("resourceClaims")):
        entry = as_dict(entry)
        ename = entry.get("name")
        if not isinstance(ename, str):
            continue
        claim_name, tpl_name = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if isinstance(claim_name, str) and claim_name:
            found = lookup.find("ResourceClaim", ns, claim_name)
            if found is None:
                notes.append(f"claim {ns}/{claim_name} not found")
            else:
                out.append(ClaimUse(ename, f"{ns}/{claim_name}", found, True))
            continue
        if not isinstance(tpl_name, str) or not tpl_name:
            continue
        made = have.get(ename)
        if isinstance(made, str) and made and (found := lookup.find("ResourceClaim", ns, made)) is not None:
            out.append(ClaimUse(ename, f"{ns}/{made}", found, False))
            continue
        tpl = lookup.find("ResourceClaimTemplate", ns, tpl_name)
        if tpl is None:
            notes.append(f"template {ns}/{tpl_name} not found")
            continue
        if group_refs.get(ename) == ("resourceClaimTemplateName", tpl_name):
            assert group is not None
            use = _group_claim(group, ename, tpl, lookup)
            out.append(use)
            continue
        cname = generated_name(name, ename)
        out.append(ClaimUse(ename, f"{ns}/{cname}", _in(claims_from_template(tpl, cname), ns), False))
    return out, notes


def _in(claim: dict[str, Any], ns: str) -> dict[str, Any]:
    claim["metadata"]["namespace"] = ns
    return claim


def _group_refs(group: dict[str, Any]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for e in as_list(as_dict(group.get("spec")).get("resourceClaims")):
        e = as_dict(e)
        for field in ("resourceClaimName", "resourceClaimTemplateName"):
            if isinstance(e.get("name"), str) and isinstance(e.get(field), str):
                out.setdefault(e["name"], (field, e[field]))
    return out


def _group_claim(group: dict[str, Any], entry: str, tpl: dict[str, Any], lookup: Lookup) -> ClaimUse:
    """The PodGroup's claim for ``entry``: the one its status names, else made from the template."""
    ns = _ns(group)
    for s in as_list(as_dict(group.get("status")).get("resourceClaimStatuses")):
        s = as_dict(s)
        made = s.get("resourceClaimName")
        if s.get("name") == entry and isinstance(made, str) and (found := lookup.find("ResourceClaim", ns, made)):
            return ClaimUse(entry, f"{ns}/{made}", found, True)
    cname = generated_name(_name(group), entry)
    return ClaimUse(entry, f"{ns}/{cname}", _in(claims_from_template(tpl, cname), ns), True)
