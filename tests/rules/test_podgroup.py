"""PodGroup rules (PG-*): CREATE/UPDATE tables with exact (field, reason) sets, gates both ways."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.scheduling import podgroup

GW = "GenericWorkload=true"
CLAIMS_ON = GW + ",DRAWorkloadResourceClaims=true"
TOPO_ON = GW + ",TopologyAwareWorkloadScheduling=true"
COMPOSITE_ON = GW + ",TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
PREEMPT_ON = GW + ",PodGroupPreemptionPolicy=true"


def pg(**spec: Any) -> dict[str, Any]:
    """A defaulted PodGroup; ``spec`` keys replace the gang default (None deletes a key)."""
    base: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"single": {}}}
    base.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "group-1", "namespace": "ns"},
        "spec": {k: v for k, v in base.items() if v is not None},
    }


def admit(
    obj: dict[str, Any], gates: str = GW, old: dict[str, Any] | None = None, subresource: str = ""
) -> tuple[dict[str, Any], set[tuple[str, T]], list[str], list[Any]]:
    """mutate → apply the patch → validate(_update) → warnings, as the pipeline does."""
    ctx = RuleContext(FeatureGates.parse(gates), "UPDATE" if old is not None else "CREATE", old, subresource)
    m = podgroup.mutate(obj, ctx)
    new = apply_patch(obj, m.ops)
    errs = podgroup.validate(new, ctx) if old is None else podgroup.validate_update(new, old, ctx)
    return new, {(e.field, e.type) for e in errs}, m.warnings + podgroup.warnings(new, ctx), errs


def claims(n: int) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "resourceClaimName": f"claim-{i}"} for i in range(n)]


CREATE_CASES = [
    pytest.param(pg(), GW, set(), id="minimal-gang"),
    pytest.param(pg(schedulingPolicy={"basic": {}}), GW, set(), id="basic-policy"),
    pytest.param(pg(schedulingPolicy={}), GW, {("spec.schedulingPolicy", T.INVALID)}, id="no-policy-member"),
    pytest.param(pg(schedulingPolicy=None), GW, {("spec.schedulingPolicy", T.INVALID)}, id="policy-missing"),
    pytest.param(
        pg(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}),
        GW,
        {("spec.schedulingPolicy", T.INVALID)},
        id="both-policies",
    ),
    pytest.param(
        pg(schedulingPolicy={"basic": None, "gang": {"minCount": 2}}), GW, set(), id="null-member-is-unset"
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {"minCount": 0}}),
        GW,
        {("spec.schedulingPolicy.gang.minCount", T.REQUIRED)},
        id="gang-mincount-zero",
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {}}),
        GW,
        {("spec.schedulingPolicy.gang.minCount", T.REQUIRED)},
        id="gang-mincount-missing",
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {"minCount": -1}}),
        GW,
        {("spec.schedulingPolicy.gang.minCount", T.INVALID)},
        id="gang-mincount-negative",
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {"minCount": "4"}}),
        GW,
        {("spec.schedulingPolicy.gang.minCount", T.TYPE_INVALID)},
        id="gang-mincount-string",
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {"minCount": 2**31}}),
        GW,
        {("spec.schedulingPolicy.gang.minCount", T.INVALID)},
        id="gang-mincount-over-int32",
    ),
    pytest.param(pg(schedulingPolicy={"gang": {"minCount": 1_000_000}}), GW, set(), id="gang-no-upper-bound"),
    pytest.param(
        pg(schedulingPolicy="gang"), GW, {("spec.schedulingPolicy", T.TYPE_INVALID)}, id="policy-not-object"
    ),
    pytest.param(
        pg(workloadRef={"workloadName": "wl.example", "templateName": "worker"}), GW, set(), id="workload-ref"
    ),
    pytest.param(
        pg(workloadRef={"workloadName": "Bad_Name", "templateName": "a.b"}),
        GW,
        {("spec.workloadRef.workloadName", T.INVALID), ("spec.workloadRef.templateName", T.INVALID)},
        id="workload-ref-bad-names",
    ),
    pytest.param(
        pg(workloadRef={}),
        GW,
        {("spec.workloadRef.workloadName", T.REQUIRED), ("spec.workloadRef.templateName", T.REQUIRED)},
        id="workload-ref-empty",
    ),
    pytest.param(
        pg(parentCompositePodGroupName="parent"),
        GW,
        {("spec.parentCompositePodGroupName", T.FORBIDDEN)},
        id="parent-gate-off",
    ),
    pytest.param(
        pg(parentCompositePodGroupName="parent"),
        COMPOSITE_ON,
        {("spec.workloadRef", T.REQUIRED)},
        id="parent-needs-workload-ref",
    ),
    pytest.param(
        pg(parentCompositePodGroupName="Parent!", workloadRef={"workloadName": "w", "templateName": "t"}),
        COMPOSITE_ON,
        {("spec.parentCompositePodGroupName", T.INVALID)},
        id="parent-bad-name",
    ),
    pytest.param(
        pg(parentCompositePodGroupName="p", workloadRef={"workloadName": "w", "templateName": "t"}),
        COMPOSITE_ON,
        set(),
        id="parent-ok",
    ),
    pytest.param(pg(resourceClaims=claims(4)), CLAIMS_ON, set(), id="claims-four"),
    pytest.param(
        pg(resourceClaims=claims(5) + [{"name": "c0"}]),
        CLAIMS_ON,
        {("spec.resourceClaims", T.TOO_MANY)},
        id="claims-too-many-short-circuits",
    ),
    pytest.param(
        pg(resourceClaims=claims(2) + [{"name": "c1", "resourceClaimName": "x"}]),
        CLAIMS_ON,
        {("spec.resourceClaims[2]", T.DUPLICATE)},
        id="claims-duplicate-name",
    ),
    pytest.param(
        pg(
            resourceClaims=[
                {"name": "a"},
                {"name": "b", "resourceClaimName": "x", "resourceClaimTemplateName": "y"},
            ]
        ),
        CLAIMS_ON,
        {("spec.resourceClaims[0]", T.INVALID), ("spec.resourceClaims[1]", T.INVALID)},
        id="claims-union-neither-and-both",
    ),
    pytest.param(
        pg(resourceClaims=[{"resourceClaimName": "x"}, {"name": "Bad", "resourceClaimName": "x"}]),
        CLAIMS_ON,
        {("spec.resourceClaims[0].name", T.REQUIRED), ("spec.resourceClaims[1].name", T.INVALID)},
        id="claims-names",
    ),
    pytest.param(
        pg(resourceClaims=[{"name": "a", "resourceClaimTemplateName": "Not_DNS"}]),
        CLAIMS_ON,
        {("spec.resourceClaims[0].resourceClaimTemplateName", T.INVALID)},
        id="claims-template-name",
    ),
    pytest.param(
        pg(resourceClaims="x"), CLAIMS_ON, {("spec.resourceClaims", T.TYPE_INVALID)}, id="claims-not-list"
    ),
    pytest.param(
        pg(resourceClaims=[7]), CLAIMS_ON, {("spec.resourceClaims[0]", T.TYPE_INVALID)}, id="claim-not-object"
    ),
    pytest.param(pg(resourceClaims=claims(9)), GW, set(), id="claims-gate-off-dropped-before-validation"),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
        GW,
        set(),
        id="constraints-gate-off-dropped",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "topology.example.com/rack"}]}),
        TOPO_ON,
        set(),
        id="constraints-ok",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "a"}, {"key": ""}]}),
        TOPO_ON,
        {("spec.schedulingConstraints.topology", T.TOO_MANY)},
        id="constraints-too-many",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": ""}]}),
        TOPO_ON,
        {("spec.schedulingConstraints.topology[0].key", T.REQUIRED)},
        id="constraints-key-missing",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "-bad-/x"}]}),
        TOPO_ON,
        {("spec.schedulingConstraints.topology[0].key", T.INVALID)},
        id="constraints-key-bad",
    ),
    pytest.param(pg(disruptionMode={"all": {}}), GW, set(), id="disruption-all"),
    pytest.param(pg(disruptionMode={}), GW, {("spec.disruptionMode", T.INVALID)}, id="disruption-empty"),
    pytest.param(
        pg(disruptionMode={"all": {}, "single": {}}),
        GW,
        {("spec.disruptionMode", T.INVALID)},
        id="disruption-both",
    ),
    pytest.param(pg(priorityClassName="high-priority", priority=1_000_000_000), GW, set(), id="priority-max"),
    pytest.param(pg(priority=-5), GW, set(), id="priority-negative-allowed"),
    pytest.param(pg(priority=1_000_000_001), GW, {("spec.priority", T.INVALID)}, id="priority-over-max"),
    pytest.param(pg(priority=True), GW, {("spec.priority", T.TYPE_INVALID)}, id="priority-bool"),
    pytest.param(
        pg(priorityClassName="High"), GW, {("spec.priorityClassName", T.INVALID)}, id="priority-class-bad"
    ),
    pytest.param(
        pg(preemptionPolicy="Never"), GW, {("spec.preemptionPolicy", T.FORBIDDEN)}, id="preemption-gate-off"
    ),
    pytest.param(pg(preemptionPolicy="Never"), PREEMPT_ON, set(), id="preemption-never"),
    pytest.param(
        pg(preemptionPolicy="Always"),
        PREEMPT_ON,
        {("spec.preemptionPolicy", T.NOT_SUPPORTED)},
        id="preemption-unsupported",
    ),
    pytest.param({**pg(), "spec": ["x"]}, GW, {("spec", T.TYPE_INVALID)}, id="spec-not-object"),
    pytest.param(
        {**pg(), "metadata": {"name": "Bad_Name"}}, GW, {("metadata.name", T.INVALID)}, id="bad-name"
    ),
    pytest.param(
        pg(schedulingPolicy={"gang": {}}, priority="x", disruptionMode=[]),
        GW,
        {
            ("spec.schedulingPolicy.gang.minCount", T.REQUIRED),
            ("spec.priority", T.TYPE_INVALID),
            ("spec.disruptionMode", T.TYPE_INVALID),
        },
        id="collects-every-error",
    ),
]


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_podgroup_create(obj: dict[str, Any], gates: str, want: set[tuple[str, T]]) -> None:
    assert admit(obj, gates)[1] == want


def test_union_messages_name_the_members() -> None:
    errs = admit(pg(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}))[3]
    assert [str(e) for e in errs] == [
        'spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: basic, gang'
    ]
    errs = admit(pg(schedulingPolicy={}))[3]
    assert errs[0].detail == "must specify one of: basic, gang"
    errs = admit(pg(priority=1_000_000_001))[3]
    assert errs[0].detail == "must be less than or equal to 1000000000"


@pytest.mark.parametrize(
    ("gates", "kept", "warned"),
    [
        pytest.param(GW, False, True, id="gate-off-strips-and-warns"),
        pytest.param(CLAIMS_ON, True, False, id="gate-on-keeps"),
    ],
)
def test_resource_claims_strip_on_create(gates: str, kept: bool, warned: bool) -> None:
    new, _, warns, _ = admit(pg(resourceClaims=claims(1)), gates)
    assert ("resourceClaims" in new["spec"]) is kept
    assert any("DRAWorkloadResourceClaims" in w for w in warns) is warned


def test_constraints_strip_names_the_gate() -> None:
    new, _, warns, _ = admit(pg(schedulingConstraints={"topology": [{"key": "k"}]}))
    assert "schedulingConstraints" not in new["spec"]
    assert warns[0] == "TopologyAwareWorkloadScheduling is off: removed spec.schedulingConstraints"


def test_create_wipes_status() -> None:
    obj = {**pg(), "status": {"conditions": [{"type": "x"}]}}
    ctx = RuleContext(FeatureGates.parse(GW))
    assert podgroup.mutate(obj, ctx).ops == [{"op": "remove", "path": "/status"}]
    assert "status" not in admit(obj)[0]


# --- UPDATE --------------------------------------------------------------------------------

WR = {"workloadName": "w", "templateName": "t"}
UPDATE_CASES = [
    pytest.param(pg(), pg(), GW, set(), id="no-op"),
    pytest.param(pg(), pg(schedulingPolicy={"gang": {"minCount": 9}}), GW, set(), id="mincount-is-mutable"),
    pytest.param(
        pg(schedulingPolicy={"basic": {}}),
        pg(),
        GW,
        {("spec.schedulingPolicy.basic", T.INVALID), ("spec.schedulingPolicy.gang", T.INVALID)},
        id="basic-to-gang-two-causes",
    ),
    pytest.param(
        pg(),
        pg(schedulingPolicy={"basic": {}}),
        GW,
        {("spec.schedulingPolicy.basic", T.INVALID), ("spec.schedulingPolicy.gang", T.INVALID)},
        id="gang-to-basic-two-causes",
    ),
    pytest.param(pg(), pg(workloadRef=WR), GW, {("spec.workloadRef", T.INVALID)}, id="workload-ref-set"),
    pytest.param(pg(workloadRef=WR), pg(), GW, {("spec.workloadRef", T.INVALID)}, id="workload-ref-unset"),
    pytest.param(
        pg(workloadRef=WR),
        pg(workloadRef={**WR, "templateName": "u"}),
        GW,
        {("spec.workloadRef", T.INVALID)},
        id="workload-ref-modified",
    ),
    pytest.param(
        pg(resourceClaims=claims(1)),
        pg(resourceClaims=claims(2)),
        CLAIMS_ON,
        {("spec.resourceClaims", T.INVALID)},
        id="claims-immutable",
    ),
    pytest.param(
        pg(resourceClaims=claims(1)),
        pg(resourceClaims=claims(1)),
        GW,
        set(),
        id="claims-gate-off-kept-when-old-uses",
    ),
    pytest.param(
        pg(resourceClaims=claims(1)),
        pg(resourceClaims=claims(2)),
        GW,
        {("spec.resourceClaims", T.INVALID)},
        id="claims-gate-off-old-uses-change-immutable",
    ),
    pytest.param(pg(), pg(resourceClaims=claims(1)), GW, set(), id="claims-gate-off-old-unused-dropped"),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "a"}]}),
        pg(schedulingConstraints={"topology": [{"key": "a"}]}),
        GW,
        set(),
        id="constraints-gate-off-old-uses-unchanged",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "a"}]}),
        pg(schedulingConstraints={"topology": [{"key": "b"}]}),
        GW,
        {("spec.schedulingConstraints", T.FORBIDDEN)},
        id="constraints-gate-off-changed-forbidden",
    ),
    pytest.param(
        pg(schedulingConstraints={"topology": [{"key": "a"}]}),
        pg(schedulingConstraints={"topology": [{"key": "b"}]}),
        TOPO_ON,
        {("spec.schedulingConstraints", T.INVALID)},
        id="constraints-gate-on-immutable",
    ),
    pytest.param(
        pg(),
        pg(disruptionMode={"all": {}}),
        GW,
        {("spec.disruptionMode", T.INVALID)},
        id="disruption-immutable",
    ),
    pytest.param(pg(priority=1), pg(priority=2), GW, {("spec.priority", T.INVALID)}, id="priority-immutable"),
    pytest.param(
        pg(),
        pg(priorityClassName="high"),
        GW,
        {("spec.priorityClassName", T.INVALID)},
        id="priority-class-immutable",
    ),
    pytest.param(pg(priorityClassName=""), pg(), GW, set(), id="empty-priority-class-equals-absent"),
    pytest.param(
        pg(preemptionPolicy="Never"),
        pg(preemptionPolicy="PreemptLowerPriority"),
        PREEMPT_ON,
        {("spec.preemptionPolicy", T.INVALID)},
        id="preemption-immutable",
    ),
    pytest.param(
        pg(parentCompositePodGroupName="a", workloadRef=WR),
        pg(parentCompositePodGroupName="b", workloadRef=WR),
        COMPOSITE_ON,
        {("spec.parentCompositePodGroupName", T.INVALID)},
        id="parent-immutable",
    ),
    pytest.param(
        pg(priorityClassName="Stored_Bad"),
        pg(priorityClassName="Stored_Bad", schedulingPolicy={"gang": {"minCount": 2}}),
        GW,
        set(),
        id="ratchet-unchanged-invalid-field",
    ),
    pytest.param(
        pg(),
        pg(podGroupTemplateRef={"workload": {"workloadName": "w", "podGroupTemplateName": "t"}}),
        GW,
        {("spec.workloadRef", T.INVALID)},
        id="old-spelling-mapped-then-immutable",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_podgroup_update(
    old: dict[str, Any], new: dict[str, Any], gates: str, want: set[tuple[str, T]]
) -> None:
    assert admit(new, gates, old=old)[1] == want


def test_switching_policy_messages() -> None:
    errs = admit(pg(), gates=GW, old=pg(schedulingPolicy={"basic": {}}))[3]
    assert sorted(e.detail for e in errs) == ["field cannot be set once created", "field is immutable"]


# --- /status -------------------------------------------------------------------------------

COND = {
    "type": "PodGroupInitiallyScheduled",
    "status": "True",
    "reason": "Scheduled",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
    "message": "",
}
STATUS_CASES = [
    pytest.param({"conditions": [COND]}, pg(), GW, set(), id="condition-ok"),
    pytest.param(
        {"conditions": [COND, dict(COND)]},
        pg(),
        GW,
        {("status.conditions[1].type", T.DUPLICATE)},
        id="condition-duplicate-type",
    ),
    pytest.param(
        {"conditions": [{**COND, "status": "Maybe", "reason": "", "lastTransitionTime": None}]},
        pg(),
        GW,
        {
            ("status.conditions[0].status", T.NOT_SUPPORTED),
            ("status.conditions[0].reason", T.REQUIRED),
            ("status.conditions[0].lastTransitionTime", T.REQUIRED),
        },
        id="condition-fields",
    ),
    pytest.param(
        {"conditions": [{**COND, "type": "", "reason": "1bad", "observedGeneration": -1}]},
        pg(),
        GW,
        {
            ("status.conditions[0].type", T.INVALID),
            ("status.conditions[0].reason", T.INVALID),
            ("status.conditions[0].observedGeneration", T.INVALID),
        },
        id="condition-formats",
    ),
    pytest.param(
        {"resourceClaimStatuses": [{"name": "c0", "resourceClaimName": "group-1-c0-x"}]},
        pg(resourceClaims=claims(1)),
        CLAIMS_ON,
        set(),
        id="claim-status-ok",
    ),
    pytest.param(
        {"resourceClaimStatuses": [{"name": "nope"}]},
        pg(resourceClaims=claims(1)),
        CLAIMS_ON,
        {("status.resourceClaimStatuses[0].name", T.INVALID)},
        id="claim-status-unknown-name",
    ),
    pytest.param(
        {"resourceClaimStatuses": [{"name": "c0"}, {"name": "c0", "resourceClaimName": "Bad"}]},
        pg(resourceClaims=claims(1)),
        CLAIMS_ON,
        {
            ("status.resourceClaimStatuses[1]", T.DUPLICATE),
            ("status.resourceClaimStatuses[1].resourceClaimName", T.INVALID),
        },
        id="claim-status-dup-and-name",
    ),
    pytest.param(
        {"resourceClaimStatuses": [{"name": "c0"}] * 5},
        pg(resourceClaims=claims(1)),
        CLAIMS_ON,
        {("status.resourceClaimStatuses", T.TOO_MANY)},
        id="claim-status-too-many",
    ),
    pytest.param(
        {"resourceClaimStatuses": [{"name": "nope"}]}, pg(), GW, set(), id="claim-status-gate-off-dropped"
    ),
]


@pytest.mark.parametrize(("status", "old", "gates", "want"), STATUS_CASES)
def test_podgroup_status_update(
    status: dict[str, Any], old: dict[str, Any], gates: str, want: set[tuple[str, T]]
) -> None:
    new = {**copy.deepcopy(old), "status": status}
    assert admit(new, gates, old=old, subresource="status")[1] == want


# --- spelling, defaults, warnings -----------------------------------------------------------

OLD_REF = {"workload": {"workloadName": "training-policy", "podGroupTemplateName": "worker"}}
MAPPED = {"workloadName": "training-policy", "templateName": "worker"}


@pytest.mark.parametrize(
    ("spec", "want_ref", "want_errs"),
    [
        pytest.param({"podGroupTemplateRef": OLD_REF}, MAPPED, set(), id="mapped-when-alone"),
        pytest.param(
            {"podGroupTemplateRef": OLD_REF, "workloadRef": MAPPED}, MAPPED, set(), id="mapped-when-equal"
        ),
        pytest.param(
            {"podGroupTemplateRef": OLD_REF, "workloadRef": {**MAPPED, "templateName": "other"}},
            {**MAPPED, "templateName": "other"},
            {("spec.podGroupTemplateRef", T.FORBIDDEN)},
            id="left-when-conflicting",
        ),
        pytest.param(
            {"podGroupTemplateRef": {"workload": {**OLD_REF["workload"], "extra": 1}}},
            None,
            {("spec.podGroupTemplateRef", T.FORBIDDEN)},
            id="left-when-unknown-keys",
        ),
        pytest.param(
            {"podGroupTemplateRef": {"workload": {"workloadName": "w"}}},
            {"workloadName": "w"},
            {("spec.workloadRef.templateName", T.REQUIRED)},
            id="partial-ref-mapped-then-required",
        ),
    ],
)
def test_old_spelling(spec: dict[str, Any], want_ref: Any, want_errs: set[tuple[str, T]]) -> None:
    new, got, warns, errs = admit(pg(**spec))
    assert new["spec"].get("workloadRef") == want_ref
    assert got == want_errs
    mapped = "podGroupTemplateRef" not in new["spec"]
    assert (podgroup.SPELLING_WARNING in warns) is mapped
    if not mapped:
        assert "spec.workloadRef" in errs[0].detail


def test_mapping_patch_is_remove_then_add() -> None:
    m = podgroup.mutate(pg(podGroupTemplateRef=OLD_REF), RuleContext(FeatureGates.parse(GW)))
    assert m.ops == [
        {"op": "remove", "path": "/spec/podGroupTemplateRef"},
        {"op": "add", "path": "/spec/workloadRef", "value": MAPPED},
    ]


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param({"spec": {}}, {"spec": {"disruptionMode": {"single": {}}}}, id="defaulted"),
        pytest.param({}, {"spec": {"disruptionMode": {"single": {}}}}, id="spec-absent"),
        pytest.param(
            {"spec": {"disruptionMode": {"all": {}}}}, {"spec": {"disruptionMode": {"all": {}}}}, id="kept"
        ),
        pytest.param({"spec": "x"}, {"spec": "x"}, id="wrong-type-untouched"),
    ],
)
def test_apply_defaults(obj: dict[str, Any], want: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    assert podgroup.apply_defaults(obj) == want
    assert obj == before


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        pytest.param(
            "",
            [
                "GenericWorkload feature gate is off (1.37 default): the apiserver does not serve "
                "scheduling.k8s.io/v1beta1 PodGroup"
            ],
            id="gate-off-one-warning",
        ),
        pytest.param(GW, [], id="gate-on-no-warning"),
    ],
)
def test_generic_workload_warning(gates: str, want: list[str]) -> None:
    new, errs, warns, _ = admit(pg(), gates)
    assert errs == set()
    assert warns == want


def test_unknown_spec_field_is_a_warning_not_a_denial() -> None:
    _, errs, warns, _ = admit(pg(minMember=3))
    assert errs == set()
    assert warns == ['unknown field "spec.minMember"']


def test_every_warning_is_short() -> None:
    obj = pg(
        podGroupTemplateRef=OLD_REF,
        resourceClaims=claims(1),
        schedulingConstraints={"topology": [{"key": "k"}]},
        **{"x" * 300: 1},
    )
    warns = admit(obj, "")[2]
    assert len(warns) == 5
    assert all(len(w) <= 120 and "\n" not in w for w in warns)


@pytest.mark.parametrize("junk", [None, 0, "s", [], [None], {"a": None}, {"gang": [1]}, 1.5, True])
def test_never_raises_on_junk(junk: Any) -> None:
    for key in (
        "schedulingPolicy",
        "resourceClaims",
        "workloadRef",
        "disruptionMode",
        "priority",
        "schedulingConstraints",
        "podGroupTemplateRef",
        "preemptionPolicy",
        "parentCompositePodGroupName",
    ):
        for gates in (
            "",
            CLAIMS_ON + ",TopologyAwareWorkloadScheduling=true,CompositePodGroup=true,"
            "PodGroupPreemptionPolicy=true",
        ):
            admit(pg(**{key: junk}), gates)
            admit(pg(**{key: junk}), gates, old=pg())
            admit(pg(), gates, old=pg(**{key: junk}))
            admit(
                {**pg(), "status": {"conditions": junk, "resourceClaimStatuses": junk}},
                gates,
                old=pg(),
                subresource="status",
            )
