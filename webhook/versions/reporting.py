"""Where the 1.37 apiserver reports a v1beta1 object's errors, and where a v1 patch lands in it.

The apiserver validates a v1beta1 object twice, and the two answers use different paths:

- by hand, on its internal object, which has v1's shape: ``spec.devices[0].taints[0].key``,
  ``spec.devices.requests[0].exactly.count`` — whatever version the request came in;
- declaratively, from the ``+k8s:`` tags of the v1beta1 types, on the object converted back to
  v1beta1: ``spec.devices[0].basic.taints[0].effect``, ``spec.devices.requests[0].allocationMode``.

Where both check the same thing, the tag's error replaces the handwritten one (1.37's beta tags
filter the handwritten errors they cover). Our rules mark their declarative errors, and keep the
declarative errors a merge left out on the handwritten error that has their field and type
(``FieldError.declarative``, ``.shadows``); those move to the v1beta1 path. Two tables say the
rest, read from v1beta1's generated declarative validation: ``DECLARATIVE``, the handwritten
errors of ours that the apiserver reports through a tag (the same check, so only the tag's error
is shown), and ``COVERED``, the handwritten errors a tag filters when it fires on the same field
with its own words. Both speak of the two subtrees whose shape differs (a slice device's
``basic``, a request's flattened ``exactly``); every other error keeps its v1 path. The
differential tests check this against the real apiserver, and that every entry is met.
Patches need no such choice: a field is at one place in each version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from webhook.fielderrors import ErrorType, FieldError
from webhook.versions import v1beta1 as shape


@dataclass(frozen=True, slots=True)
class Tag:
    """One check of a v1beta1 tag, by the handwritten errors of ours it corresponds to."""

    path: str
    """Regular expression for the path inside a device below ``basic``, or inside a request
    below ``exactly``."""
    type: ErrorType
    detail: str = ""
    """Regular expression the detail must match, where a handwritten check reports the same
    field and type for another reason."""
    nonempty: bool = False
    """The tag's field is optional: it skips an empty value (the handwritten check does not)."""

    def matches(self, rest: str, e: FieldError) -> bool:
        return (e.type is self.type and re.fullmatch(self.path, rest) is not None
                and re.match(self.detail, e.detail) is not None
                and not (self.nonempty and e.value == ""))


E = ErrorType
_IDX = r"\[\d+\]"
_KEY = r"\[[^\]]*\]"

#: Handwritten errors of ours that the apiserver reports through a v1beta1 tag, at its path.
DECLARATIVE: dict[str, tuple[Tag, ...]] = {
    "device": (
        Tag("consumesCounters", E.TOO_MANY),
        Tag(rf"consumesCounters{_IDX}", E.DUPLICATE),
        Tag(rf"consumesCounters{_IDX}\.counterSet", E.REQUIRED),
        Tag(rf"consumesCounters{_IDX}\.counterSet", E.INVALID),
        Tag(rf"consumesCounters{_IDX}\.counters", E.REQUIRED),
        Tag(rf"consumesCounters{_IDX}\.counters", E.INVALID),
        Tag(rf"taints{_IDX}\.effect", E.REQUIRED),
        Tag(rf"taints{_IDX}\.effect", E.NOT_SUPPORTED),
        Tag("bindingConditions", E.TOO_MANY),
        Tag("bindingFailureConditions", E.TOO_MANY),
    ),
    "request": (
        Tag("selectors", E.TOO_MANY),
        Tag("allocationMode", E.NOT_SUPPORTED, nonempty=True),
        Tag(rf"tolerations{_IDX}\.key", E.INVALID),
        Tag(rf"tolerations{_IDX}\.operator", E.NOT_SUPPORTED),
        Tag(rf"tolerations{_IDX}\.effect", E.NOT_SUPPORTED, nonempty=True),
    ),
}
#: Handwritten errors of ours that a v1beta1 tag replaces when it fires on the same field.
COVERED: dict[str, tuple[Tag, ...]] = {
    "device": (Tag(rf"attributes{_KEY}", E.INVALID, detail="exactly one value must be specified"),),
    "request": (),
}

_BASIC = "|".join(shape.BASIC)
_EXACTLY = "|".join(shape.EXACTLY)
#: kind -> (v1 field path prefix of a moved subtree, which table, its v1beta1 spelling).
_FIELD_PREFIXES: dict[str, tuple[re.Pattern[str], str, str]] = {
    "ResourceSlice": (re.compile(rf"^(spec\.devices\[\d+\]\.)(?=(?:{_BASIC})(?:$|[.\[]))"), "device",
                      r"\1basic."),
    "ResourceClaim": (re.compile(rf"^(spec\.devices\.requests\[\d+\]\.)exactly\.(?=(?:{_EXACTLY})(?:$|[.\[]))"),
                      "request", r"\1"),
    "ResourceClaimTemplate": (re.compile(rf"^(spec\.spec\.devices\.requests\[\d+\]\.)exactly\."
                                         rf"(?=(?:{_EXACTLY})(?:$|[.\[]))"), "request", r"\1"),
}
_POINTER_PREFIXES: dict[str, tuple[re.Pattern[str], str]] = {
    "ResourceSlice": (re.compile(rf"^(/spec/devices/\d+/)(?=(?:{_BASIC})(?:$|/))"), r"\1basic/"),
    "ResourceClaim": (re.compile(rf"^(/spec/devices/requests/\d+/)exactly/(?=(?:{_EXACTLY})(?:$|/))"), r"\1"),
    "ResourceClaimTemplate": (re.compile(rf"^(/spec/spec/devices/requests/\d+/)exactly/(?=(?:{_EXACTLY})(?:$|/))"),
                              r"\1"),
}


