"""One list+watch loop per kind against the apiserver, feeding a snapshot store.

IO edge: the only state module that calls the apiserver (official ``kubernetes`` client, raw
JSON, no model objects). The loop, per kind:

    LIST (paged; record metadata.resourceVersion)  ->  WATCH from that version
      ADDED / MODIFIED / DELETED / BOOKMARK  -> sink.apply_event
      stream ends at timeout_seconds          -> WATCH again (or LIST if a resync is due)
      ERROR 410 / HTTP 410 Gone               -> LIST again
      other ERROR event, undecodable line     -> LIST again after a backoff
      connection dropped                      -> WATCH again from the last version
      LIST 404 (API not served)               -> synced-empty, LIST again after resync_seconds
      any failure                             -> capped exponential backoff with jitter

Nothing here raises out of the thread; ``stop`` is a shared Event, and ``interrupt()`` shuts an open
watch stream down so a stop is prompt.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes.client.exceptions import ApiException

from webhook.rules.registry import by_kind
from webhook.state.base import ClusterSnapshot
from webhook.state.pods import FIELD_SELECTOR

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KindAPI:
    """Where the apiserver serves one kind, and which client method lists/watches it."""

    kind: str
    api_version: str
    api_class: str
    """Class name in ``kubernetes.client`` (e.g. ``ResourceV1Api``)."""
    list_method: str
    """Cluster-wide list method (``..._for_all_namespaces`` for namespaced kinds)."""
    path: str
    """Collection path, for logs and docs."""
    namespaced: bool
    field_selector: str = ""
    """Sent with every LIST and WATCH: the objects the state keeps (pods: not terminal ones)."""
    max_page: int = 0
    """The largest LIST page of this kind (0: ``ReflectorOptions.page_size``). A page is held
    decoded until it is compacted, and what a process once held it keeps in its heap."""

    @property
    def resource(self) -> str:
        """``plural.group`` (``nodes`` in the core group), as RBAC rules and ``kubectl auth can-i``
        name it."""
        plural = self.path.rsplit("/", 1)[-1]
        group = self.api_version.rpartition("/")[0]
        return f"{plural}.{group}" if group else plural


def _api(kind: str, api_class: str, method: str, field_selector: str = "", max_page: int = 0) -> KindAPI:
    """A kind we have rules for: group, version, plural and scope come from its ``KindRules``."""
    rules = by_kind(kind)
    assert rules is not None, kind
    method += "_for_all_namespaces" if rules.namespaced else ""
    root = "/apis" if rules.group else "/api"
    return KindAPI(kind, rules.api_version(), api_class, method,
                   f"{root}/{rules.api_version()}/{rules.plural}", rules.namespaced, field_selector, max_page)


SLICE_PAGE = 25
"""ResourceSlices per LIST page: a slice holds up to 128 devices (~30 KiB of JSON, 7x that decoded);
the heap keeps what a page once took, so 25 (at most ~5 MiB decoded; 100: lean state 3.0x its JSON,
25: 2.8x, issue 30) at the cost of more requests (a page is a few ms of apiserver time)."""

KIND_APIS: dict[str, KindAPI] = {a.kind: a for a in (
    _api("ResourceSlice", "ResourceV1Api", "list_resource_slice", max_page=SLICE_PAGE),
    _api("DeviceClass", "ResourceV1Api", "list_device_class"),
    _api("ResourceClaim", "ResourceV1Api", "list_resource_claim"),
    _api("ResourceClaimTemplate", "ResourceV1Api", "list_resource_claim_template"),
    _api("Workload", "SchedulingV1beta1Api", "list_workload"),
    _api("PodGroup", "SchedulingV1beta1Api", "list_pod_group"),
    KindAPI("Node", "v1", "CoreV1Api", "list_node", "/api/v1/nodes", False),  # state only: no rules
    _api("Pod", "CoreV1Api", "list_pod", FIELD_SELECTOR),
    _api("DeviceTaintRule", "ResourceV1Api", "list_device_taint_rule"),
)}
"""The kinds the live state lists and watches (``state.base.KINDS``)."""

API_VERSIONS: dict[str, str] = {k: a.api_version for k, a in KIND_APIS.items()}


@dataclass(frozen=True, slots=True)
class ReflectorOptions:
    resync_seconds: float = 600.0
    """Full LIST this often even when the watch is healthy (repairs any drift); 0 disables."""
    watch_timeout_seconds: int = 30
    """``timeout_seconds`` sent with each WATCH; the server ends the stream then and we rewatch.
    A clean end proves the connection is alive, so it bounds the sync age of a quiet kind whose
    stream carries no bookmarks (a kind the apiserver serves without its watch cache); keep it
    below the staleness bound (``LiveState.stale_after_seconds``)."""
    backoff_base_seconds: float = 0.5
    backoff_cap_seconds: float = 30.0
    request_timeout_seconds: float = 30.0
    """Read timeout of a LIST page (a WATCH gets its own timeout plus this grace)."""
    connect_timeout_seconds: float = 5.0
    page_size: int = 500
    """``limit`` of each LIST page (0: one unpaged LIST)."""


def backoff_delay(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait after ``failures`` consecutive failures: doubling from ``base``, capped at
    ``cap``, with "equal jitter" (half fixed, half random) so many workers do not retry in step."""
    if failures <= 0:
        return 0.0
    ceiling = min(cap, base * 2.0 ** min(failures - 1, 30))
    return ceiling / 2 + rng.uniform(0.0, ceiling / 2)


