"""B1: the in-process admission pipeline against the cost of just decoding and encoding JSON.

Case: bytes → ``decode_body`` → ``review`` (parse → mutate → patch → validate → warnings →
response) → ``json_body`` of the response (the encoding the server sends; until issue 30's
``pipeline`` branch B1 encoded with ``json.dumps``, which cost a 1 KiB review ~1.5 µs more).
Floor: ``json.loads`` of the same AdmissionReview body, i.e. what any Python webhook pays before
doing anything (target <= 4x). The floor used until issue 18, ``json.loads`` + ``json.dumps`` of
the whole body, flattered us (no webhook encodes the request back): it is still timed, and each
row's context gives the ratio against it too, so old and new figures stand side by side.
Feasibility is not part of B1 (no cluster state is passed); B3 times it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench import gen
from bench.common import Row, fmt_time, interleaved

NAME = "B1"
TARGET = 4.0
POD_TARGET = 3.0
"""Pods that reach the webhook (claims or a schedulingGroup) are the most frequent writes: 3x."""


def pipeline_call(body: bytes, endpoint: str) -> Callable[[], Any] | str:
    """A zero-argument function doing one full review of ``body``, or why it cannot run."""
    try:
        from webhook.admission import decode_body
        from webhook.admission.pipeline import review
        from webhook.admission.response import json_body
        from webhook.config import Settings
        from webhook.gates import FeatureGates
    except ImportError as e:
        return f"{e.name or 'webhook.admission'} missing"
    settings = Settings(gates=FeatureGates.parse(gen.GATES))

    def run() -> Any:
        doc = decode_body(body, settings.max_json_depth)
        resp, _ = review(doc, settings, None, endpoint=endpoint)  # type: ignore[arg-type]
        return json_body(resp)
    return run


def floor_call(body: bytes) -> Callable[[], Any]:
    def run() -> Any:
        return json.loads(body)
    return run


def old_floor_call(body: bytes) -> Callable[[], Any]:
    """The floor before issue 18: decode and re-encode the whole body."""
    def run() -> Any:
        return json.dumps(json.loads(body))
    return run


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    iterations, seconds = (40, 1.0) if quick else (400, 6.0)
    for case, obj in gen.b1_objects().items():
        body = gen.body(obj)
        floor, old_floor = floor_call(body), old_floor_call(body)
        for endpoint in ("validate", "mutate"):
            label = f"{case} /{endpoint} ({len(body) // 1024} KiB)"
            call = pipeline_call(body, endpoint)
            if isinstance(call, str):
                rows.append(Row.na(NAME, label, call))
                continue
            try:
                resp = json.loads(call())
            except Exception as e:  # a missing rules module or a bug: report, keep going
                rows.append(Row.na(NAME, label, f"pipeline failed: {type(e).__name__}: {e}"[:160]))
                continue
            r = resp.get("response", {})
            verdict = "allowed" if r.get("allowed") else "DENIED"
            if r.get("allowed") and not _handled(body, endpoint):
                verdict = "not handled (no rules module)"
            t = interleaved({"case": call, "floor": floor, "old": old_floor}, iterations=iterations,
                            max_seconds=seconds)
            old = t["case"].median / t["old"].median if t["old"].median > 0 else float("nan")
            target = POD_TARGET if case.startswith("pod-") else TARGET
            rows.append(Row.timed(NAME, label, t["case"], t["floor"], max_ratio=target,
                                  extra=f"{verdict}; old floor loads+dumps {fmt_time(t['old'].median)}: {old:.2f}×"))
    return rows


def _handled(body: bytes, endpoint: str) -> bool:
    from webhook.admission.envelope import parse_review
    from webhook.admission.pipeline import evaluate
    from webhook.config import Settings
    from webhook.gates import FeatureGates
    out = evaluate(parse_review(json.loads(body)), Settings(gates=FeatureGates.parse(gen.GATES)),
                   None, endpoint=endpoint)  # type: ignore[arg-type]
    return out.handled
