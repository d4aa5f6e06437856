"""Run the app under gunicorn over TLS (``dra-webhook serve``).

Worker model: ``AdmissionWorker`` processes (one per core by default, see ``worker``), a few
threads each. The work is CPU-bound JSON and rules, so processes give parallelism; the threads
only ever get requests that have fully arrived, so slow, idle and kept-alive connections wait
in each worker's event loop, never in a thread. Keep-alive is longer than the apiserver's idle
reuse (90 s) so the server never closes a connection the apiserver is about to reuse, which it
would not retry. Each worker builds its TLS context, state source and config watcher after the
fork, and exits at once when it cannot build the TLS context (gunicorn starts a new one).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from gunicorn.app.base import BaseApplication

from webhook.config import Settings
from webhook.server.balance import ConnectionBoard
from webhook.server.logs import GunicornJsonLogger, setup_logging
from webhook.server.worker import MAX_PENDING, AdmissionWorker
from webhook.state.base import StateSource

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 120
GRACEFUL_TIMEOUT = 25
RELOAD_WINDOW_SECONDS = 10.0
"""A worker stopped this soon after SIGHUP is being replaced: it stops without draining."""
TLS_RETRY_SECONDS = 1.0
"""A worker that cannot load the certificate waits this long before exiting, so gunicorn's
restarts do not spin while the files are broken."""


@dataclass(frozen=True)
class ServeOptions:
    """What ``dra-webhook serve`` was asked for on the command line."""

    bind: str = "127.0.0.1:8443"
    tls_cert: str = ""
    tls_key: str = ""
    client_ca: str | None = None
    workers: int = 0
    threads: int = 4
    config_path: str | None = None
    flag_gates: str | None = None
    cluster_state: str | None = None
    kubeconfig: str | None = None
    in_cluster: bool = False
    shutdown_delay: float = 3.0
    log_level: str = "info"


def default_workers() -> int:
    """One worker per usable core, at least two (one can restart while the other serves)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        n = os.cpu_count() or 1
    return max(2, n)


