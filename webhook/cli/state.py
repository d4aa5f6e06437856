"""``dra-webhook state export``: a live cluster's state written as a ``--cluster-state`` directory
(the kinds the state reads, never Secrets; metadata trimmed; ``--anonymize`` hashes names)."""

from __future__ import annotations

import argparse
import sys

from webhook import BadInput
from webhook.cli.common import EXIT_OK, read_snapshot
from webhook.state.export import export


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("state", help="cluster state tools (export)",
                       description="Cluster state tools. `state export` writes the live cluster's state "
                                   "(the kinds the allocator and the node filters read: ResourceSlices, "
                                   "DeviceClasses, ResourceClaims and templates, Workloads, PodGroups, "
                                   "Nodes, Pods, DeviceTaintRules; never Secrets) as a directory "
                                   "--cluster-state reads back.")
    verbs = m.add_subparsers(dest="verb", required=True, metavar="VERB")
    e = verbs.add_parser("export", help="write the live cluster's state to a directory",
                         description="List the live cluster once and write one YAML file per kind to DIR, "
                                     "object metadata trimmed to what the rules and the allocator read. "
                                     "--anonymize replaces namespaces and object, node, pool and reference "
                                     "names with stable hashes (the same name, the same hash). Exit 0, 2 bad "
                                     "input or an unreachable cluster.")
    e.add_argument("--kubeconfig", metavar="F", help="the cluster (default: the kubeconfig kubectl would use)")
    e.add_argument("-o", "--output", dest="out", metavar="DIR", required=True, help="directory to write")
    e.add_argument("--anonymize", action="store_true", help="hash names consistently")
    e.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    snapshot = read_snapshot(args.kubeconfig, None, True)
    try:
        counts = export(snapshot, args.out, anonymize=args.anonymize)
    except OSError as e:
        raise BadInput(f"{args.out}: {e.strerror or e}") from None
    written = ", ".join(f"{n} {k}" for k, n in counts.items()) or "nothing"
    print(f"wrote {written} to {args.out}", file=sys.stderr)
    return EXIT_OK
