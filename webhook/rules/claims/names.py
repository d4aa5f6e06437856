"""Name formats of the claims kinds, as the handwritten rules and the declarative tags each check them.

The two passes disagree on details the union of their errors keeps: the handwritten check of a
fully qualified name lower-cases its domain (it reuses the driver-name rule), the tag's does not;
neither looks at a name with two slashes. Pure; message texts are upstream's.
"""

from __future__ import annotations

from webhook.fielderrors import FieldError, FieldPath, invalid, required, too_long
from webhook.rules.names import C_IDENTIFIER_MAX, is_c_identifier, is_dns1123_subdomain, is_qualified_name

DOMAIN_MAX = 63
FQN_MSG = "a fully qualified name must be a domain and a name separated by a slash"


def dns1123_subdomain(value: str) -> list[str]:
    return is_dns1123_subdomain(value)


def label_key(value: str) -> list[str]:
    """A label key (``[prefix/]name``), as tolerations' keys and binding conditions are."""
    return is_qualified_name(value)


def _identifier(ident: str, path: FieldPath) -> list[FieldError]:
    errs = [too_long(path, C_IDENTIFIER_MAX)] if len(ident) > C_IDENTIFIER_MAX else []
    return errs + [invalid(path, ident, m) for m in is_c_identifier(ident)]


def fully_qualified_name(name: str, path: FieldPath) -> list[FieldError]:
    """The declarative ``k8s-resource-fully-qualified-name`` format: ``domain/identifier`` with a
    lower-case DNS-subdomain domain of at most 63 bytes and a C identifier of at most 32."""
    parts = name.split("/")
    errs: list[FieldError] = []
    if len(parts) == 1:
        errs += _identifier(name, path)
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            errs.append(invalid(path, "", "prefix must not be empty"))
        else:
            errs += [too_long(path, DOMAIN_MAX)] if len(domain) > DOMAIN_MAX else []
            errs += [invalid(path, domain, "prefix: " + m) for m in is_dns1123_subdomain(domain)]
        errs += [invalid(path, "", "name must not be empty")] if not ident else _identifier(ident, path)
    if "/" not in name:
        errs.append(invalid(path, name, FQN_MSG))
    return errs


def fully_qualified_name_by_hand(name: str, path: FieldPath) -> list[FieldError]:
    """``validateFullyQualifiedName``: the same, but the domain is a driver name (lower-cased first)."""
    parts = name.split("/")
    errs: list[FieldError] = []
    if len(parts) == 1:
        errs += _identifier(name, path)
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            errs.append(invalid(path, "", "the domain must not be empty"))
        else:
            errs += [too_long(path, DOMAIN_MAX)] if len(domain) > DOMAIN_MAX else []
            errs += [invalid(path, domain, m) for m in is_dns1123_subdomain(domain.lower())]
        errs += [invalid(path, "", "the name must not be empty")] if not ident else _identifier(ident, path)
    if "/" not in name:
        errs.append(invalid(path, name, FQN_MSG))
    return errs


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
    errs = [too_long(path, 253)] if len(name) > 253 else []
    for i, part in enumerate(name.split("/")):
        if not part:
            errs.append(invalid(path, name, f"segment {i}: must not be empty"))
        else:
            errs += [invalid(path, part, f"segment {i}: " + m) for m in is_dns1123_subdomain(part)]
    return errs
