"""``dra-webhook certs``: a CA and a serving certificate for the webhook Service."""

from __future__ import annotations

import argparse
import sys

from webhook.cli.common import EXIT_OK


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


def run(args: argparse.Namespace) -> int:
    from webhook.certs import generate

    paths = generate(args.service, args.namespace, args.out, days=args.days, dev=args.dev)
    print(f"wrote {paths.ca}, {paths.cert}, {paths.key}", file=sys.stderr)
    print(paths.ca_bundle())
    return EXIT_OK