def field_path(kind: str, path: str) -> str:
    """The v1beta1 spelling of a v1 field path (the same field; unchanged outside the moved subtrees)."""
    found = _FIELD_PREFIXES.get(kind)
    return found[0].sub(found[2], path, count=1) if found else path


def tag_of(kind: str, e: FieldError, table: dict[str, tuple[Tag, ...]] = DECLARATIVE) -> Tag | None:
    """The entry of ``table`` a handwritten error (found on the v1 object) meets, if any."""
    found = _FIELD_PREFIXES.get(kind)
    m = found[0].match(e.field) if found else None
    if found is None or m is None:
        return None
    return next((t for t in table[found[1]] if t.matches(e.field[m.end():], e)), None)


def report(kind: str, errors: list[FieldError]) -> list[FieldError]:
    """``errors`` (found on the v1 object) as the apiserver reports them for a v1beta1 request."""
    if kind not in _FIELD_PREFIXES:
        return errors
    out: list[FieldError] = []

    def add(e: FieldError) -> None:
        if e not in out:
            out.append(e)

    for e in errors:
        twins = [d for d in e.shadows if field_path(kind, d.field) != d.field]
        if not (twins and tag_of(kind, e, COVERED)):
            moves = e.declarative or tag_of(kind, e) is not None
            add(replace(e, field=field_path(kind, e.field)) if moves else e)
        for d in twins:
            add(replace(d, field=field_path(kind, d.field)))
    return out


# --- patches -----------------------------------------------------------------------------------

class Untranslatable(ValueError):
    """A v1 patch operation with no single v1beta1 counterpart (e.g. one that sets ``exactly``)."""


def pointer(kind: str, ptr: str) -> str:
    """The v1beta1 JSON pointer of a v1 one."""
    found = _POINTER_PREFIXES.get(kind)
    if found is None:
        return ptr
    out = found[0].sub(found[1], ptr, count=1)
    if kind != "ResourceSlice" and re.search(r"/requests/\d+/exactly$", ptr):
        raise Untranslatable(f"{ptr}: v1beta1 has no exactly")
    return out


def _value_converters(kind: str) -> dict[tuple[str, ...], Callable[[Any], Any]]:
    """Pointer tokens (list indexes as ``#``) -> the converter of a value written there: a
    device or a request, and each container above one, takes the v1beta1 shape; a value below
    them is the same JSON in both versions."""
    def each(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda v: [convert(x) for x in v] if isinstance(v, list) else v

    def devices_of(v: Any) -> Any:
        return shape.claim_spec_from_v1({"devices": v})["devices"] if isinstance(v, dict) else v

    if kind == "ResourceSlice":
        return {("spec",): lambda v: shape.slice_spec_from_v1(v) if isinstance(v, dict) else v,
                ("spec", "devices"): each(shape.device_from_v1), ("spec", "devices", "#"): shape.device_from_v1}
    base = ("spec", "spec") if kind == "ResourceClaimTemplate" else ("spec",)
    out: dict[tuple[str, ...], Callable[[Any], Any]] = {
        (*base, "devices"): devices_of,
        (*base, "devices", "requests"): each(shape.request_from_v1),
        (*base, "devices", "requests", "#"): shape.request_from_v1,
        base: lambda v: shape.claim_spec_from_v1(v) if isinstance(v, dict) else v,
    }
    if kind == "ResourceClaimTemplate":
        out[("spec",)] = lambda v: ({**v, "spec": shape.claim_spec_from_v1(v["spec"])}
                                    if isinstance(v, dict) and isinstance(v.get("spec"), dict) else v)
    return out


def patch(kind: str, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A v1 JSON Patch, rewritten to apply to the v1beta1 object the v1 one was converted from.

    Raises ``Untranslatable`` for an operation with no v1beta1 counterpart.
    """
    converters = _value_converters(kind)
    out = []
    for op in ops:
        new = {**op, "path": pointer(kind, op["path"])}
        if "value" in op:
            tokens = tuple("#" if t.isdigit() else t for t in op["path"].split("/")[1:])
            if not tokens:
                new["value"] = shape.from_v1(op["value"]) if isinstance(op["value"], dict) else op["value"]
            elif (convert := converters.get(tokens)) is not None:
                new["value"] = convert(op["value"])
        out.append(new)
    return out


def warning(kind: str, text: str) -> str:
    """A warning of ours with the v1 field paths in it spelt as in v1beta1."""
    found = _FIELD_PREFIXES.get(kind)
    if found is None:
        return text
    return re.sub(r"spec\.[^\s,;()]*", lambda m: field_path(kind, m.group(0)), text)
