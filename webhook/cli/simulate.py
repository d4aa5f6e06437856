"""``dra-webhook simulate``: allocate claims (or a PodGroup's claims), or place the pods of Pods
and workloads (``webhook.workloads``), against a cluster state.

``simulate_objects`` decides and returns a ``Simulation`` (or raises ``BadInput``); ``render``
turns it into the JSON DESIGN.md specifies or a readable per-node explanation.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from webhook import BadInput
from webhook.allocator.allocation import Allocation
from webhook.allocator.engine import JOINT, PER_CLAIM, Call, allocate
from webhook.allocator.feasibility import claims_for
from webhook.allocator.frame import Limits
from webhook.allocator.model import Model, model_for
from webhook.allocator.reasons import note
from webhook.cli import render, render_compare
from webhook.cli.common import (
    EXIT_USAGE,
    GATES_HELP,
    build_settings,
    collector_paused,
    load_cluster_state,
    parse_gate_names,
)
from webhook.cli.results import Simulation
from webhook.gates import FeatureGates
from webhook.patch import PatchError, apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.registry import by_kind, feasibility_kinds
from webhook.state.base import ClusterSnapshot
from webhook.state.files import load_objects_from_file
from webhook.versions import as_stored
from webhook.workloads import Lookup, WorkloadError, is_pod_source, place, workload_of

STEPS_MAX = 1_000_000
TIMEOUT_SECONDS = 60.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("simulate", help="allocate claims, or place pods and workloads, against a cluster state",
                       description="Allocate the ResourceClaims (or a PodGroup's claims) in FILE "
                                   "together, in one simulated scheduling cycle, filtering every node "
                                   "as kube-scheduler does. A Pod or a Deployment, ReplicaSet, "
                                   "StatefulSet, Job or CronJob in FILE is placed pod by pod instead: "
                                   "node filters, then its claims (named ones shared, templates per "
                                   "replica; other FILEs hold the claims, templates and PodGroups it "
                                   "names). Exit 0 feasible (every replica placed), 1 otherwise, 2 bad "
                                   "input.")
    m.add_argument("--cluster-state", metavar="DIR",
                   help="cluster state directory (default: the shipped examples)")
    m.add_argument("-f", "--filename", dest="files", action="append", required=True,
                   help="claims, claim templates, a PodGroup, Pods or workloads (repeatable)")
    m.add_argument("--node", help="only this node (default: any node)")
    m.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    m.add_argument("--podgroup-mode", choices=[JOINT, PER_CLAIM], default=JOINT,
                   help="joint: one search over all claims (upper bound); per-pod: claim by claim "
                        "without revisiting, as the scheduler does today")
    m.add_argument("--compare-gates", metavar="NAMES",
                   help="run with these gates on and off and show the differences")
    m.add_argument("-o", "--output", choices=["text", "json"], default="text")
    m.set_defaults(run=run)


def collect_claims(objects: list[dict[str, Any]], snapshot: ClusterSnapshot,
                   gates: FeatureGates | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(claims in input order, notes). A PodGroup pulls its claims from the input or the state.

    The objects are first made what the apiserver would store under ``gates``: its defaults
    (the caller's job: the allocator takes claims as given) and its gate strips (a PodGroup's
    ``resourceClaims`` are dropped while DRAWorkloadResourceClaims is off). Raises ``BadInput``
    for kinds simulate does not take.
    """
    _check_kinds(objects)
    objects = [stored_form(o, gates or FeatureGates()) for o in objects]
    groups = [o for o in objects if o.get("kind") == "PodGroup"]
    if len(groups) > 1:
        raise BadInput("simulate takes at most one PodGroup")
    if groups:
        return claims_for(groups[0], snapshot, extra=objects)
    claims: list[dict[str, Any]] = []
    notes: list[str] = []
    for o in objects:
        got, more = claims_for(o, snapshot)
        claims.extend(got)
        notes.extend(more)
    return claims, notes


def _check_kinds(objects: list[dict[str, Any]]) -> None:
    kinds = feasibility_kinds()
    for o in objects:
        kind = o.get("kind") if isinstance(o, dict) else None
        if kind not in kinds:
            raise BadInput(f"unsupported kind {kind!r}: simulate takes {', '.join(kinds)}")


