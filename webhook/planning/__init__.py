"""Explain and capacity: why a pod cannot be placed, how many more fit, what-if node changes.

Pure: no Flask, no kubernetes client. Over ``webhook.workloads`` (pods, node filters, placement)
and the one allocator (``webhook.allocator``); never a search of its own. Entry points:

    explain(objects, snapshot, gates, budget) -> Explanation    per node class, the first reason;
                                                                per PodGroup member, its verdict
    capacity(objects, snapshot, gates, budget, limit) -> Capacity   how many more fit, pool use
    add_nodes(snapshot, node, k), drain(snapshot, node)            what-if snapshots
"""

from __future__ import annotations

from webhook.planning.capacity import LIMIT, Capacity, PoolUse, capacity, pool_use
from webhook.planning.explain import Explanation, as_new, explain, without_pod
from webhook.planning.members import Member, Standing
from webhook.planning.verdicts import Budget, Verdict
from webhook.planning.whatif import add_nodes, drain, parse_add

__all__ = ["LIMIT", "Budget", "Capacity", "Explanation", "Member", "PoolUse", "Standing", "Verdict", "add_nodes",
           "as_new", "capacity", "drain", "explain", "parse_add", "pool_use", "without_pod"]
