"""The snapshot type and the source protocol every state backend implements."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
         "Workload", "PodGroup", "Node", "Pod", "DeviceTaintRule")


class Change(NamedTuple):
    """The one object a snapshot differs by from its predecessor (one watch event), so what was
    derived from the predecessor can be updated instead of rebuilt (``allocator.model``)."""

    kind: str
    base: tuple[dict[str, Any], ...]
    """The kind's tuple in the predecessor (identity tells a consumer it holds that one)."""
    old: dict[str, Any] | None
    """The object replaced or removed (None: added)."""
    new: dict[str, Any] | None
    """The object added or replacing ``old`` (None: removed)."""
    position: int
    """Its position in the kind's tuple (of the predecessor's, for a removal)."""


@dataclass(frozen=True)
class ClusterSnapshot:
    """Immutable view of the cluster: ``objects[kind]`` is a tuple of raw dicts.

    Consumers must not mutate the dicts. Updates build a new snapshot and swap it atomically.
    """

    objects: Mapping[str, tuple[dict[str, Any], ...]] = field(
        default_factory=lambda: MappingProxyType({k: () for k in KINDS}))
    source: str = "empty"
    synced_at: float = 0.0
    """``time.time()`` of the last complete sync; 0 when never synced."""
    version: int = 0
    """Increases with every new snapshot from the same source (cache keys use it)."""
    change: Change | None = None
    """Set when this snapshot follows its predecessor by one object (a watch event)."""

    @classmethod
    def from_objects(cls, objs: Iterable[dict[str, Any]], source: str = "objects",
                     version: int = 1) -> ClusterSnapshot:
        by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        for o in objs:
            kind = o.get("kind") if isinstance(o, dict) else None
            if kind in by_kind:
                by_kind[kind].append(o)
        return cls(MappingProxyType({k: tuple(v) for k, v in by_kind.items()}), source,
                   time.time(), version)

    def of(self, kind: str) -> tuple[dict[str, Any], ...]:
        return self.objects.get(kind, ())

    def count(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.objects.items()}

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        for o in self.of(kind):
            meta = o.get("metadata") or {}
            if meta.get("name") == name and (namespace is None or meta.get("namespace", "") == namespace):
                return o
        return None


class StateSource(Protocol):
    """Where snapshots come from. ``snapshot()`` never blocks on the network."""

    def snapshot(self) -> ClusterSnapshot: ...

    def ready(self) -> bool: ...

    def describe(self) -> dict[str, Any]: ...


class StaticState:
    """A fixed snapshot (files, examples, tests)."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        self._snap = snap

    def snapshot(self) -> ClusterSnapshot:
        return self._snap

    def ready(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {"source": self._snap.source, "ready": True, "objects": self._snap.count()}

    def health(self) -> dict[str, Any]:
        """Same keys as ``LiveState.health()``; a fixed snapshot is never stale."""
        return {"ready": True, "stale": False, "stale_kinds": [], "last_sync_age_seconds": None,
                "stale_after_seconds": None, "message": None, "kinds": {}}


def stale_note(source: object) -> str | None:
    """One-line staleness note for feasibility warnings (e.g. "state is stale (last sync 93 s ago)"),
    or None when the source is fresh or cannot tell: the source's ``stale_message()`` (the live
    source's, which spares a review the whole health report), else the ``message`` of its
    ``health()`` report."""
    quick = getattr(source, "stale_message", None)
    if callable(quick):
        msg = quick()
    else:
        health = getattr(source, "health", None)
        if not callable(health):
            return None
        msg = health().get("message")
    return msg if isinstance(msg, str) else None


@dataclass(frozen=True)
class StateView:
    """One request's view of the cluster state, taken once at the edge and passed down, so
    every step of a review (defaulting, state notes, feasibility) sees the same snapshot."""

    snapshot: ClusterSnapshot
    ready: bool
    stale: str | None = None
    """The staleness note of a live source (see ``stale_note``), None when fresh."""

    @classmethod
    def of(cls, source: StateSource) -> StateView:
        """Read ``source`` once: snapshot, readiness and staleness."""
        return cls(source.snapshot(), source.ready(), stale_note(source))