class KindStatus:
    """What one reflector has seen; written by its thread only, read by ``describe``/``health``."""

    __slots__ = ("kind", "synced", "served", "connected", "consecutive_failures", "last_error",
                 "last_contact", "last_event_mono", "last_event_wall", "last_list_mono",
                 "lists", "watches", "relists", "denied")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.synced = False
        """First LIST completed (or the API is not served)."""
        self.served: bool | None = None
        self.connected = False
        """A watch stream is open right now."""
        self.consecutive_failures = 0
        self.last_error: str | None = None
        self.last_contact: float | None = None
        """``time.monotonic()`` when the state was last known current: a LIST, a watch stream
        opened, any event (bookmarks included), a stream the server ended cleanly. A stream that
        stays open without a byte does not count: a hung apiserver looks exactly like that."""
        self.last_event_mono: float | None = None
        self.last_event_wall: float | None = None
        self.last_list_mono: float | None = None
        self.lists = 0
        self.watches = 0
        self.relists = 0
        """LISTs forced by 410 Gone or an ERROR event."""
        self.denied: str | None = None
        """The right the apiserver refused last (``"list resourceslices.resource.k8s.io"``, on
        HTTP 401/403); None once a LIST or WATCH of the kind succeeds."""

    def sync_age(self, now: float) -> float | None:
        """Seconds since the state of this kind was last known current (``last_contact``), open
        watch or not; None before the first LIST. A healthy stream keeps it below the watch
        timeout: the apiserver sends a bookmark before it ends a stream (and about every minute),
        and ends it cleanly at ``timeoutSeconds``."""
        if self.last_contact is None:
            return None
        return max(0.0, now - self.last_contact)


class Sink(Protocol):
    """Where a reflector puts what it lists and watches (``live.SnapshotStore``)."""

    def prepare(self, kind: str, items: list[Any]) -> list[Any]: ...

    def replace(self, kind: str, items: list[Any], resource_version: str, *,
                prepared: bool = False) -> ClusterSnapshot: ...

    def apply_event(self, kind: str, event: Any) -> ClusterSnapshot: ...

    def resource_version(self, kind: str) -> str: ...


