"""``webhook.state.export``: a snapshot written as a directory ``--cluster-state`` reads back
(same objects, metadata trimmed), names hashed consistently with ``--anonymize``."""

from __future__ import annotations

import time
from pathlib import Path

from tests.planning.test_explain import ONE, bound, gpu_nodes
from tests.workloads.builders import pod
from webhook.gates import FeatureGates
from webhook.planning import Budget, capacity
from webhook.state.base import ClusterSnapshot
from webhook.state.export import export, hashed
from webhook.state.files import from_dir


def state() -> ClusterSnapshot:
    objs = [*gpu_nodes("node-a", "node-b"), bound("old", "node-a")]
    for o in objs:
        o["metadata"]["annotations"] = {"secret-ish": "x"}
        o["metadata"]["managedFields"] = [{"manager": "m"}]
    return ClusterSnapshot.from_objects(objs)


def fits(snap: ClusterSnapshot, unit: dict | None = None) -> int:
    return capacity([unit or pod("p", claims=ONE)], snap, FeatureGates(), Budget(100_000, time.monotonic() + 60)).fits


def test_export_reads_back_with_metadata_trimmed(tmp_path: Path) -> None:
    counts = export(state(), tmp_path)
    assert counts == {"ResourceSlice": 2, "DeviceClass": 1, "ResourceClaimTemplate": 1, "Node": 2, "Pod": 1}
    back = from_dir(tmp_path)
    assert sorted(n["metadata"]["name"] for n in back.of("Node")) == ["node-a", "node-b"]
    assert all(set(o["metadata"]) <= {"name", "namespace", "labels"} for k in back.objects for o in back.of(k))
    assert fits(back) == fits(state()) == 4


def test_anonymized_names_are_hashed_and_references_still_resolve(tmp_path: Path) -> None:
    export(state(), tmp_path, anonymize=True)
    text = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "node-a" not in text and hashed("node-a") in text
    back = from_dir(tmp_path)
    assert [p["spec"]["nodeName"] for p in back.of("Pod")] == [hashed("node-a")]
    assert fits(back) == 0  # the template is known by its hash only now
    assert fits(back, pod("p", ns=hashed("default"), claims={"gpu": ("template", hashed("one"))})) == 4
