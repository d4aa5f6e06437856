"""The ``device`` variable of a DRA selector: one ResourceSlice device converted to CEL values once
(``device_view``), so a compiled selector can be matched against many devices cheaply. Attribute
and capacity values that do not convert make the view carry an error, which every evaluation on
that device reports. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any

from celpy import celtypes

from webhook.cel.library import CelQuantity, CelSemver, parse_semver
from webhook.quantity import QuantityError, parse_quantity


class DeviceView:
    """The ``device`` CEL variable for one device; opaque to callers, built by ``device_view``.

    The celpy map is built on first use only: the native evaluator (native.py) reads the plain
    ``attrs``/``caps`` dicts, so most devices of a large cluster never need it.
    """

    __slots__ = ("_value", "error", "driver", "attrs", "caps", "allow_multiple")

    def __init__(self, value: celtypes.MapType | None, error: str | None, driver: str = "",
                 attrs: Mapping[str, Mapping[str, Any]] | None = None,
                 caps: Mapping[str, Mapping[str, Any]] | None = None, allow_multiple: bool = False) -> None:
        self._value = value
        self.error = error
        self.driver = driver
        # The same values by plain domain and id, for the native evaluator (see native.py).
        self.attrs: Mapping[str, Mapping[str, Any]] = attrs or {}
        self.caps: Mapping[str, Mapping[str, Any]] = caps or {}
        self.allow_multiple = allow_multiple

    @property
    def value(self) -> celtypes.MapType:
        """The celpy ``device`` map, built on first use."""
        if self._value is None:
            self._value = celtypes.MapType({
                celtypes.StringType("driver"): celtypes.StringType(self.driver),
                celtypes.StringType("attributes"): _DomainMap({
                    celtypes.StringType(d): celtypes.MapType({celtypes.StringType(k): v for k, v in m.items()})
                    for d, m in self.attrs.items()}),
                celtypes.StringType("capacity"): _DomainMap({
                    celtypes.StringType(d): celtypes.MapType({celtypes.StringType(k): v for k, v in m.items()})
                    for d, m in self.caps.items()}),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(self.allow_multiple),
            })
        return self._value


class _DomainMap(celtypes.MapType):
    """``device.attributes``/``device.capacity``: an unknown domain reads as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            if isinstance(key, celtypes.StringType):
                return celtypes.MapType({})
            raise


def device_view(driver: str, attributes: Mapping[str, Any] | None, capacity: Mapping[str, Any] | None,
                allow_multiple: bool) -> DeviceView:
    """Convert a ResourceSlice device (raw attribute/capacity dicts) into the CEL ``device``.

    Unqualified names are filed under the driver's domain. A value that cannot be converted (an
    attribute with no value, a bad quantity) does not raise here: it makes every later
    ``matches`` on this view fail, as upstream fails every selector on such a device.
    """
    error: str | None = None
    attrs: dict[str, dict[str, Any]] = {}
    for name, raw in (attributes or {}).items():
        value = _attribute_value(raw)
        if value is None:  # keep the first problem only: that is what every match will report
            error = error or f"attribute {name}: unsupported attribute value"
            continue
        domain, ident = _split_name(str(name), driver)
        attrs.setdefault(domain, {})[ident] = value
    caps: dict[str, dict[str, Any]] = {}
    for name, raw in (capacity or {}).items():
        v = raw.get("value") if isinstance(raw, Mapping) else None
        try:
            # Strings (the wire form) go through the cache; a number is parsed as it is.
            cq = _cel_quantity(v) if isinstance(v, str) else CelQuantity(parse_quantity(v))
        except QuantityError:
            error = error or f"capacity {name}: unsupported capacity value"
            continue
        domain, ident = _split_name(str(name), driver)
        caps.setdefault(domain, {})[ident] = cq
    return DeviceView(None, error, driver, attrs, caps, bool(allow_multiple))


