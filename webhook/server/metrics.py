"""Prometheus metrics, safe under gunicorn's multi-process model.

When ``PROMETHEUS_MULTIPROC_DIR`` is set (``dra-webhook serve`` sets it), every worker writes its
samples there and ``/metrics`` aggregates them with a fresh ``MultiProcessCollector``; otherwise
(tests, single process) the default registry is used. Import this module only after the
environment is final: prometheus-client decides its storage at import time.

Every label takes values from a closed set (kinds we have rules for, else ``other``; the four
operations; HTTP codes we answer; drop reasons), so no request can add a time series.
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from webhook.state.base import StateSource

MULTIPROC = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
_STATE_LOCK = threading.Lock()

# Milliseconds matter on the apiserver's write path: its own webhook histogram starts at 5 ms.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter("dra_webhook_admission_requests_total", "Admission reviews answered",
                   ["webhook", "kind", "operation", "decision", "dry_run"])
DURATION = Histogram("dra_webhook_admission_request_duration_seconds",
                     "Time to answer an admission review", ["webhook", "kind"], buckets=_BUCKETS)
IN_FLIGHT = Gauge("dra_webhook_admission_in_flight_requests", "Admission reviews being answered",
                  multiprocess_mode="livesum")
BAD_REQUESTS = Counter("dra_webhook_bad_requests_total", "HTTP requests refused before review",
                       ["code"])
ERRORS = Counter("dra_webhook_internal_errors_total", "Admission reviews that failed with a bug")
WARNINGS = Counter("dra_webhook_admission_warnings_total", "Warnings returned", ["type"])
FEATURE = Gauge("dra_webhook_feature_enabled", "Feature gate value (1 on, 0 off)", ["name"],
                multiprocess_mode="mostrecent")
CERT_EXPIRY = Gauge("dra_webhook_cert_expiry_timestamp_seconds",
                    "notAfter of the serving certificate", multiprocess_mode="mostrecent")
# The state gauges of a worker are made by its first ``publish_state`` (not at import), so a
# worker is on record only with a value it has measured. livemin / livemax: the minimum / maximum
# over running workers (a dead worker's last value does not count).
_STATE: dict[str, Gauge] = {}
CONFIG_RELOADS = Counter("dra_webhook_config_reloads_total", "Config file reloads", ["result"])
CONNECTIONS_DROPPED = Counter("dra_webhook_connections_dropped_total",
                              "Connections closed before a whole request arrived",
                              ["reason"])  # timeout | evicted | tls | too-large


def publish_state(state: StateSource) -> bool:
    """Record this worker's view of the cluster state: ``dra_webhook_state_ready`` (1 synced),
    and per kind ``dra_webhook_state_age_seconds`` (since the kind was last known current; 0 for
    a kind the apiserver does not serve) and ``dra_webhook_state_stale`` (1 past the staleness
    bound). Returns this worker's readiness."""
    ready = bool(state.ready())
    health = getattr(state, "health", None)
    kinds: dict[str, Any] = health()["kinds"] if callable(health) else {}
    with _STATE_LOCK:
        if not _STATE:
            _STATE["ready"] = Gauge("dra_webhook_state_ready",
                                    "1 when the cluster state is synced (in every running worker)",
                                    multiprocess_mode="livemin")
            _STATE["age"] = Gauge("dra_webhook_state_age_seconds",
                                  "Seconds since the live state of a kind was last known current "
                                  "(the oldest worker)", ["kind"], multiprocess_mode="livemax")
            _STATE["stale"] = Gauge("dra_webhook_state_stale",
                                    "1 when a kind's live state is older than the staleness bound "
                                    "(in any worker)", ["kind"], multiprocess_mode="livemax")
    _STATE["ready"].set(1 if ready else 0)
    for kind, k in kinds.items():
        age = k.get("last_sync_age_seconds")
        if age is not None:
            _STATE["age"].labels(kind=kind).set(age if k.get("served", True) else 0.0)
        _STATE["stale"].labels(kind=kind).set(1 if k.get("stale") else 0)
    return ready


def state_ready_in_pod(state: StateSource) -> bool:
    """The readiness ``/readyz`` reports: this worker's state published (``publish_state``),
    then the minimum of ``dra_webhook_state_ready`` over every running worker, read from the
    files ``/metrics`` reads, so the two never disagree. A request may reach any worker: the pod
    is ready when each of them is."""
    own = publish_state(state)
    if not MULTIPROC:
        return own
    path = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    files = [f for f in glob.glob(os.path.join(path, "gauge_livemin_*.db")) if _size(f) > 0]
    merged = multiprocess.MultiProcessCollector.merge(files, accumulate=False)  # type: ignore[no-untyped-call]
    values = [s.value for m in merged
              if m.name == "dra_webhook_state_ready" for s in m.samples]
    return bool(values) and min(values) == 1


def set_gates(values: Mapping[str, bool]) -> None:
    """Publish the feature gates in force (one series per known gate)."""
    for name, on in values.items():
        FEATURE.labels(name=name).set(1 if on else 0)


class _Collector(multiprocess.MultiProcessCollector):
    """prometheus-client's multi-process collector, minus files still empty: a worker that is
    just starting (SIGHUP, a respawn) creates its file before it sizes it, and reading it in
    that instant fails the whole scrape."""

    def collect(self) -> Any:
        """Merge the metric files of all workers, skipping the empty ones."""
        files = [f for f in glob.glob(os.path.join(self._path, "*.db")) if _size(f) > 0]
        return self.merge(files, accumulate=True)  # type: ignore[no-untyped-call]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # removed meanwhile (a dead worker's live gauge)
        return 0


def render() -> tuple[bytes, str]:
    """The exposition text for ``/metrics``."""
    if MULTIPROC:
        registry = CollectorRegistry()
        _Collector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST



class Instruments(Protocol):
    """What the Flask app uses of this module (the module itself is passed: it satisfies this),
    so the app is typed without importing metrics before the environment is final."""

    REQUESTS: Counter
    DURATION: Histogram
    IN_FLIGHT: Gauge
    BAD_REQUESTS: Counter
    ERRORS: Counter
    WARNINGS: Counter

    def set_gates(self, values: Mapping[str, bool]) -> None: ...

    def render(self) -> tuple[bytes, str]: ...
