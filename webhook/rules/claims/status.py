"""ResourceClaim status rules (RC-ST-*) and the ``/status`` strategy drops. Pure.

The apiserver validates status only on the status subresource: by hand
(``ValidateResourceClaimStatusUpdate``: reservedFor, allocation immutable once set and its results
checked when first set, status.devices) and by the declarative tags (``declarative.claim_status``);
the answer is both.
"""

from __future__ import annotations

import json
import re
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicates_by,
    forbidden,
    immutable,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules.claims import declarative
from webhook.rules.claims.common import (
    CONFIG_MAX,
    RequestNames,
    driver_name,
    validate_opaque_config,
    validate_raw_object,
    validate_request_ref,
    validate_request_refs,
    validate_toleration,
    within,
)
from webhook.rules.claims.mutate import strip_warning
from webhook.rules.claims.update import equal
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import merge
from webhook.rules.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_uuid
from webhook.rules.shape import as_list, as_object, mapping
from webhook.rules.slices.common import POOL_NAME_MAX, validate_node_selector
from webhook.rules.slices.devices import BINDING_CONDITIONS_MAX

RESERVED_FOR_MAX = 256
RESULTS_MAX = 32
DEVICE_CONDITIONS_MAX = 8
DEVICE_DATA_MAX = 10 * 1024
UID_MSG = ("uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with "
           "lowercase hexadecimal characters")
CONFIG_SOURCES = ("FromClaim", "FromClass")
CONDITION_STATUSES = ("False", "True", "Unknown")
CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?\Z")
STATUS = FieldPath.root("status")


