"""A placement in words: its one-line summary, its reasons, and the webhook's feasibility warnings.

Pure. "3 of 8 replicas can be placed now; the 4th: <why>" for a workload, "pod NS/NAME cannot be
placed now: <why>" for a Pod. The reasons themselves are worded by ``allocator.reasons``;
warnings follow ``allocator.feasibility``'s rules (at most ``WARNINGS_MAX``, each one line of
at most ``WARNING_LENGTH_MAX`` characters, never a denial, never an exception).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.allocator.allocation import CUT_SHORT
from webhook.allocator.feasibility import PREFIX, WARNING_LENGTH_MAX, WARNINGS_MAX, checked, warning_line
from webhook.allocator.feasibility import feasibility_warnings as claim_warnings
from webhook.allocator.model import model_for
from webhook.allocator.reasons import Code, full, rank
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads.claims import Lookup
from webhook.workloads.kinds import Workload, WorkloadError, is_pod_source, workload_of
from webhook.workloads.placement import Placement, PodPlacement, place


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def why(p: PodPlacement) -> str:
    """Why pod ``p`` was not placed: its outcome's summary, worded."""
    return p.outcome.message or "cannot allocate all claims"


def summary_line(placement: Placement, workloads: Sequence[Workload], named: bool = True) -> str:
    """The one-line answer (without the ``feasibility: `` prefix); a single Pod is "the pod"
    unless ``named`` (a warning is about the object it comes with)."""
    pods = placement.replicas
    if len(workloads) == 1 and workloads[0].kind == "Pod":
        name = f"pod {workloads[0].namespace}/{workloads[0].name}" if named else "the pod"
        if placement.feasible:
            return f"{name} can be placed on node {placement.pods[0].node}"
        return f"{name} cannot be placed now: " + (why(placement.failed) if placement.failed else _notes(placement))
    noun = "replicas" if len(workloads) == 1 else "pods"
    if placement.cut:
        return f"at least {placement.placed} of {pods} {noun} can be placed now ({_notes(placement)})"
    head = f"{placement.placed} of {pods} {noun} can be placed now"
    if placement.failed is not None:
        return f"{head}; the {ordinal(placement.pods.index(placement.failed) + 1)}: {why(placement.failed)}"
    if placement.notes:
        return f"{head}: {_notes(placement)}"
    return head


def _notes(placement: Placement) -> str:
    return "; ".join(full(r) for r in placement.notes)


def reason_texts(placement: Placement) -> list[str]:
    """The JSON ``reasons`` of a placement: its notes, then the first unplaced pod's summary and
    its per-node reasons, most useful first."""
    out = [full(r) for r in placement.notes]
    failed = placement.failed
    if failed is not None:
        out.append(f"pod {failed.pod}: {why(failed)}")
        out += [t for t in failed.outcome.reason_texts() if t != failed.outcome.message]
    return out


def feasibility_warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, *,
                         deadline: float, max_steps: int, max_length: int = WARNING_LENGTH_MAX) -> list[str]:
    """Feasibility warnings for any kind that has them: Pods and workloads are placed here,
    claims, claim templates and PodGroups are allocated by ``allocator.feasibility``. Each is
    worded to fit ``max_length`` (the server's 120 characters; the CLI prints them whole)."""
    if not is_pod_source(obj):
        return claim_warnings(obj, snapshot, gates, deadline=deadline, max_steps=max_steps, max_length=max_length)
    return checked(lambda: _pod_warnings(obj, snapshot, gates, deadline, max_steps, max_length))


def _pod_warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, deadline: float,
                  max_steps: int, limit: int) -> list[str]:
    try:
        w = workload_of(obj)
    except WorkloadError as e:
        return [_fit(f"{PREFIX}not checked: {e}", limit)]
    if w.replicas == 0 or (w.kind == "Pod" and not _needs_check(obj)):
        return []
    placement = place([w], model_for(snapshot, gates), Lookup(snapshot), gates, max_steps=max_steps,
                      deadline=deadline)
    if placement.feasible:
        return []
    head = PREFIX + summary_line(placement, [w], named=False)
    if len(head) > limit and w.kind == "Pod" and placement.failed is not None:
        head = PREFIX + why(placement.failed)  # "0/3 nodes are available: ..." says it alone
    out = [_fit(head, limit)]
    failed = placement.failed
    if failed is not None and failed.outcome.kind != CUT_SHORT:
        top = [r for r in failed.outcome.ranked(WARNINGS_MAX)
               if r.code != Code.NODES_UNAVAILABLE and r != failed.outcome.summary]
        out += [warning_line(r, limit=limit) for r in sorted(top, key=rank)[:WARNINGS_MAX - 1]]
    return out[:WARNINGS_MAX]


def _needs_check(pod: dict[str, Any]) -> bool:
    """A bare pod is checked when it has claims or joins a scheduling group (the pods the
    chart sends us); any other pod is the scheduler's business alone."""
    spec = pod.get("spec")
    return isinstance(spec, dict) and (bool(spec.get("resourceClaims")) or spec.get("schedulingGroup") is not None)


def _fit(line: str, limit: int) -> str:
    """The line, its end cut to fit ``limit`` (the head says how many fit, the tail why not): at
    the last ", " that leaves room (the scheduler's tally lists its parts so), else anywhere."""
    if len(line) <= limit:
        return line
    cut = line.rfind(", ", 0, limit - 5)
    return (line[:cut] + ", ...") if cut > len(PREFIX) else line[:limit - 3] + "..."
