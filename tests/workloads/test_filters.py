"""The scheduler's node filters before DynamicResources (``webhook/workloads/filters.py``), with the
cases of upstream's plugin tests (tainttoleration, nodeunschedulable, nodeaffinity, nodename,
noderesources)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.allocator.reasons import Code, text
from webhook.workloads import NodeFacts, PodFilter, fit_reason, static_reason

GI = 1 << 30


def node(name: str = "n1", labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         unschedulable: bool = False, allocatable: dict[str, str] | None = None) -> NodeFacts:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return NodeFacts({"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
                      "status": {"allocatable": allocatable if allocatable is not None else
                                 {"cpu": "4", "memory": "8Gi", "pods": "10"}}})


def pod(**spec: Any) -> PodFilter:
    return PodFilter.of({"spec": {"containers": [{"name": "c"}], **spec}})


def taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def tol(**kw: str) -> dict[str, str]:
    return kw


def term(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs:
        t["matchExpressions"] = list(exprs)
    if fields is not None:
        t["matchFields"] = fields
    return t


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


OK = None
GPU = {"gpu": "true", "zone": "a", "size": "8"}


@pytest.mark.parametrize(("p", "n", "want"), [
    # NodeName
    pytest.param(pod(), node(), OK, id="no-node-name"),
    pytest.param(pod(nodeName="n1"), node(), OK, id="node-name-matches"),
    pytest.param(pod(nodeName="n2"), node(), "the pod names node n2 (spec.nodeName)", id="node-name-other"),
    # NodeUnschedulable
    pytest.param(pod(), node(unschedulable=True), "node is unschedulable (spec.unschedulable)",
                 id="unschedulable"),
    pytest.param(pod(tolerations=[tol(key="node.kubernetes.io/unschedulable", operator="Exists",
                                      effect="NoSchedule")]), node(unschedulable=True), OK,
                 id="unschedulable-tolerated"),
    pytest.param(pod(tolerations=[tol(operator="Exists")]), node(unschedulable=True), OK,
                 id="unschedulable-tolerated-by-exists-all"),
    pytest.param(pod(tolerations=[tol(key="node.kubernetes.io/unschedulable", operator="Exists",
                                      effect="NoExecute")]), node(unschedulable=True),
                 "node is unschedulable (spec.unschedulable)", id="unschedulable-other-effect-not-tolerated"),
    # TaintToleration
    pytest.param(pod(), node(taints=[taint("dedicated", "NoSchedule", "ml")]),
                 "node taint dedicated=ml:NoSchedule not tolerated", id="no-schedule-taint"),
    pytest.param(pod(), node(taints=[taint("dedicated", "NoExecute")]),
                 "node taint dedicated:NoExecute not tolerated", id="no-execute-taint"),
    pytest.param(pod(), node(taints=[taint("dedicated", "PreferNoSchedule")]), OK,
                 id="prefer-no-schedule-never-filters"),
    pytest.param(pod(tolerations=[tol(key="dedicated", operator="Equal", value="ml", effect="NoSchedule")]),
                 node(taints=[taint("dedicated", "NoSchedule", "ml")]), OK, id="equal-toleration"),
    pytest.param(pod(tolerations=[tol(key="dedicated", value="ml")]),
                 node(taints=[taint("dedicated", "NoSchedule", "ml")]), OK, id="empty-operator-is-equal-any-effect"),
    pytest.param(pod(tolerations=[tol(key="dedicated", value="web")]),
                 node(taints=[taint("dedicated", "NoSchedule", "ml")]),
                 "node taint dedicated=ml:NoSchedule not tolerated", id="equal-toleration-other-value"),
    pytest.param(pod(tolerations=[tol(key="dedicated", operator="Exists", effect="NoExecute")]),
                 node(taints=[taint("dedicated", "NoSchedule", "ml")]),
                 "node taint dedicated=ml:NoSchedule not tolerated", id="toleration-other-effect"),
    pytest.param(pod(tolerations=[tol(operator="Exists")]),
                 node(taints=[taint("a", "NoSchedule"), taint("b", "NoExecute", "x")]), OK,
                 id="exists-without-key-tolerates-everything"),
    pytest.param(pod(tolerations=[tol(key="a", operator="Exists")]),
                 node(taints=[taint("a", "NoSchedule"), taint("b", "NoExecute", "x")]),
                 "node taint b=x:NoExecute not tolerated", id="second-taint-untolerated"),
    pytest.param(pod(tolerations=[tol(key="gen", operator="Gt", value="1")]),
                 node(taints=[taint("gen", "NoSchedule", "5")]), "node taint gen=5:NoSchedule not tolerated",
                 id="comparison-operators-off-tolerate-nothing"),
    # NodeAffinity: nodeSelector, then required node affinity
    pytest.param(pod(nodeSelector={"gpu": "true"}), node(labels=GPU), OK, id="node-selector-matches"),
    pytest.param(pod(nodeSelector={"gpu": "true", "zone": "b"}), node(labels=GPU),
                 "node does not match the pod's node selector or required node affinity", id="node-selector-one-off"),
    pytest.param(pod(nodeSelector={"gpu": "true"}), node(),
                 "node does not match the pod's node selector or required node affinity", id="node-selector-no-label"),
    pytest.param(pod(affinity=affinity(term(expr("zone", "In", "b")), term(expr("gpu", "Exists")))),
                 node(labels=GPU), OK, id="affinity-terms-ored"),
    pytest.param(pod(affinity=affinity(term(expr("zone", "In", "a"), expr("gpu", "DoesNotExist")))),
                 node(labels=GPU), "node does not match the pod's node selector or required node affinity",
                 id="affinity-expressions-anded"),
    pytest.param(pod(affinity=affinity(term(expr("size", "Gt", "4")))), node(labels=GPU), OK, id="affinity-gt"),
    pytest.param(pod(affinity=affinity(term(expr("size", "Lt", "4")))), node(labels=GPU),
                 "node does not match the pod's node selector or required node affinity", id="affinity-lt"),
    pytest.param(pod(affinity=affinity(term(expr("zone", "NotIn", "b")))), node(), OK,
                 id="affinity-not-in-missing-label"),
    pytest.param(pod(affinity=affinity(term(fields=[expr("metadata.name", "In", "n1")]))), node(), OK,
                 id="affinity-match-fields-name"),
    pytest.param(pod(affinity=affinity(term(fields=[expr("metadata.name", "In", "n2")]))), node(),
                 "node does not match the pod's node selector or required node affinity", id="affinity-fields-other"),
    pytest.param(pod(affinity=affinity(term())), node(),
                 "node does not match the pod's node selector or required node affinity",
                 id="affinity-empty-term-matches-nothing"),
    pytest.param(pod(affinity={"nodeAffinity": {}}), node(), OK, id="affinity-without-required"),
    # Order: the first failing filter is the node's reason.
    pytest.param(pod(nodeSelector={"x": "y"}), node(taints=[taint("a", "NoSchedule")], unschedulable=True),
                 "node is unschedulable (spec.unschedulable)", id="unschedulable-before-taints-before-affinity"),
])
def test_static_filters(p: PodFilter, n: NodeFacts, want: str | None) -> None:
    got = static_reason(p, n)
    assert (text(got) if got is not None else None) == want
    if got is not None:
        assert got.node == n.name


@pytest.mark.parametrize(("n", "want"), [
    pytest.param(node(taints=[taint("a", "NoSchedule")], unschedulable=True), OK,
                 id="no-schedule-and-unschedulable-do-not-matter"),
    pytest.param(node(taints=[taint("a", "NoExecute")]), "node taint a:NoExecute not tolerated",
                 id="no-execute-still-rejects"),
    pytest.param(node(labels={"zone": "b"}), "node does not match the pod's node selector or required node affinity",
                 id="affinity-still-checked"),
])
def test_a_prebound_pod_gets_the_kubelet_admission_checks(n: NodeFacts, want: str | None) -> None:
    p = pod(nodeName="n1", nodeSelector={"zone": "a"}) if "affinity" in str(want) else pod(nodeName="n1")
    got = static_reason(p, n, prebound=True)
    assert (text(got) if got is not None else None) == want


def requesting(**requests: str) -> PodFilter:
    return PodFilter.of({"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}})


@pytest.mark.parametrize(("p", "used", "pods", "want"), [
    pytest.param(requesting(), {}, 0, OK, id="nothing-requested"),
    pytest.param(requesting(), {}, 10, "Too many pods: the node allows 10", id="too-many-pods-even-without-requests"),
    pytest.param(requesting(cpu="4"), {}, 0, OK, id="exact-fit"),
    pytest.param(requesting(cpu="4"), {"cpu": 1}, 1, "Insufficient cpu: the pod requests 4, 1m of 4 allocatable in use",
                 id="one-millicore-short"),
    pytest.param(requesting(cpu="1", memory="8Gi"), {"memory": GI}, 1,
                 "Insufficient memory: the pod requests 8Gi, 1Gi of 8Gi allocatable in use", id="memory"),
    pytest.param(requesting(cpu="5", memory="9Gi"), {}, 0,
                 "Insufficient cpu: the pod requests 5, 0 of 4 allocatable in use", id="cpu-checked-before-memory"),
    pytest.param(requesting(**{"example.com/fpga": "1"}), {}, 0,
                 "Insufficient example.com/fpga: the pod requests 1, 0 of 0 allocatable in use",
                 id="extended-resource-the-node-lacks"),
    pytest.param(requesting(**{"ephemeral-storage": "1Gi"}), {}, 0,
                 "Insufficient ephemeral-storage: the pod requests 1Gi, 0 of 0 allocatable in use",
                 id="ephemeral-storage"),
])
def test_resource_fit(p: PodFilter, used: dict[str, int], pods: int, want: str | None) -> None:
    got = fit_reason(p, node(), used, pods)
    assert (text(got) if got is not None else None) == want


def test_a_node_without_allocatable_takes_no_pod() -> None:
    got = fit_reason(requesting(), node(allocatable={}), {}, 0)
    assert got is not None and got.code == Code.TOO_MANY_PODS and got.got == 0
