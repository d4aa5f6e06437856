"""``dra-webhook serve``: the HTTPS admission server under gunicorn."""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import tempfile

from webhook import ConfigError
from webhook.cli.common import GATES_HELP, build_settings, warn_if_empty
from webhook.state.base import StateSource


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("serve", help="run the HTTPS admission server under gunicorn",
                       description="Serve /mutate, /validate, /healthz, /readyz, /metrics, /configz "
                                   "over TLS with gunicorn. Cluster state: --cluster-state DIR, the "
                                   "live cluster (--kubeconfig / --in-cluster), or the shipped "
                                   "examples when none is given.")
    s.add_argument("--bind", default="127.0.0.1:8443", help="HOST:PORT to listen on (default %(default)s)")
    s.add_argument("--tls-cert", required=True, help="serving certificate (PEM); re-read when it changes")
    s.add_argument("--tls-key", required=True, help="private key (PEM); re-read when it changes")
    s.add_argument("--client-ca", help="require client certificates signed by this CA (PEM)")
    s.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    s.add_argument("--config", metavar="FILE",
                   help="YAML config (featureGates, limits, switches); re-read live when it changes")
    src = s.add_mutually_exclusive_group()
    src.add_argument("--cluster-state", metavar="DIR", help="read cluster state from YAML/JSON files")
    src.add_argument("--kubeconfig", metavar="FILE", help="list+watch a live cluster with this kubeconfig")
    src.add_argument("--in-cluster", action="store_true", help="list+watch the cluster we run in")
    s.add_argument("--workers", type=int, default=0, help="worker processes (default: one per core, min 2)")
    s.add_argument("--threads", type=int, default=4, help="threads per worker (default %(default)s)")
    s.add_argument("--shutdown-delay", type=float, default=3.0,
                   help="seconds to keep serving after SIGTERM while /readyz reports draining "
                        "(default %(default)s)")
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.set_defaults(run=run)


def check(args: argparse.Namespace) -> None:
    """Everything that can be wrong with the flags and the files, each as one line (ConfigError),
    before gunicorn starts: missing or unreadable files, a key that does not match its
    certificate, no writable temporary directory, a bad or busy address, an empty state
    directory (a warning only). The state itself is loaded by ``run`` before any worker starts."""
    for flag, f in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key), ("--client-ca", args.client_ca),
                    ("--kubeconfig", args.kubeconfig)):
        if f:
            _readable(flag, f)
    if args.cluster_state:
        if not os.path.isdir(args.cluster_state):
            raise ConfigError(f"--cluster-state {args.cluster_state}: not a directory")
        try:
            os.listdir(args.cluster_state)
        except OSError as e:
            raise ConfigError(f"--cluster-state {args.cluster_state}: cannot read the directory as uid "
                              f"{os.getuid()}: {e.strerror or e}") from None
        warn_if_empty(args.cluster_state)
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(args.tls_cert, args.tls_key)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"--tls-cert {args.tls_cert} and --tls-key {args.tls_key} do not make a usable "
                          f"pair (is the key the certificate's?): {getattr(e, 'reason', None) or e}") from None
    _writable_dirs()
    host, port = parse_bind(args.bind)
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as e:
            raise ConfigError(f"--bind {args.bind}: cannot listen there: {e.strerror or e}") from None


def _readable(flag: str, path: str) -> None:
    """ConfigError unless ``path`` is a file this process can read."""
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise ConfigError(f"{flag} {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{flag} {path}: is a directory, not a file") from None
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot read it as uid {os.getuid()}: {e.strerror or e}") from None


def _writable_dirs() -> None:
    """The server needs a writable temporary directory (gunicorn's worker heartbeats, its own
    run directory) and, when set, a writable PROMETHEUS_MULTIPROC_DIR (the chart mounts
    emptyDirs on /tmp and /tmp/prometheus under a read-only root filesystem)."""
    try:
        tmp = tempfile.gettempdir()
        with tempfile.TemporaryFile(dir=tmp):
            pass
    except OSError as e:
        raise ConfigError(f"no writable temporary directory (TMPDIR, /tmp): {e.strerror or e}; "
                          "mount a writable volume (an emptyDir) on /tmp") from None
    metrics = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if metrics:
        try:
            os.makedirs(metrics, exist_ok=True)
            with tempfile.TemporaryFile(dir=metrics):
                pass
        except OSError as e:
            raise ConfigError(f"PROMETHEUS_MULTIPROC_DIR {metrics}: not a writable directory: "
                              f"{e.strerror or e}") from None


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8443`` for IPv6) -> (host, port); ConfigError otherwise."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--bind {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8443 or 0.0.0.0:8443")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    """Check the flags, load the state (files) or check its configuration (live), then hand
    over to gunicorn until shutdown."""
    from webhook.server.runner import ServeOptions
    from webhook.server.runner import run as serve
    from webhook.state.default import load_state

    settings = build_settings(args.feature_gates, args.config)
    check(args)
    # Before any worker starts, so a state that cannot be used is one line and exit 2, not a
    # worker that fails to boot. Files are read once here and shared by the forked workers; a
    # live source is only configured here (its threads must start in each worker).
    state: StateSource | None = None
    if args.kubeconfig or args.in_cluster:
        from webhook.state.live import LiveState
        live = LiveState.from_kubeconfig(args.kubeconfig) if args.kubeconfig else LiveState.in_cluster()
        live.stop(timeout=0)  # never started: this only closes its client
    else:
        state = load_state(args.cluster_state)
    opts = ServeOptions(bind=args.bind, tls_cert=args.tls_cert, tls_key=args.tls_key,
                        client_ca=args.client_ca, workers=args.workers, threads=args.threads,
                        config_path=args.config or os.environ.get("DRA_WEBHOOK_CONFIG") or None,
                        flag_gates=args.feature_gates,
                        cluster_state=args.cluster_state, kubeconfig=args.kubeconfig,
                        in_cluster=args.in_cluster, shutdown_delay=args.shutdown_delay,
                        log_level=args.log_level)
    try:
        return serve(opts, settings, state=state)
    except Exception as e:  # e.g. the address taken between the check and the bind
        if isinstance(e, (ssl.SSLError, OSError)):
            raise ConfigError(f"cannot serve: {e}") from None
        raise
