"""Name checks shared by every kind: DNS labels and subdomains, qualified names, label values.

Each ``is_*`` returns a list of upstream message texts (empty = valid), like
``k8s.io/apimachinery/pkg/util/validation``; ``validate_*`` turns them into field errors.
"""

from __future__ import annotations

import re
import uuid
from functools import lru_cache
from typing import Any, TypeGuard

from webhook.fielderrors import FieldError, FieldPath, invalid, required, too_long
from webhook.rules.shape import type_error

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
C_IDENTIFIER_MAX = 32  # DRA attribute and capacity identifiers

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(_LABEL_FMT + r"\Z")
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT + r"\Z")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(_QNAME_FMT + r"\Z")
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_C_ID_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_ID_RE = re.compile(_C_ID_FMT + r"\Z")
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def _regex_msg(what: str, fmt: str, examples: tuple[str, ...]) -> str:
    ex = ",  or ".join(f"'{e}'" for e in examples)
    return f"{what} (e.g. {ex}, regex used for validation is '{fmt}')"


LABEL_MSG = _regex_msg(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character", _LABEL_FMT, ("my-name", "123-abc"))
SUBDOMAIN_MSG = _regex_msg(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character", _SUBDOMAIN_FMT, ("example.com",))
QNAME_MSG = _regex_msg(
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character", _QNAME_FMT, ("MyName", "my.name", "123-abc"))
LABEL_VALUE_MSG = _regex_msg(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character", _LABEL_VALUE_FMT,
    ("MyValue", "my_value", "12345"))
C_ID_MSG = _regex_msg(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'", _C_ID_FMT, ("my_name", "MY_NAME", "MyName"))


def max_len_msg(n: int) -> str:
    return f"must be no more than {n} bytes"


def byte_len(v: str) -> int:
    """Go's len() of a string: its UTF-8 bytes (every length limit of upstream counts bytes)."""
    return len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass"))


def is_label(value: Any) -> TypeGuard[str]:
    """A string ``is_dns1123_label`` finds nothing in, told without building messages (what the
    regex matches is ASCII, so its characters are its bytes)."""
    return type(value) is str and len(value) <= DNS1123_LABEL_MAX and _LABEL_RE.match(value) is not None


def is_subdomain(value: Any) -> TypeGuard[str]:
    """A string ``is_dns1123_subdomain`` finds nothing in, told without building messages (cached:
    class names repeat, and the regex is the slow part)."""
    return type(value) is str and len(value) <= DNS1123_SUBDOMAIN_MAX and _matches_subdomain(value)


@lru_cache(maxsize=4096)
def _matches_subdomain(value: str) -> bool:
    return _SUBDOMAIN_RE.match(value) is not None


def is_dns1123_label(v: str) -> list[str]:
    errs = []
    if byte_len(v) > DNS1123_LABEL_MAX:
        errs.append(max_len_msg(DNS1123_LABEL_MAX))
    if not _LABEL_RE.match(v):
        errs.append("must not contain dots" if _SUBDOMAIN_RE.match(v) else LABEL_MSG)
    return errs


def is_dns1123_subdomain(v: str) -> list[str]:
    errs = []
    if byte_len(v) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_msg(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.match(v):
        errs.append(SUBDOMAIN_MSG)
    return errs


def is_qualified_name(v: str) -> list[str]:
    """Label-key syntax: ``[prefix/]name`` with a DNS-subdomain prefix (apimachinery's IsLabelKey)."""
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs = ["prefix part must be non-empty"]
        else:
            errs = ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return ["a valid label key " + _regex_msg(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character", _QNAME_FMT, ("MyName", "my.name", "123-abc"))
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif byte_len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_msg(QUALIFIED_NAME_MAX))
    if not _QNAME_RE.match(name):
        errs.append(QNAME_MSG)
    return errs


def is_label_value(v: str) -> list[str]:
    errs = []
    if byte_len(v) > LABEL_VALUE_MAX:
        errs.append(max_len_msg(LABEL_VALUE_MAX))
    if v and not _QNAME_RE.match(v):
        errs.append(LABEL_VALUE_MSG)
    return errs


def is_c_identifier(v: str) -> list[str]:
    return [] if _C_ID_RE.match(v) else [C_ID_MSG]


def is_uuid(v: str) -> bool:
    """RFC 4122 in the lower-case 36-character form the apiserver requires for UIDs."""
    if not _UUID_RE.match(v):
        return False
    try:
        uuid.UUID(v)
    except ValueError:  # pragma: no cover - the regex already guarantees the shape
        return False
    return True


def is_path_segment_name(v: str) -> list[str]:
    """Names that must be usable as one URL path segment (no ``/``, ``%``, ``.``, ``..``)."""
    if v in (".", ".."):
        return [f"may not be '{v}'"]
    return is_path_segment_prefix(v)


def is_path_segment_prefix(v: str) -> list[str]:
    """The start of such a name (a suffix may still make "." valid): no ``/`` and no ``%``."""
    return [f"may not contain '{c}'" for c in ("/", "%") if c in v]


# --- field-error forms ---------------------------------------------------------------------


def validate_required_name(value: Any, path: FieldPath,
                           check: Any = is_dns1123_label) -> list[FieldError]:
    """Required when empty; otherwise one Invalid error per failed ``check`` message."""
    if value is None or value == "":
        return [required(path)]
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return [invalid(path, value, m) for m in check(value)]


def validate_name_list(value: Any, path: FieldPath, check: Any = is_dns1123_label) -> list[FieldError]:
    """Invalid per failed message; empty string is just invalid (no Required)."""
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return [invalid(path, value, m) for m in check(value)]


def validate_csi_driver_name(value: Any, path: FieldPath) -> list[FieldError]:
    """Driver names: required, ≤ 63 chars, lower-cased value must be a DNS subdomain."""
    if value is None or value == "":
        return [required(path)]
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    if len(value) > 63:
        return [too_long(path, 63)]
    return [invalid(path, value, m) for m in is_dns1123_subdomain(value.lower())]
