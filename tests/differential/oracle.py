"""The upstream oracles, driven in bulk.

- `ApiOracle`: one real kube-apiserver 1.37 per gate profile, all on one etcd, no webhook
  registered. A server-side dry-run create (or an update against an object stored first) gives
  upstream's verdict, its causes and the object as upstream would store it. Requests go out
  over keep-alive connections from a small thread pool.
- `AllocOracle`: one `dra-allocate --batch -` process; scenarios in, results out, one JSON line
  each, with a timeout on every answer.
- `PoolOracle`: one `pool-check --batch -` process (upstream's driver helper); pools in, the
  helper's verdicts out, the same way.

A crash or a timeout of an oracle raises `OracleError` with the process's log: a test failure,
never a silent pass.
"""

from __future__ import annotations

import itertools
import json
import queue
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self
from urllib.parse import quote

import requests

from tests.rig.cluster import BIN, ApiServer, Cluster, ensure_binaries
from tests.rig.rest import RESOURCES, admin_session

REQUEST_TIMEOUT = 30.0
THREADS = 4


class OracleError(RuntimeError):
    """An oracle crashed, hung or answered something that is not an answer."""


@dataclass
class Verdict:
    """One side's answer for one object."""

    allowed: bool
    causes: frozenset[tuple[str, str]] = frozenset()   # (field, reason)
    stored: dict[str, Any] | None = None               # the object as it would be stored
    code: int = 200                                    # HTTP status (upstream) / 200 or 422 (ours)
    message: str = ""
    served: bool = True                                # False: the apiserver does not serve the kind

    @property
    def decode_error(self) -> bool:
        """Upstream refused the body before validation (400: strict decoding, wrong JSON types)."""
        return self.code == 400


def is_path_refusal(code: int, message: str) -> bool:
    """The apiserver's router refused the request path: a namespace that cannot be a path segment
    (it holds "%" or "/"), answered 500 before decoding, admission or validation."""
    return code == 500 and "invalid resource name" in message


def _verdict(r: requests.Response) -> Verdict:
    try:
        body = r.json()
    except ValueError:
        body = {}
    if r.status_code in (200, 201):
        return Verdict(True, stored=body, code=r.status_code)
    if r.status_code == 404 and body.get("reason") == "NotFound" and not body.get("details", {}).get("name"):
        return Verdict(False, code=404, message=str(body.get("message", "")), served=False)
    causes = frozenset((str(c.get("field", "")), str(c.get("reason", "")))
                       for c in (body.get("details") or {}).get("causes") or [])
    if r.status_code >= 500 and "resourceVersion should not be set" not in str(body.get("message")) \
            and not is_path_refusal(r.status_code, str(body.get("message"))):
        raise OracleError(f"kube-apiserver answered {r.status_code}: {r.text[:2000]}")
    return Verdict(False, causes=causes, code=r.status_code, message=str(body.get("message", "")))


