"""A small fake kube-apiserver on loopback speaking LIST and WATCH for the state kinds, and builders.

The fake keeps objects per kind, one global resourceVersion (as etcd does) and an event history.
Watches are chunked newline-delimited JSON, as the real apiserver sends them. Knobs: 404 a kind,
fail the next N requests of a kind with a status, be slow, drop open watches, lose history
(compaction: old resourceVersions answer 410 as an ERROR event or as HTTP 410), stop and restart.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from webhook.state.live import object_key
from webhook.state.reflector import KIND_APIS

PATHS = {a.path: a.kind for a in KIND_APIS.values()}


def wait_for(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll ``pred`` until truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def selected(obj: dict[str, Any], selector: str) -> bool:
    """A field selector of ``path=value`` / ``path!=value`` terms, ANDed (the ones the state sends)."""
    for term in filter(None, selector.split(",")):
        negate = "!=" in term
        path, value = term.split("!=", 1) if negate else term.split("=", 1)
        got: Any = obj
        for step in path.split("."):
            got = got.get(step, "") if isinstance(got, dict) else ""
        if (got == value) == negate:
            return False
    return True


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeApiServer:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 100
        self.objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in KIND_APIS}
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []
        self.compacted = 0
        self.gone_as_http = False
        self.not_found: set[str] = set()
        self.fail_next: dict[str, tuple[int, int]] = {}     # kind -> (count, HTTP status)
        self.error_next_watch: dict[str, int] = {}          # kind -> code of an ERROR event
        self.slow: dict[str, float] = {}
        self.generation = 0                                 # bumping it drops open watches
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.auth: set[str | None] = set()                 # Authorization headers seen
        self.port = 0
        self.httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.closing = False  # type: ignore[attr-defined]
        self.port = httpd.server_address[1]
        self.httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name="fake-apiserver", daemon=True).start()
        return self

    def stop(self) -> None:
        httpd, self.httpd = self.httpd, None
        if httpd is None:
            return
        httpd.closing = True  # type: ignore[attr-defined]
        with self.cond:
            self.cond.notify_all()
        httpd.shutdown()
        httpd.server_close()

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path, token: str = "t0k") -> Path:
        """Write a kubeconfig for this server (a bearer token) to ``path``; returns it."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.host}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
        return path

    # -- state changes -----------------------------------------------------------------------

    def _put(self, kind: str, obj: dict[str, Any], typ: str, record: bool) -> dict[str, Any]:
        with self.cond:
            self.rv += 1
            obj = json.loads(json.dumps(obj))
            obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            key = object_key(obj)
            assert key is not None
            if typ == "DELETED":
                del self.objects[kind][key]
            else:
                self.objects[kind][key] = obj
            if record:
                self.history.append((self.rv, kind, typ, obj))
            self.cond.notify_all()
            return obj

    def add(self, kind: str, obj: dict[str, Any], record: bool = True) -> dict[str, Any]:
        return self._put(kind, obj, "ADDED", record)

    def modify(self, kind: str, obj: dict[str, Any], record: bool = True) -> dict[str, Any]:
        return self._put(kind, obj, "MODIFIED", record)

    def delete(self, kind: str, name: str, namespace: str | None = None, record: bool = True) -> None:
        key = f"{namespace}/{name}" if namespace else name
        with self.cond:
            obj = self.objects[kind][key]
        self._put(kind, obj, "DELETED", record)

    def bookmark(self, kind: str) -> None:
        with self.cond:
            self.history.append((self.rv, kind, "BOOKMARK", {
                "kind": kind, "apiVersion": KIND_APIS[kind].api_version,
                "metadata": {"resourceVersion": str(self.rv)}}))
            self.cond.notify_all()

    def compact(self) -> None:
        """Forget history: a watch from an older resourceVersion gets 410 Gone."""
        with self.cond:
            self.compacted = self.rv

    def drop_watches(self) -> None:
        with self.cond:
            self.generation += 1
            self.cond.notify_all()

    def names(self, kind: str) -> list[str]:
        with self.cond:
            return sorted(self.objects[kind])

    def count(self, mode: str, kind: str | None = None) -> int:
        return sum(1 for m, k, _ in list(self.requests) if m == mode and (kind is None or k == kind))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeApiServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _closing(self) -> bool:
        return bool(getattr(self.server, "closing", False))

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        fake = self.server_fake
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        kind = PATHS.get(url.path)
        watch = q.get("watch") in ("1", "true", "True")
        fake.requests.append(("watch" if watch else "list", kind or url.path, q))
        fake.auth.add(self.headers.get("Authorization"))
        if kind is None or kind in fake.not_found:
            self._json(404, status_body(404, "NotFound", "the server could not find the requested resource"))
            return
        delay = fake.slow.get(kind, 0.0)
        end = time.monotonic() + delay
        while time.monotonic() < end and not self._closing():
            time.sleep(0.01)
        with fake.cond:
            count, code = fake.fail_next.get(kind, (0, 0))
            if count > 0:
                fake.fail_next[kind] = (count - 1, code)
        if count > 0:
            self._json(code, status_body(code, "InternalError", "injected failure"))
            return
        if watch:
            self._watch(kind, q)
        else:
            self._list(kind, q)

    def _list(self, kind: str, q: dict[str, str]) -> None:
        fake = self.server_fake
        with fake.cond:
            items = [fake.objects[kind][k] for k in sorted(fake.objects[kind])]
            rv = fake.rv
        items = [o for o in items if selected(o, q.get("fieldSelector", ""))]
        # Items without kind/apiVersion, as the apiserver sends list items.
        items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = int(q.get("limit", "0") or 0)
        if limit > 0:
            start = int(q.get("continue", "0") or 0)
            if start + limit < len(items):
                meta["continue"] = str(start + limit)
            items = items[start:start + limit]
        self._json(200, {"kind": kind + "List", "apiVersion": KIND_APIS[kind].api_version,
                         "metadata": meta, "items": items})

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, typ: str, obj: dict[str, Any]) -> None:
        self._chunk(json.dumps({"type": typ, "object": obj}).encode() + b"\n")

    def _watch(self, kind: str, q: dict[str, str]) -> None:
        fake = self.server_fake
        rv = int(q.get("resourceVersion", "0") or 0)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "True", "1")
        timeout = float(q.get("timeoutSeconds", "30"))
        with fake.cond:
            gone = rv < fake.compacted
            err = fake.error_next_watch.pop(kind, None)
            gen = fake.generation
            idx = next((i for i, h in enumerate(fake.history) if h[0] > rv), len(fake.history))
        if gone and fake.gone_as_http:
            self._json(410, status_body(410, "Expired", "too old resource version"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()  # keep-alive, as the apiserver: a client must not reuse a half-read stream
        if gone or err is not None:
            code = 410 if gone else int(err or 500)
            self._event("ERROR", status_body(code, "Expired" if code == 410 else "InternalError",
                                             "too old resource version" if code == 410 else "injected"))
            self._chunk(b"")
            return
        deadline = time.monotonic() + timeout
        while True:
            with fake.cond:
                while (idx >= len(fake.history) and fake.generation == gen and not self._closing()
                       and time.monotonic() < deadline):
                    fake.cond.wait(0.05)
                pending = fake.history[idx:]
                idx = len(fake.history)
                dropped = fake.generation != gen or self._closing()
            if dropped:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)  # abrupt: no terminating chunk
                return
            for _, k, typ, obj in pending:
                if k != kind or (typ == "BOOKMARK" and not bookmarks):
                    continue
                if typ != "BOOKMARK" and not selected(obj, q.get("fieldSelector", "")):
                    if typ != "MODIFIED":
                        continue
                    typ = "DELETED"  # as the apiserver: an object that stops matching leaves the watch
                self._event(typ, obj)
            if time.monotonic() >= deadline:
                self._chunk(b"")  # clean end at timeoutSeconds
                return


def slice_obj(name: str, node: str = "node-1", driver: str = "gpu.example.com") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def node_obj(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "a"}}}


def claim_obj(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}


def pod_obj(name: str, namespace: str = "default", node: str | None = None, phase: str = "Pending",
            cpu: str = "1") -> dict[str, Any]:
    """A pod as the apiserver stores it, with the parts the state does not keep."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.example.com/app:1", "env": [{"name": "A", "value": "x" * 200}],
                        "resources": {"requests": {"cpu": cpu}}, "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
        "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": [{"operator": "Exists"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "annotations": {"big": "y" * 500}, "managedFields": [{"manager": "kubectl"}]},
            "spec": spec, "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "False"}]}}


def rule_obj(name: str, driver: str = "gpu.example.com", effect: str = "NoSchedule") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": driver}, "taint": {"key": "example.com/maintenance",
                                                                     "effect": effect}}}
