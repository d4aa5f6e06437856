"""Comparing our verdict with upstream's: what counts as the same answer.

- The verdict (allowed or denied) must be the same.
- When upstream denies in validation (422 Invalid), the sets of (field, reason) causes must be
  the same. When it refuses the body before validation (400: strict decoding, a wrong JSON
  type), only the verdict is compared: the apiserver gives no causes there.
- When both admit, the stored `spec` must be the same: our mutated object against the object the
  apiserver returns. Equal means equal after the apiserver's own encoding, which omits null, empty
  lists and empty maps, and prints quantities canonically; so those are compared by meaning.
  Fields set by admission plugins that need cluster lookups (`docs/upstream-differences.md`)
  are left out, and a refusal by such a plugin (HTTP 403: the Priority plugin's PriorityClass
  checks, the DRA plugin's node lookups) is not a verdict we can be compared on; nor is the
  router's refusal of a namespace that cannot be a URL path segment (HTTP 500, before decoding).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.differential.oracle import Verdict, is_path_refusal
from webhook.quantity import try_parse

#: Set by the Priority admission plugin from a PriorityClass lookup, which a webhook cannot do.
ADMISSION_SET = {"PodGroup": ("priority", "preemptionPolicy"), "Workload": ()}
#: Set by the apiserver itself when it stores the object (a clock, not a rule).
SERVER_SET = ("timeAdded",)
#: Go fields without `omitempty`: the apiserver always encodes them, zero or not.
ZERO_ENCODED = {"generation": 0}
#: Go integers with `omitempty`: the apiserver leaves out a zero (a condition's observedGeneration).
ZERO_OMITTED = ("observedGeneration",)


@dataclass
class Disagreement:
    """One case where we and upstream answer differently, with everything needed to reproduce it."""

    case: str
    profile: str
    what: str
    obj: Any
    ours: Verdict
    upstream: Verdict
    old: Any = None

    def __str__(self) -> str:
        def side(v: Verdict) -> str:
            return (f"allowed={v.allowed} code={v.code} causes={sorted(v.causes)}"
                    + (f" message={v.message[:300]!r}" if v.message else ""))
        lines = [f"[{self.profile}] {self.case}: {self.what}",
                 f"  ours:     {side(self.ours)}", f"  upstream: {side(self.upstream)}",
                 f"  object:   {json.dumps(self.obj)[:1500]}"]
        if self.old is not None:
            lines.append(f"  old:      {json.dumps(self.old)[:1500]}")
        return "\n".join(lines)


#: Go maps of strings: a null value decodes to "" (template labels and annotations).
STRING_MAPS = ("labels", "annotations")


def _prune(value: Any) -> Any:
    """Drop what the apiserver's JSON encoding omits (null, [], {} and "": a Go string has no
    absent value of its own), the zero values it always encodes, and what it sets itself: both
    sides then say the same thing the same way."""
    if isinstance(value, dict):
        # A string map keeps its entries whole: a label's "" value is a value.
        out = {k: _null_strings(v) if k in STRING_MAPS and isinstance(v, dict) else _prune(v)
               for k, v in value.items() if k not in SERVER_SET}
        return {k: v for k, v in out.items() if v not in (None, [], {}, "") and
                not (k in ZERO_ENCODED and v == ZERO_ENCODED[k] and type(v) is int) and
                not (k in ZERO_OMITTED and v == 0 and type(v) is int)}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _null_strings(m: Any) -> Any:
    return {k: "" if v is None else v for k, v in m.items()} if isinstance(m, dict) else m


def same_value(a: Any, b: Any) -> bool:
    """Deep equality, with quantities compared by value: strings, and a JSON number where the
    other side has the string the apiserver encodes it as (it decodes numbers as quantities)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, int | float) and not isinstance(b, bool) and isinstance(a, str):
        a, b = b, a
    if isinstance(a, str | int | float) and isinstance(b, str) and a != b and not isinstance(a, bool):
        qa, qb = try_parse(a), try_parse(b)
        if qa is None or qb is None:
            return False
        # The apiserver re-encodes what it admits: a decimal beyond E loses its exponent ("1").
        return qa.value == qb.value or try_parse(str(qa)) == qb
    return bool(a == b) and type(a) is type(b)


