"""One entry of ``spec.devices``, as upstream's handwritten validation checks it: rules
RS-DEV-3, RS-ATTR-*, RS-QN-*, RS-CC-*, RS-PDN-*, RS-TNT-*, RS-BC-*, RS-NAR-* (capacity and
requestPolicy live in ``capacity``, what upstream checks declaratively, compatibilityGroups
among it, in ``declarative``).

``old`` is the device of the same name in the stored slice on UPDATE (else None). It drives
upstream's ratcheting: an unchanged capacity map or taint list is not validated again.
"""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    invalid,
    not_found,
    required,
    too_many,
)
from webhook.quantity import try_parse
from webhook.rules.shape import as_bool, as_list, as_object, as_str, type_error
from webhook.rules.slices.attributes import (
    ATTRIBUTE_VALUES_MAX,
    attribute_is_plainly_valid,
    count_attribute_values,
    validate_attribute,
)
from webhook.rules.slices.capacity import validate_capacity_map
from webhook.rules.slices.common import (
    as_quantity,
    not_supported_value,
    semantic_equal,
    validate_dns_label,
    validate_label_name,
    validate_label_value,
    validate_map,
    validate_node_name,
    validate_node_selector,
    validate_qualified_name,
    validate_required_label,
)

ATTRS_AND_CAPACITY_MAX = 32
CONSUMES_COUNTERS_MAX = 2
COUNTERS_PER_CONSUMPTION_MAX = 32
TAINTS_MAX = 16
BINDING_CONDITIONS_MAX = 4
"""Of a device and of a device's status in a claim (one upstream limit for both)."""
TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
PDN_TEXT = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)



def validate_device(
    dev: dict[str, Any],
    old: dict[str, Any] | None,
    path: FieldPath,
    per_device_node_selection: bool,
    fractional: bool,
) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(validate_dns_label(dev.get("name"), path.child("name")))
    attrs = dev.get("attributes")
    capacity = dev.get("capacity")
    total = (len(attrs) if isinstance(attrs, dict) else 0) + (
        len(capacity) if isinstance(capacity, dict) else 0
    )
    if total > ATTRS_AND_CAPACITY_MAX:
        errs.append(
            invalid(
                path,
                total,
                f"the total number of attributes and capacities must not exceed {ATTRS_AND_CAPACITY_MAX}",
            )
        )
    values = count_attribute_values(attrs)
    if values > ATTRIBUTE_VALUES_MAX:
        errs.append(
            invalid(
                path, values, f"the total number of attribute values must not exceed {ATTRIBUTE_VALUES_MAX}"
            )
        )
    # Absent (or null) optional fields have nothing to check: skip building their paths.
    if attrs is not None:
        errs.extend(
            validate_map(attrs, path.child("attributes"), -1, validate_qualified_name, validate_attribute,
                         item_ok=attribute_is_plainly_valid)
        )
    allow_raw = dev.get("allowMultipleAllocations")
    allow_multiple = allow_raw is not None and as_bool(
        allow_raw, path.child("allowMultipleAllocations"), errs) is True
    if capacity is not None and (old is None or not semantic_equal(old.get("capacity"), capacity)):
        errs.extend(validate_capacity_map(capacity, path.child("capacity"), allow_multiple, fractional))
    taints = dev.get("taints")
    if taints is not None and (old is None or old.get("taints") != taints):
        errs.extend(_validate_taints(taints, path.child("taints")))
    if dev.get("consumesCounters") is not None:
        errs.extend(_validate_consumes_counters(dev["consumesCounters"], path.child("consumesCounters")))
    errs.extend(_validate_node_fields(dev, path, per_device_node_selection))
    if dev.get("bindingConditions") is not None or dev.get("bindingFailureConditions") is not None:
        errs.extend(_validate_binding(dev, path))
    if dev.get("bindsToNode") is not None:
        as_bool(dev["bindsToNode"], path.child("bindsToNode"), errs)
    if dev.get("nodeAllocatableResources") is not None:
        errs.extend(
            _validate_node_allocatable(
                dev["nodeAllocatableResources"], capacity, path.child("nodeAllocatableResources")
            )
        )
    return errs


# --- attributes ----------------------------------------------------------------------------


