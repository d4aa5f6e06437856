"""Flask app factory: the admission endpoints, the status routes and the error handlers.

Two error channels: a body that is not an AdmissionReview gets an HTTP 4xx JSON error (the
apiserver then applies the webhook's failurePolicy); a bug gets a JSON 500 logged once with the
request uid. Objects that break rules are answered 200 with ``allowed: false``.

``create_app`` wires four groups: live settings, the admission endpoints (``/mutate`` and
``/validate``, answered by ``admit.AdmissionEndpoints`` in front of Flask's request machinery),
the status routes (health, readiness, metrics, configz) and the error handlers. Nothing here
decides admission.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from webhook import BadReview, __version__
from webhook.admission.pipeline import Endpoint
from webhook.config import Settings, settings_fingerprint
from webhook.server.admit import AdmissionEndpoints, bad_review, http_error, internal_error
from webhook.server.live_config import SettingsHolder
from webhook.state.base import StateSource, stale_note

if TYPE_CHECKING:  # imported for real only inside create_app, once the environment is final
    from webhook.server.metrics import Instruments

log = logging.getLogger("webhook.server")

Check = Callable[[], "bool | str | None"]
"""A readiness check: True/None when fine; False or a reason (str) when not."""


class Health:
    """Readiness inputs: extra checks (certificates loadable...) and the draining flag."""

    def __init__(self) -> None:
        self.draining = threading.Event()
        """Set on SIGTERM: /readyz fails from then on."""
        self.warmed = threading.Event()
        """Set when the background allocator warm-up finished (reported by /configz, not readiness)."""
        self.checks: dict[str, Check] = {}
        """Named checks; a string result is the reason the check fails."""
        self.state_fact: Callable[[StateSource], bool] = lambda state: state.ready()
        """Whether the cluster state is synced: the one fact behind both the ``state`` check of
        /readyz and ``dra_webhook_state_ready`` (the server sets it to
        ``metrics.state_ready_in_pod``, which publishes this worker's and reads every worker's)."""

    def ready(self, state: StateSource | None) -> tuple[dict[str, bool], dict[str, str]]:
        """(check name → passed, check name → why it failed) for /readyz."""
        out: dict[str, bool] = {}
        reasons: dict[str, str] = {}
        for name, fn in self.checks.items():
            got = fn()
            out[name] = got is True or got is None
            if isinstance(got, str):
                reasons[name] = got
        out["state"] = self.state_fact(state) if state is not None else True
        if not out["state"]:
            why = getattr(state, "unready_reason", None)  # live sources say which kinds, which rights
            reasons["state"] = ((why() if callable(why) else None)
                                or "the cluster state is not synced yet (in every worker)")
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
    """``/mutate`` and ``/validate``: answered by ``AdmissionEndpoints`` in front of Flask (see
    ``admit``). The Flask routes stay registered so that Flask answers other methods on these
    paths with 405 as before; a POST that reaches them (an app used without the wrapper) gets the
    same answer through the same code."""
    endpoints = AdmissionEndpoints(app.wsgi_app, holder, state, metrics)
    app.wsgi_app = endpoints  # type: ignore[method-assign]

    def route(endpoint: Endpoint) -> Response:
        code, body = endpoints.answer(request.environ, endpoint)
        return Response(body, status=code, mimetype="application/json")

    @app.post("/mutate")
    def mutate() -> Response:
        return route("mutate")

    @app.post("/validate")
    def validate() -> Response:
        return route("validate")


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
        # A stale state stays ready (docs/operations.md, "Readiness and a stale state"): it is
        # said here, in the metrics and in every feasibility warning instead.
        note = stale_note(state)
        if note:
            body["warnings"] = {"state": note}
        return jsonify(body), 200 if ok else 503

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        if state is not None:
            health.state_fact(state)  # this worker's state figures as of now
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
    """The error channels (``admit``'s functions, shared with the admission endpoints): JSON 4xx for
    bad requests and HTTP errors, JSON 500 (logged once) for bugs."""

    def send(answer: tuple[int, bytes]) -> tuple[Response, int]:
        code, body = answer
        return Response(body, status=code, mimetype="application/json"), code

    @app.errorhandler(BadReview)
    def bad_review_handler(e: BadReview) -> tuple[Response, int]:
        return send(bad_review(e, metrics, request.path))

    @app.errorhandler(HTTPException)
    def http_error_handler(e: HTTPException) -> tuple[Response, int]:
        return send(http_error(e, metrics, holder.current.max_body_bytes))

    @app.errorhandler(Exception)
    def internal_error_handler(e: Exception) -> tuple[Response, int]:
        return send(internal_error(e, metrics, {"uid": g.get("uid"), "kind": g.get("kind"), "path": request.path}))
