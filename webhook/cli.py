"""``dra-webhook``: serve, review, simulate, certs, gates.

Exit codes: 0 success (allowed / feasible / served and shut down cleanly), 1 denied or
infeasible, 2 bad input or usage (one-line reason on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypedDict

from webhook import BadInput, ConfigError, __version__
from webhook.config import Settings, load_config_file
from webhook.gates import FeatureGates

EXIT_OK, EXIT_DENIED, EXIT_USAGE = 0, 1, 2


def build_settings(feature_gates: str | None, config: str | None) -> Settings:
    """Defaults, then ``DRA_WEBHOOK_*`` environment variables, then the config file, then
    ``--feature-gates`` (flags win, as in Kubernetes)."""
    s = Settings.from_env()
    if config:
        s = load_config_file(config, s)
    if feature_gates:
        s = replace(s, gates=FeatureGates.parse(feature_gates, s.gates))
    return s


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dra-webhook",
        description="Validating and mutating admission webhook for Kubernetes DRA and "
                    "gang-scheduling objects (resource.k8s.io/v1, scheduling.k8s.io/v1beta1).")
    p.add_argument("--version", action="version", version=f"dra-webhook {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gates_help = "feature gates, Kubernetes syntax: Name=true,Other=false (unknown names are an error)"

    s = sub.add_parser("serve", help="run the HTTPS admission server under gunicorn",
                       description="Serve /mutate, /validate, /healthz, /readyz, /metrics, /configz "
                                   "over TLS with gunicorn. Cluster state: --cluster-state DIR, the "
                                   "live cluster (--kubeconfig / --in-cluster), or the shipped "
                                   "examples when none is given.")
    s.add_argument("--bind", default="127.0.0.1:8443", help="HOST:PORT to listen on (default %(default)s)")
    s.add_argument("--tls-cert", required=True, help="serving certificate (PEM); re-read when it changes")
    s.add_argument("--tls-key", required=True, help="private key (PEM); re-read when it changes")
    s.add_argument("--client-ca", help="require client certificates signed by this CA (PEM)")
    s.add_argument("--feature-gates", metavar="SPEC", help=gates_help)
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

    r = sub.add_parser("review", help="run the admission pipeline on a local object",
                       description="Mutate, validate the mutated object, then check feasibility, "
                                   "exactly as the server does. Exit 0 allowed, 1 denied, 2 bad input.")
    r.add_argument("-f", "--filename", dest="file", required=True,
                   help="YAML or JSON file with one or more objects ('-' for stdin)")
    r.add_argument("--old-file", help="the stored object, for an UPDATE")
    r.add_argument("--operation", choices=["CREATE", "UPDATE"],
                   help="default: UPDATE with --old-file, else CREATE")
    r.add_argument("--dry-run", action="store_true", help="review as a dry-run request")
    r.add_argument("--feature-gates", metavar="SPEC", help=gates_help)
    r.add_argument("--config", metavar="FILE", help="YAML config file, as for serve")
    r.add_argument("--cluster-state", metavar="DIR",
                   help="cluster state for feasibility warnings (default: the shipped examples)")
    r.add_argument("--no-feasibility", action="store_true", help="skip feasibility warnings")
    r.add_argument("--compare-gates", metavar="NAMES",
                   help="run with these gates on and off and show the differences")
    r.add_argument("-o", "--output", choices=["text", "json"], default="text")

    m = sub.add_parser("simulate", help="allocate claims against a cluster state",
                       description="Allocate the ResourceClaims (or a PodGroup's claims) in FILE "
                                   "together, in one simulated scheduling cycle. Exit 0 feasible, "
                                   "1 infeasible, 2 bad input.")
    m.add_argument("--cluster-state", metavar="DIR",
                   help="cluster state directory (default: the shipped examples)")
    m.add_argument("-f", "--filename", dest="files", action="append", required=True,
                   help="claims, claim templates or a PodGroup (repeatable)")
    m.add_argument("--node", help="only this node (default: feasible on any node)")
    m.add_argument("--feature-gates", metavar="SPEC", help=gates_help)
    m.add_argument("--podgroup-mode", choices=["joint", "per-pod"], default="joint",
                   help="joint: one search over all claims (upper bound); per-pod: claim by claim "
                        "without revisiting, as the scheduler does today")
    m.add_argument("--compare-gates", metavar="NAMES",
                   help="run with these gates on and off and show the differences")
    m.add_argument("-o", "--output", choices=["text", "json"], default="text")

    c = sub.add_parser("certs", help="write a CA and a serving certificate",
                       description="Writes ca.crt, ca.key, tls.crt, tls.key (ECDSA P-256) with SANs "
                                   "NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and prints "
                                   "the base64 caBundle. An existing CA in --out is reused.")
    c.add_argument("--service", required=True)
    c.add_argument("--namespace", required=True)
    c.add_argument("--out", required=True, help="output directory")
    c.add_argument("--days", type=int, default=365, help="serving certificate validity (default %(default)s)")
    c.add_argument("--dev", action="store_true", help="also valid for localhost and 127.0.0.1")

    g = sub.add_parser("gates", help="list the known feature gates",
                       description="Every known gate: stage, Kubernetes 1.37 default, the value in "
                                   "effect here and what it changes in this tool.")
    g.add_argument("--feature-gates", metavar="SPEC", help=gates_help)
    g.add_argument("--config", metavar="FILE")
    g.add_argument("-o", "--output", choices=["text", "json"], default="text")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "review":
            from webhook.review_cmd import cmd_review
            return cmd_review(args)
        if args.command == "simulate":
            from webhook.review_cmd import cmd_simulate
            return cmd_simulate(args)
        if args.command == "certs":
            return cmd_certs(args)
        if args.command == "gates":
            return cmd_gates(args)
    except (BadInput, ConfigError) as e:
        print(f"dra-webhook {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - `| head`
        return EXIT_OK
    return EXIT_USAGE  # pragma: no cover - argparse enforces a command


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from webhook.server.runner import ServeOptions, run

    settings = build_settings(args.feature_gates, args.config)
    for f in (args.tls_cert, args.tls_key, args.client_ca):
        if f and not os.path.isfile(f):
            raise ConfigError(f"{f}: no such file")
    if args.cluster_state and not os.path.isdir(args.cluster_state):
        raise ConfigError(f"{args.cluster_state}: not a directory")
    opts = ServeOptions(bind=args.bind, tls_cert=args.tls_cert, tls_key=args.tls_key,
                        client_ca=args.client_ca, workers=args.workers, threads=args.threads,
                        config_path=args.config or os.environ.get("DRA_WEBHOOK_CONFIG") or None,
                        flag_gates=args.feature_gates,
                        cluster_state=args.cluster_state, kubeconfig=args.kubeconfig,
                        in_cluster=args.in_cluster, shutdown_delay=args.shutdown_delay,
                        log_level=args.log_level)
    try:
        return run(opts, settings)
    except Exception as e:  # e.g. a key that does not match the certificate
        import ssl
        if isinstance(e, (ssl.SSLError, OSError)):
            raise ConfigError(f"cannot serve: {e}") from None
        raise


def cmd_certs(args: argparse.Namespace) -> int:
    from webhook.certs import generate

    paths = generate(args.service, args.namespace, args.out, days=args.days, dev=args.dev)
    print(f"wrote {paths.ca}, {paths.cert}, {paths.key}", file=sys.stderr)
    print(paths.ca_bundle())
    return EXIT_OK


def cmd_gates(args: argparse.Namespace) -> int:
    from webhook.gates import KNOWN

    s = build_settings(args.feature_gates, args.config)
    rows: list[_GateRow] = [
        {"name": g.name, "stage": g.stage, "default": g.default, "locked": g.locked,
         "enabled": s.gates.enabled(g.name), "effect": g.effect} for g in KNOWN.values()]
    if args.output == "json":
        print(json.dumps({"featureGates": rows}, indent=2))
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    print(f"{'GATE':<{width}}  {'STAGE':<5}  {'1.37':<5}  {'NOW':<5}  EFFECT IN DRA-WEBHOOK")
    for r in rows:
        mark = "" if r["enabled"] == r["default"] else " *"
        lock = " (locked)" if r["locked"] else ""
        print(f"{r['name']:<{width}}  {r['stage']:<5}  {_onoff(r['default']):<5}  "
              f"{_onoff(r['enabled']) + mark:<5}  {r['effect']}{lock}")
    return EXIT_OK


class _GateRow(TypedDict):
    """One row of ``dra-webhook gates`` (also its JSON output)."""

    name: str
    stage: str
    default: bool
    locked: bool
    enabled: bool
    effect: str


def _onoff(v: bool) -> str:
    return "on" if v else "off"


def new_uid() -> str:
    return str(uuid.uuid4())


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
