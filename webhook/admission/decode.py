"""The apiserver's decoding step, for objects that reach us without an apiserver (`review`).

Before defaulting, admission and validation, the apiserver decodes a body into its Go type, and
`kubectl` asks for strict field validation. A body it cannot decode is refused with HTTP 400
(`<Kind> in version "v1" cannot be handled as a <Kind>: ...`) and no field causes:

- a JSON value of the wrong type (a string where a list belongs, 1.5 for an integer),
- a malformed quantity or timestamp,
- then, under strict field validation, every unknown field (`strict decoding error: unknown
  field "spec.spec"`; names are case-sensitive).

The field tree is `schemas/decode.json`, generated from the real 1.37 apiserver's OpenAPI
(`tests/differential/decode_schema.py`, checked against a live apiserver by the differential
tests). Pure and stdlib-only apart from our quantity parser; objects that arrive through the
apiserver were decoded there already, so the webhook server never needs this.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from webhook.quantity import try_parse

MAX_PROBLEMS = 20
#: Unknown fields that are an earlier version's spelling of a served field: what to write instead.
EARLIER_SPELLINGS = {
    ("PodGroup", "spec.podGroupTemplateRef"): (
        "spec.podGroupTemplateRef is the v1alpha2 spelling: scheduling.k8s.io/v1beta1 has "
        "spec.workloadRef {workloadName, templateName}"),
}
_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


@dataclass(frozen=True, slots=True)
class DecodeError:
    """Why the apiserver would refuse to decode an object (HTTP 400 BadRequest)."""

    kind: str
    version: str
    problems: tuple[str, ...]
    strict: bool
    """True when only unknown fields are wrong (the strict field validation step)."""

    @property
    def hints(self) -> tuple[str, ...]:
        """What to write instead, for unknown fields that are an earlier API version's spelling."""
        return tuple(h for p in self.problems if (h := EARLIER_SPELLINGS.get((self.kind, _quoted(p)))))

    @property
    def message(self) -> str:
        head = f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: '
        if self.strict:
            return head + "strict decoding error: " + ", ".join(self.problems)
        return head + "; ".join(self.problems)


def _quoted(problem: str) -> str:
    """The field named in an ``unknown field "x"`` problem ("" for other problems)."""
    head, _, rest = problem.partition('"')
    return rest.rstrip('"') if head == "unknown field " else ""


@functools.cache
def _schema() -> dict[str, Any]:
    text = resources.files("webhook").joinpath("schemas/decode.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def decodable_kinds() -> frozenset[str]:
    """``group/version/Kind`` of every kind the decode step knows."""
    return frozenset(_schema()["kinds"])


def check(obj: Any) -> DecodeError | None:
    """None when the apiserver would decode ``obj`` (a served kind we know); else why not."""
    if not isinstance(obj, dict):
        return None
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    kind = str(obj.get("kind", ""))
    root = _schema()["kinds"].get(f"{group}/{version}/{kind}")
    if root is None:
        return None
    walker = _Walker(_schema()["defs"])
    walker.value(obj, {"ref": root}, "")
    if walker.type_errors:
        return DecodeError(kind, version, tuple(walker.type_errors[:MAX_PROBLEMS]), strict=False)
    if walker.unknown:
        return DecodeError(kind, version, tuple(f'unknown field "{p}"' for p in walker.unknown[:MAX_PROBLEMS]),
                           strict=True)
    return None


class _Walker:
    """One pass over an object against the field tree, collecting what Go's decoder rejects."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.type_errors: list[str] = []
        self.unknown: list[str] = []

    def value(self, v: Any, node: dict[str, Any], path: str) -> None:
        while "ref" in node:
            node = self.defs[node["ref"]]
        if v is None:
            return  # null decodes to the zero value of any type
        t = node["t"]
        check = _SCALARS.get(t)
        if check is not None:
            if not check(v):
                self._wrong(v, t, path)
            return
        if t == "object":
            if not isinstance(v, dict):
                return self._wrong(v, "object", path)
            fields = node["f"]
            for k, sub in v.items():
                key = str(k)
                child = f"{path}.{key}" if path else key
                if key in fields:
                    self.value(sub, fields[key], child)
                else:
                    self.unknown.append(child)
        elif t == "map":
            if not isinstance(v, dict):
                return self._wrong(v, "map", path)
            for k, sub in v.items():
                self.value(sub, node["v"], f"{path}[{k}]")
        elif t == "array":
            if not isinstance(v, list):
                return self._wrong(v, "list", path)
            for i, sub in enumerate(v):
                self.value(sub, node["i"], f"{path}[{i}]")
        return None

    def _wrong(self, v: Any, want: str, path: str) -> None:
        got = _JSON_TYPE.get(type(v), type(v).__name__)
        if want == "quantity" and isinstance(v, str):
            self.type_errors.append(f"{path or 'object'}: quantities must match the regular expression "
                                    r"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got {v!r})"[:300])
        elif want == "time" and isinstance(v, str):
            self.type_errors.append(f"{path}: {v!r} is not an RFC 3339 time"[:300])
        else:
            article = "an" if want[0] in "aeiou" else "a"
            self.type_errors.append(f"{path or 'object'}: cannot decode a JSON {got} as {article} {want}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_quantity(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        v = json.dumps(v)
    return isinstance(v, str) and try_parse(v.strip()) is not None


def _is_time(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in v


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_int_or_string(v: Any) -> bool:
    return _is_int(v) or isinstance(v, str)


def _anything(v: Any) -> bool:
    return True


_SCALARS: dict[str, Callable[[Any], bool]] = {
    "string": _is_str,
    "integer": _is_int,
    "number": _is_number,
    "boolean": _is_bool,
    "quantity": _is_quantity,
    "time": _is_time,
    "int-or-string": _is_int_or_string,
    "any": _anything,
}
