"""Flask app factory: routes read the body, call the admission pipeline, return JSON.

Two error channels: a body that is not an AdmissionReview gets an HTTP 4xx JSON error (the
apiserver then applies the webhook's failurePolicy); a bug gets a JSON 500 logged once with the
request uid. Objects that break rules are answered 200 with ``allowed: false``.

``create_app`` wires four groups: live settings, the admission routes, the status routes
(health, readiness, metrics, configz) and the error handlers. Nothing here decides admission.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from webhook import BadReview, __version__
from webhook.admission import decode_body
from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.pipeline import Answer, Endpoint, Outcome, evaluate, respond
from webhook.config import Settings, settings_fingerprint
from webhook.server.live_config import SettingsHolder
from webhook.state.base import StateSource

if TYPE_CHECKING:  # imported for real only inside create_app, once the environment is final
    from webhook.server.metrics import Instruments

log = logging.getLogger("webhook.server")

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns))+$")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_MAP_KEY = re.compile(r"\[(?!\d+\])[^\]]*\]")

Check = Callable[[], "bool | str | None"]
"""A readiness check: True/None when fine; False or a reason (str) when not."""


def parse_go_duration(text: str | None) -> float | None:
    """``"10s"``, ``"1m30s"``, ``"500ms"`` → seconds; None when absent or malformed."""
    if not text or not _DURATION.match(text):
        return None
    total = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)", text):
        total += float(num) * _UNITS[unit]
    return total if total > 0 else None


class Health:
    """Readiness inputs: extra checks (certificates loadable...) and the draining flag."""

    def __init__(self) -> None:
        self.draining = threading.Event()
        """Set on SIGTERM: /readyz fails from then on."""
        self.warmed = threading.Event()
        """Set when the background allocator warm-up finished (reported by /configz, not readiness)."""
        self.checks: dict[str, Check] = {}
        """Named checks; a string result is the reason the check fails."""

    def ready(self, state: StateSource | None) -> tuple[dict[str, bool], dict[str, str]]:
        """(check name → passed, check name → why it failed) for /readyz."""
        out: dict[str, bool] = {}
        reasons: dict[str, str] = {}
        for name, fn in self.checks.items():
            got = fn()
            out[name] = got is True or got is None
            if isinstance(got, str):
                reasons[name] = got
        out["state"] = state.ready() if state is not None else True
        if not out["state"]:
            reasons["state"] = "the cluster state is not synced yet"
        out["notDraining"] = not self.draining.is_set()
        if not out["notDraining"]:
            reasons["notDraining"] = "shutting down"
        return out, reasons


def create_app(settings: Settings | SettingsHolder | None = None, state: StateSource | None = None,
               health: Health | None = None) -> Flask:
    """The WSGI app. ``settings`` may be a SettingsHolder so a config reload takes effect live."""
    holder = settings if isinstance(settings, SettingsHolder) else SettingsHolder(settings or Settings())
    health = health or Health()
    from webhook.server import metrics  # after the environment is final (multiprocess mode)

    app = Flask("dra-webhook")
    app.extensions["dra_webhook"] = {"settings": holder, "state": state, "health": health}
    _follow_settings(app, holder, metrics)
    _add_admission_routes(app, holder, state, metrics)
    _add_status_routes(app, holder, state, health, metrics)
    _add_error_handlers(app, holder, metrics)
    return app


def _follow_settings(app: Flask, holder: SettingsHolder, metrics: Instruments) -> None:
    """Apply the settings the app itself uses now and after every reload (chained to any
    ``on_change`` the holder already has)."""

    def apply(s: Settings) -> None:
        app.config["MAX_CONTENT_LENGTH"] = s.max_body_bytes
        metrics.set_gates(s.gates.values)

    previous = holder.on_change

    def chained(s: Settings) -> None:
        if previous is not None:
            previous(s)
        apply(s)

    apply(holder.current)
    holder.on_change = chained


def _add_admission_routes(app: Flask, holder: SettingsHolder, state: StateSource | None,
                          metrics: Instruments) -> None:
    """``/mutate`` and ``/validate``: read, review, record, answer."""

    def admit(endpoint: Endpoint) -> Response:
        settings_now = holder.current
        started = time.monotonic()
        g.kind = "unknown"
        _check_request(settings_now)
        doc = decode_body(_read_body(settings_now), settings_now.max_json_depth)
        req = parse_review(doc)
        g.uid, g.kind = req.uid, req.kind
        timeout = parse_go_duration(request.args.get("timeout")) or settings_now.default_timeout_seconds
        metrics.IN_FLIGHT.inc()
        try:
            out = evaluate(req, settings_now, state, deadline=started + timeout, endpoint=endpoint)
            answer = respond(out, settings_now, endpoint, api_version=doc.get("apiVersion"))
        finally:
            metrics.IN_FLIGHT.dec()
        _record(metrics, endpoint, req, out, answer, time.monotonic() - started, settings_now)
        return jsonify(answer.review)

    @app.post("/mutate")
    def mutate() -> Response:
        return admit("mutate")

    @app.post("/validate")
    def validate() -> Response:
        return admit("validate")


def _record(metrics: Instruments, endpoint: Endpoint, req: AdmissionRequest, out: Outcome,
            answer: Answer, elapsed: float, settings: Settings) -> None:
    """Metrics and the one log line of an answered review, from the pipeline's answer. Label values
    come from closed sets: a kind we have no rules for is ``other``, so made-up kinds cannot grow
    /metrics."""
    decision = "allowed" if answer.allowed else "denied"
    kind = req.kind if out.handled else "other"
    metrics.REQUESTS.labels(endpoint, kind, req.operation, decision, str(req.dry_run).lower()).inc()
    metrics.DURATION.labels(endpoint, kind).observe(elapsed)
    for w in answer.warnings:
        metrics.WARNINGS.labels("feasibility" if w.startswith("feasibility:") else "other").inc()
    extra: dict[str, Any] = {
        "uid": req.uid, "kind": req.kind, "object_name": req.display_name, "namespace": req.namespace,
        "operation": req.operation, "webhook": endpoint, "decision": decision,
        "dry_run": req.dry_run, "patched": bool(answer.patch),
        "warnings": len(answer.warnings), "latency_ms": round(elapsed * 1000, 2),
    }
    if not answer.allowed:
        # Paths only, map keys masked: a key (label, attribute name) is object content too.
        extra["causes"] = [_MAP_KEY.sub("[*]", f) for f in answer.causes][:20]
    if settings.log_objects:
        extra["object"] = req.obj
    log.info("admission review", extra=extra)


def _add_status_routes(app: Flask, holder: SettingsHolder, state: StateSource | None, health: Health,
                       metrics: Instruments) -> None:
    """``/healthz``, ``/readyz``, ``/metrics`` and ``/configz``."""

    @app.get("/healthz")
    def healthz() -> Response:
        return jsonify({"status": "ok", "version": __version__})

    @app.get("/readyz")
    def readyz() -> tuple[Response, int]:
        checks, reasons = health.ready(state)
        ok = all(checks.values())
        body: dict[str, Any] = {"ready": ok, "checks": checks}
        if reasons:
            body["reasons"] = reasons
        return jsonify(body), 200 if ok else 503

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        data, ctype = metrics.render()
        return Response(data, content_type=ctype)

    @app.get("/configz")
    def configz() -> Response:
        s = holder.current
        return jsonify({
            "version": __version__,
            "pid": os.getpid(),
            "settings": s.public(),
            "featureGates": s.gates.as_dict(),
            "featureGatesChanged": s.gates.changed(),
            "configFile": s.config_file,
            "configHash": s.config_hash,
            "configError": holder.last_error,
            "fingerprint": settings_fingerprint(s),
            "state": state.describe() if state is not None else None,
            "allocatorWarmed": health.warmed.is_set(),
        })


def _add_error_handlers(app: Flask, holder: SettingsHolder, metrics: Instruments) -> None:
    """The two error channels: JSON 4xx for bad requests, JSON 500 (logged once) for bugs."""

    @app.errorhandler(BadReview)
    def bad_review(e: BadReview) -> tuple[Response, int]:
        metrics.BAD_REQUESTS.labels(str(e.status)).inc()
        log.warning("bad request: %s", e, extra={"status": e.status, "path": request.path})
        return jsonify({"error": str(e), "code": e.status}), e.status

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> tuple[Response, int]:
        code = e.code or 500
        if isinstance(e, RequestEntityTooLarge):
            msg = f"request body larger than {holder.current.max_body_bytes} bytes"
        else:
            msg = e.description or e.name
        metrics.BAD_REQUESTS.labels(str(code)).inc()
        return jsonify({"error": msg, "code": code}), code

    @app.errorhandler(Exception)
    def internal_error(e: Exception) -> tuple[Response, int]:
        metrics.ERRORS.inc()
        log.exception("internal error answering a review",
                      extra={"uid": g.get("uid"), "kind": g.get("kind"), "path": request.path})
        return jsonify({"error": f"internal error: {type(e).__name__}", "code": 500}), 500


def _check_request(settings: Settings) -> None:
    """Refuse wrong content types and oversized bodies before reading them."""
    ctype = (request.mimetype or "").lower()
    if ctype != "application/json":
        raise BadReview(f"unsupported content type {ctype or '(none)'!r}: expected application/json", 415)
    length = request.content_length
    if length is not None and length > settings.max_body_bytes:
        _drain(length, settings.max_body_bytes)
        raise BadReview(f"request body larger than {settings.max_body_bytes} bytes", 413)


def _read_body(settings: Settings) -> bytes:
    """The request body, at most ``max_body_bytes``. Without a Content-Length (chunked), Werkzeug
    stops reading at the limit silently; one more byte on the raw stream tells a body that ends
    exactly there from a longer one, which gets 413 like any oversized body."""
    data = request.get_data(cache=False)
    if request.content_length is None and len(data) >= settings.max_body_bytes:
        stream = request.environ.get("wsgi.input")
        if stream is not None and stream.read(1):
            raise BadReview(f"request body larger than {settings.max_body_bytes} bytes", 413)
    return data


def _drain(length: int, limit: int) -> None:
    """Read and drop a moderately oversized body so the client gets our 413 instead of a reset
    connection; a body far over the limit is not read (the connection is closed instead)."""
    if length > 4 * limit:
        return
    stream = request.environ.get("wsgi.input")
    left = length
    while stream is not None and left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            break
        left -= len(chunk)
