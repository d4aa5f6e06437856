"""The members of a PodGroup (a gang, or a workload's pods that name one), each with its verdict.

Pure. From one placement (``workloads.place``): per pod that names a PodGroup, in the order the
pods were given, where it went, or the first thing that blocks it: its most useful reason
(``Allocation.ranked``; the reason before any node when there is none per node), the gang's note
when it fits but its gang does not reach ``minCount``, or that it was not tried (a later
replica of a workload whose earlier replica fits nowhere: the same pod).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from webhook.allocator.reasons import Code, Reason, note
from webhook.workloads import Placement, PodPlacement, Workload
from webhook.workloads.placement import group_key


class Standing(StrEnum):
    """A member's verdict (its JSON value)."""

    PLACED = "placed"
    WAITS = "waits-for-gang"
    """It fits (on ``Member.node``), but its gang does not: none of the gang is bound."""
    BLOCKED = "fits-nowhere"
    NOT_TRIED = "not-tried"


@dataclass(frozen=True)
class Member:
    pod: str
    """``namespace/name``."""
    group: str
    """Its PodGroup, ``namespace/name``."""
    standing: Standing
    node: str | None = None
    """Where it goes (``PLACED``) or would go (``WAITS``)."""
    reason: Reason | None = None
    """The first thing that blocks it (None when placed)."""


def members(workloads: Sequence[Workload], placement: Placement) -> list[Member]:
    """The pods of ``workloads`` that name a PodGroup, each with its verdict; [] when none does."""
    tried = {p.pod: p for p in placement.pods}
    out: list[Member] = []
    for w in workloads:
        group = group_key({**w.template, "metadata": {"namespace": w.namespace}})
        if not group:
            continue
        first_blocked = ""
        for i in range(w.replicas):
            label = f"{w.namespace}/{w.pod_name(i)}"
            got = tried.get(label)
            if got is None:
                why = note(f"the same pod as {first_blocked}, which fits nowhere") if first_blocked else \
                    note("placing stopped before it (a cap or the deadline)")
                out.append(Member(label, group, Standing.NOT_TRIED, reason=why))
                continue
            member = _member(got, group, placement.gangs.get(group))
            first_blocked = first_blocked or (label if member.standing == Standing.BLOCKED else "")
            out.append(member)
    return out


def _member(got: PodPlacement, group: str, gang: Reason | None) -> Member:
    if got.node is not None:
        return Member(got.pod, group, Standing.PLACED, got.node)
    if got.outcome.feasible:  # unplaced with its gang
        return Member(got.pod, group, Standing.WAITS, got.outcome.node,
                      gang or note(f"PodGroup {group} does not reach its gang minCount"))
    top = [r for r in got.outcome.ranked(1) if r.code != Code.NODES_UNAVAILABLE]
    return Member(got.pod, group, Standing.BLOCKED, None, top[0] if top else got.outcome.summary)
