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
  checks, the DRA plugin's node lookups) is not a verdict we can be compared on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.differential.oracle import Verdict
from webhook.quantity import try_parse

#: Set by the Priority admission plugin from a PriorityClass lookup, which a webhook cannot do.
ADMISSION_SET = {"PodGroup": ("priority", "preemptionPolicy"), "Workload": ()}
#: Set by the apiserver itself when it stores the object (a clock, not a rule).
SERVER_SET = ("timeAdded",)
#: Go fields without `omitempty`: the apiserver always encodes them, zero or not.
ZERO_ENCODED = {"generation": 0}
#: Plain (non-pointer) Go strings with `omitempty`: "" and absent are the same value, and the
#: apiserver encodes neither (Workload controllerRef.apiGroup, templates' priorityClassName).
OMITTED_EMPTY = ("apiGroup", "priorityClassName")


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
    """Drop what the apiserver's JSON encoding omits (null, [] and {}), the zero values it always
    encodes, and what it sets itself: both sides then say the same thing the same way."""
    if isinstance(value, dict):
        out = {k: _prune(_null_strings(v) if k in STRING_MAPS else v) for k, v in value.items()
               if k not in SERVER_SET}
        return {k: v for k, v in out.items() if v not in (None, [], {}) and
                not (k in ZERO_ENCODED and v == ZERO_ENCODED[k] and type(v) is int) and
                not (k in OMITTED_EMPTY and v == "")}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _null_strings(m: Any) -> Any:
    return {k: "" if v is None else v for k, v in m.items()} if isinstance(m, dict) else m


def same_value(a: Any, b: Any) -> bool:
    """Deep equality, with strings that are quantities compared by value."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str) and a != b:
        qa, qb = try_parse(a), try_parse(b)
        return qa is not None and qb is not None and qa.value == qb.value
    return bool(a == b) and type(a) is type(b)


def stored_spec(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return None
    spec = _prune(obj.get("spec"))
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
