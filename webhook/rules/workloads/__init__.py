"""Workload kinds (apps/v1, batch/v1): feasibility only; the apiserver validates them, we never deny."""
