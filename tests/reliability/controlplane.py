"""Helpers of the tests against the real control plane: the apiserver's view and the webhook's
view of the cluster state, a churn generator, and an observer that records what the webhook
said (readiness, state gauges, feasibility warnings) while faults happen.

The webhook's view is the REAL server process's: ``/configz`` reports, per worker (pid) and per
kind, the count and a digest of ``uid:resourceVersion`` (``LiveState.describe``). The apiserver's
view is a fresh LIST, digested the same way here, independently.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.rig.cluster import ApiServer
from tests.rig.sandbox import Webhook
from webhook.state.reflector import KIND_APIS

STALE_NOTE = "feasibility: state is stale (last sync "


def wait_until(pred: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    """Poll ``pred`` until truthy (its value); AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = pred()
        except (requests.RequestException, OSError, ValueError):
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def admin_session(api: ApiServer) -> requests.Session:
    """A requests session as the rig's admin (client certificate), trusting the rig's CA."""
    s = requests.Session()
    s.trust_env = False  # REQUESTS_CA_BUNDLE would override ``verify``
    s.verify = str(api.pki.ca)
    s.cert = (str(api.pki.cert("admin")), str(api.pki.key("admin")))
    return s


def digest(items: list[dict[str, Any]]) -> str:
    """sha256 of the sorted ``uid:resourceVersion`` lines, 16 hex digits (docs/state.md)."""
    lines = sorted(f"{o['metadata'].get('uid', '')}:{o['metadata'].get('resourceVersion', '')}\n" for o in items)
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:16]


def apiserver_view(session: requests.Session, api: ApiServer, kinds: list[str]) -> dict[str, tuple[int, str]]:
    """kind -> (count, digest) from a fresh LIST of each kind (all namespaces)."""
    out = {}
    for kind in kinds:
        r = session.get(api.url + KIND_APIS[kind].path, timeout=60)
        r.raise_for_status()
        items = r.json()["items"]
        out[kind] = (len(items), digest(items))
    return out


def webhook_views(webhook: Webhook, workers: int = 2, tries: int = 40) -> dict[int, dict[str, Any]]:
    """pid -> the ``state.kinds`` of /configz, from every worker: a new connection per request,
    so the kernel hands each to either worker."""
    seen: dict[int, dict[str, Any]] = {}
    for _ in range(tries):
        c = requests.get(webhook.url + "/configz", verify=str(webhook.certs / "ca.crt"), timeout=10).json()
        seen[c["pid"]] = c["state"]["kinds"]
        if len(seen) >= workers:
            break
    return seen


@dataclass
class Convergence:
    """How the webhook's view compared with the apiserver's, kind by kind."""

    equal: bool
    diffs: list[str]


def compare(session: requests.Session, api: ApiServer, webhook: Webhook, workers: int = 2) -> Convergence:
    views = webhook_views(webhook, workers)
    if len(views) < workers:
        return Convergence(False, [f"saw {len(views)} of {workers} workers"])
    kinds = sorted(k for k, v in next(iter(views.values())).items() if v["served"] is not False)
    truth = apiserver_view(session, api, kinds)
    diffs = []
    for pid, view in views.items():
        for kind in kinds:
            got = (view[kind]["objects"], view[kind]["digest"])
            if got != truth[kind]:
                diffs.append(f"worker {pid} {kind}: {got} != apiserver {truth[kind]}")
    return Convergence(not diffs, diffs)


def wait_converged(session: requests.Session, api: ApiServer, webhook: Webhook, timeout: float) -> float:
    """Seconds until every worker's state equals a fresh LIST of every kind (count and digest):
    until the start of the first comparison that found them equal (the webhook's views are read
    first, so they were equal then). AssertionError with the differences after ``timeout``."""
    start = time.monotonic()
    last: Convergence | None = None
    while time.monotonic() - start < timeout:
        attempt = time.monotonic()
        try:
            last = compare(session, api, webhook)
        except (requests.RequestException, ValueError, KeyError) as e:
            last = Convergence(False, [repr(e)[:200]])
        if last.equal:
            return attempt - start
        time.sleep(0.3)
    raise AssertionError(f"no convergence within {timeout:.0f} s: {last.diffs if last else '?'}")


