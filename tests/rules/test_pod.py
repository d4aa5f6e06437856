"""Pod ``spec.schedulingGroup`` rules (POD-SG-1..3) and the PodGroup claim-sharing warnings."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.scheduling import pod

GW = "GenericWorkload=true"


def mkpod(sg: Any = None, claims: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if sg is not None:
        body["schedulingGroup"] = sg
    if claims is not None:
        body["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": body}


def causes(errs: list[Any]) -> set[tuple[str, T]]:
    return {(e.field, e.type) for e in errs}


def ctx(gates: str = GW, old: dict[str, Any] | None = None) -> RuleContext:
    return RuleContext(FeatureGates.parse(gates), "UPDATE" if old is not None else "CREATE", old)


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(mkpod(), set(), id="no-scheduling-group"),
        pytest.param(mkpod({"podGroupName": "training-worker-0"}), set(), id="valid-group"),
        pytest.param(
            mkpod({"podGroupName": "Training_Worker"}),
            {("spec.schedulingGroup.podGroupName", T.INVALID)},
            id="group-name-not-subdomain",
        ),
        pytest.param(
            mkpod({"podGroupName": ""}),
            {("spec.schedulingGroup.podGroupName", T.INVALID)},
            id="group-name-empty",
        ),
        pytest.param(mkpod({}), {("spec.schedulingGroup", T.INVALID)}, id="union-no-member"),
        pytest.param(mkpod("pg"), {("spec.schedulingGroup", T.TYPE_INVALID)}, id="not-an-object"),
        pytest.param(
            mkpod({"podGroupName": 7}),
            {("spec.schedulingGroup.podGroupName", T.TYPE_INVALID)},
            id="name-not-string",
        ),
        pytest.param(mkpod(hostNetwork="yes", containers=[]), set(), id="other-pod-fields-out-of-scope"),
        pytest.param({"spec": None}, set(), id="null-spec"),
        pytest.param([], set(), id="not-an-object-at-all"),
    ],
)
def test_pod_create(obj: Any, want: set[tuple[str, T]]) -> None:
    assert causes(pod.validate(obj, ctx())) == want
    assert pod.mutate(obj, ctx()).ops == []


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(mkpod({"podGroupName": "a"}), mkpod({"podGroupName": "a"}), set(), id="unchanged"),
        pytest.param(
            mkpod({"podGroupName": "a"}), mkpod({"podGroupName": "b"}), {("spec", T.FORBIDDEN)}, id="changed"
        ),
        pytest.param(mkpod(), mkpod({"podGroupName": "a"}), {("spec", T.FORBIDDEN)}, id="added"),
        pytest.param(mkpod({"podGroupName": "a"}), mkpod(), {("spec", T.FORBIDDEN)}, id="removed"),
        pytest.param(
            mkpod(),
            mkpod({"podGroupName": "B_"}),
            {("spec", T.FORBIDDEN), ("spec.schedulingGroup.podGroupName", T.INVALID)},
            id="added-invalid",
        ),
        pytest.param(
            mkpod({"podGroupName": "Stored_Bad"}),
            mkpod({"podGroupName": "Stored_Bad"}, activeDeadlineSeconds=5),
            set(),
            id="unchanged-invalid-ratchets",
        ),
    ],
)
def test_pod_update(old: dict[str, Any], new: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert causes(pod.validate_update(new, old, ctx(old=old))) == want


STRIPPED = ["GenericWorkload is off: removed spec.schedulingGroup"]


@pytest.mark.parametrize(
    ("obj", "gates", "old", "ops", "warnings"),
    [
        pytest.param(mkpod({"podGroupName": "g"}), "", None, [{"op": "remove", "path": "/spec/schedulingGroup"}],
                     STRIPPED, id="gate-off-create-strips"),
        pytest.param(mkpod({"podGroupName": "g"}), GW, None, [], [], id="gate-on-keeps"),
        pytest.param(mkpod(), "", None, [], [], id="no-group-nothing-to-strip"),
        pytest.param(mkpod(None, schedulingGroup=None), "", None,
                     [{"op": "remove", "path": "/spec/schedulingGroup"}], [], id="null-group-removed-silently"),
        pytest.param(mkpod({"podGroupName": "g"}), "", mkpod({"podGroupName": "g"}), [], [],
                     id="gate-off-update-keeps-what-is-stored"),
        pytest.param(mkpod({"podGroupName": "g"}), "", mkpod(), [{"op": "remove", "path": "/spec/schedulingGroup"}],
                     STRIPPED, id="gate-off-update-strips-a-new-group"),
    ],
)
def test_pod_mutate_strips_scheduling_group_with_the_gate_off(obj: dict[str, Any], gates: str,
                                                               old: dict[str, Any] | None, ops: list[Any],
                                                               warnings: list[str]) -> None:
    m = pod.mutate(obj, ctx(gates, old))
    assert (m.ops, m.warnings) == (ops, warnings)
    assert pod.warnings(obj, ctx(gates)) == []


def podgroup(*claims: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"schedulingPolicy": {"basic": {}}, "resourceClaims": list(claims)},
    }


TPL = {"name": "gpus", "resourceClaimTemplateName": "shared-gpu"}
REF = {"name": "nic", "resourceClaimName": "nic-claim"}


@pytest.mark.parametrize(
    ("pod_claims", "group", "want"),
    [
        pytest.param([TPL], podgroup(TPL), [], id="exact-match"),
        pytest.param([TPL, REF], podgroup(TPL), [], id="own-extra-claim-is-fine"),
        pytest.param([], podgroup(TPL, REF), [], id="unused-group-claims-are-fine"),
        pytest.param(
            [{**TPL, "resourceClaimTemplateName": "other"}],
            podgroup(TPL),
            ['pod claim "gpus" is not shared: PodGroup "g" has it as resourceClaimTemplateName "shared-gpu"'],
            id="same-name-other-template",
        ),
        pytest.param(
            [{"name": "gpus", "resourceClaimName": "shared-gpu"}],
            podgroup(TPL),
            ['pod claim "gpus" is not shared: PodGroup "g" has it as resourceClaimTemplateName "shared-gpu"'],
            id="same-name-claim-vs-template",
        ),
        pytest.param(
            [{**TPL, "name": "accel"}],
            podgroup(TPL),
            ['pod claim "accel" is not shared: PodGroup names it "gpus"'],
            id="same-template-other-name",
        ),
        pytest.param(
            [TPL],
            None,
            ['PodGroup "g" not found in the cluster state; claim sharing not checked'],
            id="podgroup-missing",
        ),
        pytest.param([], None, [], id="podgroup-missing-pod-without-claims"),
        pytest.param([TPL], {"spec": "junk"}, [], id="podgroup-junk"),
        pytest.param(
            [{"name": "gpus"}, "junk", {"name": 3}],
            podgroup(TPL),
            ['pod claim "gpus" is not shared: PodGroup "g" has it as resourceClaimTemplateName "shared-gpu"'],
            id="pod-junk",
        ),
        pytest.param(
            [TPL],
            podgroup({"name": "gpus"}),
            ['pod claim "gpus" is not shared: PodGroup "g" has it as an invalid reference'],
            id="group-claim-without-reference",
        ),
    ],
)
def test_podgroup_claim_mismatch_warnings(pod_claims: list[Any], group: Any, want: list[str]) -> None:
    got = pod.podgroup_claim_mismatch_warnings(mkpod({"podGroupName": "g"}, pod_claims), group)
    assert got == want
    assert all(len(w) <= 120 for w in got)


def test_claim_check_needs_a_scheduling_group() -> None:
    assert pod.podgroup_claim_mismatch_warnings(mkpod(claims=[TPL]), podgroup()) == []


def test_state_hook_finds_the_podgroup_in_the_pod_namespace() -> None:
    from webhook.state.base import ClusterSnapshot

    group = {**podgroup(TPL), "metadata": {"name": "g", "namespace": "ns"}}
    other = {**podgroup(REF), "metadata": {"name": "g", "namespace": "elsewhere"}}
    snap = ClusterSnapshot.from_objects([other, group])
    member = mkpod({"podGroupName": "g"}, [TPL])
    assert pod.state_warnings(member, snap) == []
    assert pod.state_warnings(mkpod({"podGroupName": "h"}, [TPL]), snap) == [
        'PodGroup "h" not found in the cluster state; claim sharing not checked'
    ]
    assert pod.state_warnings(mkpod(), snap) == []
    assert pod.state_warnings(mkpod({"podGroupName": "h"}), snap) == []