def _validate_taints(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    taints = as_list(value, path, errs)
    if not taints:
        return errs
    if len(taints) > TAINTS_MAX:
        return [too_many(path, len(taints), TAINTS_MAX)]
    for k, taint in enumerate(taints):
        tp = path.index(k)
        t = as_object(taint, tp, errs)
        if t is not None:
            errs.extend(validate_taint(t, tp))
    return errs


def validate_taint(taint: dict[str, Any], path: FieldPath, *, effect: bool = True) -> list[FieldError]:
    """One ``DeviceTaint`` (upstream ``validateDeviceTaint``), of a device or of a DeviceTaintRule:
    the key a label name (empty is Invalid), a non-empty value a label value, the effect required
    and one of ``TAINT_EFFECTS``. ``effect=False``: the effect is not checked (a DeviceTaintRule
    UPDATE that keeps its effect, so an effect added in a later release still ratchets)."""
    errs = validate_label_name(taint.get("key"), path.child("key"))
    v = as_str(taint.get("value"), path.child("value"), errs)
    if v:
        errs.extend(validate_label_value(v, path.child("value")))
    value = taint.get("effect")
    if not effect:
        return errs
    if value is None or value == "":
        errs.append(required(path.child("effect")))
    elif value not in TAINT_EFFECTS:
        errs.append(not_supported_value(path.child("effect"), value, TAINT_EFFECTS))
    return errs


# --- counters and compatibility groups ---------------------------------------------------


def _validate_consumes_counters(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    entries = as_list(value, path, errs)
    if not entries:
        return errs
    if len(entries) > CONSUMES_COUNTERS_MAX:
        return [too_many(path, len(entries), CONSUMES_COUNTERS_MAX)]
    keys: list[Any] = []
    for j, entry in enumerate(entries):
        ep = path.index(j)
        e = as_object(entry, ep, errs)
        if e is None:
            keys.append(None)
            continue
        cs = e.get("counterSet")
        keys.append(cs if isinstance(cs, str) else None)
        errs.extend(validate_required_label(cs, ep.child("counterSet")))
        errs.extend(validate_counters_member(e.get("counters"), ep.child("counters"), COUNTERS_PER_CONSUMPTION_MAX))
    errs.extend(_duplicates(keys, path))
    return errs


def validate_counters_member(counters: Any, path: FieldPath, limit: int) -> list[FieldError]:
    """A required, non-empty ``counters`` map (of a counter set or a consumption)."""
    if counters:
        return validate_counters(counters, path, limit)
    if counters is not None and not isinstance(counters, dict):
        return [type_error(path, counters, "object")]
    return [required(path)]


def validate_counters(value: Any, path: FieldPath, limit: int) -> list[FieldError]:
    """A counters map: ≤ limit entries, DNS-label names (map path), parseable values."""

    def item(counter: Any, p: FieldPath) -> list[FieldError]:
        errs: list[FieldError] = []
        c = as_object(counter, p, errs)
        if c is not None:
            as_quantity(c.get("value"), p.child("value"), errs)
        return errs

    return validate_map(value, path, limit, validate_dns_label, item, truncate=63, item_ok=_counter_is_plainly_valid)


def _counter_is_plainly_valid(counter: Any) -> bool:
    return type(counter) is dict and try_parse(counter.get("value")) is not None


def _duplicates(keys: list[Any], path: FieldPath) -> list[FieldError]:
    seen: set[Any] = set()
    errs: list[FieldError] = []
    for i, k in enumerate(keys):
        if k is None:
            k = ""
        if k in seen:
            errs.append(duplicate(path.index(i), k))
        seen.add(k)
    return errs


# --- per-device node selection -------------------------------------------------------------


def _validate_node_fields(dev: dict[str, Any], path: FieldPath, per_device: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    node_name, selector, all_nodes = dev.get("nodeName"), dev.get("nodeSelector"), dev.get("allNodes")
    if not per_device:
        if node_name is not None or selector is not None or all_nodes is not None:
            errs.append(
                invalid(
                    path,
                    None,
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                )
            )
        return errs
    set_fields: list[str] = []
    if node_name is not None:
        name = as_str(node_name, path.child("nodeName"), errs)
        if name:
            set_fields.append("`nodeName`")
            errs.extend(validate_node_name(name, path.child("nodeName")))
        elif name is not None:
            errs.append(invalid(path.child("nodeName"), "", "must not be empty"))
    if selector is not None:
        set_fields.append("`nodeSelector`")
        errs.extend(validate_node_selector(selector, path.child("nodeSelector")))
    if all_nodes is not None:
        flag = as_bool(all_nodes, path.child("allNodes"), errs)
        if flag:
            set_fields.append("`allNodes`")
        elif flag is False:
            errs.append(invalid(path.child("allNodes"), False, "must be either unset or set to true"))
    if not set_fields:
        errs.append(required(path, PDN_TEXT))
    elif len(set_fields) > 1:
        errs.append(invalid(path, "{" + ", ".join(set_fields) + "}", PDN_TEXT))
    return errs


# --- binding conditions --------------------------------------------------------------------


def _validate_binding(dev: dict[str, Any], path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    bc_path, bf_path = path.child("bindingConditions"), path.child("bindingFailureConditions")
    bc = as_list(dev.get("bindingConditions"), bc_path, errs) or []
    bf = as_list(dev.get("bindingFailureConditions"), bf_path, errs) or []
    for items, p in ((bc, bc_path), (bf, bf_path)):
        if len(items) > BINDING_CONDITIONS_MAX:
            errs.append(too_many(p, len(items), BINDING_CONDITIONS_MAX))
        else:
            for k, c in enumerate(items):
                errs.extend(validate_label_name(c, p.index(k)))
    hashable_bc = {c for c in bc if isinstance(c, str)}
    for items, p, overlap in ((bc, bc_path, False), (bf, bf_path, True)):
        seen: set[str] = set()
        for k, c in enumerate(items):
            if not isinstance(c, str):
                continue
            if c in seen:
                errs.append(duplicate(p.index(k), c))
            seen.add(c)
            if overlap and c in hashable_bc:
                errs.append(
                    invalid(p.index(k), c, "bindingFailureConditions must not overlap with bindingConditions")
                )
    if not bc and bf:
        errs.append(invalid(bc_path, [], "bindingConditions are required to use bindingFailureConditions"))
    if not bf and bc:
        errs.append(invalid(bf_path, [], "bindingFailureConditions are required to use bindingConditions"))
    return errs


# --- node allocatable resources (alpha) ----------------------------------------------------


def _is_node_allocatable(name: str) -> bool:
    """Upstream ``IsNodeAllocatableResourceName``: cpu, memory, or any ``hugepages-`` name."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _validate_node_allocatable(value: Any, capacity: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    m = as_object(value, path, errs)
    if not m:
        return errs
    caps = capacity if isinstance(capacity, dict) else {}
    for name, entry in m.items():
        kp = path.key(name)
        if not _is_node_allocatable(name):
            errs.append(invalid(kp, name, "must be a node allocatable resource name"))
        e = as_object(entry, kp, errs)
        if e is None:
            continue
        mapping, overhead = e.get("mapping"), e.get("overhead")
        if mapping is None and overhead is None:
            errs.append(required(kp, "at least one of mapping or overhead must be set"))
        if mapping is not None:
            errs.extend(_nar_mapping(mapping, caps, kp.child("mapping")))
        if overhead is not None:
            errs.extend(_nar_overhead(overhead, kp.child("overhead")))
    return errs


def _nar_mapping(value: Any, caps: dict[str, Any], path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    m = as_object(value, path, errs)
    if m is None:
        return errs
    key = as_str(m.get("capacityKey"), path.child("capacityKey"), errs)
    cm = as_quantity(m.get("capacityMultiplier"), path.child("capacityMultiplier"), errs)
    dm = as_quantity(m.get("deviceMultiplier"), path.child("deviceMultiplier"), errs)
    if key is not None:
        if key == "":
            errs.append(invalid(path.child("capacityKey"), "", "capacityKey must not be an empty string"))
        elif key not in caps:
            errs.append(not_found(path.child("capacityKey"), key))
        if m.get("capacityMultiplier") is None:
            errs.append(
                required(
                    path.child("capacityMultiplier"), "capacityMultiplier is required when capacityKey is set"
                )
            )
        elif cm is not None and cm.value <= 0:
            errs.append(invalid(path.child("capacityMultiplier"), str(cm), "must be positive"))
    if dm is not None and dm.value <= 0:
        errs.append(invalid(path.child("deviceMultiplier"), str(dm), "must be positive"))
    if m.get("capacityMultiplier") is not None and key is None:
        errs.append(
            required(path.child("capacityKey"), "capacityKey is required when capacityMultiplier is set")
        )
    return errs


def _nar_overhead(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    o = as_object(value, path, errs)
    if o is None:
        return errs
    if o.get("perPod") is None and o.get("perContainer") is None:
        return [invalid(path, "", "at least one of perPod or perContainer must be set")]
    for name in ("perPod", "perContainer"):
        q = as_quantity(o.get(name), path.child(name), errs)
        if q is not None and q.value < 0:
            errs.append(invalid(path.child(name), str(q), "must be non-negative"))
    return errs
