"""Choosing the state source: files, live cluster, or the shipped examples."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.state.fakeapi import node_obj, slice_obj
from webhook import BadInput, ConfigError
from webhook.state.base import ClusterSnapshot, StaticState, stale_note
from webhook.state.default import default_state_dir, load_state
from webhook.state.live import LiveState

FAST = {"stale_after_seconds": 1.0, "backoff_base_seconds": 0.05, "backoff_cap_seconds": 0.2,
        "request_timeout_seconds": 2.0, "resync_seconds": 0}


def test_default_state_dir_is_the_repo_examples_cluster():
    d = default_state_dir()
    assert d.parts[-2:] == ("examples", "cluster")
    assert (d.parent.parent / "webhook").is_dir() or d.is_dir()


def test_cluster_state_dir_gives_static_state(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([slice_obj("s1"), node_obj("n1")]))
    src = load_state(str(tmp_path))
    assert isinstance(src, StaticState) and src.ready()
    assert src.snapshot().count()["ResourceSlice"] == 1
    assert src.snapshot().source == f"dir:{tmp_path}"


def test_missing_cluster_state_dir_is_bad_input(tmp_path: Path):
    with pytest.raises(BadInput, match="not a directory"):
        load_state(str(tmp_path / "nope"))


@pytest.mark.parametrize("text", [
    pytest.param('{"apiVersion":"v1","kind":"List","items":[]}', id="empty-list-json"),
    pytest.param("apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\nitems: []\n",
                 id="two-empty-lists-yaml"),
])
def test_an_empty_list_is_an_empty_state(tmp_path: Path, text: str):
    (tmp_path / "cluster.json").write_text(text)
    src = load_state(str(tmp_path))
    assert sum(src.snapshot().count().values()) == 0 and src.ready()


@pytest.mark.parametrize(("text", "says"), [
    pytest.param("", "no Kubernetes object found", id="empty-file"),
    pytest.param("[1, 2]", "not a Kubernetes object", id="not-an-object"),
])
def test_a_file_with_no_object_is_still_bad_input(tmp_path: Path, text: str, says: str):
    (tmp_path / "cluster.yaml").write_text(text)
    with pytest.raises(BadInput, match=says):
        load_state(str(tmp_path))


def test_no_source_uses_the_examples_or_an_empty_state():
    src = load_state()
    assert isinstance(src, StaticState) and src.ready()
    assert src.snapshot().source.startswith("examples:") or src.snapshot().source == "empty"


@pytest.mark.parametrize(("kwargs", "names"), [
    pytest.param({"cluster_state_dir": "x", "kubeconfig": "k"}, "--cluster-state and --kubeconfig",
                 id="dir-and-kubeconfig"),
    pytest.param({"kubeconfig": "k", "in_cluster": True}, "--kubeconfig and --in-cluster",
                 id="kubeconfig-and-in-cluster"),
])
def test_two_sources_are_a_config_error(kwargs, names):
    with pytest.raises(ConfigError, match=names):
        load_state(**kwargs)


def test_unusable_kubeconfig_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="kubeconfig"):
        load_state(kubeconfig=str(tmp_path / "missing"))


def test_in_cluster_outside_a_cluster_is_a_config_error(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ConfigError, match="in-cluster"):
        load_state(in_cluster=True)


def test_kubeconfig_gives_a_started_live_state(fake, tmp_path: Path):
    fake.add("Node", node_obj("n1"))
    kc = fake.kubeconfig(tmp_path / "kubeconfig")
    src = load_state(kubeconfig=str(kc), **FAST)
    assert isinstance(src, LiveState)
    try:
        assert src.wait_ready(5)
        assert [o["metadata"]["name"] for o in src.snapshot().of("Node")] == ["n1"]
        assert src.describe()["source"] == f"kubeconfig:{fake.host}"
        assert fake.auth == {"Bearer t0k"}
    finally:
        assert src.stop()
    assert not any(t.is_alive() for t in src.threads())


def test_static_state_is_never_stale():
    src = StaticState(ClusterSnapshot())
    assert src.health()["stale"] is False
    assert stale_note(src) is None
    assert stale_note(object()) is None
