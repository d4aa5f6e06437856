"""The ResourceSlice rules the 1.37 apiserver enforces declaratively.

Upstream validates a slice twice: by hand (``pkg/apis/resource/validation``) and from the
``+k8s:`` tags of ``k8s.io/api/resource/v1`` (the generated ``zz_generated.validations.go``),
and reports the union. Most tags repeat a handwritten check (same field, same reason); what
this module adds is what they do not repeat, and where they keep going after the handwritten
checks stop:

- every device is checked, also past the device limit (TooMany ends the handwritten checks);
- counter names are checked past 32 counters and taint effects past 16 taints;
- an attribute must have exactly one member, a list member counting only when it has items
  (``ints: []`` sets nothing), on the attribute's full key (the handwritten path shortens
  long keys);
- compatibilityGroups (at most 2, DNS labels, unique), a nodeAllocatableResources mapping's
  union (exactly one of ``capacityKey``, ``deviceMultiplier``), skipNodeOperations' enum and
  uniqueness (for any value, valid or not).

On UPDATE, unchanged data is not checked again: the device list when it is semantically
equal, a counter set equal to the stored one of its name, skipNodeOperations values the stored
list has (ratcheting, ``webhook.rules.declarative``). ``spec_errors`` returns the errors;
the core's ``merge`` (``dedupe=False``: every declarative error a handwritten one does not
cover is kept) adds them to the handwritten ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from webhook.rules.declarative import NO_OLD, old_member, unchanged
from webhook.rules.shape import by_name, by_name_get
from webhook.rules.slices.attributes import LIST_KINDS, SCALAR_KINDS
from webhook.rules.slices.common import (
    is_label,
    semantic_equal,
    validate_dns_label,
)
from webhook.rules.slices.devices import BINDING_CONDITIONS_MAX, CONSUMES_COUNTERS_MAX, TAINT_EFFECTS

ATTRIBUTE_MEMBERS = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"
MAPPING_MEMBERS = "`capacityKey`, `deviceMultiplier`"
SKIP_OPERATIONS = ["*", "NodePrepareResources", "NodeUnprepareResources"]
COMPATIBILITY_GROUPS_MAX = 2
COUNTER_SETS_MAX = 8


def spec_errors(spec: dict[str, Any], old: dict[str, Any] | None, path: FieldPath,
                skip: Sequence[bool] = ()) -> list[FieldError]:
    """``skip[i]``: device ``i`` is known to pass (``plain.PlainDevices``), leave it out."""
    errs: list[FieldError] = []
    devices = spec.get("devices")
    if isinstance(devices, list) and not (len(skip) == len(devices) and all(skip)) \
            and not unchanged(devices, NO_OLD if old is None else old_member(old, "devices"), semantic_equal):
        for i, d in enumerate(devices):
            if i >= len(skip) or not skip[i]:
                errs += device(d, path.child("devices").index(i))
    errs += _counter_sets(spec.get("sharedCounters"), old, path.child("sharedCounters"))
    errs += _skip_operations(spec.get("skipNodeOperations"), old, path.child("skipNodeOperations"))
    return errs


def device(dev: Any, path: FieldPath) -> list[FieldError]:
    """Every declarative rule of one device. Paths are built only for what fails: this runs
    on every device of every slice."""
    if not isinstance(dev, dict):
        return []
    errs: list[FieldError] = []
    attrs = dev.get("attributes")
    if isinstance(attrs, dict):
        errs += [e for key, a in attrs.items() if not _one_member(a)
                 for e in _attribute_union(a, path.child("attributes").key(key))]
    cc = dev.get("consumesCounters")
    if cc and not plain_consumptions(cc):
        errs += _consumptions(cc, path.child("consumesCounters"))
    taints = dev.get("taints")
    if isinstance(taints, list):
        errs += [e for k, t in enumerate(taints) if not (isinstance(t, dict) and t.get("effect") in TAINT_EFFECTS)
                 for e in _taint_effect(t, path.child("taints").index(k))]
    for k in ("bindingConditions", "bindingFailureConditions"):
        if isinstance(dev.get(k), list) and len(dev[k]) > BINDING_CONDITIONS_MAX:
            errs.append(too_many(path.child(k), len(dev[k]), BINDING_CONDITIONS_MAX))
    if isinstance(nar := dev.get("nodeAllocatableResources"), dict):
        for name, entry in nar.items():
            if isinstance(entry, dict) and isinstance(entry.get("mapping"), dict):
                errs += _mapping_union(entry["mapping"], path.child("nodeAllocatableResources").key(name))
    return errs


_LIST_KINDS = frozenset(LIST_KINDS)
_SCALAR_KINDS = frozenset(SCALAR_KINDS)


def _one_member(attr: Any) -> bool:
    """Whether an attribute sets exactly one member (a list counting when it has items)."""
    if type(attr) is dict and len(attr) == 1:
        ((kind, v),) = attr.items()
        return v is not None and (kind in _SCALAR_KINDS or (kind in _LIST_KINDS and isinstance(v, list)
                                                             and len(v) > 0))
    return not _attribute_union(attr, FieldPath())


def plain_consumptions(entries: Any) -> bool:
    """The common case, cheaply: ≤ 2 entries, distinct DNS-label counter sets with DNS-label
    counter names, ≤ 2 distinct DNS-label compatibility groups."""
    if not isinstance(entries, list) or len(entries) > CONSUMES_COUNTERS_MAX:
        return False
    seen: set[str] = set()
    for e in entries:
        if not isinstance(e, dict) or not is_label(cs := e.get("counterSet")) or cs in seen:
            return False
        counters, groups = e.get("counters"), e.get("compatibilityGroups")
        if not isinstance(counters, dict) or not counters or not all(map(is_label, counters)):
            return False
        if groups and not (isinstance(groups, list) and len(groups) <= COMPATIBILITY_GROUPS_MAX
                           and all(map(is_label, groups)) and len(set(groups)) == len(groups)):
            return False
        seen.add(str(cs))
    return True


#: DeviceAttribute's union members, in the order the tag lists them.
ATTRIBUTE_UNION = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")


def _attribute_union(attr: Any, path: FieldPath) -> list[FieldError]:
    a = attr if isinstance(attr, dict) else {}
    present = [k for k in ATTRIBUTE_UNION if (isinstance(a.get(k), list) and len(a[k]) > 0 if k in LIST_KINDS
                                              else a.get(k) is not None)]
    return _union(present, path, ATTRIBUTE_MEMBERS)


def _mapping_union(mapping: dict[str, Any], path: FieldPath) -> list[FieldError]:
    present = [k for k in ("capacityKey", "deviceMultiplier") if mapping.get(k) is not None]
    return _union(present, path.child("mapping"), MAPPING_MEMBERS)


def _union(present: list[str], path: FieldPath, members: str) -> list[FieldError]:
    """A union tag's error (none when exactly one member is set), worded as upstream's."""
    if len(present) == 1:
        return []
    if not present:
        return [invalid(path, "", f"must specify one of: {members}")]
    return [invalid(path, "{" + ", ".join(present) + "}", f"must specify exactly one of: {members}")]


def _taint_effect(taint: Any, path: FieldPath) -> list[FieldError]:
    effect = taint.get("effect") if isinstance(taint, dict) else None
    if effect is None or effect == "":
        return [required(path.child("effect"))]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path.child("effect"), effect, TAINT_EFFECTS)]
    return []


def _unique(values: list[Any], path: FieldPath) -> list[FieldError]:
    """A Duplicate for every later repeat of an earlier value."""
    return [duplicate(path.index(j), v) for j, v in enumerate(values) if v in values[:j]]


def _required_name(value: Any, path: FieldPath) -> list[FieldError]:
    return [required(path)] if value is None or value == "" else validate_dns_label(value, path)


def _counter_names(counters: Any, path: FieldPath) -> list[FieldError]:
    """A required counters map with DNS-label keys (checked on the map's path)."""
    if not counters:
        return [required(path)]
    return [e for k in counters for e in validate_dns_label(k, path)] if isinstance(counters, dict) else []


def _consumptions(entries: Any, path: FieldPath) -> list[FieldError]:
    if not isinstance(entries, list) or not entries:
        return []
    if len(entries) > CONSUMES_COUNTERS_MAX:
        return [too_many(path, len(entries), CONSUMES_COUNTERS_MAX)]
    errs = _unique([e.get("counterSet") if isinstance(e, dict) else None for e in entries], path)
    for j, e in enumerate(entries):
        if isinstance(e, dict):
            p = path.index(j)
            errs += _required_name(e.get("counterSet"), p.child("counterSet"))
            errs += _counter_names(e.get("counters"), p.child("counters"))
            errs += _compatibility_groups(e.get("compatibilityGroups"), p.child("compatibilityGroups"))
    return errs


def _compatibility_groups(groups: Any, path: FieldPath) -> list[FieldError]:
    """At most two (TooMany alone past that), DNS labels, unique; null and [] mean none."""
    if not isinstance(groups, list) or not groups:
        return []
    if len(groups) > COMPATIBILITY_GROUPS_MAX:
        return [too_many(path, len(groups), COMPATIBILITY_GROUPS_MAX)]
    return [e for k, g in enumerate(groups) for e in validate_dns_label(g, path.index(k))] + _unique(groups, path)


def _counter_sets(sets: Any, old: dict[str, Any] | None, path: FieldPath) -> list[FieldError]:
    if not isinstance(sets, list) or not sets or len(sets) > COUNTER_SETS_MAX:
        return []  # past the limit the handwritten TooMany is the only error
    stored = by_name((old or {}).get("sharedCounters"))
    errs: list[FieldError] = []
    for i, cs in enumerate(sets):
        if not isinstance(cs, dict) or semantic_equal(by_name_get(stored, cs), cs):
            continue
        errs += _required_name(cs.get("name"), path.index(i).child("name"))
        errs += _counter_names(cs.get("counters"), path.index(i).child("counters"))
    return errs




def _skip_operations(ops: Any, old: dict[str, Any] | None, path: FieldPath) -> list[FieldError]:
    if not isinstance(ops, list) or not ops:
        return []
    stored = (old or {}).get("skipNodeOperations")
    if semantic_equal(stored, ops):
        return []
    stored = stored if isinstance(stored, list) else []
    errs = _unique(ops, path)
    errs += [not_supported(path.index(k), op, SKIP_OPERATIONS) for k, op in enumerate(ops)
             if op not in SKIP_OPERATIONS and op not in stored]
    return errs
