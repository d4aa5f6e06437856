"""Name formats of the claims kinds, as the handwritten rules and the declarative tags each check them.

The two passes disagree on details the union of their errors keeps: the handwritten check of a
fully qualified name lower-cases its domain (it reuses the driver-name rule), the tag's does not;
neither looks at a name with two slashes. Pure; message texts are upstream's.
"""

from __future__ import annotations

from webhook.fielderrors import FieldError, FieldPath, invalid, required, too_long
from webhook.rules.names import byte_len, is_dns1123_subdomain, is_qualified_name
from webhook.rules.slices import common as slice_common


def dns1123_subdomain(value: str) -> list[str]:
    return is_dns1123_subdomain(value)


def label_key(value: str) -> list[str]:
    """A label key (``[prefix/]name``), as tolerations' keys and binding conditions are."""
    return is_qualified_name(value)


def fully_qualified_name(name: str, path: FieldPath) -> list[FieldError]:
    """The declarative ``k8s-resource-fully-qualified-name`` format: ``domain/identifier`` with a
    DNS-subdomain domain (as written) of at most 63 bytes and a C identifier of at most 32."""
    return slice_common.validate_resource_fully_qualified_name(name, path)


def fully_qualified_name_by_hand(name: str, path: FieldPath) -> list[FieldError]:
    """``validateFullyQualifiedName``: the same, but the domain is a driver name (lower-cased first)."""
    return slice_common.validate_fully_qualified_name(name, path)


def extended_resource_name(name: str, path: FieldPath) -> list[FieldError]:
    """A DeviceClass's ``extendedResourceName``: ``domain/name`` outside ``kubernetes.io/``, not
    starting with ``requests.``, and ``requests.<name>`` a valid label key (for quota)."""
    errs: list[FieldError] = []
    if "/" not in name:
        errs.append(invalid(path, name, "a name must be a domain-prefixed path, such as 'example.com/my-prop'"))
    elif "kubernetes.io/" in name:
        errs.append(invalid(path, name, 'must not have "kubernetes.io/" domain'))
    if name.startswith("requests."):
        errs.append(invalid(path, name, 'must not have "requests." prefix'))
    return errs + [invalid(path, name, m) for m in is_qualified_name("requests." + name)]


def is_lower_uuid(value: str) -> bool:
    """The declarative ``k8s-uuid`` format: 36 characters, lower-case hex in 8-4-4-4-12 groups."""
    return len(value) == 36 and all(
        (c == "-") if i in (8, 13, 18, 23) else (c in "0123456789abcdef") for i, c in enumerate(value))


def pool_name(name: str, path: FieldPath) -> list[FieldError]:
    """The declarative ``k8s-resource-pool-name`` format (required first): at most 253 bytes,
    '/'-separated segments, none empty, each a DNS subdomain."""
    if not name:
        return [required(path)]
    errs = [too_long(path, 253)] if byte_len(name) > 253 else []
    for i, part in enumerate(name.split("/")):
        if not part:
            errs.append(invalid(path, name, f"segment {i}: must not be empty"))
        else:
            errs += [invalid(path, part, f"segment {i}: " + m) for m in is_dns1123_subdomain(part)]
    return errs
