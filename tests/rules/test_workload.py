"""Workload rules (WL-*): CREATE/UPDATE tables with exact (field, reason) sets, gates both ways."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.scheduling import workload

GW = "GenericWorkload=true"
CLAIMS_ON = GW + ",DRAWorkloadResourceClaims=true"
TOPO_ON = GW + ",TopologyAwareWorkloadScheduling=true"
COMPOSITE_ON = GW + ",TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"


def tmpl(name: str = "worker", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": name, "schedulingPolicy": {"gang": {"minCount": 4}}}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def cpg(
    name: str, *children: dict[str, Any], composites: list[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "schedulingPolicy": {"basic": {}}, **fields}
    if children:
        out["podGroupTemplates"] = list(children)
    if composites:
        out["compositePodGroupTemplates"] = composites
    return out


def wl(*templates: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"podGroupTemplates": list(templates)} if templates else {}
    body.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job-1", "namespace": "ns"},
        "spec": body,
    }


def admit(
    obj: dict[str, Any], gates: str = GW, old: dict[str, Any] | None = None
) -> tuple[dict[str, Any], set[tuple[str, T]], list[str], list[Any]]:
    ctx = RuleContext(FeatureGates.parse(gates), "UPDATE" if old is not None else "CREATE", old)
    m = workload.mutate(obj, ctx)
    new = apply_patch(obj, m.ops)
    errs = workload.validate(new, ctx) if old is None else workload.validate_update(new, old, ctx)
    return new, {(e.field, e.type) for e in errs}, m.warnings + workload.warnings(new, ctx), errs


def claims(n: int) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "resourceClaimTemplateName": f"t-{i}"} for i in range(n)]


PGT = "spec.podGroupTemplates"
CPGT = "spec.compositePodGroupTemplates"

CREATE_CASES = [
    pytest.param(wl(tmpl()), GW, set(), id="one-gang-template"),
    pytest.param(wl(tmpl(schedulingPolicy={"basic": {}})), GW, set(), id="one-basic-template"),
    pytest.param(wl(), GW, {("spec", T.INVALID)}, id="no-templates"),
    pytest.param(wl(podGroupTemplates=[]), GW, {("spec", T.INVALID)}, id="empty-templates-is-unset"),
    pytest.param(
        wl(tmpl(), compositePodGroupTemplates=[cpg("c", tmpl("x"))]),
        COMPOSITE_ON,
        {("spec", T.INVALID)},
        id="both-template-kinds",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("c", tmpl("x"))]),
        GW,
        {(CPGT, T.FORBIDDEN)},
        id="composite-gate-off",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("c", tmpl("x"))]), COMPOSITE_ON, set(), id="composite-ok"
    ),
    pytest.param(wl(*[tmpl(f"t{i}") for i in range(8)]), GW, set(), id="eight-templates"),
    pytest.param(
        wl(*[tmpl(f"t{i}", schedulingPolicy={}) for i in range(9)]),
        GW,
        {(PGT, T.TOO_MANY)},
        id="nine-templates-short-circuit",
    ),
    pytest.param(wl(tmpl("a"), tmpl("b"), tmpl("a")), GW, {(PGT + "[2]", T.DUPLICATE)}, id="duplicate-names"),
    pytest.param(
        wl(tmpl(None), tmpl("Bad.Name")),
        GW,
        {(PGT + "[0].name", T.REQUIRED), (PGT + "[1].name", T.INVALID)},
        id="template-names",
    ),
    pytest.param(
        wl(tmpl(schedulingPolicy={"gang": {"minCount": 0}})),
        GW,
        {(PGT + "[0].schedulingPolicy.gang.minCount", T.REQUIRED)},
        id="template-mincount",
    ),
    pytest.param(
        wl(tmpl(schedulingPolicy={"gang": {"minCount": 1}, "basic": {}})),
        GW,
        {(PGT + "[0].schedulingPolicy", T.INVALID)},
        id="template-policy-union",
    ),
    pytest.param(
        wl(tmpl(disruptionMode={"all": {}}, priorityClassName="high-priority")),
        GW,
        set(),
        id="template-disruption-and-priority-class",
    ),
    pytest.param(
        wl(tmpl(disruptionMode={}, priority=2_000_000_000, priorityClassName="X")),
        GW,
        {
            (PGT + "[0].disruptionMode", T.INVALID),
            (PGT + "[0].priority", T.INVALID),
            (PGT + "[0].priorityClassName", T.INVALID),
        },
        id="template-field-errors",
    ),
    pytest.param(
        wl(tmpl(preemptionPolicy="Never")),
        GW,
        {(PGT + "[0].preemptionPolicy", T.FORBIDDEN)},
        id="template-preemption-gate-off",
    ),
    pytest.param(
        wl(tmpl(resourceClaims=claims(5))),
        CLAIMS_ON,
        {(PGT + "[0].resourceClaims", T.TOO_MANY)},
        id="template-claims-too-many",
    ),
    pytest.param(
        wl(tmpl(resourceClaims=[{"name": "a"}])),
        CLAIMS_ON,
        {(PGT + "[0].resourceClaims[0]", T.INVALID)},
        id="template-claim-union",
    ),
    pytest.param(wl(tmpl(resourceClaims=claims(5))), GW, set(), id="template-claims-gate-off-dropped"),
    pytest.param(
        wl(tmpl(schedulingConstraints={"topology": [{"key": ""}]})),
        TOPO_ON,
        {(PGT + "[0].schedulingConstraints.topology[0].key", T.REQUIRED)},
        id="template-constraints",
    ),
    pytest.param(
        wl(tmpl(schedulingConstraints={"topology": [{"key": ""}]})),
        GW,
        set(),
        id="template-constraints-gate-off-dropped",
    ),
    pytest.param(wl(tmpl("a", priority=1), tmpl("b", priority=1)), GW, set(), id="same-priority"),
    pytest.param(wl(tmpl("a", priority=1), tmpl("b")), GW, {("spec", T.INVALID)}, id="priority-nil-vs-set"),
    pytest.param(
        wl(tmpl("a", priorityClassName="x"), tmpl("b", priorityClassName="y")),
        GW,
        {("spec", T.INVALID)},
        id="priority-class-differs",
    ),
    pytest.param(
        wl(tmpl(), controllerRef={"apiGroup": "batch", "kind": "Job", "name": "j"}),
        GW,
        set(),
        id="controller-ref",
    ),
    pytest.param(wl(tmpl(), controllerRef={"kind": "Pod", "name": "p"}), GW, set(), id="controller-ref-core"),
    pytest.param(
        wl(tmpl(), controllerRef={"apiGroup": "Batch!", "name": "a/b"}),
        GW,
        {
            ("spec.controllerRef.apiGroup", T.INVALID),
            ("spec.controllerRef.kind", T.REQUIRED),
            ("spec.controllerRef.name", T.INVALID),
        },
        id="controller-ref-errors",
    ),
    pytest.param(
        wl(tmpl(), controllerRef={"kind": "..", "name": "x%y"}),
        GW,
        {("spec.controllerRef.kind", T.INVALID), ("spec.controllerRef.name", T.INVALID)},
        id="controller-ref-path-segments",
    ),
    pytest.param(
        wl(tmpl(), controllerRef="job"), GW, {("spec.controllerRef", T.TYPE_INVALID)}, id="controller-ref-type"
    ),
    pytest.param(wl(podGroupTemplates="x"), GW, {(PGT, T.TYPE_INVALID)}, id="templates-not-list"),
    pytest.param(wl(podGroupTemplates=[1]), GW, {(PGT + "[0]", T.TYPE_INVALID)}, id="template-not-object"),
    pytest.param({**wl(tmpl()), "spec": 3}, GW, {("spec", T.TYPE_INVALID)}, id="spec-not-object"),
]


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_workload_create(obj: dict[str, Any], gates: str, want: set[tuple[str, T]]) -> None:
    assert admit(obj, gates)[1] == want


def chain(depth: int) -> dict[str, Any]:
    """A composite template nested ``depth`` levels deep, with a leaf PodGroup template."""
    node = cpg(f"c{depth}", tmpl(f"leaf{depth}"))
    for d in range(depth - 1, 0, -1):
        node = cpg(f"c{d}", composites=[node])
    return node


TREE_CASES = [
    pytest.param(wl(compositePodGroupTemplates=[chain(3)]), set(), id="depth-three-ok"),
    pytest.param(
        wl(compositePodGroupTemplates=[chain(4)]), {(CPGT + "[0]", T.INVALID)}, id="depth-four-too-deep"
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[chain(200)]), {(CPGT + "[0]", T.INVALID)}, id="hostile-depth-no-crash"
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("a", tmpl("x")), cpg("b", tmpl("x"))]),
        {(CPGT + "[1].podGroupTemplates[0].name", T.DUPLICATE)},
        id="name-reused-across-tree",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("a", tmpl("a"))]),
        {(CPGT + "[0].podGroupTemplates[0].name", T.DUPLICATE)},
        id="child-reuses-parent-name",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("a")]), {(CPGT + "[0]", T.INVALID)}, id="composite-no-child"
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("a", tmpl("x", priority=5))]),
        {("spec", T.INVALID)},
        id="tree-priority-differs",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("a", tmpl("x"), schedulingPolicy={"gang": {"minGroupCount": 0}})]),
        {(CPGT + "[0].schedulingPolicy.gang.minGroupCount", T.REQUIRED)},
        id="composite-gang-count",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg(f"c{i}", tmpl(f"x{i}")) for i in range(9)]),
        {(CPGT, T.TOO_MANY)},
        id="composite-too-many",
    ),
]


@pytest.mark.parametrize(("obj", "want"), TREE_CASES)
def test_workload_composite_tree(obj: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert admit(obj, COMPOSITE_ON)[1] == want


def test_tree_messages() -> None:
    errs = admit(wl(compositePodGroupTemplates=[chain(4)]), COMPOSITE_ON)[3]
    assert errs[0].detail == "maximum template hierarchy depth is 4"
    errs = admit(wl(tmpl("a", priority=1), tmpl("b")))[3]
    assert errs[0].detail == "detected multiple priority configurations"


@pytest.mark.parametrize(
    ("gates", "kept", "warning"),
    [
        pytest.param(
            GW,
            False,
            "DRAWorkloadResourceClaims is off: removed resourceClaims from 2 podGroupTemplates",
            id="gate-off-strips-every-template",
        ),
        pytest.param(CLAIMS_ON, True, None, id="gate-on-keeps"),
    ],
)
def test_template_claims_strip(gates: str, kept: bool, warning: str | None) -> None:
    new, _, warns, _ = admit(
        wl(tmpl("a", resourceClaims=claims(1)), tmpl("b", resourceClaims=claims(1))), gates
    )
    assert all(("resourceClaims" in t) is kept for t in new["spec"]["podGroupTemplates"])
    assert (warning in warns) if warning else not any("DRAWorkloadResourceClaims" in w for w in warns)


# --- UPDATE --------------------------------------------------------------------------------

UPDATE_CASES = [
    pytest.param(wl(tmpl()), wl(tmpl()), GW, set(), id="no-op"),
    pytest.param(
        wl(tmpl()), wl(tmpl(schedulingPolicy={"gang": {"minCount": 8}})), GW, set(), id="mincount-mutable"
    ),
    pytest.param(
        wl(tmpl()),
        wl(tmpl(schedulingPolicy={"basic": {}})),
        GW,
        {(PGT + "[0].schedulingPolicy.basic", T.INVALID), (PGT + "[0].schedulingPolicy.gang", T.INVALID)},
        id="policy-switch-two-causes",
    ),
    pytest.param(
        wl(tmpl("a")), wl(tmpl("a"), tmpl("b")), GW, {(PGT + "[1]", T.FORBIDDEN)}, id="template-added"
    ),
    pytest.param(wl(tmpl("a"), tmpl("b")), wl(tmpl("a")), GW, {(PGT, T.FORBIDDEN)}, id="template-removed"),
    pytest.param(
        wl(tmpl("a"), tmpl("b")), wl(tmpl("b"), tmpl("a")), GW, set(), id="reorder-is-not-add-remove"
    ),
    pytest.param(
        wl(tmpl()), wl(tmpl(priority=3)), GW, {(PGT + "[0].priority", T.INVALID)}, id="priority-immutable"
    ),
    pytest.param(
        wl(tmpl()),
        wl(tmpl(disruptionMode={"all": {}})),
        GW,
        {(PGT + "[0].disruptionMode", T.INVALID)},
        id="disruption-immutable",
    ),
    pytest.param(
        wl(tmpl(resourceClaims=claims(1))),
        wl(tmpl(resourceClaims=claims(2))),
        CLAIMS_ON,
        {(PGT + "[0].resourceClaims", T.INVALID)},
        id="claims-immutable",
    ),
    pytest.param(
        wl(tmpl(resourceClaims=claims(1))),
        wl(tmpl(resourceClaims=claims(1))),
        GW,
        set(),
        id="claims-kept-when-old-uses-gate-off",
    ),
    pytest.param(
        wl(tmpl(schedulingConstraints={"topology": [{"key": "a"}]})),
        wl(tmpl(schedulingConstraints={"topology": [{"key": "b"}]})),
        GW,
        {(PGT + "[0].schedulingConstraints", T.FORBIDDEN), (PGT + "[0].schedulingConstraints", T.INVALID)},
        id="constraints-gate-off-changed",
    ),
    pytest.param(
        wl(tmpl(schedulingConstraints={"topology": [{"key": "a"}]})),
        wl(tmpl(schedulingConstraints={"topology": [{"key": "b"}]})),
        TOPO_ON,
        {(PGT + "[0].schedulingConstraints", T.INVALID)},
        id="constraints-gate-on-immutable",
    ),
    pytest.param(
        wl(tmpl()),
        wl(tmpl(), controllerRef={"kind": "Job", "name": "j"}),
        GW,
        {("spec.controllerRef", T.INVALID)},
        id="controller-ref-set-after-create",
    ),
    pytest.param(
        wl(tmpl(), controllerRef={"kind": "Job", "name": "j"}),
        wl(tmpl(), controllerRef={"kind": "Job", "name": "k"}),
        GW,
        {("spec.controllerRef", T.INVALID)},
        id="controller-ref-changed",
    ),
    pytest.param(
        wl(tmpl("a", priorityClassName="Stored_Bad"), tmpl("b", priorityClassName="Stored_Bad")),
        wl(
            tmpl("a", priorityClassName="Stored_Bad"),
            tmpl("b", priorityClassName="Stored_Bad", schedulingPolicy={"gang": {"minCount": 1}}),
        ),
        GW,
        set(),
        id="ratchet-unchanged-stored-invalid-field",
    ),
    pytest.param(
        wl(tmpl("a"), tmpl("b")),
        wl(tmpl("a"), tmpl("b", schedulingPolicy={"gang": {"minCount": -1}})),
        GW,
        {(PGT + "[1].schedulingPolicy.gang.minCount", T.INVALID)},
        id="changed-field-revalidated",
    ),
    pytest.param(
        wl(compositePodGroupTemplates=[cpg("c", tmpl("x"))]),
        wl(compositePodGroupTemplates=[cpg("c", tmpl("y"))]),
        COMPOSITE_ON,
        {(CPGT, T.INVALID)},
        id="composite-immutable",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_workload_update(
    old: dict[str, Any], new: dict[str, Any], gates: str, want: set[tuple[str, T]]
) -> None:
    assert admit(new, gates, old=old)[1] == want


def test_update_keeps_template_fields_by_index_of_old() -> None:
    """Upstream's strategy compares templates by index when deciding what the old object used."""
    old = wl(tmpl("a", resourceClaims=claims(1)), tmpl("b"))
    new = wl(tmpl("a", resourceClaims=claims(1)), tmpl("b", resourceClaims=claims(1)))
    got, _, warns, _ = admit(new, GW, old=old)
    assert "resourceClaims" in got["spec"]["podGroupTemplates"][0]
    assert "resourceClaims" not in got["spec"]["podGroupTemplates"][1]
    assert "DRAWorkloadResourceClaims is off: removed resourceClaims from 1 podGroupTemplates" in warns


