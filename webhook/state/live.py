"""Cluster state from the live cluster: list+watch threads feeding an incrementally built snapshot.

``SnapshotStore`` keeps per-kind objects keyed by ``namespace/name`` and publishes a new immutable
``ClusterSnapshot`` per change, reusing the tuples of every kind that did not change; it needs no
thread and no network (benchmarks time ``apply_event`` on it). ``LiveState`` runs one
``reflector.Reflector`` thread per kind and answers ``snapshot()`` from memory: never a LIST per
request.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import logging
import random
import threading
import time
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from webhook import ConfigError
from webhook.state.base import KINDS, Change, ClusterSnapshot
from webhook.state.compact import COMPACT_KINDS, Compactor, trimmed
from webhook.state.reflector import API_VERSIONS, KIND_APIS, KindStatus, Reflector, ReflectorOptions

log = logging.getLogger(__name__)

_THREAD_PREFIX = "dra-webhook-reflector-"


def object_key(obj: Any) -> str | None:
    """``namespace/name`` (``name`` for cluster-scoped objects); None when the object has no name."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    name, ns = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    return f"{ns}/{name}" if isinstance(ns, str) and ns else name


def _meta_str(obj: dict[str, Any], field: str) -> str:
    meta = obj.get("metadata")
    value = meta.get(field) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def _rv(obj: dict[str, Any]) -> str:
    return _meta_str(obj, "resourceVersion")