def stored_form(obj: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    """``obj`` as a CREATE would store it: the apiserver's defaults (and, for an older version,
    the conversion to v1), then the gate strips."""
    rules = by_kind(str(obj.get("kind")))
    if rules is None:
        return obj
    status = obj.get("status")
    converted = as_stored(obj)
    obj = converted if converted is not obj else rules.apply_defaults(obj)
    mutation = rules.mutate(obj, RuleContext(gates))
    try:
        stored: dict[str, Any] = apply_patch(obj, mutation.ops) if mutation.ops else obj
    except PatchError:  # our bug; simulate the object as given rather than fail
        stored = obj
    if status is not None and "status" not in stored:
        # A claim that carries status.allocation is an allocated claim (it holds its devices and
        # narrows the nodes), as in the state: a CREATE would drop it, simulate takes it as given.
        stored = {**stored, "status": status}
    return stored


def simulate_objects(objects: list[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
                     node: str | None, podgroup_mode: str = JOINT) -> Simulation:
    """Allocate the claims in ``objects`` together, in one simulated scheduling cycle; or, when
    they hold Pods or workloads, place those pods one at a time (``webhook.workloads.placement``),
    the other objects (claims, templates, PodGroups) being what the pods refer to."""
    if podgroup_mode not in (JOINT, PER_CLAIM):
        raise BadInput(f"unknown --podgroup-mode {podgroup_mode!r} (want {JOINT} or {PER_CLAIM})")
    if any(is_pod_source(o) for o in objects):
        return _simulate_pods(objects, snapshot, gates, node)
    claims, notes = collect_claims(objects, snapshot, gates)
    started = time.perf_counter()
    model = model_for(snapshot, gates)
    _check_node(node, model)
    if not claims:
        outcome = Allocation()
        outcome.summary = note("no claims to allocate")
        outcome.reasons = [note(n) for n in notes] or [outcome.summary]
    else:
        limits = Limits(STEPS_MAX, time.monotonic() + TIMEOUT_SECONDS)
        outcome = allocate(claims, model, Call(nodes=None if node is None else (node,), mode=podgroup_mode,
                                               limits=limits, one_shot=True))
        outcome.reasons = [note(n) for n in notes] + outcome.reasons
        if outcome.feasible and outcome.unchecked:
            outcome.entries.append(note(f"{outcome.unchecked} later node(s) not searched for fatal errors: "
                                        "the step budget or the deadline ran out"))
    return Simulation(outcome, podgroup_mode, len(claims), time.perf_counter() - started)


def _check_node(node: str | None, model: Model) -> None:
    if node is not None and node not in model.nodes:
        known = ", ".join(list(model.nodes)[:5]) + (", ..." if len(model.nodes) > 5 else "")
        raise BadInput(f"--node {node}: no such node in the cluster state (nodes: {known or 'none'})")


def _simulate_pods(objects: list[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
                   node: str | None) -> Simulation:
    """Place the pods of the Pods and workloads in ``objects`` (see ``webhook.workloads.placement``)."""
    _check_kinds(objects)
    stored = [stored_form(o, gates) for o in objects]
    try:
        workloads = [workload_of(o) for o in stored if is_pod_source(o)]
    except WorkloadError as e:
        raise BadInput(str(e)) from None
    started = time.perf_counter()
    model = model_for(snapshot, gates)
    _check_node(node, model)
    placement = place(workloads, model, Lookup(snapshot, [o for o in stored if not is_pod_source(o)]), gates,
                      max_steps=STEPS_MAX, deadline=time.monotonic() + TIMEOUT_SECONDS, only=node)
    outcome = placement.failed.outcome if placement.failed is not None else (
        placement.pods[-1].outcome if placement.pods else Allocation())
    return Simulation(outcome, JOINT, sum(len(p.claims) for p in placement.pods), time.perf_counter() - started,
                      placement, tuple(workloads))


def run_simulate(objects: list[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
                 node: str | None, podgroup_mode: str = JOINT, output: str = "text") -> tuple[int, str]:
    """(exit code, what ``simulate`` prints): ``simulate_objects`` rendered."""
    if output not in ("json", "text"):
        return EXIT_USAGE, f"unknown output format {output!r} (want json or text)"
    try:
        sim = simulate_objects(objects, snapshot, gates, node, podgroup_mode)
    except BadInput as e:
        return EXIT_USAGE, str(e)
    return sim.exit_code, render.simulation(sim, output)


def run(args: argparse.Namespace) -> int:
    settings = build_settings(args.feature_gates, None)
    objs: list[dict[str, Any]] = []
    for f in args.files:
        objs.extend(load_objects_from_file(f))
    snapshot = load_cluster_state(args.cluster_state).snapshot()
    from webhook.cel import compile_result
    # Building the CEL parser (~0.3 s, once per process) is start-up, like loading the state:
    # done before ``stats.allocateSeconds`` starts, as dra-allocate's parser is compiled in.
    compile_result('device.driver == "warm-up"')
    with collector_paused():
        if args.compare_gates:
            from webhook.cli.compare import compare_simulate
            cmp = compare_simulate(lambda g: simulate_objects(objs, snapshot, g, args.node, args.podgroup_mode),
                                   settings, parse_gate_names(args.compare_gates))
            print(render_compare.simulation_comparison(cmp, args.output))
            return cmp.exit_code
        sim = simulate_objects(objs, snapshot, settings.gates, args.node, args.podgroup_mode)  # BadInput: exit 2
    print(render.simulation(sim, args.output).rstrip("\n"))
    return sim.exit_code