def test_apply_defaults_is_a_copy_without_defaults() -> None:
    obj = wl(tmpl())
    out = workload.apply_defaults(obj)
    assert out == obj and out is not obj
    assert "disruptionMode" not in out["spec"]["podGroupTemplates"][0]


@pytest.mark.parametrize(
    ("gates", "spec_extra", "want"),
    [
        pytest.param(
            "",
            {},
            [
                "GenericWorkload feature gate is off (1.37 default): the apiserver does not serve "
                "scheduling.k8s.io/v1beta1 Workload"
            ],
            id="gate-off-one-warning",
        ),
        pytest.param(GW, {}, [], id="gate-on-none"),
        pytest.param(GW, {"podGroups": []}, ['unknown field "spec.podGroups"'], id="v1alpha1-field-warned"),
    ],
)
def test_workload_warnings(gates: str, spec_extra: dict[str, Any], want: list[str]) -> None:
    _, errs, warns, _ = admit(wl(tmpl(), **spec_extra), gates)
    assert errs == set()
    assert warns == want


@pytest.mark.parametrize("junk", [None, 0, "s", [], [None], {"a": None}, [{"name": ["x"]}], 2.5, False])
def test_never_raises_on_junk(junk: Any) -> None:
    all_on = (
        CLAIMS_ON
        + ",TopologyAwareWorkloadScheduling=true,CompositePodGroup=true,PodGroupPreemptionPolicy=true"
    )
    for spec in (
        {"podGroupTemplates": junk},
        {"compositePodGroupTemplates": junk},
        {"controllerRef": junk},
        {"podGroupTemplates": [tmpl(schedulingPolicy=junk, resourceClaims=junk, priority=junk)]},
        {
            "compositePodGroupTemplates": [
                {"name": junk, "podGroupTemplates": junk, "compositePodGroupTemplates": [junk]}
            ]
        },
    ):
        obj = {**wl(), "spec": spec}
        for gates in ("", all_on):
            admit(copy.deepcopy(obj), gates)
            admit(copy.deepcopy(obj), gates, old=wl(tmpl()))
            admit(wl(tmpl()), gates, old=copy.deepcopy(obj))
