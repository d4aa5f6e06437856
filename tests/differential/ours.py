"""Our side of every comparison: the pipeline `dra-webhook review` runs, in process.

The object gets the apiserver's defaults first (as `review` does), then mutate, then validate
the mutated object. Feasibility and capacity defaulting are off: upstream's validation has
neither, and neither may change a verdict.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from tests.differential.oracle import Verdict
from webhook.admission.decode import check as decode_check
from webhook.admission.offline import build_review, review_objects, with_defaults
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import KNOWN, FeatureGates


@functools.cache
def _settings(gates: tuple[tuple[str, bool], ...]) -> Settings:
    return Settings(gates=FeatureGates().with_overrides(dict(gates)), feasibility=False,
                    capacity_defaulting=False)


def settings_for(gates: Mapping[str, bool]) -> Settings:
    """Our settings for an apiserver gate profile (gates we do not model are left out)."""
    return _settings(tuple(sorted((k, v) for k, v in gates.items() if k in KNOWN)))


def our_verdict(obj: dict[str, Any], gates: Mapping[str, bool], old: dict[str, Any] | None = None) -> Verdict:
    """Our answer for a CREATE of ``obj`` (or an UPDATE from the stored ``old``)."""
    if (bad := decode_check(obj)) is not None:  # review_objects refuses it the same way
        return Verdict(False, code=400, message=bad.message)
    (done,) = review_objects([copy.deepcopy(obj)], old, "UPDATE" if old is not None else "CREATE", True,
                             settings_for(gates), None)
    out, r = done.outcome, done.answer.review["response"]
    causes = frozenset((e.field, str(e.type)) for e in out.errors)
    stored = out.mutated if r["allowed"] else None
    return Verdict(bool(r["allowed"]), causes=causes, stored=stored, code=200 if r["allowed"] else 422,
                   message=str((r.get("status") or {}).get("message", "")))


def our_status_verdict(obj: dict[str, Any], gates: Mapping[str, bool], old: dict[str, Any]) -> Verdict:
    """Our answer for an UPDATE of ``/status`` (as ``our_verdict``, with the subresource set)."""
    if (bad := decode_check(obj)) is not None:
        return Verdict(False, code=400, message=bad.message)
    doc = build_review(with_defaults(copy.deepcopy(obj)), with_defaults(old), "UPDATE", True)
    doc["request"]["subResource"] = "status"
    resp, out = review(doc, settings_for(gates), None)
    r = resp["response"]
    causes = frozenset((e.field, str(e.type)) for e in out.errors)
    return Verdict(bool(r["allowed"]), causes=causes, stored=out.mutated if r["allowed"] else None,
                   code=200 if r["allowed"] else 422, message=str((r.get("status") or {}).get("message", "")))
