"""Declarative validation of the claims kinds: what the ``+k8s:`` tags of ``resource.k8s.io/v1`` check.

The 1.37 apiserver validates each object twice, by hand (``pkg/apis/resource/validation``: our
``spec.py``, ``status.py``, ``deviceclass.py``) and from the API's tags, and reports both (a
handwritten error that a tag covers is replaced by the tag's; per field and reason, the union).
The tags also look where the handwritten rules do not: inside a request that sets both
``exactly`` and ``firstAvailable``, at empty derived attributes, at the lower-case prefix of a
fully qualified name. This module is that second pass, restated: the beta tags (enforced, since
``DeclarativeValidationBeta`` is on by default) and the standard ones; alpha tags are only
shadows of handwritten rules and are left out.

Every function takes the new value, the old value it corresponds to on UPDATE (``NO_OLD`` when
there is none) and the path. On UPDATE a value equal to its old one is not validated again (the
tags ratchet, ``webhook.rules.declarative``); list items are paired with old items by their key
where the list is a map.
Wrong JSON types never reach here in the server (the apiserver decodes first) and are skipped. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, duplicate, invalid, not_supported, required, too_long, too_many
from webhook.rules.claims import names
from webhook.rules.claims.update import equal
from webhook.rules.declarative import NO_OLD, old_member, unchanged

ALLOCATION_MODES = ("All", "ExactCount")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
CONFIG_SOURCES = ("FromClaim", "FromClass")
SKIP_NODE_OPERATIONS = ("*", "NodePrepareResources", "NodeUnprepareResources")

Check = Callable[[Any, Any, FieldPath], list[FieldError]]


# -- walking ---------------------------------------------------------------------------------------

def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


_get = old_member


def _same(new: Any, old: Any) -> bool:
    return unchanged(new, old, equal)


def _items(new: Any, old: Any, path: FieldPath, limit: int | None, check: Check | None = None,
           key: Callable[[Any], Any] | None = None, pair: bool = False) -> list[FieldError]:
    """An optional list: at most ``limit`` items (a longer list gets one TooMany and nothing else),
    unique by ``key``, each item checked (paired with the old item of the same key when ``pair``)."""
    items = new if isinstance(new, list) else []
    if not items or _same(items, old):
        return []
    if limit is not None and len(items) > limit:
        return [too_many(path, len(items), limit)]
    errs: list[FieldError] = []
    if key is not None:
        keyed = _keyer(key)
        seen: set[Any] = set()
        for i, item in enumerate(items):
            k = keyed(item)
            if k is not None and k in seen:
                errs.append(duplicate(path.index(i), k))
            seen.add(k)
    if check is None:
        return errs
    olds = {keyed(o): o for o in old} if pair and key is not None and isinstance(old, list) else {}
    for i, item in enumerate(items):
        # No old items (CREATE, or none on UPDATE): nothing to pair with and nothing to skip.
        o = olds.get(keyed(item), NO_OLD) if olds else NO_OLD
        if o is NO_OLD or not equal(item, o):
            errs.extend(check(item, o, path.index(i)))
    return errs


def _keyer(key: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """``key`` made safe for any JSON: a key that cannot be hashed counts as none."""
    def keyed(item: Any) -> Any:
        k = key(item) if key is not None else None
        try:
            hash(k)
        except TypeError:
            return None
        return k
    return keyed


def _member(new: dict[str, Any], old: Any, name: str, path: FieldPath, check: Check) -> list[FieldError]:
    """A struct member, skipped when it is unchanged."""
    value, o = new.get(name), _get(old, name)
    return [] if _same(value, o) else check(value, o, path.child(name))


def _name(item: Any) -> Any:
    return _obj(item).get("name") or ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _enum(value: Any, path: FieldPath, allowed: tuple[str, ...], optional: bool = True) -> list[FieldError]:
    v = _str(value)
    if not v:
        return [] if optional else [required(path)]
    return [] if v in allowed else [not_supported(path, v, allowed)]


def _messages(path: FieldPath, value: str, msgs: list[str]) -> list[FieldError]:
    return [invalid(path, value, m) for m in msgs]


# -- claim spec ------------------------------------------------------------------------------------

def claim_spec(spec: Any, old: Any, path: FieldPath) -> list[FieldError]:
    """``ResourceClaimSpec`` (a claim's ``spec``, a template's ``spec.spec``)."""
    if _same(spec, old):
        return []
    return _member(_obj(spec), old, "devices", path, _device_claim)


def _device_claim(dev: Any, old: Any, path: FieldPath) -> list[FieldError]:
    d = _obj(dev)
    errs = _items(d.get("requests"), _get(old, "requests"), path.child("requests"), 32, _request, _name, pair=True)
    if _listed(d, "constraints"):
        errs += _items(d["constraints"], _get(old, "constraints"), path.child("constraints"), 32, _constraint)
    if _listed(d, "config"):
        errs += _items(d["config"], _get(old, "config"), path.child("config"), 32, _claim_config)
    return errs


def _listed(d: dict[str, Any], key: str) -> bool:
    """Whether member ``key`` is a non-empty list: anything else gives ``_items`` nothing to check."""
    v = d.get(key)
    return isinstance(v, list) and len(v) > 0


def _request(req: Any, old: Any, path: FieldPath) -> list[FieldError]:
    r = _obj(req)
    errs: list[FieldError] = []
    if r.get("exactly") is not None:
        errs += _member(r, old, "exactly", path, _exact)
    if _listed(r, "firstAvailable"):
        errs += _items(r["firstAvailable"], _get(old, "firstAvailable"), path.child("firstAvailable"), 8,
                       _sub_request, _name, pair=True)
    return errs


def _exact(ex: Any, old: Any, path: FieldPath) -> list[FieldError]:
    return _request_body(_obj(ex), old, path)


def _sub_request(sub: Any, old: Any, path: FieldPath) -> list[FieldError]:
    s = _obj(sub)
    errs: list[FieldError] = []
    cls = _str(s.get("deviceClassName"))
    if not _same(cls, _get(old, "deviceClassName")):
        p = path.child("deviceClassName")
        errs += [required(p)] if not cls else _messages(p, cls, names.dns1123_subdomain(cls))
    return errs + _request_body(s, old, path)


def _request_body(body: dict[str, Any], old: Any, path: FieldPath) -> list[FieldError]:
    """What ``exactly`` and a sub-request share (deviceClassName is checked by hand for ``exactly``)."""
    errs: list[FieldError] = []
    if _listed(body, "selectors"):
        errs += _items(body["selectors"], _get(old, "selectors"), path.child("selectors"), 32)
    if not _same(body.get("allocationMode"), _get(old, "allocationMode")) and body.get("allocationMode"):
        errs += _enum(body.get("allocationMode"), path.child("allocationMode"), ALLOCATION_MODES)
    if _listed(body, "tolerations"):
        errs += _items(body["tolerations"], _get(old, "tolerations"), path.child("tolerations"), None, toleration)
    if _listed(body, "derivedAttributes"):
        errs += _items(body["derivedAttributes"], _get(old, "derivedAttributes"), path.child("derivedAttributes"),
                       32, _derived)
    return errs


def toleration(tol: Any, old: Any, path: FieldPath) -> list[FieldError]:
    t = _obj(tol)
    errs: list[FieldError] = []
    key = _str(t.get("key"))
    if key:
        errs += _messages(path.child("key"), key, names.label_key(key))
    errs += _enum(t.get("operator"), path.child("operator"), TOLERATION_OPERATORS, optional=False)
    errs += _enum(t.get("effect"), path.child("effect"), TAINT_EFFECTS)
    return errs


def _derived(attr: Any, old: Any, path: FieldPath) -> list[FieldError]:
    a = _obj(attr)
    name, expr = _str(a.get("name")), _str(a.get("expression"))
    errs = [required(path.child("name"))] if not name else names.fully_qualified_name(name, path.child("name"))
    return errs + ([] if expr else [required(path.child("expression"))])


def _constraint(con: Any, old: Any, path: FieldPath) -> list[FieldError]:
    c = _obj(con)
    errs = _items(c.get("requests"), _get(old, "requests"), path.child("requests"), 32, key=lambda x: x)
    for member in ("matchAttribute", "distinctAttribute"):
        value = c.get(member)
        if isinstance(value, str) and not _same(value, _get(old, member)):
            errs += names.fully_qualified_name(value, path.child(member))
    return errs


def _claim_config(cfg: Any, old: Any, path: FieldPath) -> list[FieldError]:
    c = _obj(cfg)
    errs = _items(c.get("requests"), _get(old, "requests"), path.child("requests"), 32, key=lambda x: x)
    return errs + _opaque_member(c, old, path)


def _opaque_member(cfg: dict[str, Any], old: Any, path: FieldPath) -> list[FieldError]:
    if cfg.get("opaque") is None:
        return []
    return _member(cfg, old, "opaque", path, lambda o, _, p: driver(_obj(o).get("driver"), p.child("driver")))


def driver(value: Any, path: FieldPath) -> list[FieldError]:
    """A driver name (opaque config, allocation results): required, a caseless DNS subdomain, ≤ 63."""
    d = _str(value)
    if not d:
        return [required(path)]
    errs = _messages(path, d, names.dns1123_subdomain(d.lower()))
    return errs + ([too_long(path, 63)] if len(d) > 63 else [])


# -- DeviceClass -----------------------------------------------------------------------------------

def device_class_spec(spec: Any, old: Any, path: FieldPath) -> list[FieldError]:
    s = _obj(spec)
    if _same(spec, old):
        return []
    errs = _items(s.get("selectors"), _get(old, "selectors"), path.child("selectors"), 32)
    errs += _items(s.get("config"), _get(old, "config"), path.child("config"), 32,
                   lambda c, o, p: _opaque_member(_obj(c), o, p))
    ern = s.get("extendedResourceName")
    if isinstance(ern, str) and not _same(ern, _get(old, "extendedResourceName")):
        errs += names.extended_resource_name(ern, path.child("extendedResourceName"))
    return errs


# -- ResourceClaim status --------------------------------------------------------------------------

def claim_status(status: Any, old: Any, path: FieldPath) -> list[FieldError]:
    """``ResourceClaimStatus``: an allocation once set may not change (and then nothing below it
    is checked), its results and config, reservedFor and status.devices."""
    st, old = _obj(status), _obj(old)
    errs: list[FieldError] = []
    alloc, old_alloc = st.get("allocation"), old.get("allocation")
    if alloc is not None and not _same(alloc, old_alloc):
        if old_alloc is not None:
            errs.append(invalid(path.child("allocation"), None, "field cannot be modified once set"))
        else:
            devices = _obj(_obj(alloc).get("devices"))
            dp = path.child("allocation", "devices")
            errs += _items(devices.get("results"), NO_OLD, dp.child("results"), 32, _result)
            errs += _items(devices.get("config"), NO_OLD, dp.child("config"), 64, _allocation_config)
    errs += _items(st.get("reservedFor"), old.get("reservedFor"), path.child("reservedFor"), 256,
                   key=lambda r: _obj(r).get("uid") or "")
    errs += _items(st.get("devices"), old.get("devices"), path.child("devices"), None, _device_status,
                   key=_device_key, pair=True)
    return errs


def _device_key(d: Any) -> Any:
    o = _obj(d)
    return (o.get("driver") or "", o.get("device") or "", o.get("pool") or "", o.get("shareID"))


def _uuid(value: Any, path: FieldPath) -> list[FieldError]:
    if not isinstance(value, str) or names.is_lower_uuid(value):
        return []
    return [invalid(path, value, "must be a lowercase UUID in 8-4-4-4-12 format")]


def _result(res: Any, old: Any, path: FieldPath) -> list[FieldError]:
    r = _obj(res)
    errs = driver(r.get("driver"), path.child("driver"))
    errs += names.pool_name(_str(r.get("pool")), path.child("pool"))
    errs += _items(r.get("tolerations"), NO_OLD, path.child("tolerations"), None, toleration)
    errs += _items(r.get("bindingConditions"), NO_OLD, path.child("bindingConditions"), 4)
    errs += _items(r.get("bindingFailureConditions"), NO_OLD, path.child("bindingFailureConditions"), 4)
    errs += _uuid(r.get("shareID"), path.child("shareID"))
    errs += _items(r.get("skipNodeOperations"), NO_OLD, path.child("skipNodeOperations"), None,
                   lambda op, _, p: _enum(op, p, SKIP_NODE_OPERATIONS), key=lambda x: x)
    return errs


def _allocation_config(cfg: Any, old: Any, path: FieldPath) -> list[FieldError]:
    c = _obj(cfg)
    errs = _enum(c.get("source"), path.child("source"), CONFIG_SOURCES, optional=False)
    return errs + _claim_config(c, NO_OLD, path)


def _device_status(dev: Any, old: Any, path: FieldPath) -> list[FieldError]:
    d = _obj(dev)
    errs = _uuid(d.get("shareID"), path.child("shareID"))
    net = d.get("networkData")
    if isinstance(net, dict) and not _same(net, _get(old, "networkData")):
        np = path.child("networkData")
        for member, limit in (("interfaceName", 256), ("hardwareAddress", 128)):
            value = _str(net.get(member))
            if len(value.encode()) > limit:
                errs.append(too_long(np.child(member), limit))
        errs += _items(net.get("ips"), NO_OLD, np.child("ips"), 16, key=lambda x: x)
    return errs
