"""``dra-webhook capacity``: how many more of a pod, a workload's pod or a claim fit now, per node
and in total, with each pool's use; ``--add-nodes``/``--drain`` ask what-if. Decides through
``webhook.planning.capacity``, prints through ``render_planning``."""

from __future__ import annotations

import argparse
import time

from webhook.cli import render_planning
from webhook.cli.common import (
    EXIT_OK,
    GATES_HELP,
    add_state_flags,
    build_settings,
    collector_paused,
    read_inputs,
    read_snapshot,
)
from webhook.cli.progress import terminal_progress
from webhook.cli.simulate import STEPS_MAX, TIMEOUT_SECONDS, stored_form
from webhook.planning import LIMIT, Budget, add_nodes, capacity, drain, parse_add
from webhook.workloads.placement import REPLICAS_MAX


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("capacity", help="how many more of a pod, workload or claim fit now",
                       description="How many more of the pod (a Pod, a workload's pod) or claim (a "
                                   "ResourceClaim or ResourceClaimTemplate, counted as pods that each get "
                                   "one and tolerate every taint) in FILE fit now: copies are placed one "
                                   "at a time as simulate places replicas, until one does not fit or "
                                   "--max are placed. Per node and in total, and per pool: devices "
                                   "allocated, counters and consumable capacity used. --add-nodes "
                                   "NODE=K adds K copies of NODE and its slices, --drain NODE removes "
                                   "it, its slices and its pods. Exit 0, 2 bad input or usage.")
    m.add_argument("-f", "--filename", dest="files", action="append", required=True,
                   help="the pod, workload or claim, and the claims and templates it names (repeatable)")
    add_state_flags(m, "the shipped examples")
    m.add_argument("--add-nodes", metavar="NODE=K", action="append", default=[],
                   help="what if K more nodes shaped like NODE (its slices copied, renamed) existed")
    m.add_argument("--drain", metavar="NODE", action="append", default=[],
                   help="what if NODE (its slices and its pods) were gone")
    m.add_argument("--max", type=int, default=LIMIT, metavar="N",
                   help=f"copies tried at most (default {LIMIT}, at most {REPLICAS_MAX}); the answer says "
                        "when it stopped there")
    m.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    m.add_argument("-o", "--output", choices=["text", "json"], default="text")
    m.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = build_settings(args.feature_gates, None)
    adds = [parse_add(a) for a in args.add_nodes]
    objects = [stored_form(o, settings.gates) for o in read_inputs(args.files)]
    snapshot = read_snapshot(args.kubeconfig, args.cluster_state, False)
    for name in args.drain:
        snapshot = drain(snapshot, name)
    for name, k in adds:
        snapshot = add_nodes(snapshot, name, k)
    with terminal_progress("capacity", args.output) as progress, collector_paused():  # the budget starts now
        got = capacity(objects, snapshot, settings.gates,
                       Budget(STEPS_MAX, time.monotonic() + TIMEOUT_SECONDS, progress.step), args.max)
    print(render_planning.capacity(got, args.output))
    return EXIT_OK
