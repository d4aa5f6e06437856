"""ResourceClaim status rules (RC-ST-*) and the ``/status`` strategy drops. Pure.

The apiserver validates status only on the status subresource (``ValidateResourceClaimStatusUpdate``):
reservedFor, allocation (immutable once set; results checked when first set) and status.devices.
"""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    forbidden,
    immutable,
    invalid,
    not_supported,
    required,
)
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules.claims.common import (
    CONFIG_MAX,
    RequestNames,
    duplicates,
    validate_device_name,
    validate_opaque_config,
    validate_pool_name,
    validate_request_ref,
    validate_request_refs,
    within,
)
from webhook.rules.claims.mutate import strip_warning
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.names import is_uuid, validate_csi_driver_name
from webhook.rules.shape import as_list, as_object
from webhook.rules.slices.devices import BINDING_CONDITIONS_MAX

RESERVED_FOR_MAX = 256
RESULTS_MAX = 32
UID_MSG = ("uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with "
           "lowercase hexadecimal characters")
CONFIG_SOURCES = ("FromClaim", "FromClass")
STATUS = FieldPath.root("status")


def validate_status_update(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """RC-ST-1..8 for an UPDATE of the status subresource."""
    errs: list[FieldError] = []
    status = as_object(obj.get("status"), STATUS, errs) or {}
    old_status = old_status_raw if isinstance(old_status_raw := old.get("status"), dict) else {}
    rp = STATUS.child("reservedFor")
    reserved = as_list(status.get("reservedFor"), rp, errs) or []
    if within(reserved, RESERVED_FOR_MAX, rp, errs):
        for i, ref in enumerate(reserved):
            errs.extend(_validate_consumer(ref, rp.index(i)))
        errs.extend(duplicates((r.get("uid") if isinstance(r, dict) else None for r in reserved), rp))
    allocation = status.get("allocation")
    old_alloc = old_status.get("allocation")
    spec = spec_raw if isinstance(spec_raw := obj.get("spec"), dict) else {}
    devices = devices_raw if isinstance(devices_raw := spec.get("devices"), dict) else {}
    names = RequestNames(devices.get("requests"))
    ap = STATUS.child("allocation")
    if old_alloc is not None and allocation is not None:
        if allocation != old_alloc:
            errs.append(immutable(ap, allocation))
    elif allocation is not None:
        errs.extend(_validate_allocation(allocation, ap, names))
    errs.extend(_validate_device_statuses(status.get("devices"), allocation))
    if reserved and allocation is None:
        errs.append(forbidden(rp, "may not be specified when `allocated` is not set"))
    return errs


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
    return errs


def _validate_result(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    """RC-ST-4/5: one allocation result."""
    errs: list[FieldError] = []
    res = as_object(value, path, errs)
    if res is None:
        return errs
    errs.extend(validate_request_ref(res.get("request"), path.child("request"), names))
    errs.extend(validate_csi_driver_name(res.get("driver"), path.child("driver")))
    errs.extend(validate_pool_name(res.get("pool"), path.child("pool")))
    errs.extend(validate_device_name(res.get("device"), path.child("device")))
    share = res.get("shareID")
    if share is not None and not (isinstance(share, str) and is_uuid(share)):
        errs.append(invalid(path.child("shareID"), share, UID_MSG))
    for key in ("bindingConditions", "bindingFailureConditions"):
        items = as_list(res.get(key), path.child(key), errs) or []
        within(items, BINDING_CONDITIONS_MAX, path.child(key), errs)
    return errs


def _device_id(d: dict[str, Any]) -> tuple[Any, ...]:
    return (d.get("driver"), d.get("pool"), d.get("device"), d.get("shareID"))


def _render_id(key: tuple[Any, ...]) -> str:
    return "/".join(str(k) for k in key if k is not None)


def _validate_device_statuses(value: Any, allocation: Any) -> list[FieldError]:
    """RC-ST-7/8: each status.devices entry names an allocated device, once."""
    errs: list[FieldError] = []
    path = STATUS.child("devices")
    entries = as_list(value, path, errs) or []
    allocated: set[tuple[Any, ...]] = set()
    if isinstance(allocation, dict) and isinstance(allocation.get("devices"), dict):
        for r in allocation["devices"].get("results") or []:
            if isinstance(r, dict):
                allocated.add(tuple(str(x) if x is not None else None for x in _device_id(r)))
    keys: list[Any] = []
    for i, d in enumerate(entries):
        p = path.index(i)
        dev = as_object(d, p, errs)
        if dev is None:
            keys.append(None)
            continue
        errs.extend(validate_csi_driver_name(dev.get("driver"), p.child("driver")))
        errs.extend(validate_pool_name(dev.get("pool"), p.child("pool")))
        errs.extend(validate_device_name(dev.get("device"), p.child("device")))
        share = dev.get("shareID")
        if share is not None and not (isinstance(share, str) and is_uuid(share)):
            errs.append(invalid(p.child("shareID"), share, UID_MSG))
        key = tuple(str(x) if x is not None else None for x in _device_id(dev))
        keys.append(key)
        if key not in allocated:
            errs.append(invalid(p, _render_id(key), "must be an allocated device in the claim"))
    seen: set[Any] = set()
    for i, k in enumerate(keys):
        if k is None:
            continue
        if k in seen:
            errs.append(duplicate(path.index(i), _render_id(k)))
        seen.add(k)
    return errs


def plan_status_strips(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> Mutation:
    """§3 ``/status`` drops for disabled gates (in use = the old claim already uses the field)."""
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