class SnapshotStore:
    """Objects by kind and key, and the current snapshot, swapped atomically on each change.

    Each kind's tuple is ordered by key (the apiserver's LIST order), so a relist and a stream of
    events that reach the same state give the same snapshot contents. ``snapshot()`` takes no lock.
    Objects are stored as given (``kind``/``apiVersion`` are filled in when a LIST omitted them),
    pods trimmed to what the placement reads (terminal ones not at all), slices, nodes and pods
    as compacted copies sharing their equal parts (``compact.py``); callers must not mutate
    them afterwards.
    """

    def __init__(self, kinds: Iterable[str] = KINDS, source: str = "live",
                 api_versions: Mapping[str, str] = API_VERSIONS) -> None:
        self._kinds = tuple(kinds)
        self._api_versions = dict(api_versions)
        self._lock = threading.Lock()
        self._objs: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in self._kinds}
        self._keys: dict[str, list[str]] = {k: [] for k in self._kinds}
        self._rv: dict[str, str] = {k: "" for k in self._kinds}
        self._compactor = Compactor()
        self._compact_lock = threading.Lock()
        self._snap = ClusterSnapshot(MappingProxyType({k: () for k in (*KINDS, *self._kinds)}),
                                     source, 0.0, 0)

    def snapshot(self) -> ClusterSnapshot:
        return self._snap

    def resource_version(self, kind: str) -> str:
        return self._rv[kind]

    def count(self, kind: str) -> int:
        return len(self._keys[kind])

    def digest(self, kind: str) -> str:
        """What the store holds of ``kind``, in 16 hex digits: the sha256 of its objects'
        ``uid:resourceVersion`` lines, sorted, each ending in a newline. Equal to the same digest
        of a fresh LIST exactly when nothing is missing, extra or out of date (``/configz``)."""
        lines = sorted(f"{_meta_str(o, 'uid')}:{_rv(o)}\n" for o in self._snap.of(kind))
        return hashlib.sha256("".join(lines).encode()).hexdigest()[:16]

    def prepare(self, kind: str, items: Iterable[Any]) -> list[Any]:
        """``items`` (one page of a LIST) as ``replace`` would store them: an object the store
        holds at the same resourceVersion as stored, others trimmed and compacted (objects the
        state does not keep left out). A reflector prepares each page as it arrives, so a LIST
        is never held decoded whole: the decoded page is dropped before the next one comes."""
        stored = self._objs[kind]
        out: list[Any] = []
        for obj in items:
            key = object_key(obj)
            if key is None:
                log.info("cluster state: ignoring a listed %s without metadata.name", kind)
                continue
            had = stored.get(key)
            rv = _rv(obj)
            # An object the store holds at the same resourceVersion is kept as stored: a resync
            # costs no compaction, and the allocator's caches (keyed on identity) stay valid.
            kept = had if had is not None and rv != "" and _rv(had) == rv else self._normalise(kind, obj)
            if kept is not None:
                out.append(kept)
        return out

    def replace(self, kind: str, items: Iterable[Any], resource_version: str, *,
                prepared: bool = False) -> ClusterSnapshot:
        """Make ``items`` the whole content of ``kind`` (after a LIST); objects without a name are
        skipped. ``prepared``: the items come from ``prepare`` (stored as they are). Publishes a
        new snapshot only when something changed."""
        new: dict[str, dict[str, Any]] = {}
        for obj in items if prepared else self.prepare(kind, items):
            key = object_key(obj)
            if key is not None:
                new[key] = obj
        with self._lock:
            old = self._objs[kind]
            self._rv[kind] = resource_version
            if new.keys() == old.keys() and all(
                    _rv(o) != "" and _rv(o) == _rv(new[k]) for k, o in old.items()):
                return self._snap  # a resync that found nothing new: keep the snapshot (and its version)
            self._objs[kind] = new
            self._keys[kind] = keys = sorted(new)
            return self._publish(kind, tuple([new[k] for k in keys]))

    def apply_event(self, kind: str, event: Any) -> ClusterSnapshot:
        """Apply one watch event (``{"type": ..., "object": {...}}``) and return the snapshot after it.

        ADDED/MODIFIED upsert, DELETED removes, BOOKMARK only records the resourceVersion; other
        types and objects without a name change nothing. Raises KeyError for a kind not kept here.
        """
        if kind not in self._objs:
            raise KeyError(kind)
        if not isinstance(event, dict):
            return self._snap
        typ, obj = event.get("type"), event.get("object")
        if typ == "BOOKMARK":
            rv = _rv(obj) if isinstance(obj, dict) else ""
            if rv:
                self._rv[kind] = rv
            return self._snap
        if typ not in ("ADDED", "MODIFIED", "DELETED"):
            return self._snap
        key = object_key(obj)
        if key is None or not isinstance(obj, dict):
            log.info("cluster state: ignoring a %s %s event without metadata.name", kind, typ)
            return self._snap
        if typ != "DELETED":
            kept = self._normalise(kind, obj)
            if kept is None:  # the state does not keep it (a pod turned terminal): as if deleted
                typ = "DELETED"
            else:
                obj = kept
        with self._lock:
            rv = _rv(obj)
            if rv:
                self._rv[kind] = rv
            objs, keys = self._objs[kind], self._keys[kind]
            # The kind's tuple mirrors ``keys``: splice it at the key's index (C-speed slices)
            # instead of rebuilding it from the dict.
            prev = self._snap.of(kind)
            i = bisect.bisect_left(keys, key)
            had = objs.get(key)
            if typ == "DELETED":
                if had is None:
                    return self._snap
                del objs[key]
                del keys[i]
                tup = prev[:i] + prev[i + 1:]
                return self._publish(kind, tup, Change(kind, prev, had, None, i))
            if had is not None:
                tup = prev[:i] + (obj,) + prev[i + 1:]
            else:
                keys.insert(i, key)
                tup = prev[:i] + (obj,) + prev[i:]
            objs[key] = obj
            return self._publish(kind, tup, Change(kind, prev, had, obj, i))

    def _normalise(self, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The object as stored: trimmed and compacted (``compact.py``); None: not kept."""
        got = trimmed(kind, obj)
        if got is None:
            return None
        obj = got
        if kind in COMPACT_KINDS:  # slices, nodes and pods share their equal parts
            with self._compact_lock:
                obj = self._compactor.object(obj)
        # List items may come without kind/apiVersion; consumers (and from_objects) key on kind.
        if "kind" not in obj:
            obj["kind"] = kind
        if "apiVersion" not in obj and kind in self._api_versions:
            obj["apiVersion"] = self._api_versions[kind]
        return obj

    def _publish(self, kind: str, tup: tuple[dict[str, Any], ...], change: Change | None = None) -> ClusterSnapshot:
        """Swap in the next snapshot with ``tup`` for ``kind`` (``change``: what one event
        changed); caller holds the lock."""
        prev = self._snap
        objects = dict(prev.objects)
        objects[kind] = tup
        self._snap = ClusterSnapshot(MappingProxyType(objects), prev.source, time.time(), prev.version + 1,
                                     change)
        return self._snap


def kube_client(path: str | None, context: str | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for a kubeconfig file (None: $KUBECONFIG or
    ~/.kube/config, as kubectl finds it), the one place a kubeconfig is loaded. Raises
    ConfigError when the file is missing or unusable."""
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                persist_config=False)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"kubeconfig {path or '(default)'}: {e}") from None
    return client.ApiClient(cfg)


