"""``POST /mutate`` and ``POST /validate`` answered straight from the WSGI environ, in front of Flask.

They are the only requests the apiserver sends, and on a busy cluster nearly all the requests
there are. Flask's per-request machinery (request and app contexts, URL matching, the Request
and Response objects, error-handler lookup) cost about 70 µs of CPU per review, as much as
validating a small claim, and bought nothing here: these two routes read one body and answer
one JSON document. ``AdmissionEndpoints`` wraps the Flask app (``app.wsgi_app``, Flask's own
middleware hook) and answers exactly these two with the same results the Flask routes gave:
the same status codes, JSON error bodies, limits, metrics and log lines. Every other request,
including other methods on these paths (Flask answers 405), goes on to Flask.

Errors: one function per channel (``bad_review``, ``http_error``, ``internal_error``), which the
Flask error handlers call too: ``BadReview`` → its 4xx with
``{"error", "code"}``, counted in ``dra_webhook_bad_requests_total`` and logged as a warning; a
Werkzeug HTTP error (a body stream over its limit) → its code; anything else is a bug: JSON 500,
``dra_webhook_internal_errors_total``, logged once with the request's uid.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.http import HTTP_STATUS_CODES, parse_options_header
from werkzeug.wsgi import get_content_length, get_input_stream

from webhook import BadReview
from webhook.admission import decode_body
from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.pipeline import Answer, Endpoint, Outcome, evaluate, respond
from webhook.admission.response import json_body
from webhook.config import Settings
from webhook.server.live_config import SettingsHolder
from webhook.state.base import StateSource

if TYPE_CHECKING:
    from webhook.server.metrics import Instruments

log = logging.getLogger("webhook.server")

ENDPOINTS: dict[str, Endpoint] = {"/mutate": "mutate", "/validate": "validate"}

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns))+$")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_MAP_KEY = re.compile(r"\[(?!\d+\])[^\]]*\]")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def parse_go_duration(text: str | None) -> float | None:
    """``"10s"``, ``"1m30s"``, ``"500ms"`` → seconds; None when absent or malformed."""
    if not text or not _DURATION.match(text):
        return None
    total = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)", text):
        total += float(num) * _UNITS[unit]
    return total if total > 0 else None


def status_line(code: int) -> str:
    """``"413 REQUEST ENTITY TOO LARGE"``: the status line Werkzeug would send."""
    return f"{code} {HTTP_STATUS_CODES.get(code, 'UNKNOWN').upper()}"


class AdmissionEndpoints:
    """The WSGI middleware described in the module docstring."""

    def __init__(self, app: WsgiApp, holder: SettingsHolder, state: StateSource | None,
                 metrics: Instruments) -> None:
        self.app = app
        """The wrapped app (Flask's ``wsgi_app``): everything but the two admission POSTs."""
        self.holder = holder
        self.state = state
        self.metrics = metrics

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        endpoint = ENDPOINTS.get(environ.get("PATH_INFO", ""))
        if endpoint is None or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        code, body = self.answer(environ, endpoint)
        start_response(status_line(code), [("Content-Type", "application/json"),
                                           ("Content-Length", str(len(body)))])
        return [body]

    def answer(self, environ: dict[str, Any], endpoint: Endpoint) -> tuple[int, bytes]:
        """(HTTP status, JSON body) for one admission request; never raises."""
        seen: dict[str, str | None] = {"uid": None, "kind": "unknown"}
        path = environ.get("PATH_INFO")
        try:
            return 200, json_body(self._admit(environ, endpoint, seen))
        except BadReview as e:
            return bad_review(e, self.metrics, path)
        except HTTPException as e:
            return http_error(e, self.metrics, self.holder.current.max_body_bytes)
        except Exception as e:
            return internal_error(e, self.metrics, {**seen, "path": path})

    def _admit(self, environ: dict[str, Any], endpoint: Endpoint, seen: dict[str, str | None]) -> Any:
        """Read, review, record; the AdmissionReview to send."""
        settings = self.holder.current
        started = time.monotonic()
        doc = decode_body(read_body(environ, settings), settings.max_json_depth)
        req = parse_review(doc)
        seen["uid"], seen["kind"] = req.uid, req.kind
        timeout = parse_go_duration(_query_value(environ.get("QUERY_STRING", ""), "timeout")) \
            or settings.default_timeout_seconds
        metrics = self.metrics
        metrics.IN_FLIGHT.inc()
        try:
            out = evaluate(req, settings, self.state, deadline=started + timeout, endpoint=endpoint)
            answer = respond(out, settings, endpoint, api_version=doc.get("apiVersion"))
        finally:
            metrics.IN_FLIGHT.dec()
        record(metrics, endpoint, req, out, answer, time.monotonic() - started, settings)
        return answer.review


# ---------------------------------------------------------------- the error channels
# One function per channel, used by ``AdmissionEndpoints.answer`` and by the Flask error handlers
# (``app._add_error_handlers``) alike: the same status, JSON body, metric and log line from both.

def bad_review(e: BadReview, metrics: Instruments, path: str | None) -> tuple[int, bytes]:
    """A body that is not a usable AdmissionReview: its 4xx with ``{"error", "code"}``, counted in
    ``dra_webhook_bad_requests_total`` and logged as a warning."""
    metrics.BAD_REQUESTS.labels(str(e.status)).inc()
    log.warning("bad request: %s", e, extra={"status": e.status, "path": path})
    return e.status, json_body({"error": str(e), "code": e.status})


def http_error(e: HTTPException, metrics: Instruments, max_body_bytes: int) -> tuple[int, bytes]:
    """A Werkzeug HTTP error (a body over its limit, a method not allowed): its code, counted as a
    bad request."""
    code = e.code or 500
    if isinstance(e, RequestEntityTooLarge):
        msg = f"request body larger than {max_body_bytes} bytes"
    else:
        msg = e.description or e.name
    metrics.BAD_REQUESTS.labels(str(code)).inc()
    return code, json_body({"error": msg, "code": code})


def internal_error(e: Exception, metrics: Instruments, context: dict[str, Any]) -> tuple[int, bytes]:
    """A bug: JSON 500 naming only the exception's type, ``dra_webhook_internal_errors_total``, and
    one log line with the traceback and ``context`` (the request's uid and kind when known, the
    path). Call it from inside the ``except`` block."""
    metrics.ERRORS.inc()
    log.exception("internal error answering a review", extra=context)
    return 500, json_body({"error": f"internal error: {type(e).__name__}", "code": 500})


def record(metrics: Instruments, endpoint: Endpoint, req: AdmissionRequest, out: Outcome,
           answer: Answer, elapsed: float, settings: Settings) -> None:
    """Metrics and the one log line of an answered review, from the pipeline's answer. Label values
    come from closed sets: a kind we have no rules for is ``other``, so made-up kinds cannot grow
    /metrics."""
    decision = "allowed" if answer.allowed else "denied"
    kind = req.kind if out.handled else "other"
    metrics.REQUESTS.labels(endpoint, kind, req.operation, decision, "true" if req.dry_run else "false").inc()
    metrics.DURATION.labels(endpoint, kind).observe(elapsed)
    for w in answer.warnings:
        metrics.WARNINGS.labels("feasibility" if w.startswith("feasibility:") else "other").inc()
    if not log.isEnabledFor(logging.INFO):
        return
    extra: dict[str, Any] = {
        "uid": req.uid, "kind": req.kind, "version": req.version, "object_name": req.display_name,
        "namespace": req.namespace,
        "operation": req.operation, "webhook": endpoint, "decision": decision,
        "dry_run": req.dry_run, "patched": bool(answer.patch),
        "warnings": len(answer.warnings), "latency_ms": round(elapsed * 1000, 2),
    }
    if req.request_version:  # matchPolicy Equivalent: the client wrote another version
        extra["request_version"] = req.request_version
    if not answer.allowed:
        # Paths only, map keys masked: a key (label, attribute name) is object content too.
        extra["causes"] = [_MAP_KEY.sub("[*]", f) for f in answer.causes][:20]
    if settings.log_objects:
        extra["object"] = req.obj
    log.info("admission review", extra=extra)


def read_body(environ: dict[str, Any], settings: Settings) -> bytes:
    """The request body, checked before it is read: the content type must be JSON (415) and a
    declared length within ``max_body_bytes`` (413; a moderately oversized body is read and
    dropped first, so the client gets our answer rather than a reset connection). A body with a
    Content-Length is read at once; without one (chunked) Werkzeug's input stream stops at the
    limit silently, and one more byte on the raw stream tells a body that ends exactly there
    from a longer one, which gets 413 like any oversized body."""
    ctype = _mimetype(environ.get("CONTENT_TYPE", ""))
    if ctype != "application/json":
        raise BadReview(f"unsupported content type {ctype or '(none)'!r}: expected application/json", 415)
    limit = settings.max_body_bytes
    length = get_content_length(environ)
    if length is not None and length > limit:
        _drain(environ.get("wsgi.input"), length, limit)
        raise BadReview(f"request body larger than {limit} bytes", 413)
    if length is not None:  # the server stops the stream at the declared length
        return bytes(environ["wsgi.input"].read(length)) if length else b""
    data: bytes = get_input_stream(environ, max_content_length=limit).read()
    if len(data) >= limit:
        stream = environ.get("wsgi.input")
        if stream is not None and stream.read(1):
            raise BadReview(f"request body larger than {limit} bytes", 413)
    return data


@lru_cache(maxsize=64)
def _mimetype(content_type: str) -> str:
    """The media type of a Content-Type header, lowercased, without parameters (as Werkzeug's
    ``request.mimetype``); clients send the same few headers, so the answers are kept."""
    return parse_options_header(content_type)[0].lower()


def _query_value(query: str, name: str) -> str | None:
    """The first value of ``name`` in a query string (as ``request.args.get``)."""
    if name not in query:
        return None
    return next((v for k, v in parse_qsl(query, keep_blank_values=True) if k == name), None)


def _drain(stream: Any, length: int, limit: int) -> None:
    """Read and drop a moderately oversized body; a body far over the limit is not read (the
    connection is closed instead)."""
    if length > 4 * limit:
        return
    left = length
    while stream is not None and left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            break
        left -= len(chunk)
