"""``dra-webhook certs``: a CA and a serving certificate for the webhook Service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from webhook import BadInput
from webhook.cli.common import EXIT_OK
from webhook.rules.names import is_dns1123_label


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("certs", help="write a CA and a serving certificate",
                       description="Writes ca.crt, ca.key, tls.crt, tls.key (ECDSA P-256) with SANs "
                                   "NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and prints "
                                   "the base64 caBundle. An existing CA in --out is reused.")
    c.add_argument("--service", required=True)
    c.add_argument("--namespace", required=True)
    c.add_argument("--out", required=True, help="output directory")
    c.add_argument("--days", type=int, default=365, help="serving certificate validity (default %(default)s)")
    c.add_argument("--dev", action="store_true", help="also valid for localhost and 127.0.0.1")
    c.set_defaults(run=run)


def check(args: argparse.Namespace) -> None:
    """Refuse bad flags with one line (BadInput) before anything is written."""
    if args.days < 1:
        raise BadInput(f"--days must be a whole number of days, at least 1 (got {args.days})")
    for flag, value in (("--service", args.service), ("--namespace", args.namespace)):
        problems = is_dns1123_label(value)
        if problems:
            raise BadInput(f"{flag} {value!r} is not a DNS label: {problems[0]}")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".dra-webhook-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise BadInput(f"--out {args.out}: cannot write there: {e.strerror or e}") from None


def run(args: argparse.Namespace) -> int:
    from webhook.certs import generate

    check(args)
    paths = generate(args.service, args.namespace, args.out, days=args.days, dev=args.dev)
    print(f"wrote {paths.ca}, {paths.cert}, {paths.key}", file=sys.stderr)
    print(paths.ca_bundle())
    return EXIT_OK
