"""StatefulSet: feasibility of its pods and the pod template's gate strip (``common.workload_rules``)."""

from __future__ import annotations

from webhook.rules.workloads.common import workload_rules

RULES = workload_rules("StatefulSet", "statefulsets")
