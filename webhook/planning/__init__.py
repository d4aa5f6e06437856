"""Explain and capacity: why a pod cannot be placed, how many more fit, what-if node changes.

Pure: no Flask, no kubernetes client. Over ``webhook.workloads`` (pods, node filters, placement)
and the one allocator (``webhook.allocator``); never a search of its own. Entry points:

    explain(objects, snapshot, gates, budget) -> Explanation    per node class, the first reason
    capacity(objects, snapshot, gates, budget, limit) -> Capacity   how many more fit, pool use
    add_nodes(snapshot, node, k), drain(snapshot, node)            what-if snapshots
"""

from __future__ import annotations

from webhook.planning.explain import Explanation, as_new, explain, without_pod
from webhook.planning.verdicts import Budget, Verdict

__all__ = ["Budget", "Explanation", "Verdict", "as_new", "explain", "without_pod"]