def _slice_encoded(spec: Any) -> Any:
    """A ResourceSlice spec as Go encodes it: the quantity `value` of a capacity or counter has
    no omitempty (a missing one is "0"), a taint's `value` string has (an empty one is gone)."""
    spec = json.loads(json.dumps(spec))
    devices = spec.get("devices") if isinstance(spec, dict) else None
    entries: list[Any] = []
    for d in devices if isinstance(devices, list) else []:
        if not isinstance(d, dict):
            continue
        entries += (d.get("capacity") or {}).values() if isinstance(d.get("capacity"), dict) else []
        for c in d.get("consumesCounters") or [] if isinstance(d.get("consumesCounters"), list) else []:
            if isinstance(c, dict) and isinstance(c.get("counters"), dict):
                entries += c["counters"].values()
        for t in d.get("taints") or [] if isinstance(d.get("taints"), list) else []:
            if isinstance(t, dict) and t.get("value") == "":
                del t["value"]
    for cs in spec.get("sharedCounters") or [] if isinstance(spec, dict) and isinstance(
            spec.get("sharedCounters"), list) else []:
        if isinstance(cs, dict) and isinstance(cs.get("counters"), dict):
            entries += cs["counters"].values()
    for e in entries:
        if isinstance(e, dict) and e.get("value") is None:
            e["value"] = "0"
    return spec


def stored_spec(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return None
    raw = obj.get("spec")
    spec = _prune(_slice_encoded(raw) if obj.get("kind") == "ResourceSlice" else raw)
    if spec == {}:
        return None  # a Go struct: an absent spec is encoded as {}
    if isinstance(spec, dict):
        for f in ADMISSION_SET.get(str(obj.get("kind")), ()):
            spec.pop(f, None)
    return spec


def compare(case: str, profile: str, obj: Any, ours: Verdict, upstream: Verdict,
            old: Any = None) -> Disagreement | None:
    """None when the answers agree; otherwise what differs."""
    def differ(what: str) -> Disagreement:
        return Disagreement(case, profile, what, obj, ours, upstream, old)

    if upstream.code == 403:
        return None  # an admission plugin's lookup (module docstring): not comparable
    if is_path_refusal(upstream.code, upstream.message):
        return None  # a namespace no URL can carry: no webhook and no validation sees the request
    if ours.allowed != upstream.allowed:
        return differ("verdict")
    if not upstream.allowed:
        if upstream.code == 422 and ours.causes != upstream.causes:
            return differ("causes")
        return None
    a, b = stored_spec(ours.stored), stored_spec(upstream.stored)
    if not same_value(a, b):
        return differ(f"stored spec\n  ours spec:     {json.dumps(a)[:1500]}\n  upstream spec: {json.dumps(b)[:1500]}")
    return None


def compare_status(case: str, profile: str, obj: Any, ours: Verdict, upstream: Verdict,
                   old: Any) -> Disagreement | None:
    """``compare`` for an UPDATE of ``/status``, plus the stored status when both admit (what the
    status strategy keeps, drops or restores)."""
    if (d := compare(case, profile, obj, ours, upstream, old=old)) is not None:
        return d
    if ours.allowed and upstream.allowed and ours.stored is not None and upstream.stored is not None:
        a, b = _prune(ours.stored.get("status")), _prune(upstream.stored.get("status"))
        if not same_value(a, b):
            return Disagreement(case, profile, f"stored status\n  ours:     {json.dumps(a)[:1500]}\n"
                                f"  upstream: {json.dumps(b)[:1500]}", obj, ours, upstream, old)
    return None