# -- churn -------------------------------------------------------------------------------------


CHURN_KINDS = ("ResourceSlice", "ResourceClaim", "DeviceClass", "Node")


def _churn_object(kind: str, name: str, gen: int) -> dict[str, Any]:
    labels = {"churn": "yes", "gen": str(gen)}
    if kind == "ResourceSlice":
        return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": name, "labels": labels},
                "spec": {"driver": "churn.example.com", "nodeName": "worker-1",
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "d0"}]}}
    if kind == "ResourceClaim":
        return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
                "metadata": {"name": name, "namespace": "default", "labels": labels},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "churn"}}]}}}
    if kind == "DeviceClass":
        return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": name, "labels": labels},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "churn.example.com"'}}]}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


class Churn:
    """Creates, updates and deletes slices, claims, classes and nodes at a steady rate through
    the apiserver (admin). Failures while the control plane is down are counted, not raised.
    ``pause()`` stops writing (and waits for a write in flight) so a comparison sees a still state."""

    def __init__(self, api: ApiServer, rate: float = 10.0, per_kind: int = 15, seed: int = 31) -> None:
        self.api, self.rate, self.per_kind = api, rate, per_kind
        self.rnd = random.Random(seed)
        self.live: dict[str, set[str]] = {k: set() for k in CHURN_KINDS}
        self.ok = self.failed = 0
        self._go = threading.Event()
        self._idle = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)
        self._n = 0

    def start(self) -> Churn:
        self._go.set()
        self._thread.start()
        return self

    def pause(self) -> None:
        self._go.clear()
        self._idle.wait(30)

    def resume(self) -> None:
        self._go.set()

    def stop(self) -> None:
        self._stop.set()
        self._go.set()
        self._thread.join(30)

    def _url(self, kind: str, name: str | None = None) -> str:
        path = KIND_APIS[kind].path
        if KIND_APIS[kind].namespaced:
            group = path.rsplit("/", 1)
            path = f"{group[0]}/namespaces/default/{group[1]}"
        return self.api.url + path + (f"/{name}" if name else "")

    def _step(self, s: requests.Session) -> None:
        kind = self.rnd.choice(CHURN_KINDS)
        live = self.live[kind]
        self._n += 1
        op = self.rnd.choice(["create", "update", "delete"]) if live else "create"
        if op == "create" and len(live) >= self.per_kind:
            op = "update"
        name = f"churn-{kind.lower()}-{self._n}" if op == "create" else self.rnd.choice(sorted(live))
        if op == "create":
            r = s.post(self._url(kind), json=_churn_object(kind, name, self._n), timeout=5)
            if r.status_code == 201:
                live.add(name)
        elif op == "update":
            patch = {"metadata": {"labels": {"gen": str(self._n)}}}
            r = s.patch(self._url(kind, name), data=json.dumps(patch), timeout=5,
                        headers={"Content-Type": "application/merge-patch+json"})
        else:
            r = s.delete(self._url(kind, name), timeout=5)
            if r.status_code in (200, 404):
                live.discard(name)
        if r.status_code >= 400 and r.status_code != 404:
            raise requests.HTTPError(f"{op} {kind}/{name}: {r.status_code} {r.text[:200]}")

    def _run(self) -> None:
        s = admin_session(self.api)
        while not self._stop.is_set():
            if not self._go.is_set():
                self._idle.set()
                self._go.wait()
                continue
            self._idle.clear()
            started = time.monotonic()
            try:
                self._step(s)
                self.ok += 1
            except (requests.RequestException, OSError):
                self.failed += 1
            time.sleep(max(0.0, 1.0 / self.rate - (time.monotonic() - started)))
        s.close()
        self._idle.set()


# -- observer ----------------------------------------------------------------------------------


@dataclass
class Scrape:
    t: float
    readyz: int
    ready: float | None
    stale: dict[str, float]
    age: dict[str, float]


@dataclass
class Probe:
    sent: float
    status: int
    warnings: list[str]


