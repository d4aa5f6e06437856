"""Cluster state: the objects the allocator decides on, as an immutable snapshot.

``ClusterSnapshot`` holds raw objects (plain dicts, as the apiserver stores them) by kind.
Sources: a directory (``from_dir``), the live cluster (``live``), or the shipped examples.
State is taken as it is: objects are not re-validated or dropped for failing a rule.
"""

from __future__ import annotations

from webhook.state.base import KINDS, ClusterSnapshot, StateSource, StaticState
from webhook.state.files import from_dir, load_objects_from_file

__all__ = ["KINDS", "ClusterSnapshot", "StateSource", "StaticState", "from_dir", "load_objects_from_file"]
