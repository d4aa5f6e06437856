"""Every seed manifest and every valid served-version corpus manifest through the real apiserver.

`kubectl apply --dry-run=server` must succeed through both webhooks, and the warnings kubectl
prints must be exactly ours: what `dra-webhook review --as-webhook` says offline about the same
documents (same gates, the apiserver's live state dumped as `--cluster-state`), plus whatever the
apiserver itself warns (measured on a second apiserver with no webhook registered). They must
also stay within the apiserver's warning limits, so none is dropped or truncated on the way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import REPO, corpus_entries, corpus_gates, warnings_of
from tests.rig.cluster import ApiServer, gate_spec
from tests.rig.sandbox import Sandbox
from webhook.state.reflector import KIND_APIS

pytestmark = pytest.mark.e2e

SEEDS = sorted((REPO / "examples" / "seeds").glob("*.yaml"))
MAX_WARNING_CHARS = 120      # our own guidance (the apiserver truncates only past 4096 in total)
MAX_TOTAL_CHARS = 4096       # the apiserver's budget before it truncates every warning


def _manifests() -> list[tuple[str, str]]:
    """(id, YAML text) of every manifest, in a stable order."""
    out = [(f"seed-{p.stem}", p.read_text()) for p in SEEDS]
    out += [(f"corpus-{e['id']}", yaml.safe_dump(e["object"])) for e in corpus_entries()]
    return out


MANIFESTS = _manifests()


def _walk(value: Any, key: str) -> Iterator[Any]:
    """Every value of ``key`` anywhere in a JSON-like value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)


def _prepare(api: ApiServer, docs: list[dict[str, Any]]) -> None:
    """What the manifests' sources set up before applying them: namespaces (the one used for admin
    access labelled as upstream requires), `default` ServiceAccounts for pods (no controller
    manager runs here to create them) and the PriorityClasses they name."""
    setup: list[dict[str, Any]] = []
    for ns in sorted({d["metadata"]["namespace"] for d in docs if d.get("metadata", {}).get("namespace")}):
        admin = any(d["metadata"].get("namespace") == ns and True in _walk(d, "adminAccess") for d in docs)
        labels = {"resource.kubernetes.io/admin-access": "true"} if admin else {}
        setup.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
    for ns in ["default", *sorted({d["metadata"].get("namespace") for d in docs
                                   if d.get("kind") == "Pod" and d["metadata"].get("namespace")})]:
        setup.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}})
    for pc in sorted({p for d in docs for p in _walk(d, "priorityClassName") if isinstance(p, str)}):
        setup.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": pc}, "value": 1000})
    r = api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(setup))
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, ApiServer]]:
    """A sandbox with no state loaded (every apply is a CREATE) and a bare apiserver beside it."""
    sb = Sandbox(tmp_path_factory.mktemp("manifests"), corpus_gates(), load_examples=False)
    try:
        bare = sb.cluster.add_apiserver(sb.gates, name="bare")
        docs = [d for _, text in MANIFESTS for d in yaml.safe_load_all(text) if d]
        for api in (sb.api, bare):
            _prepare(api, docs)
        yield sb, bare
    finally:
        sb.stop()


@dataclass
class Offline:
    """What `dra-webhook review` said about the documents of one manifest."""

    allowed: bool = True
    warnings: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def offline(rig: tuple[Sandbox, ApiServer], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Offline]:
    """Our warnings per manifest, from one `dra-webhook review` run over all documents."""
    sb, _ = rig
    work = tmp_path_factory.mktemp("offline")
    state = work / "state"
    state.mkdir()
    watched = ",".join(api.path.rpartition("/")[2] for api in KIND_APIS.values())  # what the webhook's state holds
    dump = sb.must("get", watched, "-A", "-o", "json")
    if json.loads(dump)["items"]:  # an empty List is not a state file
        (state / "live.json").write_text(dump)
    docs: list[tuple[str, dict[str, Any]]] = []
    for mid, text in MANIFESTS:
        docs += [(mid, d) for d in yaml.safe_load_all(text) if d]
    (work / "all.yaml").write_text(yaml.safe_dump_all([d for _, d in docs]))
    done = subprocess.run([sys.executable, "-m", "webhook", "review", "-f", str(work / "all.yaml"), "--dry-run",
                           "--as-webhook",
                           "--feature-gates", gate_spec(sb.webhook.gates if sb.webhook else {}),
                           "--cluster-state", str(state), "-o", "json"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr
    out = json.loads(done.stdout)
    items = out["items"] if out.get("kind") == "List" else [out]
    assert len(items) == len(docs), (len(items), len(docs))
    per: dict[str, Offline] = {}
    for (mid, _), item in zip(docs, items, strict=True):
        got = per.setdefault(mid, Offline())
        got.warnings.extend(item["response"].get("warnings") or [])
        got.allowed = got.allowed and item["response"]["allowed"]
    return per


def _apply(api: ApiServer, text: str) -> subprocess.CompletedProcess[str]:
    return api.kubectl("apply", "--dry-run=server", "-f", "-", input=text)


@pytest.mark.parametrize(("mid", "text"), MANIFESTS, ids=[m for m, _ in MANIFESTS])
def test_dry_run_apply_succeeds_with_exactly_our_warnings(rig, offline, mid: str, text: str):
    sb, bare = rig
    through = _apply(sb.api, text)
    plain = _apply(bare, text)
    if plain.returncode != 0:
        # The apiserver itself refuses it (e.g. a strict decoding error, before any webhook):
        # then it must fail the same way through the webhooks, and our review must deny it too.
        assert through.returncode != 0 and _errors(through.stderr) == _errors(plain.stderr), through.stderr
        assert not offline[mid].allowed, f"review admits what the apiserver refuses:\n{plain.stderr}"
        return
    assert through.returncode == 0, f"kubectl apply --dry-run=server failed:\n{through.stderr}"
    assert offline[mid].allowed, "review denies what the apiserver and the webhooks admit"
    shown = warnings_of(through.stderr)
    apiserver_own = set(warnings_of(plain.stderr))
    ours = set(offline[mid].warnings)
    assert set(shown) == ours | apiserver_own, (
        f"kubectl showed {shown}\nreview says {sorted(ours)}\napiserver alone {sorted(apiserver_own)}")
    assert all(len(w) <= MAX_WARNING_CHARS for w in ours), [w for w in ours if len(w) > MAX_WARNING_CHARS]
    assert sum(len(w) for w in shown) <= MAX_TOTAL_CHARS


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error from server")]