class ApiOracle:
    """kube-apiservers, one per gate profile, sharing one etcd; no webhook registered."""

    def __init__(self, workdir: Path, profiles: Mapping[str, Mapping[str, bool]]) -> None:
        names = list(profiles)
        self.cluster = Cluster(workdir, profiles[names[0]])
        self.apis: dict[str, ApiServer] = {names[0]: self.cluster.api}
        try:  # the others start side by side: each takes seconds, mostly waiting
            with ThreadPoolExecutor(len(names)) as ex:
                started = list(ex.map(lambda n: ApiServer(self.cluster.etcd, self.cluster.pki, workdir,
                                                          profiles[n], name=n), names[1:]))
        except BaseException:
            self.cluster.stop()
            raise
        for name, api in zip(names[1:], started, strict=True):
            self.apis[name] = api
            self.cluster.apiservers.append(api)
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="oracle")
        self._names = itertools.count()

    def stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.cluster.stop()

    # -- one request ---------------------------------------------------------------------------

    def _session(self) -> requests.Session:
        s: requests.Session | None = getattr(self._local, "session", None)
        if s is None:
            s = admin_session(self.cluster.api)
            self._local.session = s
        return s

    def _url(self, profile: str, obj: Mapping[str, Any], name: str | None = None) -> str:
        """The object's URL, in its own version when that is another of the kind's group."""
        base, plural, namespaced = RESOURCES[str(obj.get("kind"))]
        group = base.split("/")[2] if base.startswith("/apis/") else ""
        api_version = obj.get("apiVersion")
        if group and isinstance(api_version, str) and api_version.startswith(group + "/"):
            base = "/apis/" + api_version
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        # A generated namespace may hold any character ("%" included): the path carries it encoded.
        ns = f"/namespaces/{quote(str(meta.get('namespace') or 'default'), safe='')}" if namespaced else ""
        tail = f"/{quote(name, safe='')}" if name else ""
        return f"{self.apis[profile].url}{base}{ns}/{plural}{tail}"

    def _send(self, method: str, url: str, body: Any, dry_run: bool = True) -> requests.Response:
        params = {"fieldValidation": "Strict", **({"dryRun": "All"} if dry_run else {})}
        try:
            return self._session().request(method, url, params=params, timeout=REQUEST_TIMEOUT,
                                           data=go_json(body), headers={"Content-Type": "application/json"})
        except requests.RequestException as e:
            raise OracleError(f"{method} {url}: {e}") from e

    def create(self, profile: str, obj: Mapping[str, Any]) -> Verdict:
        """Upstream's verdict on a server-side dry-run create."""
        return _verdict(self._send("POST", self._url(profile, obj), obj))

    def update(self, profile: str, old: Mapping[str, Any], edit: Callable[[dict[str, Any]], dict[str, Any]],
               read_as: str | None = None) -> tuple[Verdict, dict[str, Any] | None, Verdict]:
        """Store ``old`` for real, then dry-run an update to ``edit(stored copy)`` against it.

        (old's verdict, the edited object sent, its verdict). The edit works on what the apiserver
        stored, as `kubectl edit` does, so server-set fields stay as a real client keeps them. Each
        pair gets a unique name, so concurrent pairs never meet; the stored object is deleted after.
        With ``read_as`` (an apiVersion) the update is made for real and its verdict carries the
        object read back in that version (how the apiserver converts what it stored).
        """
        unique = f"diff-{next(self._names)}"
        old = _renamed(old, unique)
        first = _verdict(self._send("POST", self._url(profile, old), old, dry_run=False))
        if not first.allowed or first.stored is None:
            return first, None, Verdict(False, code=0, message="old object not stored")
        try:
            new = edit(json.loads(json.dumps(first.stored)))
            second = _verdict(self._send("PUT", self._url(profile, old, unique), new, dry_run=read_as is None))
            if read_as is not None and second.allowed:
                second = self._read(profile, old, unique, read_as, second)
        finally:
            self._send("DELETE", self._url(profile, old, unique), None, dry_run=False)
        return first, new, second

    def _read(self, profile: str, obj: Mapping[str, Any], name: str, api_version: str, made: Verdict) -> Verdict:
        """``made`` (a verdict that stored ``name``) with the object read back in ``api_version``."""
        try:
            r = self._session().get(self._url(profile, {**obj, "apiVersion": api_version}, name),
                                    timeout=REQUEST_TIMEOUT)
        except requests.RequestException as e:
            raise OracleError(f"GET {name}: {e}") from e
        read = _verdict(r)
        return Verdict(read.allowed, stored=read.stored, code=made.code, message=read.message)

    def stored_as(self, profile: str, obj: Mapping[str, Any], name: str, api_version: str) -> Verdict:
        """Store ``obj`` for real as ``name``, read it back in ``api_version`` and delete it: the
        verdict with the object as read back (how the apiserver converts what it stored)."""
        obj = _renamed(obj, name)
        made = _verdict(self._send("POST", self._url(profile, obj), obj, dry_run=False))
        if not made.allowed:
            return made
        try:
            return self._read(profile, obj, name, api_version, made)
        finally:
            self._send("DELETE", self._url(profile, obj, name), None, dry_run=False)

    def status_update(self, profile: str, obj: Mapping[str, Any], first: dict[str, Any] | None,
                      second: dict[str, Any], name: str) -> tuple[Verdict, dict[str, Any] | None, Verdict]:
        """Store ``obj`` (as ``name``) for real; if ``first`` is given, write it as the status for
        real; then dry-run ``second`` as the status of what is stored. (old verdict, new object
        sent, verdict); the stored object is deleted after."""
        obj = _renamed(obj, name)
        made = _verdict(self._send("POST", self._url(profile, obj), obj, dry_run=False))
        if not made.allowed or made.stored is None:
            return made, None, Verdict(False, code=0, message="object not stored")
        status_url = self._url(profile, obj, name) + "/status"
        try:
            stored = made.stored
            if first is not None:
                put = _verdict(self._send("PUT", status_url, {**stored, "status": first}, dry_run=False))
                if not put.allowed or put.stored is None:
                    return put, None, Verdict(False, code=0, message="first status not stored")
                stored = put.stored
            new = {**json.loads(json.dumps(stored)), "status": second}
            return Verdict(True, stored=stored), new, _verdict(self._send("PUT", status_url, new))
        finally:
            self._send("DELETE", self._url(profile, obj, name), None, dry_run=False)

    # -- bulk ----------------------------------------------------------------------------------

    def stored_as_many(self, jobs: Sequence[tuple[str, Mapping[str, Any], str]], api_version: str) -> list[Verdict]:
        """``stored_as`` of many (profile, object, name) jobs, in parallel; answers in job order."""
        return list(self._pool.map(lambda j: self.stored_as(*j, api_version), jobs))

    def create_many(self, jobs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Verdict]:
        """Dry-run creates of many (profile, object) jobs, in parallel; answers in job order."""
        return list(self._pool.map(lambda j: self.create(*j), jobs))

    def update_many(self, jobs: Sequence[tuple[str, Mapping[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]],
                    read_as: str | None = None) -> list[tuple[Verdict, dict[str, Any] | None, Verdict]]:
        return list(self._pool.map(lambda j: self.update(*j, read_as=read_as), jobs))

    def prepare(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Create, in every profile, what objects need around them: their namespaces (labelled for
        admin access, which the apiserver checks on the namespace) and PriorityClasses."""
        namespaces, classes = {"default"}, set()
        for o in objects:
            meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
            if isinstance(meta.get("namespace"), str) and _dns_label(meta["namespace"]):
                namespaces.add(meta["namespace"])
            classes |= {v for v in _walk(o, "priorityClassName") if isinstance(v, str) and v}
        setup: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": ns, "labels": {"resource.kubernetes.io/admin-access": "true"}}}
            for ns in sorted(namespaces)]
        # "system-" classes are the apiserver's own (or refused): re-applying one would fail.
        setup += [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": pc},
                   "value": 1000} for pc in sorted(classes) if _dns_subdomain(pc) and not pc.startswith("system-")]
        setup += [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}
                  for ns in sorted(namespaces)]
        for api in self.apis.values():
            # JSON, not YAML: kubectl's YAML 1.1 reads names such as `y` or `no` as booleans.
            r = api.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": setup}),
                            timeout=120)
            if r.returncode != 0:
                raise OracleError(f"preparing {api.name}: {r.stderr}")


def go_json(body: Any) -> bytes:
    """``body`` as kubectl (Go's encoding/json) sends it: compact, UTF-8, with <, >, &, U+2028 and
    U+2029 escaped. The apiserver measures some fields (opaque parameters) in the raw bytes sent,
    so the oracle must send what a real client sends. Those characters only occur inside strings."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text.encode("utf-8", "surrogatepass")


def _renamed(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    meta = out.setdefault("metadata", {}) if isinstance(out.get("metadata", {}), dict) else {}
    for server_owned in ("generateName", "resourceVersion", "uid", "creationTimestamp"):
        meta.pop(server_owned, None)
    meta["name"] = name
    return out


def _walk(value: Any, key: str) -> Iterable[Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)


def _dns_subdomain(name: str) -> bool:
    label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    return len(name) <= 253 and re.fullmatch(rf"{label}(\.{label})*", name) is not None


def _dns_label(name: str) -> bool:
    return len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) is not None


@dataclass
class BatchOracle:
    """An oracle program's `--batch -` mode as a long-lived process: one JSON line in, one out."""

    binary: ClassVar[str] = ""
    timeout: float = 60.0
    proc: subprocess.Popen[str] | None = None
    _out: queue.Queue[str] = field(default_factory=queue.Queue)
    _err: list[str] = field(default_factory=list)
    _pumps: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Self:
        ensure_binaries()
        self.proc = subprocess.Popen([str(BIN / self.binary), "--batch", "-"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._pumps = [threading.Thread(target=self._pump, args=(self.proc.stdout, self._out.put), daemon=True),
                       threading.Thread(target=self._pump, args=(self.proc.stderr, self._err.append), daemon=True)]
        for t in self._pumps:
            t.start()
        return self

    @staticmethod
    def _pump(stream: Any, put: Any) -> None:
        for line in stream:
            put(line)

    def ask(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """The program's answer to one input line."""
        if self.proc is None or self.proc.poll() is not None:
            raise OracleError(f"{self.binary} is not running: {''.join(self._err)[-3000:]}")
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(line) + "\n")
        self.proc.stdin.flush()
        try:
            answer = self._out.get(timeout=self.timeout)
        except queue.Empty:
            self.stop()
            raise OracleError(f"{self.binary} gave no answer in {self.timeout} s for {json.dumps(line)[:2000]}"
                              f"\n{''.join(self._err)[-3000:]}") from None
        result: dict[str, Any] = json.loads(answer)
        return result

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc is not None:  # unclosed pipes are a ResourceWarning, an error in the suite
            for t in self._pumps:  # they end at the dead process's end of output
                t.join(timeout=10)
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


class AllocOracle(BatchOracle):
    """`dra-allocate --batch -`: one allocation scenario per line."""

    binary = "dra-allocate"

    def allocate(self, scenario: Mapping[str, Any]) -> dict[str, Any]:
        """Upstream's result for one scenario ({clusterState, objects, node, featureGates})."""
        return self.ask(scenario)


class PoolOracle(BatchOracle):
    """`pool-check --batch -`: upstream's driver helper judges one pool per line."""

    binary = "pool-check"

    def check(self, pool_id: str, slices: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The helper's verdict on a pool: {published, error, ...}; a fault of the check raises."""
        got = self.ask({"id": pool_id, "slices": list(slices)})
        if got.get("fault"):
            raise OracleError(f"pool-check could not judge pool {pool_id}: {got['fault']}")
        return got
