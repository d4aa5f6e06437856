"""``dra-webhook explain``: why a pod (or each replica of a workload) cannot be placed.

Decides through ``webhook.planning.explain`` and prints through ``render_planning``. A live pod
(``pod/NAME``) is read from the apiserver with the scheduler's last FailedScheduling event; a
file (``-f``) is explained against ``--cluster-state`` (default: the shipped examples) or, with
``--kubeconfig``, against the live cluster.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

from webhook import BadInput
from webhook.cli import render_planning
from webhook.cli.common import (
    GATES_HELP,
    add_state_flags,
    build_settings,
    collector_paused,
    read_inputs,
    read_snapshot,
)
from webhook.cli.progress import terminal_progress
from webhook.cli.results import Explained
from webhook.cli.simulate import STEPS_MAX, TIMEOUT_SECONDS, stored_form
from webhook.planning import Budget, as_new, explain, without_pod
from webhook.raw import as_dict

_TARGET = re.compile(r"^(?:pods?|po)/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("explain", help="why a pod cannot be placed: per node class, the first reason",
                       description="Why a pod (or each replica of a workload) cannot be placed: per "
                                   "node, grouped by node class, the first node-level (taints, "
                                   "selector/affinity, allocatable pods/cpu/memory, unschedulable) or "
                                   "device-level reason (per claim and request, from the allocator, with "
                                   "the amounts that decide it); the pods of a PodGroup member by member. "
                                   "pod/NAME reads the pod from the live cluster (--kubeconfig, default "
                                   "the current context as kubectl finds it) and shows the scheduler's "
                                   "last FailedScheduling event beside ours; -f FILE explains the Pods "
                                   "and workloads in FILE against --cluster-state (default: the "
                                   "shipped examples) or --kubeconfig. Exit 0 it fits somewhere, 1 it "
                                   "fits nowhere, 2 bad input or usage.")
    m.add_argument("target", nargs="?", metavar="pod/NAME", help="a pod of the cluster")
    m.add_argument("-n", "--namespace", default="default", help="the pod's namespace (default: default)")
    m.add_argument("-f", "--filename", dest="files", action="append",
                   help="Pods or workloads, and the claims, templates and PodGroups they name (repeatable)")
    add_state_flags(m, "the live cluster for pod/NAME, the shipped examples for -f")
    m.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    m.add_argument("-o", "--output", choices=["text", "json"], default="text")
    m.set_defaults(run=run)


def _pod_name(target: str) -> str:
    got = _TARGET.match(target)
    if got is None:
        raise BadInput(f"{target!r}: want pod/NAME (a pod's name: lowercase letters, digits, '-' and '.')")
    return got.group(1)


def _from_state(snapshot: Any, namespace: str, name: str) -> dict[str, Any]:
    pod = snapshot.find("Pod", name, namespace)
    if pod is None:
        raise BadInput(f"pod {namespace}/{name} not found in the cluster state")
    node = as_dict(pod.get("spec")).get("nodeName")
    if node:  # the state keeps a bound pod's requests only (``state.pods``): no claims to judge
        raise BadInput(f"pod {namespace}/{name} is bound to node {node}: a cluster state keeps only what a "
                       "bound pod uses of its node, not its claims or selectors; explain it against the "
                       "live cluster (--kubeconfig), or give the pod with -f")
    return as_dict(pod)


def read_live(args: argparse.Namespace, name: str, settings: Any) -> tuple[list[dict[str, Any]], Any, str | None]:
    """(the pod as a new one, the snapshot without it, the scheduler's last word) for pod/NAME of
    the live cluster (or of ``--cluster-state``)."""
    ns = args.namespace
    scheduler: str | None = None
    if args.cluster_state:
        snapshot = read_snapshot(None, args.cluster_state, False)
        pod = _from_state(snapshot, ns, name)
    else:
        from webhook.state.cluster import connect, read_pod, scheduler_event
        api = connect(args.kubeconfig)
        try:
            found = read_pod(api, ns, name)
            if found is None:
                raise BadInput(f"pod {ns}/{name} not found in the cluster at {api.configuration.host}")
            pod = found
            scheduler = scheduler_event(api, ns, name, str((pod.get("metadata") or {}).get("uid") or ""))
        finally:
            api.close()
        snapshot = read_snapshot(args.kubeconfig, None, True)
    return [stored_form(as_new(pod), settings.gates)], without_pod(snapshot, ns, name), scheduler


def run(args: argparse.Namespace) -> int:
    if bool(args.target) == bool(args.files):
        raise BadInput("give pod/NAME or -f FILE (one of them)")
    settings = build_settings(args.feature_gates, None)
    scheduler: str | None = None
    if args.target:
        objects, snapshot, scheduler = read_live(args, _pod_name(args.target), settings)
    else:
        objects = [stored_form(o, settings.gates) for o in read_inputs(args.files)]
        snapshot = read_snapshot(args.kubeconfig, args.cluster_state, False)
    with terminal_progress("explain", args.output) as progress, collector_paused():  # the budget starts now
        ex = explain(objects, snapshot, settings.gates,
                     Budget(STEPS_MAX, time.monotonic() + TIMEOUT_SECONDS, progress.step))
    result = Explained(ex, scheduler, live=bool(args.target) and not args.cluster_state)
    print(render_planning.explained(result, args.output))
    return result.exit_code
