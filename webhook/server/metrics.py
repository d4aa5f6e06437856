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

MULTIPROC = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

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
# livemin: the minimum over running workers (a dead worker's last value does not count).
STATE_READY = Gauge("dra_webhook_state_ready", "1 when the cluster state is synced",
                    multiprocess_mode="livemin")
CONFIG_RELOADS = Counter("dra_webhook_config_reloads_total", "Config file reloads", ["result"])
CONNECTIONS_DROPPED = Counter("dra_webhook_connections_dropped_total",
                              "Connections closed before a whole request arrived",
                              ["reason"])  # timeout | evicted | tls | too-large


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