def parse_gauges(text: str, name: str) -> dict[str, float]:
    """``name{kind="X"} v`` lines -> {X: v}; an unlabelled ``name v`` -> {"": v}."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            head, value = line.rsplit(" ", 1)
            label = head.split('kind="', 1)[1].split('"', 1)[0] if 'kind="' in head else ""
            out[label] = float(value)
    return out


@dataclass
class Observer:
    """Scrapes /readyz and /metrics and posts a claim review to /validate, every ``every``
    seconds each, on new connections (so both workers answer), recording what came back."""

    webhook: Webhook
    probe_review: dict[str, Any]
    every: float = 0.5
    scrapes: list[Scrape] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._scrape, daemon=True),
                         threading.Thread(target=self._probe, daemon=True)]

    def start(self) -> Observer:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _get(self, path: str) -> requests.Response:
        return requests.get(self.webhook.url + path, verify=str(self.webhook.certs / "ca.crt"), timeout=10)

    def _scrape(self) -> None:
        while not self._stop.wait(self.every):
            try:
                t = time.monotonic()
                r = self._get("/readyz")
                text = self._get("/metrics").text
                ready = parse_gauges(text, "dra_webhook_state_ready").get("")
                self.scrapes.append(Scrape(t, r.status_code, ready, parse_gauges(text, "dra_webhook_state_stale"),
                                           parse_gauges(text, "dra_webhook_state_age_seconds")))
            except requests.RequestException as e:
                self.errors.append(f"scrape: {e!r}"[:200])

    def _probe(self) -> None:
        body = json.dumps(self.probe_review).encode()
        while not self._stop.wait(self.every):
            t = time.monotonic()
            try:
                r = requests.post(self.webhook.url + "/validate", data=body, timeout=10,
                                  verify=str(self.webhook.certs / "ca.crt"),
                                  headers={"Content-Type": "application/json"})
                warnings = r.json()["response"].get("warnings", []) if r.status_code == 200 else []
                self.probes.append(Probe(t, r.status_code, warnings))
            except requests.RequestException as e:
                self.errors.append(f"probe: {e!r}"[:200])

    def window(self, start: float, end: float) -> tuple[list[Scrape], list[Probe]]:
        return ([s for s in self.scrapes if start <= s.t <= end], [p for p in self.probes if start <= p.sent <= end])


# -- creates through the apiserver ------------------------------------------------------------


@dataclass
class Create:
    start: float
    seconds: float
    status: int
    warned: bool
    error: str = ""


class CreateLoad:
    """ResourceClaims created through the apiserver at a steady rate by a few threads (admin,
    keep-alive). A claim on a class nobody publishes gets our ``feasibility:`` warning, so
    ``warned`` proves the validating webhook's answer reached the apiserver; the right answer
    is ``201`` with the warning."""

    def __init__(self, api: ApiServer, rate: float, namespace: str = "default", prefix: str = "load",
                 threads: int = 8) -> None:
        self.api, self.rate, self.namespace, self.prefix = api, rate, namespace, prefix
        self.results: list[Create] = []
        self._stop = threading.Event()
        self._n = 0
        self._lock = threading.Lock()
        self._next = 0.0
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def start(self) -> CreateLoad:
        self._next = time.monotonic()
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> list[Create]:
        self._stop.set()
        for t in self._threads:
            t.join(60)
        return self.results

    def _slot(self) -> tuple[int, float]:
        with self._lock:
            self._n += 1
            at = self._next
            self._next += 1.0 / self.rate
            return self._n, at

    def _run(self) -> None:
        s = admin_session(self.api)
        url = f"{self.api.url}/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims"
        while not self._stop.is_set():
            n, at = self._slot()
            delay = at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": f"{self.prefix}-{n}", "namespace": self.namespace},
                    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nobody"}}]}}}
            start = time.monotonic()
            try:
                r = s.post(url, json=body, timeout=30)
                warned = "feasibility:" in r.headers.get("Warning", "")
                self.results.append(Create(start, time.monotonic() - start, r.status_code, warned,
                                           "" if r.status_code == 201 else r.text[:300]))
            except requests.RequestException as e:
                self.results.append(Create(start, time.monotonic() - start, 0, False, repr(e)[:300]))
        s.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