class LiveState:
    """StateSource backed by list+watch of the live cluster (one daemon thread per kind).

    ``start()`` launches the reflectors; ``ready()`` is false until every kind's first LIST is done
    (an API the apiserver does not serve counts as synced-empty). ``snapshot()`` never blocks.
    Start it in the process that serves requests (after a gunicorn fork, not before).
    """

    def __init__(self, api_client: Any, kinds: Iterable[str] = KINDS, *,
                 resync_seconds: float = 600.0, watch_timeout_seconds: int = 30,
                 stale_after_seconds: float = 60.0, backoff_base_seconds: float = 0.5,
                 backoff_cap_seconds: float = 30.0, request_timeout_seconds: float = 30.0,
                 connect_timeout_seconds: float = 5.0, page_size: int = 500,
                 source: str | None = None, owns_client: bool = False,
                 rng: random.Random | None = None) -> None:
        self._kinds = tuple(kinds)
        unknown = [k for k in self._kinds if k not in KIND_APIS]
        if unknown:
            raise ConfigError(f"cluster state: cannot watch kind(s) {', '.join(unknown)}")
        self._client = api_client
        self._owns_client = owns_client
        self._opts = ReflectorOptions(
            resync_seconds=resync_seconds, watch_timeout_seconds=watch_timeout_seconds,
            backoff_base_seconds=backoff_base_seconds, backoff_cap_seconds=backoff_cap_seconds,
            request_timeout_seconds=request_timeout_seconds,
            connect_timeout_seconds=connect_timeout_seconds, page_size=page_size)
        self.stale_after_seconds = stale_after_seconds
        host = getattr(getattr(api_client, "configuration", None), "host", None) or "?"
        self._store = SnapshotStore(self._kinds, source or f"live:{host}")
        self._status = {k: KindStatus(k) for k in self._kinds}
        self._stop = threading.Event()
        self._rng = rng or random.Random()
        self._reflectors: list[Reflector] = []
        self._threads: list[threading.Thread] = []

    # -- constructors --------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, path: str | None, context: str | None = None, **kwargs: Any) -> LiveState:
        """A LiveState for the cluster in a kubeconfig file (None: $KUBECONFIG or ~/.kube/config).

        Raises ConfigError when the file is missing or unusable. Not started."""
        api = kube_client(path, context)
        return cls(api, source=f"kubeconfig:{api.configuration.host}", owns_client=True, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> LiveState:
        """A LiveState using the pod's service account. Raises ConfigError outside a cluster."""
        from kubernetes import client, config

        cfg = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as e:
            raise ConfigError(f"in-cluster config: {e}") from None
        return cls(client.ApiClient(cfg), source=f"in-cluster:{cfg.host}", owns_client=True, **kwargs)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LiveState:
        """Launch one reflector thread per kind (idempotent)."""
        if self._threads:
            return self
        from kubernetes import client

        apis: dict[str, Any] = {}
        for kind in self._kinds:
            spec = KIND_APIS[kind]
            if spec.api_class not in apis:
                apis[spec.api_class] = getattr(client, spec.api_class)(self._client)
            list_fn = getattr(apis[spec.api_class], spec.list_method)
            r = Reflector(spec, list_fn, self._store, self._status[kind], self._opts, self._stop,
                          random.Random(self._rng.random()))
            t = threading.Thread(target=r.run, name=_THREAD_PREFIX + kind, daemon=True)
            self._reflectors.append(r)
            self._threads.append(t)
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every reflector and wait up to ``timeout`` s; True when all threads ended.

        Open watches are shut down at once; a LIST in flight ends within its request timeout."""
        self._stop.set()
        for r in self._reflectors:
            r.interrupt()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("cluster state: reflectors still running after stop: %s", ", ".join(alive))
        elif self._owns_client:
            self._client.close()
        return not alive

    def configure(self, *, stale_after_seconds: float | None = None,
                  watch_timeout_seconds: int | None = None) -> None:
        """Change the staleness bound and the watch timeout while running (a config reload); the
        new timeout applies from each kind's next WATCH."""
        if stale_after_seconds is not None:
            self.stale_after_seconds = stale_after_seconds
        if watch_timeout_seconds is not None and watch_timeout_seconds != self._opts.watch_timeout_seconds:
            self._opts = dataclasses.replace(self._opts, watch_timeout_seconds=watch_timeout_seconds)
            for r in self._reflectors:
                r.options = self._opts

    def __enter__(self) -> LiveState:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    # -- StateSource ---------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        return self._store.snapshot()

    def ready(self) -> bool:
        return all(s.synced for s in self._status.values())

    def unready_reason(self) -> str | None:
        """Why ``ready()`` is false, in one line for ``/readyz`` (None when ready): the rights the
        apiserver refused (``"missing RBAC rights: list nodes, ..."``) first, else the kinds
        not listed yet with their last error."""
        if self.ready():
            return None
        waiting = [s for s in self._status.values() if not s.synced]
        denied = [s.denied for s in waiting if s.denied]
        if denied:
            return (f"missing RBAC rights: {', '.join(denied)} (the webhook's identity needs get, list "
                    "and watch on every kind of the cluster state)")
        errors = sorted({s.last_error for s in waiting if s.last_error})
        return (f"the cluster state is not synced yet: {', '.join(s.kind for s in waiting)}"
                + (f" (last error: {errors[0]})" if errors else ""))

    def wait_ready(self, timeout: float) -> bool:
        """Block until ready or ``timeout`` seconds passed (start-up and tests only)."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() >= deadline or self._stop.wait(0.02):
                return self.ready()
        return True

    def apply_event(self, kind: str, event: Any) -> ClusterSnapshot:
        """Apply one watch event as the reflector would (benchmarks, tests)."""
        return self._store.apply_event(kind, event)

    def health(self) -> dict[str, Any]:
        """Readiness and staleness: ``stale`` when a synced kind the apiserver serves was last
        known current (``KindStatus.sync_age``) more than ``stale_after_seconds`` ago, open watch
        or not; ``message`` is a one-line note for feasibility warnings (None when fresh)."""
        now = time.monotonic()
        kinds: dict[str, dict[str, Any]] = {}
        stale_kinds: list[str] = []
        worst: float | None = None
        for kind, st in self._status.items():
            age = st.sync_age(now)
            stale = self._is_stale(st, age)
            if stale:
                stale_kinds.append(kind)
            if st.served is not False and age is not None:
                worst = age if worst is None else max(worst, age)
            kinds[kind] = {"synced": st.synced, "served": st.served, "stale": stale,
                           "last_sync_age_seconds": None if age is None else round(age, 3)}
        message = _stale_note(worst) if stale_kinds else None
        return {"ready": self.ready(), "stale": bool(stale_kinds), "stale_kinds": stale_kinds,
                "last_sync_age_seconds": None if worst is None else round(worst, 3),
                "stale_after_seconds": self.stale_after_seconds, "message": message, "kinds": kinds}

    def stale_message(self) -> str | None:
        """``health()["message"]`` without building the report: read once per review (a review of
        a small object costs a few tens of µs, and the report ~7 µs)."""
        now = time.monotonic()
        worst: float | None = None
        stale = False
        for st in self._status.values():
            age = st.sync_age(now)
            stale = stale or self._is_stale(st, age)
            if st.served is not False and age is not None:
                worst = age if worst is None else max(worst, age)
        return _stale_note(worst) if stale else None

    def _is_stale(self, st: KindStatus, age: float | None) -> bool:
        """A synced kind the apiserver serves, last known current over ``stale_after_seconds`` ago."""
        return bool(st.synced and st.served is not False and age is not None and age > self.stale_after_seconds)

    def describe(self) -> dict[str, Any]:
        now = time.monotonic()
        health = self.health()
        snap = self._store.snapshot()
        kinds: dict[str, dict[str, Any]] = {}
        for kind, st in self._status.items():
            kinds[kind] = {
                "synced": st.synced, "served": st.served, "objects": self._store.count(kind),
                "resourceVersion": self._store.resource_version(kind), "digest": self._store.digest(kind),
                "connected": st.connected,
                "last_event_time": st.last_event_wall,
                "last_event_age_seconds": (None if st.last_event_mono is None
                                           else round(now - st.last_event_mono, 3)),
                "last_sync_age_seconds": health["kinds"][kind]["last_sync_age_seconds"],
                "stale": health["kinds"][kind]["stale"],
                "consecutive_failures": st.consecutive_failures, "last_error": st.last_error,
                "denied": st.denied,
                "lists": st.lists, "watches": st.watches, "relists": st.relists,
            }
        return {"source": snap.source, "ready": health["ready"], "stale": health["stale"],
                "stale_after_seconds": self.stale_after_seconds,
                "watch_timeout_seconds": self._opts.watch_timeout_seconds,
                "version": snap.version, "objects": snap.count(), "kinds": kinds}


def _stale_note(worst: float | None) -> str | None:
    """The one-line staleness note of feasibility warnings (``worst``: the oldest sync's age)."""
    return None if worst is None else f"state is stale (last sync {worst:.0f} s ago)"