def lazy_device_view(driver: str, attributes: Mapping[str, Any], capacity: DeviceView,
                     allow_multiple: bool) -> DeviceView:
    """``device_view`` for a device of a large cluster: the same answers, but each attribute is
    converted when read rather than held converted (a 500-node cluster's views took 15 MiB);
    ``capacity`` is the view of the device's capacity alone, which identical devices share.
    ``attributes`` must not change afterwards (snapshot objects never do)."""
    error: str | None = None
    for name, raw in attributes.items():
        if not _supported(raw):
            error = f"attribute {name}: unsupported attribute value"
            break
    names = tuple(attributes)
    layout = _LAYOUTS.get((driver, names))
    if layout is None:
        built: dict[str, dict[str, list[str]]] = {}
        for name in names:
            domain, ident = _split_name(str(name), driver)
            built.setdefault(domain, {}).setdefault(ident, []).append(name)
        layout = {d: {i: tuple(reversed(ns)) for i, ns in m.items()} for d, m in built.items()}
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        _LAYOUTS[(driver, names)] = layout
    domains = _Domains(attributes, layout) if error else _Supported(attributes, layout)
    return DeviceView(None, error or capacity.error, driver, domains, capacity.caps, bool(allow_multiple))


_LAYOUTS: dict[tuple[str, tuple[Any, ...]], dict[str, dict[str, tuple[Any, ...]]]] = {}
"""(driver, attribute names in order) -> domain -> id -> the names that spell it, last first
(the last supported one wins, as in ``device_view``): shared by every device with those names."""