# How a watch stream ended.
_CLOSED, _GONE, _ERROR, _DROPPED, _STOPPED = "closed", "gone", "error", "dropped", "stopped"
_IGNORED = "ignored"  # an event of a type we skip (the stream goes on)
_EVENT_TYPES = frozenset(("ADDED", "MODIFIED", "DELETED", "BOOKMARK"))
# Failures of the transport or of the payload: logged without a traceback.
_EXPECTED = (urllib3.exceptions.HTTPError, OSError, ValueError)


class Reflector:
    """The list+watch loop of one kind; ``run`` is the thread body."""

    def __init__(self, api: KindAPI, list_fn: Callable[..., Any], sink: Sink, status: KindStatus,
                 options: ReflectorOptions, stop: threading.Event,
                 rng: random.Random | None = None) -> None:
        self.api = api
        self._list_fn = list_fn
        self._sink = sink
        self.status = status
        self.options = options
        """Read at each step, so ``LiveState.configure`` can swap them while the thread runs."""
        self._stop = stop
        self._rng = rng or random.Random()
        self._active: Any = None
        self._active_lock = threading.Lock()
        self._verb = "list"
        """The request in flight ("list" or "watch"), to name a refused right."""

    # -- thread body -------------------------------------------------------------------------

    def run(self) -> None:
        need_list = True
        just_listed = False
        while not self._stop.is_set():
            try:
                if need_list or self._resync_due():
                    if not self._list():
                        # Not served: look again later (the API may be enabled by then).
                        self._stop.wait(self.options.resync_seconds or 60.0)
                        continue
                    need_list, just_listed = False, True
                if not self._sink.resource_version(self.api.kind):
                    need_list = True
                    self._fail("LIST returned no resourceVersion")
                    continue
                started = time.monotonic()
                end, events = self._watch()
                if end == _STOPPED:
                    break
                if end == _CLOSED:
                    if events == 0 and time.monotonic() - started < 1.0:
                        # An empty stream that ends at once is not a healthy timeout: do not spin.
                        self._fail("watch: stream ended at once")
                    else:
                        self.status.consecutive_failures = 0
                elif end == _GONE:
                    need_list = True
                    self.status.relists += 1
                    if just_listed and events == 0:
                        # Gone right after a fresh LIST: do not spin LIST/WATCH at full speed.
                        self._fail("watch: resourceVersion too old right after LIST")
                elif end == _ERROR:
                    need_list = True
                    self.status.relists += 1
                    self._fail(self.status.last_error or "watch: ERROR event")
                elif end == _DROPPED and events == 0:
                    self._fail(self.status.last_error or "watch: connection dropped")
                just_listed = False
            except ApiException as e:
                if e.status in (401, 403):
                    self._denied(e)
                elif e.status == 410:
                    need_list = True
                    self.status.relists += 1
                    if just_listed:
                        self._fail("watch: HTTP 410 Gone right after LIST")
                elif e.status == 404 and not need_list:
                    need_list = True  # the API went away: LIST decides whether it is still served
                else:
                    self._fail(f"HTTP {e.status} {e.reason or ''}".strip())
                just_listed = False
            except _EXPECTED as e:
                if self._stop.is_set():
                    break
                self._fail(f"{type(e).__name__}: {e}")
                just_listed = False
            except Exception as e:  # a bug must not kill the reflector: log it, back off, go on
                log.exception("cluster state: %s reflector failed", self.api.kind)
                self._fail(f"{type(e).__name__}: {e}")
                need_list, just_listed = True, False

    def interrupt(self) -> None:
        """Shut an open watch stream down so a blocked read returns at once (called by stop)."""
        with self._active_lock:
            resp = self._active
        if resp is not None:
            try:
                resp.shutdown()
            except Exception:  # already released or closed: nothing to interrupt
                pass

    # -- steps --------------------------------------------------------------------------------

    def _timeouts(self, read: float) -> tuple[float, float]:
        return (float(self.options.connect_timeout_seconds), float(read))

    def _resync_due(self) -> bool:
        last = self.status.last_list_mono
        return (self.options.resync_seconds > 0 and last is not None
                and time.monotonic() - last >= self.options.resync_seconds)

    def _list(self) -> bool:
        """LIST every page and replace the kind's objects; False when the API is not served."""
        items: list[Any] = []
        cont: str | None = None
        self._verb = "list"
        while True:
            kwargs: dict[str, Any] = {"_preload_content": False,
                                      "_request_timeout": self._timeouts(self.options.request_timeout_seconds)}
            if self.options.page_size > 0:
                limit = int(self.options.page_size)
                kwargs["limit"] = min(limit, self.api.max_page) if self.api.max_page else limit
            if cont:
                kwargs["_continue"] = cont
            if self.api.field_selector:
                kwargs["field_selector"] = self.api.field_selector
            try:
                resp = self._list_fn(**kwargs)
            except ApiException as e:
                if e.status == 404:
                    self._mark_not_served()
                    return False
                if e.status == 410 and cont:  # continue token expired: start the LIST over
                    items, cont = [], None
                    continue
                raise
            try:
                body = resp.read()
            finally:
                resp.release_conn()
            doc = json.loads(body)
            if not isinstance(doc, dict):
                raise ValueError("LIST response is not an object")
            page = doc.get("items")
            if page is None:
                page = []
            if not isinstance(page, list):
                raise ValueError("LIST response has no items list")
            # Each page in the form the state keeps (trimmed, compacted) as it arrives, so a
            # LIST is never held decoded whole: the peak is one decoded page, not the cluster.
            meta = doc.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            del doc, body
            items.extend(self._sink.prepare(self.api.kind, page))
            del page
            cont = meta.get("continue") if isinstance(meta.get("continue"), str) else None
            if not cont:
                rv = meta.get("resourceVersion")
                break
        self._sink.replace(self.api.kind, items, rv if isinstance(rv, str) else "", prepared=True)
        st = self.status
        now = time.monotonic()
        if not st.synced or st.served is False:
            log.info("cluster state: %s synced (%d objects)", self.api.kind, len(items))
        st.synced, st.served, st.denied = True, True, None
        st.lists += 1
        st.last_list_mono = st.last_contact = st.last_event_mono = now
        st.last_event_wall = time.time()
        st.consecutive_failures, st.last_error = 0, None
        return True

    def _mark_not_served(self) -> None:
        st = self.status
        if st.served is not False:
            log.info("cluster state: %s (%s) is not served by this apiserver; treating it as empty",
                     self.api.kind, self.api.api_version)
        self._sink.replace(self.api.kind, [], "")
        now = time.monotonic()
        st.synced, st.served = True, False
        st.lists += 1
        st.last_list_mono = st.last_contact = now
        st.consecutive_failures, st.last_error = 0, None

    def _watch(self) -> tuple[str, int]:
        """One WATCH stream from the recorded resourceVersion; returns (how it ended, events)."""
        opts = self.options
        timeout = opts.watch_timeout_seconds
        if opts.resync_seconds > 0 and self.status.last_list_mono is not None:
            left = opts.resync_seconds - (time.monotonic() - self.status.last_list_mono)
            timeout = min(timeout, max(1, math.ceil(left)))
        self._verb = "watch"
        extra = {"field_selector": self.api.field_selector} if self.api.field_selector else {}
        resp = self._list_fn(
            watch=True, resource_version=self._sink.resource_version(self.api.kind),
            allow_watch_bookmarks=True, timeout_seconds=int(timeout), _preload_content=False,
            _request_timeout=self._timeouts(timeout + opts.request_timeout_seconds), **extra)
        st = self.status
        with self._active_lock:
            self._active = resp
        st.watches += 1
        st.connected, st.last_contact, st.denied = True, time.monotonic(), None
        events = 0
        end = _DROPPED
        try:
            if self._stop.is_set():
                return _STOPPED, events
            for line in _iter_lines(resp):
                if self._stop.is_set():
                    return _STOPPED, events
                ended = self._event(line)
                if ended == _IGNORED:
                    continue
                if ended is not None:
                    return ended, events
                events += 1
            end = _CLOSED
            return end, events
        except _EXPECTED as e:
            if self._stop.is_set():
                return _STOPPED, events
            st.last_error = f"watch dropped: {type(e).__name__}"
            log.info("cluster state: %s watch dropped (%s); watching again", self.api.kind, e)
            return _DROPPED, events
        finally:
            with self._active_lock:
                self._active = None
            st.connected = False
            if end == _CLOSED:  # the server ended the stream: it was alive until now
                st.last_contact = time.monotonic()
            try:
                if end != _CLOSED:
                    # Unread bytes (the rest of the stream) must not go back to the pool with the
                    # connection: close it; the pool opens a new one next time.
                    resp.close()
                resp.release_conn()
            except Exception:  # closing a broken stream may fail again; nothing left to do
                pass

    def _event(self, line: bytes | str) -> str | None:
        """Apply one watch event; how the stream ends when it must (410 Gone, an ERROR event,
        an undecodable line), ``_IGNORED`` for an event type we skip, None once applied."""
        st = self.status
        try:
            ev = json.loads(line)
        except ValueError:
            st.last_error = "watch: undecodable event"
            return _ERROR
        if not isinstance(ev, dict):
            st.last_error = "watch: event is not an object"
            return _ERROR
        typ = ev.get("type")
        if typ == "ERROR":
            obj = ev.get("object")
            obj = obj if isinstance(obj, dict) else {}
            if obj.get("code") == 410:
                log.info("cluster state: %s watch expired (410 Gone); relisting", self.api.kind)
                return _GONE
            st.last_error = f"watch: ERROR event {obj.get('code')} {obj.get('message', '')}".strip()
            log.warning("cluster state: %s %s; relisting", self.api.kind, st.last_error)
            return _ERROR
        if typ not in _EVENT_TYPES:
            log.debug("cluster state: %s ignoring watch event type %r", self.api.kind, typ)
            return _IGNORED
        self._sink.apply_event(self.api.kind, ev)
        now = time.monotonic()
        st.last_contact = st.last_event_mono = now
        st.last_event_wall = time.time()
        st.consecutive_failures = 0
        return None

    def _denied(self, e: ApiException) -> None:
        """HTTP 401/403: name the refused right, in the status and in the log line."""
        right = f"{self._verb} {self.api.resource}"
        self.status.denied = right
        said = _status_message(e)
        self._fail(f"HTTP {e.status} {e.reason or ''}".strip() + f": cannot {right}"
                   + (f" ({said})" if said else "")
                   + "; check RBAC: the webhook's identity needs get, list and watch on it")

    def _fail(self, reason: str) -> None:
        st = self.status
        st.consecutive_failures += 1
        st.last_error = reason
        delay = backoff_delay(st.consecutive_failures, self.options.backoff_base_seconds,
                              self.options.backoff_cap_seconds, self._rng)
        log.warning("cluster state: %s: %s; retry %d in %.2f s", self.api.kind, reason,
                    st.consecutive_failures, delay)
        self._stop.wait(delay)


def _status_message(e: ApiException) -> str:
    """The apiserver's own one-line reason (a Status object's ``message``), or ""."""
    try:
        doc = json.loads(e.body or "")
    except (TypeError, ValueError):
        return ""
    msg = doc.get("message") if isinstance(doc, dict) else None
    return " ".join(msg.split())[:300] if isinstance(msg, str) else ""


def _iter_lines(resp: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a streaming response, each line as soon as its chunk arrives."""
    if getattr(resp, "chunked", False):
        chunks: Iterator[bytes] = resp.stream(amt=None, decode_content=True)
    else:
        chunks = iter(lambda: resp.read1(65536), b"")
    buf = b""
    for chunk in chunks:
        if not chunk:
            continue
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line, buf = buf[:nl], buf[nl + 1:]
            if line.strip():
                yield line
    if buf.strip():
        yield buf