# Per-process state a worker builds after the fork; module-level because gunicorn's hooks
# (ssl_context, post_worker_init) reach it without a reference to the application.
_WORKER: dict[str, Any] = {}
_RUNTIME: dict[str, str] = {}


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """gunicorn application: configuration in the master, the Flask app in each worker."""

    worker_class: Any = AdmissionWorker
    """The worker; ``bench`` swaps in stock ``"gthread"`` to measure what the change costs."""

    def __init__(self, opts: ServeOptions, settings: Settings, state: StateSource | None = None) -> None:
        self.opts = opts
        self.settings = settings
        self.preloaded_state = state
        """A state loaded in the master (files, examples), shared by every forked worker; None:
        each worker builds its own (a live source's threads must start after the fork)."""
        super().__init__()

    def load_config(self) -> None:
        """gunicorn settings (in the master, at start and on SIGHUP)."""
        o = self.opts
        from webhook.server.tls import build_context

        # Fail fast in the master when the files are bad, with a clear message.
        build_context(o.tls_cert, o.tls_key, o.client_ca)
        for k, v in self._gunicorn_settings().items():
            self.cfg.set(k, v)

    def _gunicorn_settings(self) -> dict[str, Any]:
        o = self.opts
        worker = self.worker_class
        if isinstance(worker, type) and issubclass(worker, AdmissionWorker):
            # Bodies the app would still read (up to 4x the limit, to answer 413 politely) are
            # buffered by the event loop, so no thread ever waits for them.
            # The connection board is made here, in the master, so every worker forked for this
            # configuration shares it (a reload makes a new one for the new workers).
            worker = type(worker.__name__, (worker,), {"max_body": 4 * self.settings.max_body_bytes,
                                                       "board": ConnectionBoard()})
        cfg: dict[str, Any] = {
            "bind": [o.bind],
            "workers": o.workers or default_workers(),
            "worker_class": worker,
            "threads": o.threads,
            "worker_connections": 2 * MAX_PENDING,
            "keepalive": KEEPALIVE_SECONDS,
            "graceful_timeout": GRACEFUL_TIMEOUT,
            "timeout": 60,
            "certfile": o.tls_cert,
            "keyfile": o.tls_key,
            "ssl_context": _ssl_context,
            "do_handshake_on_connect": False,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": o.log_level,
            "logger_class": GunicornJsonLogger,
            "proc_name": "dra-webhook",
            "limit_request_line": 8190,
            # The master's objects frozen before each fork: a worker's collections never write
            # to them, so the pages it shares with the master stay shared (``gc.freeze``).
            "pre_fork": lambda server, worker: gc.freeze(),
            "post_fork": lambda server, worker: _load_tls(o),
            "on_reload": _mark_reload,
            "post_worker_init": _post_worker_init(o.shutdown_delay),
            "child_exit": _child_exit,
            "preload_app": False,
            # gunicorn's control socket would write under $HOME, which is read-only in the pod.
            "control_socket_disable": True,
        }
        if o.client_ca:
            import ssl
            cfg["ca_certs"] = o.client_ca
            cfg["cert_reqs"] = ssl.CERT_REQUIRED
        return cfg

    def load(self) -> Any:
        """Called in each worker after the fork: TLS context, settings, state, the app."""
        from webhook.server.app import Health, create_app
        from webhook.state.default import load_state

        setup_logging(self.opts.log_level)
        o = self.opts
        tls = _WORKER["tls"]  # built by the post_fork hook
        holder = self._settings_holder()
        state = self.preloaded_state
        if state is None:
            state = load_state(o.cluster_state, o.kubeconfig, o.in_cluster,  # live: starts list+watch threads
                               **_live_options(holder.current))
            _follow_state_settings(state, holder)
        from webhook.server import metrics
        metrics.publish_state(state)  # on record before this worker takes a connection
        health = Health()
        health.state_fact = metrics.state_ready_in_pod
        health.checks["certs"] = tls.problem
        _WORKER["health"] = health
        _start_background(state, holder, health.warmed)
        return create_app(holder, state, health)

    def _settings_holder(self) -> Any:
        """Live settings for this worker, agreeing with the workers already running."""
        from webhook.server.live_config import SettingsHolder

        o = self.opts
        # A reload re-applies the file over the environment's settings, then the flags.
        env_base = Settings.from_env({k: v for k, v in os.environ.items() if k != "DRA_WEBHOOK_CONFIG"})
        last_good = os.path.join(_RUNTIME["dir"], "config-applied.yaml") if "dir" in _RUNTIME else None
        holder = SettingsHolder(self.settings, config_path=o.config_path, flag_gates=o.flag_gates,
                                base=env_base, last_good_path=last_good)
        holder.adopt_last_good()  # a reload applied by the running workers since the start
        holder.check()  # and the file as it is now (it may have changed since)
        holder.start()
        return holder


def _load_tls(o: ServeOptions) -> Any:
    """This worker's TLS context, built right after the fork; without one the worker exits
    (it never serves)."""
    import ssl

    from webhook.server.tls import ReloadingContext, diagnose

    try:
        ctx = ReloadingContext(o.tls_cert, o.tls_key, o.client_ca, on_load=_record_expiry)
    except (OSError, ssl.SSLError, ValueError):
        log.error("tls: cannot load the serving certificate, worker exits: %s",
                  diagnose(o.tls_cert, o.tls_key, o.client_ca))
        time.sleep(TLS_RETRY_SECONDS)
        sys.exit(1)  # not gunicorn's boot-error code: the master starts another worker
    _WORKER["tls"] = ctx
    return ctx


def _ssl_context(conf: Any, default_factory: Any) -> Any:
    """gunicorn's per-connection hook: this worker's context (rebuilt when the files change)."""
    return _WORKER["tls"].get()


def _live_options(s: Settings) -> dict[str, Any]:
    """The ``LiveState`` options the settings hold (a file or example state ignores them)."""
    return {"stale_after_seconds": s.state_stale_after_seconds,
            "watch_timeout_seconds": s.state_watch_timeout_seconds}


def _follow_state_settings(state: Any, holder: Any) -> None:
    """Apply a reloaded staleness bound and watch timeout to a live state."""
    configure = getattr(state, "configure", None)
    if not callable(configure):
        return
    previous = holder.on_change

    def chained(s: Settings) -> None:
        if previous is not None:
            previous(s)
        configure(**_live_options(s))

    holder.on_change = chained


