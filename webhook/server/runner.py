"""Run the app under gunicorn over TLS (``dra-webhook serve``).

Worker model: ``gthread`` workers (one per core by default), a few threads each. The work is
CPU-bound JSON and rules, so processes give parallelism; threads keep slow clients and idle
keep-alive connections from blocking a worker. Keep-alive is longer than the apiserver's idle
reuse (90 s) so the server never closes a connection the apiserver is about to reuse, which it
would not retry. Each worker builds its own state source and config watcher after the fork.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from gunicorn.app.base import BaseApplication

from webhook.config import Settings

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 120
GRACEFUL_TIMEOUT = 25


@dataclass(frozen=True)
class ServeOptions:
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
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        n = os.cpu_count() or 1
    return max(2, n)


class WebhookServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, opts: ServeOptions, settings: Settings) -> None:
        self.opts = opts
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        o = self.opts
        from webhook.server.tls import ReloadingContext, build_context

        # Fail fast in the master when the files are bad, with a clear message.
        build_context(o.tls_cert, o.tls_key, o.client_ca)
        holder: dict[str, ReloadingContext] = {}

        def ssl_context(conf: Any, default_factory: Any) -> Any:
            ctx = holder.get("ctx")
            if ctx is None:
                ctx = holder["ctx"] = ReloadingContext(o.tls_cert, o.tls_key, o.client_ca,
                                                       on_load=_record_expiry)
            return ctx.get()

        cfg = {
            "bind": [o.bind],
            "workers": o.workers or default_workers(),
            "worker_class": "gthread",
            "threads": o.threads,
            "keepalive": KEEPALIVE_SECONDS,
            "graceful_timeout": GRACEFUL_TIMEOUT,
            "timeout": 60,
            "certfile": o.tls_cert,
            "keyfile": o.tls_key,
            "ssl_context": ssl_context,
            "do_handshake_on_connect": False,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": o.log_level,
            "proc_name": "dra-webhook",
            "limit_request_line": 8190,
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
        for k, v in cfg.items():
            self.cfg.set(k, v)

    def load(self) -> Any:
        """Called in each worker after the fork: fresh state source and config watcher."""
        from webhook.server.app import Health, create_app
        from webhook.server.live_config import SettingsHolder
        from webhook.server.logs import setup_logging
        from webhook.state.default import load_state

        setup_logging(self.opts.log_level)
        o = self.opts
        # A reload re-applies the file over the environment's settings, then the flags.
        env_base = Settings.from_env({k: v for k, v in os.environ.items() if k != "DRA_WEBHOOK_CONFIG"})
        holder = SettingsHolder(self.settings, config_path=o.config_path, flag_gates=o.flag_gates,
                                base=env_base)
        holder.check()  # the file may have changed since the master read it (SIGHUP restarts)
        holder.start()
        state = load_state(o.cluster_state, o.kubeconfig, o.in_cluster)  # starts list+watch threads
        health = Health()
        health.checks["certs"] = lambda: os.path.exists(o.tls_cert) and os.path.exists(o.tls_key)
        _HEALTH["health"] = health
        _start_warmup(state, holder, health.warmed)
        return create_app(holder, state, health)


_HEALTH: dict[str, Any] = {}


def _start_warmup(state: Any, holder: Any, done: threading.Event) -> None:
    """Convert the cluster state for the allocator in the background once it is synced, so the
    first feasibility checks do not spend their budget on it. Never blocks serving."""

    def run() -> None:
        from webhook.allocator import warm
        for _ in range(600):  # wait for the first sync (live state), at most ~10 minutes
            if state.ready():
                break
            threading.Event().wait(1.0)
        try:
            n = warm(state.snapshot(), holder.current.gates)
            log.info("allocator model warmed", extra={"devices": n})
        except Exception:  # only a cache: a failure here changes nothing else
            log.exception("allocator warm-up failed")
        finally:
            done.set()

    threading.Thread(target=run, name="allocator-warmup", daemon=True).start()


def _record_expiry(cert_path: str) -> None:
    try:
        from webhook.certs import cert_expiry
        from webhook.server import metrics
        metrics.CERT_EXPIRY.set(cert_expiry(cert_path))
    except Exception:  # best effort: a bad cert is reported by the TLS layer itself
        log.warning("could not read certificate expiry of %s", cert_path)


def _post_worker_init(delay: float) -> Any:
    def hook(worker: Any) -> None:
        """On SIGTERM: report not-ready at once, keep serving for ``delay`` seconds (endpoints
        drain), then let gunicorn finish in-flight requests and exit."""
        original = worker.handle_exit

        def on_term(sig: int, frame: Any) -> None:
            h = _HEALTH.get("health")
            if h is not None:
                h.draining.set()
            if delay <= 0:
                original(sig, frame)
                return
            threading.Timer(delay, lambda: original(sig, frame)).start()

        signal.signal(signal.SIGTERM, on_term)
    return hook


def _child_exit(server: Any, worker: Any) -> None:
    # Not via webhook.server.metrics: importing it in the master would create metric files
    # for the master's pid.
    from prometheus_client import multiprocess
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def run(opts: ServeOptions, settings: Settings) -> int:
    """Serve until SIGTERM/SIGINT; returns 0 on a clean shutdown."""
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
    try:
        WebhookServer(opts, settings).run()
    finally:
        if own_dir:
            shutil.rmtree(own_dir, ignore_errors=True)
    return 0