class _ByGet(Mapping[str, Any]):
    """A read-only mapping computed on lookup: ``get`` answers (None: absent) for the candidate
    keys of ``_keys``; indexing, iteration and length follow from it."""

    __slots__ = ("_raw", "_keys")

    def __init__(self, raw: Mapping[str, Any], keys: Mapping[str, Any]) -> None:
        self._raw = raw
        self._keys = keys

    def get(self, key: str, default: Any = None) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __iter__(self) -> Any:
        return (k for k in self._keys if self.get(k) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Domains(_ByGet):
    """``device.attributes`` by domain over the raw attribute map, converted on lookup (keys: the
    layout, domain -> id -> spellings)."""

    __slots__ = ()

    def get(self, domain: str, default: Any = None) -> Any:
        ids = self._keys.get(domain)
        if ids is None:
            return default
        dom = _Ids(self._raw, ids)
        return dom if dom.any() else default


class _Ids(_ByGet):
    """One domain of ``_Domains``: id -> CEL value of the last supported attribute spelling it
    (keys: id -> spellings, last first)."""

    __slots__ = ()

    def get(self, ident: str, default: Any = None) -> Any:
        for name in self._keys.get(ident, ()):
            v = _attribute_value(self._raw[name])
            if v is not None:
                return v
        return default

    def any(self) -> bool:
        """Whether some id has a value (stops at the first)."""
        return any(_attribute_value(self._raw[n]) is not None for ns in self._keys.values() for n in ns)


class _Supported(_ByGet):
    """``_Domains`` of a device whose every attribute has a supported value (``_supported``):
    a domain of the layout is never empty and an id's first spelling has its value."""

    __slots__ = ()

    def get(self, domain: str, default: Any = None) -> Any:
        ids = self._keys.get(domain)
        return default if ids is None else _FirstIds(self._raw, ids)


class _FirstIds(_ByGet):
    """``_Ids`` when every spelling has a supported value: the last one written wins."""

    __slots__ = ()

    def get(self, ident: str, default: Any = None) -> Any:
        names = self._keys.get(ident)
        return default if names is None else _attribute_value(self._raw[names[0]])


_SIMPLE_TYPES = {"int": int, "string": str, "bool": bool}


def _supported(raw: Any) -> bool:
    """``_attribute_value(raw) is not None``, answered from the types alone for the usual one-key
    attribute (``{"string": ...}``, ``{"int": ...}``, ``{"bool": ...}``, ``{"version": ...}``)."""
    if type(raw) is dict and len(raw) == 1:
        for key, v in raw.items():
            t = _SIMPLE_TYPES.get(key)
            if t is not None and type(v) is t:
                return True
            if key == "version" and type(v) is str:
                return _semver(v) is not None
    return _attribute_value(raw) is not None


_PLAIN_KINDS = frozenset({("int", int), ("string", str), ("bool", bool), ("version", str)})
"""(key, exact value type) of the one-key attributes ``all_supported`` answers in bulk."""


def all_supported(values: list[Any]) -> bool:
    """Whether every raw attribute value of ``values`` is supported (``_supported`` of each: a
    device with one that is not makes every selector fail on it). Answered in bulk, by types, for
    the usual one-key values; a version string is parsed once per distinct text."""
    if set(map(type, values)) <= {dict} and set(map(len, values)) <= {1}:
        pairs = list(chain.from_iterable(map(dict.items, values)))
        kinds = set(zip(map(itemgetter(0), pairs), map(type, map(itemgetter(1), pairs)), strict=True))
        if kinds <= _PLAIN_KINDS:
            if ("version", str) not in kinds:
                return True
            return all(_semver(v) is not None for v in {v for k, v in pairs if k == "version"})
    return all(map(_supported, values))


def _split_name(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of a qualified attribute or capacity name; no domain means the driver's."""
    if "/" in name:
        domain, _, ident = name.partition("/")
        return domain, ident
    return driver, name


_SCALARS: dict[type, dict[Any, Any]] = {}
_SCALARS_MAX = 1 << 18


def _scalar(cls: type, v: Any) -> Any:
    """Shared CEL scalar objects: the same attribute values repeat on every device of a slice.
    One plain dict per type, keyed by the value itself (an ``lru_cache`` spent ~130 bytes of
    bookkeeping per entry: 8 MiB for the UUIDs of a 500-node cluster); cleared when large."""
    memo = _SCALARS.get(cls)
    if memo is None:
        memo = _SCALARS.setdefault(cls, {})
    got = memo.get(v)
    if got is None:
        if len(memo) > _SCALARS_MAX:
            memo.clear()
        got = memo[v] = cls(v)
    return got


@lru_cache(maxsize=16384)
def _cel_quantity(text: str) -> CelQuantity:
    """A parsed capacity value; devices of one slice mostly share a few values."""
    return CelQuantity(parse_quantity(text))


@lru_cache(maxsize=16384)
def _semver(text: str) -> CelSemver | None:
    """A parsed version attribute, or None when it is not a semantic version."""
    return parse_semver(text)


_SCALAR_KINDS: tuple[tuple[str, type], ...] = (("int", celtypes.IntType), ("bool", celtypes.BoolType),
                                               ("string", celtypes.StringType))


def _attribute_value(raw: Any) -> Any:
    """The CEL value of one DeviceAttribute, or None when no (supported) value is set."""
    if type(raw) is not dict and not isinstance(raw, Mapping):  # the ABC check is slow: decoded JSON is a dict
        return None
    for key, cls in _SCALAR_KINDS:
        v = raw.get(key)
        if v is None:
            continue
        # JSON gives bools for ints and vice versa only in broken objects: unsupported values.
        if key == "int" and (isinstance(v, bool) or not isinstance(v, int)):
            return None
        if key == "bool" and not isinstance(v, bool):
            return None
        if key == "string" and not isinstance(v, str):
            return None
        return _scalar(cls, v)
    if isinstance(raw.get("version"), str):  # an unparsable version is an unsupported value
        return _semver(raw["version"])
    lists = {"ints": celtypes.IntType, "bools": celtypes.BoolType, "strings": celtypes.StringType}
    for key, list_cls in lists.items():
        if isinstance(raw.get(key), list):
            return celtypes.ListType([list_cls(x) for x in raw[key]])
    if isinstance(raw.get("versions"), list):
        # CelSemver is our extension value, so celpy's ``Value`` union does not name it.
        items: list[Any] = [parse_semver(x) if isinstance(x, str) else None for x in raw["versions"]]
        return None if any(x is None for x in items) else celtypes.ListType(items)
    return None


# ``device.driver == "lit"`` alone, or as the first operand of a top-level ``&&``: every
# DeviceClass starts this way and it is evaluated for every device of the cluster, so it is
# answered natively (CEL interpretation costs ~100 µs). Sound because ``false && x`` is false
# whatever ``x`` is (errors included); the remainder must hold no ``||`` or ``?`` so that the
# ``&&`` is certainly the top-level operator.
