"""Denials through the real apiserver: where the webhook denies, kubectl prints the apiserver-style
`Invalid` message with our field causes (and the same object passes with the webhook unregistered).

The webhook's gates are stricter than the apiserver's here: fields the apiserver accepts under
its alpha gates (CompositePodGroup, PodGroupPreemptionPolicy) are forbidden by ours, as the
apiserver itself would forbid them with those gates off (they are rejected, not dropped). With
PodGroupPreemptionPolicy on, the apiserver's Priority admission plugin fills in
`spec.preemptionPolicy` from the PriorityClass before calling us (and refuses one written by
hand), so every PodGroup carries it and our gate-off webhook forbids it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

ALPHA = {"CompositePodGroup": True, "PodGroupPreemptionPolicy": True}
#: CompositePodGroup depends on it (the apiserver refuses to start otherwise); on at both ends.
DEPENDENCY = {"TopologyAwareWorkloadScheduling": True}


def _podgroup(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


CASES = [
    pytest.param(_podgroup("with-parent", parentCompositePodGroupName="parent",
                           workloadRef={"workloadName": "wl", "templateName": "t"}),
                 "spec.parentCompositePodGroupName", "Forbidden", id="parent-composite-podgroup"),
    pytest.param(_podgroup("plain-gang"), "spec.preemptionPolicy", "Forbidden",
                 id="preemption-policy-filled-in-by-the-priority-admission-plugin"),
]


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("denials"), {**ALPHA, **DEPENDENCY}, webhook_gates=dict.fromkeys(ALPHA, False),
                 load_examples=False)
    yield sb
    sb.stop()


@pytest.mark.parametrize(("obj", "field", "reason"), CASES)
def test_webhook_denial_reads_like_the_apiservers_own(strict: Sandbox, obj: dict[str, Any], field: str,
                                                       reason: str):
    r = strict.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode != 0, "the webhook must deny it"
    name = obj["metadata"]["name"]
    # Our 422 status travels through the apiserver unchanged, so kubectl renders it exactly as it
    # renders the apiserver's own validation errors: the message head and one line per cause.
    assert r.stderr.startswith(f'The PodGroup "{name}" is invalid: '), r.stderr
    causes = re.findall(r"^\* (\S+): (\w+): ", r.stderr, re.M) or re.findall(r"is invalid: (\S+): (\w+): ", r.stderr)
    assert (field, reason) in causes, r.stderr
    # Without our webhook the apiserver (alpha gates on) accepts the same object.
    bare = strict.cluster.apiservers[0]
    strict.unregister()
    try:
        ok = bare.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
        assert ok.returncode == 0, ok.stderr
    finally:
        strict.register()
