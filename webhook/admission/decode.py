"""The apiserver's decoding step, for objects that reach us without an apiserver (`review`).

Before defaulting, admission and validation, the apiserver decodes a body into its Go type, and
`kubectl` asks for strict field validation. A body it cannot decode is refused with HTTP 400
(`<Kind> in version "v1" cannot be handled as a <Kind>: ...`) and no field causes:

- a JSON value of the wrong type (a string where a list belongs, 1.5 for an integer),
- a malformed quantity or timestamp,
- then, under strict field validation, every unknown field (`strict decoding error: unknown
  field "spec.spec"`; names are case-sensitive).

What it decodes, it holds as Go values: a JSON ``null`` in a list or as a map value becomes the
zero value of the item's type (an empty struct, ``""``, ``0``, a zero quantity), which the
apiserver then defaults and validates like any other item (``devices: [null]`` is a device named
``""``; ``tolerations: [null]`` is stored as ``[{operator: Equal}]``). ``decode`` returns the
object in that form, so every rule sees what the apiserver's rules see; the one place that knows
the zero values is ``_ZEROS``. A ``null`` member of an object stays as it is: it means "absent"
to Go and to our rules alike.

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
class Decoded:
    """The outcome of the decode step for one object."""

    obj: Any
    """The object as the apiserver holds it after decoding: null list items and map values
    replaced by zero values (``obj`` itself when there were none; the input is never changed)."""
    failure: DecodeFailure | None
    """Why the apiserver would refuse the body (HTTP 400); None when it decodes."""


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Why the apiserver would refuse to decode an object (HTTP 400 BadRequest): a value the
    caller reports, never raised."""

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


def check(obj: Any) -> DecodeFailure | None:
    """None when the apiserver would decode ``obj`` (a served kind we know); else why not."""
    return decode(obj).failure


def decode(obj: Any) -> Decoded:
    """``obj`` as the apiserver decodes it (see the module docstring), or why it would not.

    Objects of kinds and versions we have no field tree for come back as they are.
    """
    if not isinstance(obj, dict):
        return Decoded(obj, None)
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    kind = str(obj.get("kind", ""))
    root = _schema()["kinds"].get(f"{group}/{version}/{kind}")
    if root is None:
        return Decoded(obj, None)
    walker = _Walker(_schema()["defs"])
    held = walker.value(obj, {"ref": root}, "")
    if walker.type_errors:
        return Decoded(obj, DecodeFailure(kind, version, tuple(walker.type_errors[:MAX_PROBLEMS]), strict=False))
    if walker.unknown:
        return Decoded(obj, DecodeFailure(kind, version, tuple(f'unknown field "{p}"'
                                                             for p in walker.unknown[:MAX_PROBLEMS]), strict=True))
    return Decoded(held, None)


class _Walker:
    """One pass over an object against the field tree, collecting what Go's decoder rejects and
    returning the value as Go holds it (containers are copied only where an item changed)."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.type_errors: list[str] = []
        self.unknown: list[str] = []

    def _node(self, node: dict[str, Any]) -> dict[str, Any]:
        while "ref" in node:
            node = self.defs[node["ref"]]
        return node

    def item(self, v: Any, node: dict[str, Any], path: str) -> Any:
        """A list item or a map value: ``null`` there is the zero value of the item's type."""
        if v is None:
            return _zero(self._node(node))
        return self.value(v, node, path)

    def value(self, v: Any, node: dict[str, Any], path: str) -> Any:
        node = self._node(node)
        if v is None:
            return None  # a member set to null is absent (its zero value) for Go and for us
        t = node["t"]
        check = _SCALARS.get(t)
        if check is not None:
            if not check(v):
                self._wrong(v, t, path)
            return v
        if t == "object":
            if not isinstance(v, dict):
                self._wrong(v, "object", path)
                return v
            fields = node["f"]
            out = v
            for k, sub in v.items():
                key = str(k)
                child = f"{path}.{key}" if path else key
                if key in fields:
                    got = self.value(sub, fields[key], child)
                    if got is not sub:
                        out = out if out is not v else dict(v)
                        out[k] = got
                else:
                    self.unknown.append(child)
            return out
        if t == "map":
            if not isinstance(v, dict):
                self._wrong(v, "map", path)
                return v
            out = v
            for k, sub in v.items():
                got = self.item(sub, node["v"], f"{path}[{k}]")
                if got is not sub:
                    out = out if out is not v else dict(v)
                    out[k] = got
            return out
        if t == "array":
            if not isinstance(v, list):
                self._wrong(v, "list", path)
                return v
            items = v
            for i, sub in enumerate(v):
                got = self.item(sub, node["i"], f"{path}[{i}]")
                if got is not sub:
                    items = items if items is not v else list(v)
                    items[i] = got
            return items
        return v

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
    """A JSON integer Go decodes into an int64 (no field of our kinds is narrower)."""
    return isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63


def _is_quantity(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        v = json.dumps(v)
    return isinstance(v, str) and try_parse(v) is not None  # the parser trims what upstream trims


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


def _zero(node: dict[str, Any]) -> Any:
    """The JSON form of the Go zero value of a field-tree node (None where Go's is nil)."""
    t = node["t"]
    if t in ("object", "map"):
        return {}
    if t == "array":
        return []
    return _ZEROS.get(t)


_ZEROS: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False, "quantity": "0",
                          "int-or-string": 0}
"""Zero values of the scalar types; a time and an opaque value have none but null."""

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