def validate_status_update(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """RC-ST-1..9 for an UPDATE of the status subresource."""
    errs: list[FieldError] = []
    status = as_object(obj.get("status"), STATUS, errs) or {}
    old_status = mapping(old.get("status"))
    rp = STATUS.child("reservedFor")
    reserved = as_list(status.get("reservedFor"), rp, errs) or []
    if within(reserved, RESERVED_FOR_MAX, rp, errs):
        for i, ref in enumerate(reserved):
            errs.extend(_validate_consumer(ref, rp.index(i)))
        errs.extend(duplicates_by(reserved, rp, lambda r: mapping(r).get("uid") or ""))
    allocation = status.get("allocation")
    errs.extend(_validate_device_statuses(status.get("devices"), allocation))
    if reserved:
        if allocation is None:
            errs.append(forbidden(rp, "may not be specified when `allocated` is not set"))
        elif mapping(obj.get("metadata")).get("deletionTimestamp") is not None:
            before = {_consumer_key(r) for r in old_status.get("reservedFor") or []}
            if any(_consumer_key(r) not in before for r in reserved):
                errs.append(forbidden(rp, "new entries may not be added while `deallocationRequested` or "
                                          "`deletionTimestamp` are set"))
    ap = STATUS.child("allocation")
    old_alloc = old_status.get("allocation")
    if old_alloc is not None and allocation is not None:
        if not equal(allocation, old_alloc):
            errs.append(immutable(ap, allocation))
    elif allocation is not None:
        names = RequestNames(mapping(mapping(obj.get("spec")).get("devices")).get("requests"))
        errs.extend(_validate_allocation(allocation, ap, names))
    return merge(errs, declarative.claim_status(status, old_status, STATUS))


def _consumer_key(ref: Any) -> tuple[Any, ...]:
    r = mapping(ref)
    return (r.get("apiGroup"), r.get("resource"), r.get("name"), r.get("uid"))


def _validate_consumer(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    ref = as_object(value, path, errs)
    if ref is None:
        return errs
    for key in ("resource", "name", "uid"):
        if ref.get(key) in (None, ""):
            errs.append(required(path.child(key)))
    return errs


def _validate_allocation(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    errs: list[FieldError] = []
    alloc = as_object(value, path, errs)
    if alloc is None:
        return errs
    dp = path.child("devices")
    devices = as_object(alloc.get("devices"), dp, errs) or {}
    resp = dp.child("results")
    results = as_list(devices.get("results"), resp, errs) or []
    if within(results, RESULTS_MAX, resp, errs):
        for i, res in enumerate(results):
            errs.extend(_validate_result(res, resp.index(i), names))
    cfp = dp.child("config")
    configs = as_list(devices.get("config"), cfp, errs) or []
    if within(configs, 2 * CONFIG_MAX, cfp, errs):
        for i, cfg in enumerate(configs):
            p = cfp.index(i)
            cfg_d = as_object(cfg, p, errs)
            if cfg_d is None:
                continue
            src = cfg_d.get("source")
            if src in (None, ""):
                errs.append(required(p.child("source")))
            elif src not in CONFIG_SOURCES:
                errs.append(not_supported(p.child("source"), src, CONFIG_SOURCES))
            errs.extend(validate_request_refs(cfg_d.get("requests"), p.child("requests"), names))
            errs.extend(validate_opaque_config(cfg_d, p))
    if alloc.get("nodeSelector") is not None:
        errs.extend(validate_node_selector(alloc.get("nodeSelector"), path.child("nodeSelector")))
    return errs


def pool_name(value: Any, path: FieldPath) -> list[FieldError]:
    """``validatePoolName``: required; at most 253 bytes; every '/'-separated part a DNS subdomain."""
    if not isinstance(value, str) or value == "":
        return [required(path)]
    errs = [too_long(path, POOL_NAME_MAX)] if len(value) > POOL_NAME_MAX else []
    return errs + [invalid(path, value, m) for part in value.split("/") for m in is_dns1123_subdomain(part)]


def device_name(value: Any, path: FieldPath) -> list[FieldError]:
    """A device name is a DNS label (the empty name is invalid, not missing)."""
    v = value if isinstance(value, str) else ""
    return [invalid(path, v, m) for m in is_dns1123_label(v)]


def _share_id(value: Any, path: FieldPath) -> list[FieldError]:
    if value is None or (isinstance(value, str) and is_uuid(value)):
        return []
    return [invalid(path, value, UID_MSG)]


def _validate_result(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    """RC-ST-4/5: one allocation result."""
    errs: list[FieldError] = []
    res = as_object(value, path, errs)
    if res is None:
        return errs
    errs.extend(validate_request_ref(res.get("request") or "", path.child("request"), names))
    errs.extend(driver_name(res.get("driver"), path.child("driver")))
    errs.extend(pool_name(res.get("pool"), path.child("pool")))
    errs.extend(device_name(res.get("device"), path.child("device")))
    errs.extend(_binding_conditions(res.get("bindingConditions"), res.get("bindingFailureConditions"), path))
    for i, tol in enumerate(res.get("tolerations") or []):
        errs.extend(validate_toleration(tol, path.child("tolerations").index(i)))
    errs.extend(_share_id(res.get("shareID"), path.child("shareID")))
    skip = res.get("skipNodeOperations") or []
    if "NodePrepareResources" in skip and "NodeUnprepareResources" not in skip and "*" not in skip:
        errs.append(invalid(path.child("skipNodeOperations"), skip,
                            "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"))
    return errs


def _binding_conditions(conds: Any, failures: Any, path: FieldPath) -> list[FieldError]:
    """``validateDeviceBindingParameters``: label names, at most 4 each, no repeats, no overlap,
    and one list only together with the other."""
    conds = [c for c in conds if isinstance(c, str)] if isinstance(conds, list) else []
    failures = [c for c in failures if isinstance(c, str)] if isinstance(failures, list) else []
    cp, fp = path.child("bindingConditions"), path.child("bindingFailureConditions")
    errs: list[FieldError] = []
    for items, p in ((conds, cp), (failures, fp)):
        if len(items) > BINDING_CONDITIONS_MAX:
            errs.append(too_many(p, len(items), BINDING_CONDITIONS_MAX))
        else:
            errs.extend(invalid(p.index(i), c, m) for i, c in enumerate(items) for m in is_qualified_name(c))
        errs.extend(duplicates_by(items, p, lambda c: c))
    errs.extend(invalid(fp.index(i), c, "bindingFailureConditions must not overlap with bindingConditions")
                for i, c in enumerate(failures) if c in conds)
    if not conds and failures:
        errs.append(invalid(cp, conds, "bindingConditions are required to use bindingFailureConditions"))
    if not failures and conds:
        errs.append(invalid(fp, failures, "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _device_id(d: dict[str, Any]) -> tuple[Any, ...]:
    """driver/pool/device/shareID as a set key; a value of another JSON type (a type error
    reported elsewhere) is keyed by its JSON text, as no list or object can be a key."""
    return tuple(v if v is None or isinstance(v, str | int | float) else json.dumps(v, sort_keys=True)
                 for v in (d.get("driver") or "", d.get("pool") or "", d.get("device") or "", d.get("shareID")))


def _render_id(key: tuple[Any, ...]) -> str:
    return "/".join(str(k) for k in key if k is not None)


def _validate_device_statuses(value: Any, allocation: Any) -> list[FieldError]:
    """RC-ST-7/8: each status.devices entry names an allocated device, once."""
    errs: list[FieldError] = []
    path = STATUS.child("devices")
    entries = as_list(value, path, errs) or []
    results = mapping(mapping(allocation).get("devices")).get("results")
    allocated = {_device_id(r) for r in results if isinstance(r, dict)} if isinstance(results, list) else set()
    for i, d in enumerate(entries):
        p = path.index(i)
        dev = as_object(d, p, errs)
        if dev is None:
            continue
        errs.extend(driver_name(dev.get("driver"), p.child("driver")))
        errs.extend(pool_name(dev.get("pool"), p.child("pool")))
        errs.extend(device_name(dev.get("device"), p.child("device")))
        errs.extend(_share_id(dev.get("shareID"), p.child("shareID")))
        if _device_id(dev) not in allocated:
            errs.append(invalid(p, _render_id(_device_id(dev)), "must be an allocated device in the claim"))
        raw = dev.get("conditions")
        conditions: list[Any] = raw if isinstance(raw, list) else []
        if len(conditions) > DEVICE_CONDITIONS_MAX:
            errs.append(too_many(p.child("conditions"), len(conditions), DEVICE_CONDITIONS_MAX))
        errs.extend(validate_conditions(conditions, p.child("conditions")))
        if dev.get("data") is not None:
            errs.extend(validate_raw_object(dev.get("data"), p.child("data"), DEVICE_DATA_MAX))
    errs.extend(duplicates_by(entries, path, lambda d: _device_id(d) if isinstance(d, dict) else None,
                              shown=lambda d: _render_id(_device_id(d))))
    return errs


def validate_conditions(conditions: list[Any], path: FieldPath) -> list[FieldError]:
    """``metav1validation.ValidateConditions``: unique types, each condition well formed."""
    errs = duplicates_by(conditions, path, lambda c: mapping(c).get("type") or "")
    for i, c in enumerate(conditions):
        c, p = mapping(c), path.index(i)
        ctype, cstatus, reason = c.get("type") or "", c.get("status") or "", c.get("reason") or ""
        errs += [required(p.child("type"), "is required")] if not ctype else \
            [invalid(p.child("type"), ctype, m) for m in is_qualified_name(ctype)]
        if not cstatus:
            errs.append(required(p.child("status")))
        elif cstatus not in CONDITION_STATUSES:
            errs.append(not_supported(p.child("status"), cstatus, CONDITION_STATUSES))
        if isinstance(c.get("observedGeneration"), int) and c["observedGeneration"] < 0:
            errs.append(invalid(p.child("observedGeneration"), c["observedGeneration"],
                                "must be greater than or equal to zero"))
        if not c.get("lastTransitionTime"):
            errs.append(required(p.child("lastTransitionTime")))
        if not reason:
            errs.append(required(p.child("reason")))
        else:
            if not CONDITION_REASON.match(reason):
                errs.append(invalid(p.child("reason"), reason, "a condition reason must start with alphabetic "
                                    "character, optionally followed by a string of alphanumeric characters or "
                                    "'_,:', and must end with an alphanumeric character or '_'"))
            if len(reason) > 1024:
                errs.append(too_long(p.child("reason"), 1024))
        if len(c.get("message") or "") > 32 * 1024:
            errs.append(too_long(p.child("message"), 32 * 1024))
    return errs


def plan_status_strips(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> Mutation:
    """``/status`` drops for disabled gates (in use = the old claim already uses the field)."""
    out = Mutation()
    status = obj.get("status")
    if not isinstance(status, dict):
        return out
    old_status = old_status_raw if isinstance(old_status_raw := old.get("status"), dict) else {}
    alloc = alloc_raw if isinstance(alloc_raw := status.get("allocation"), dict) else {}
    devs = devs_raw if isinstance(devs_raw := alloc.get("devices"), dict) else {}
    results = [r for r in devs.get("results") or [] if isinstance(r, dict)] \
        if isinstance(devs.get("results"), list) else []
    rbase = STATUS.child("allocation", "devices", "results")
    old_results = _old_results(old_status)

    def drop(gate: Gate, members: tuple[str, ...], in_use: bool, also_devices: bool = False) -> None:
        if ctx.gates.enabled(gate) or in_use:
            return
        removed: list[str] = []
        for i, r in enumerate(results):
            for m in members:
                if m in r:
                    p = rbase.index(i).child(m)
                    out.ops.append(op_remove(p))
                    removed.append(str(p))
        if also_devices and isinstance(status.get("devices"), list):
            for i, d in enumerate(status["devices"]):
                if isinstance(d, dict) and "shareID" in d:
                    p = STATUS.child("devices").index(i).child("shareID")
                    out.ops.append(op_remove(p))
                    removed.append(str(p))
        if removed:
            out.warnings.append(strip_warning(gate, removed))

    drop(Gate.DRA_ADMIN_ACCESS, ("adminAccess",), any(r.get("adminAccess") is not None for r in old_results))
    cc_in_use = any(r.get("shareID") is not None or r.get("consumedCapacity") is not None
                    for r in old_results)
    drop(Gate.DRA_CONSUMABLE_CAPACITY, ("shareID", "consumedCapacity"), cc_in_use, also_devices=True)
    drop(Gate.DRA_OPTIONAL_NODE_OPERATIONS, ("skipNodeOperations",),
         any(bool(r.get("skipNodeOperations")) for r in old_results))
    drop(Gate.DRA_DEVICE_BINDING_CONDITIONS, ("bindingConditions", "bindingFailureConditions"),
         any(r.get("bindingConditions") is not None or r.get("bindingFailureConditions") is not None
             for r in old_results))
    if not ctx.gates.enabled(Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS) and status.get("devices") is not None \
            and not old_status.get("devices"):
        out.ops = [o for o in out.ops if not o["path"].startswith("/status/devices/")]
        out.ops.append(op_remove(STATUS.child("devices")))
        out.warnings.append(strip_warning(Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS, ["status.devices"]))
    return out


def _old_results(old_status: dict[str, Any]) -> list[dict[str, Any]]:
    alloc = old_status.get("allocation")
    if not isinstance(alloc, dict) or not isinstance(alloc.get("devices"), dict):
        return []
    res = alloc["devices"].get("results")
    return [r for r in res if isinstance(r, dict)] if isinstance(res, list) else []
