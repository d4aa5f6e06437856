"""What every command shares: exit codes, settings from flags, the cluster state, input files."""

from __future__ import annotations

import uuid
from dataclasses import replace

from webhook import BadInput
from webhook.config import Settings, load_config_file
from webhook.gates import KNOWN, FeatureGates
from webhook.state.base import StateSource

EXIT_OK, EXIT_DENIED, EXIT_USAGE = 0, 1, 2
"""0 success (allowed, feasible, expectations met), 1 denied/infeasible, 2 bad input or usage."""

GATES_HELP = "feature gates, Kubernetes syntax: Name=true,Other=false (unknown names are an error)"


def build_settings(feature_gates: str | None, config: str | None) -> Settings:
    """Defaults, then ``DRA_WEBHOOK_*`` environment variables, then the config file, then
    ``--feature-gates`` (flags win, as in Kubernetes)."""
    s = Settings.from_env()
    if config:
        s = load_config_file(config, s)
    if feature_gates:
        s = replace(s, gates=FeatureGates.parse(feature_gates, s.gates))
    return s


def load_cluster_state(path: str | None) -> StateSource:
    """``--cluster-state DIR``, or the shipped examples when it is not given."""
    from webhook.state.default import load_state
    return load_state(path, None, False)


def new_uid() -> str:
    return str(uuid.uuid4())


def parse_gate_names(text: str) -> list[str]:
    """``--compare-gates A,B``: known, unlocked gate names."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in KNOWN:
            raise BadInput(f"--compare-gates: unrecognized feature gate: {n}")
        if KNOWN[n].locked:
            raise BadInput(f"--compare-gates: {n} is locked to {str(KNOWN[n].default).lower()}")
    if not names:
        raise BadInput("--compare-gates: no gate names given")
    return names
