"""Shared pieces of the ResourceSlice rules: names, quantities, maps, node selectors.

JSON shapes are read through ``webhook.rules.shape`` (null is the zero value, a wrong type is
one TypeInvalid error). Pure and stdlib-only apart from our own modules.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.quantity import Quantity, QuantityError, parse_quantity, try_parse
from webhook.rules.names import (
    C_IDENTIFIER_MAX,
    DNS1123_LABEL_MAX,
    byte_len,
    is_c_identifier,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from webhook.rules.shape import as_list, as_object, as_str, shown, type_error

DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
DEVICE_DOMAIN_MAX = 63
KEY_TRUNCATE = DEVICE_DOMAIN_MAX + 1 + C_IDENTIFIER_MAX  # map keys longer than this are shortened in paths


def as_quantity(value: Any, path: FieldPath, errs: list[FieldError]) -> Quantity | None:
    """Parse a quantity; None when null/absent; an unparsable one is Invalid with the parser text."""
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError as e:
        errs.append(invalid(path, shown(value), str(e)))
        return None


# --- names ---------------------------------------------------------------------------------


def validate_driver_name(value: Any, path: FieldPath) -> list[FieldError]:
    """CSI driver name (upstream ``ValidateCSIDriverName``): Required when empty and nothing
    else, TooLong over 63 bytes, then a lower-cased DNS subdomain."""
    errs: list[FieldError] = []
    name = as_str(value, path, errs)
    if errs:
        return errs
    if not name:
        return [required(path)]
    if byte_len(name) > DRIVER_NAME_MAX:
        errs.append(too_long(path, DRIVER_NAME_MAX))
    errs.extend(invalid(path, name, m) for m in is_dns1123_subdomain(name.lower()))
    return errs


def validate_pool_name(value: Any, path: FieldPath) -> list[FieldError]:
    """Pool name: Required, ≤ 253, and every ``/``-separated part a DNS subdomain."""
    errs: list[FieldError] = []
    name = as_str(value, path, errs)
    if errs:
        return errs
    if not name:
        return [required(path)]
    if byte_len(name) > POOL_NAME_MAX:
        errs.append(too_long(path, POOL_NAME_MAX))
    for part in name.split("/"):
        errs.extend(invalid(path, part, m) for m in is_dns1123_subdomain(part))
    return errs


def is_label(value: Any) -> bool:
    """Whether ``value`` is a valid DNS label (cached: the same names repeat on every device)."""
    return type(value) is str and len(value) <= DNS1123_LABEL_MAX and _is_label(value)


def validate_dns_label(value: Any, path: FieldPath) -> list[FieldError]:
    """DNS label, empty included as Invalid (device names, counter names)."""
    if is_label(value):
        return []
    errs: list[FieldError] = []
    name = as_str(value, path, errs)
    if errs:
        return errs
    name = name or ""
    return [invalid(path, name, m) for m in is_dns1123_label(name)]


@lru_cache(maxsize=8192)
def _is_label(value: str) -> bool:
    return not is_dns1123_label(value)


def validate_required_label(value: Any, path: FieldPath) -> list[FieldError]:
    """Required when empty, else a DNS label (counter set names, counterSet references)."""
    if value is None or value == "":
        return [required(path)]
    return validate_dns_label(value, path)


def validate_node_name(value: str, path: FieldPath) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_dns1123_subdomain(value)]


def validate_label_name(value: Any, path: FieldPath) -> list[FieldError]:
    """Label-key syntax (``[prefix/]name``), empty reported as Invalid."""
    errs: list[FieldError] = []
    name = as_str(value, path, errs)
    if errs:
        return errs
    name = name or ""
    return [invalid(path, name, m) for m in is_qualified_name(name)]


def validate_label_value(value: str, path: FieldPath) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_label_value(value)]


def validate_c_identifier(value: str, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    if byte_len(value) > C_IDENTIFIER_MAX:
        errs.append(too_long(path, C_IDENTIFIER_MAX))
    errs.extend(invalid(path, value, m) for m in is_c_identifier(value))
    return errs


def validate_qualified_name(name: str, path: FieldPath) -> list[FieldError]:
    """Attribute / capacity name: ``id`` or ``domain/id`` (errors on the map path, no key).

    The same few names repeat on every device of a slice: the verdict per name is cached and
    field errors are only built for a bad name.
    """
    if isinstance(name, str) and len(name) <= 2 * KEY_TRUNCATE and qualified_name_ok(name):
        return []
    return _qualified_name_errors(name, path)


@lru_cache(maxsize=4096)
def qualified_name_ok(name: str) -> bool:
    return not _qualified_name_errors(name, FieldPath())


def _qualified_name_errors(name: str, path: FieldPath) -> list[FieldError]:
    parts = name.split("/")
    if len(parts) == 1:
        return validate_c_identifier(name, path)
    if len(parts) > 2:
        return []  # upstream checks one- and two-part names only (a TODO in its source)
    domain, ident = parts
    errs: list[FieldError] = []
    if not domain:
        errs.append(invalid(path, "", "the domain must not be empty"))
    else:
        errs.extend(validate_driver_name(domain, path))  # upstream checks the domain as a driver name
    if not ident:
        errs.append(invalid(path, "", "the name must not be empty"))
    else:
        errs.extend(validate_c_identifier(ident, path))
    return errs


def validate_fully_qualified_name(name: str, path: FieldPath) -> list[FieldError]:
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(
            invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")
        )
    return errs


def truncate_key(key: str, max_len: int = KEY_TRUNCATE) -> str:
    """Shorten a long map key in the middle for a field path, as upstream does: by bytes (a cut
    through a character leaves U+FFFD, as Go's JSON encoder prints the broken bytes)."""
    max_len = max(max_len, 16)
    if byte_len(key) <= max_len:
        return key
    rest = max_len - 3
    b = key.encode("utf-8", "surrogatepass")
    return (b[: (rest + 1) // 2] + b"..." + b[len(b) - rest // 2 :]).decode("utf-8", "replace")


def validate_map(
    value: Any,
    path: FieldPath,
    max_size: int,
    key_fn: Callable[[str, FieldPath], list[FieldError]],
    item_fn: Callable[[Any, FieldPath], list[FieldError]],
    truncate: int = KEY_TRUNCATE,
    item_ok: Callable[[Any], bool] | None = None,
) -> list[FieldError]:
    """Upstream ``validateMap``: TooMany short-circuits; key errors on the map path.

    ``item_ok`` is an optional cheap test for items that certainly pass ``item_fn``; their
    keyed path is then never built.
    """
    errs: list[FieldError] = []
    m = as_object(value, path, errs)
    if m is None:
        return errs
    if max_size >= 0 and len(m) > max_size:
        return [too_many(path, len(m), max_size)]
    for key, item in m.items():
        errs.extend(key_fn(key, path))
        if item_ok is None or not item_ok(item):
            errs.extend(item_fn(item, path.key(truncate_key(key, truncate))))
    return errs


# --- node selectors (core ValidateNodeSelector) ----------------------------------------------

_NS_OPS_VALUES = ("In", "NotIn")
_NS_OPS_NO_VALUES = ("Exists", "DoesNotExist")
_NS_OPS_ONE_VALUE = ("Gt", "Lt")


def validate_node_selector(value: Any, path: FieldPath) -> list[FieldError]:
    """``spec.nodeSelector`` / per-device ``nodeSelector``: terms required, each requirement valid."""
    errs: list[FieldError] = []
    sel = as_object(value, path, errs)
    if sel is None:
        return errs
    terms_path = path.child("nodeSelectorTerms")
    terms = as_list(sel.get("nodeSelectorTerms"), terms_path, errs)
    if errs:
        return errs
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    for i, term in enumerate(terms):
        tp = terms_path.index(i)
        t = as_object(term, tp, errs)
        if t is None:
            continue
        exprs = as_list(t.get("matchExpressions"), tp.child("matchExpressions"), errs) or []
        for j, req in enumerate(exprs):
            errs.extend(_node_selector_requirement(req, tp.child("matchExpressions").index(j)))
        fields = as_list(t.get("matchFields"), tp.child("matchFields"), errs) or []
        for j, req in enumerate(fields):
            errs.extend(_node_field_requirement(req, tp.child("matchFields").index(j)))
    return errs


def _requirement_parts(req: Any, path: FieldPath, errs: list[FieldError]) -> tuple[Any, Any, list[Any]]:
    r = as_object(req, path, errs)
    if r is None:
        return None, None, []
    values = as_list(r.get("values"), path.child("values"), errs) or []
    return r.get("key"), r.get("operator"), values


def _node_selector_requirement(req: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    key, op, values = _requirement_parts(req, path, errs)
    if errs:
        return errs
    if op in _NS_OPS_VALUES:
        if not values:
            errs.append(
                required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif op in _NS_OPS_NO_VALUES:
        if values:
            errs.append(
                forbidden(
                    path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
    elif op in _NS_OPS_ONE_VALUE:
        if len(values) != 1:
            errs.append(
                required(
                    path.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errs.append(
            invalid(
                path.child("operator"), shown(op) if op is not None else "", "not a valid selector operator"
            )
        )
    errs.extend(validate_label_name(key, path.child("key")))
    for i, v in enumerate(values):
        vp = path.child("values").index(i)
        if not isinstance(v, str):
            errs.append(type_error(vp, v, "string"))
        else:
            errs.extend(validate_label_value(v, vp))
    return errs


def _node_field_requirement(req: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    key, op, values = _requirement_parts(req, path, errs)
    if errs:
        return errs
    if op in _NS_OPS_VALUES:
        if len(values) != 1:
            errs.append(
                required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errs.append(
            invalid(
                path.child("operator"), shown(op) if op is not None else "", "not a valid selector operator"
            )
        )
    if key != "metadata.name":
        errs.append(
            invalid(
                path.child("key"), shown(key) if key is not None else "", "not a valid field selector key"
            )
        )
    else:
        for i, v in enumerate(values):
            vp = path.child("values").index(i)
            if not isinstance(v, str):
                errs.append(type_error(vp, v, "string"))
            else:
                errs.extend(validate_node_name(v, vp))
    return errs


def not_supported_value(path: FieldPath, value: Any, supported: list[str]) -> FieldError:
    return not_supported(path, shown(value), supported)


def semantic_equal(a: Any, b: Any) -> bool:
    """Upstream ``Semantic.DeepEqual`` for decoded JSON: quantities compare by value, so
    ``"1Gi"`` equals ``"1073741824"``; ``null`` equals an absent key."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k, v in a.items() if v is not None} | {k for k, v in b.items() if v is not None}
        return all(semantic_equal(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(semantic_equal(x, y) for x, y in zip(a, b, strict=True))
    if a == b and type(a) is type(b):
        return True
    if (
        isinstance(a, (str, int))
        and isinstance(b, (str, int))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        qa, qb = try_parse(a), try_parse(b)
        return qa is not None and qb is not None and qa == qb
    return False


def validate_resource_fully_qualified_name(name: str, path: FieldPath) -> list[FieldError]:
    """Upstream's declarative ``k8s-resource-fully-qualified-name`` format (ResourceSlice and
    claim fields alike): like the handwritten check above, but the domain is a DNS subdomain as
    written (not lower-cased), its errors prefixed ``prefix:``."""
    parts = name.split("/")
    errs: list[FieldError] = []
    if len(parts) == 1:
        errs += validate_c_identifier(name, path)
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            errs.append(invalid(path, "", "prefix must not be empty"))
        else:
            if byte_len(domain) > DEVICE_DOMAIN_MAX:
                errs.append(too_long(path, DEVICE_DOMAIN_MAX))
            errs += [invalid(path, domain, "prefix: " + m) for m in is_dns1123_subdomain(domain)]
        errs += validate_c_identifier(ident, path) if ident else [invalid(path, "", "name must not be empty")]
    if "/" not in name:
        errs.append(invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return errs