def _start_background(state: Any, holder: Any, warmed: threading.Event) -> None:
    """One daemon thread per worker: build the CEL parser, publish the state's readiness and
    staleness (``metrics.publish_state``) every second, and once the state is synced, convert
    it for the allocator, so the first reviews do not spend their budget on either. Never
    blocks serving."""

    def run() -> None:
        from webhook.cel import compile_result
        from webhook.server import metrics
        compile_result('device.driver == "warm-up"')  # builds the CEL parser (~0.3 s) off the request path
        while True:
            ready = metrics.publish_state(state)
            if ready and not warmed.is_set():
                _warm(state, holder, warmed)
            time.sleep(1.0)

    threading.Thread(target=run, name="state-readiness", daemon=True).start()


def _warm(state: Any, holder: Any, done: threading.Event) -> None:
    from webhook.allocator import warm
    from webhook.state.memory import trim  # the LIST pages' heap, given back once the state is warm
    try:
        n = warm(state.snapshot(), holder.current.gates)
        log.info("allocator model warmed", extra={"devices": n, "trimmed": trim()})
    except Exception:  # only a cache: a failure here changes nothing else
        log.exception("allocator warm-up failed")
    finally:
        done.set()


def _record_expiry(cert_path: str) -> None:
    try:
        from webhook.certs import cert_expiry
        from webhook.server import metrics
        metrics.CERT_EXPIRY.set(cert_expiry(cert_path))
    except Exception as e:  # best effort: a bad cert is reported by the TLS layer itself
        log.warning("could not read certificate expiry of %s: %s", cert_path, e)


def _post_worker_init(delay: float) -> Any:
    def hook(worker: Any) -> None:
        """On SIGTERM: report not-ready and close every connection after its next answer at
        once, keep serving for ``delay`` seconds (endpoints drain), then let gunicorn finish
        in-flight requests and exit."""
        original = worker.handle_exit
        from webhook.server import metrics
        if isinstance(worker, AdmissionWorker):
            worker.on_drop = lambda reason: metrics.CONNECTIONS_DROPPED.labels(reason).inc()

        def on_term(sig: int, frame: Any) -> None:
            worker.draining = True
            if _reloading():  # SIGHUP: the master has started new workers, nothing drains
                original(sig, frame)
                return
            h = _WORKER.get("health")
            if h is not None:
                h.draining.set()
            if delay <= 0:
                original(sig, frame)
                return
            threading.Timer(delay, lambda: original(sig, frame)).start()

        signal.signal(signal.SIGTERM, on_term)
    return hook


def _reload_marker() -> str | None:
    return os.path.join(_RUNTIME["dir"], "reloading") if "dir" in _RUNTIME else None


def _mark_reload(server: Any) -> None:
    """gunicorn's ``on_reload`` hook (master, on SIGHUP, before it replaces the workers)."""
    marker = _reload_marker()
    if marker:
        with open(marker, "w"):
            pass


def _reloading() -> bool:
    """Whether this SIGTERM comes from a SIGHUP reload (the master marked it just before)."""
    marker = _reload_marker()
    try:
        return marker is not None and time.time() - os.path.getmtime(marker) < RELOAD_WINDOW_SECONDS
    except OSError:
        return False


def _child_exit(server: Any, worker: Any) -> None:
    board = getattr(type(worker), "board", None)
    if isinstance(board, ConnectionBoard):  # its siblings must not wait for a dead worker
        board.release_pid(worker.pid)
    # Not via webhook.server.metrics: importing it in the master would create metric files
    # for the master's pid.
    from prometheus_client import multiprocess
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def run(opts: ServeOptions, settings: Settings, server: type[WebhookServer] = WebhookServer,
        state: StateSource | None = None) -> int:
    """Serve until SIGTERM/SIGINT; returns 0 on a clean shutdown. ``state``: see ``WebhookServer``."""
    setup_logging(opts.log_level)
    master = os.getpid()
    own_dir = None
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        own_dir = tempfile.mkdtemp(prefix="dra-webhook-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = own_dir
    else:  # stale files from a previous run would be summed in: start clean
        d = os.environ["PROMETHEUS_MULTIPROC_DIR"]
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith(".db"):
                os.unlink(os.path.join(d, f))
    _RUNTIME["dir"] = tempfile.mkdtemp(prefix="dra-webhook-run-")
    try:
        server(opts, settings, state).run()
    finally:
        # Workers are forked from inside run() and leave through this block too (gunicorn
        # ends them with SystemExit): only the master may remove what all of them share.
        if os.getpid() == master:
            if own_dir:
                shutil.rmtree(own_dir, ignore_errors=True)
            shutil.rmtree(_RUNTIME["dir"], ignore_errors=True)
    return 0
