"""Choose the cluster-state source from the command line: a directory, the live cluster, or the
example state shipped with the project (``examples/cluster/``) when nothing is given."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from webhook import ConfigError
from webhook.state.base import ClusterSnapshot, StateSource, StaticState
from webhook.state.files import from_dir

log = logging.getLogger(__name__)


def _candidates() -> list[Path]:
    pkg = Path(__file__).resolve().parent.parent  # .../webhook
    return [
        pkg.parent / "examples" / "cluster",      # repo checkout or editable install
        pkg / "examples" / "cluster",             # shipped as package data
        Path(sys.prefix) / "share" / "dra-webhook" / "examples" / "cluster",  # data-files install
    ]


def default_state_dir() -> Path:
    """The shipped example cluster state: the first candidate that exists, else the repo path."""
    cands = _candidates()
    for c in cands:
        if c.is_dir():
            return c
    return cands[0]


def load_state(cluster_state_dir: str | None = None, kubeconfig: str | None = None,
               in_cluster: bool = False, *, start: bool = True, **live_options: Any) -> StateSource:
    """The state source the flags ask for: ``--cluster-state DIR`` (files, read once),
    ``--kubeconfig F`` or ``--in-cluster`` (list+watch, started unless ``start=False``; call this in
    the serving process, after any fork), or the shipped examples when none is given.

    Raises ConfigError when more than one source is given or the cluster config is unusable, and
    BadInput when a state file cannot be read. ``live_options`` go to ``LiveState``.
    """
    given = [n for n, v in (("--cluster-state", cluster_state_dir), ("--kubeconfig", kubeconfig),
                            ("--in-cluster", in_cluster)) if v]
    if len(given) > 1:
        raise ConfigError(f"choose one cluster-state source, not {' and '.join(given)}")
    if cluster_state_dir:
        return StaticState(from_dir(cluster_state_dir))
    if kubeconfig or in_cluster:
        from webhook.state.live import LiveState  # imports kubernetes: only when asked for

        live = (LiveState.from_kubeconfig(kubeconfig, **live_options) if kubeconfig
                else LiveState.in_cluster(**live_options))
        return live.start() if start else live
    root = default_state_dir()
    if not root.is_dir():
        log.warning("cluster state: example state %s not found; starting with an empty state", root)
        return StaticState(ClusterSnapshot(source="empty"))
    snap = from_dir(root)
    return StaticState(ClusterSnapshot(snap.objects, f"examples:{root}", snap.synced_at, snap.version))
