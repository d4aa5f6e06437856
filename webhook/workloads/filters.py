"""The node filters kube-scheduler runs before DynamicResources, in its order.

Pure. Per node, the first filter that fails is the node's reason, as the framework stops at the
first failing Filter plugin: NodeName (``spec.nodeName``), NodeUnschedulable
(``spec.unschedulable`` unless the pod tolerates the ``node.kubernetes.io/unschedulable``
taint), TaintToleration (``NoSchedule``/``NoExecute`` taints; ``PreferNoSchedule`` never
filters), NodeAffinity (``nodeSelector`` labels, then the required node affinity: terms ORed,
``matchExpressions``/``matchFields`` ANDed inside a term), NodeResourcesFit (``pods``, cpu,
memory, ephemeral-storage and other resources the pod requests, against ``status.allocatable``
minus what the pods already bound there request). Tolerations with the ``Lt``/``Gt`` operators
tolerate nothing, as with TaintTolerationComparisonOperators off (1.37 default).

``PodFilter`` is what the filters read of one pod, parsed once (the replicas of a workload share
it); ``NodeFacts`` what they read of one Node. The parts that do not depend on what is in use
(``static_reason``) are separate from the resource fit (``fit_reason``), so that replicas
re-check only the nodes whose use changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.allocator.nodesel import NodeSelector, parse_node_selector
from webhook.allocator.reasons import Code, Reason
from webhook.raw import as_dict, as_list, as_str
from webhook.state.pods import REQUIRED
from webhook.workloads.resources import PODS, Amounts, node_allocatable, pod_requests, show

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


class Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """Upstream ``Toleration.ToleratesTaint`` (comparison operators off)."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == value
        return self.operator == "Exists"


class Taint(NamedTuple):
    key: str
    value: str
    effect: str

    def label(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"



def tolerations_of(raw: Any) -> tuple[Toleration, ...]:
    return tuple(Toleration(as_str(t.get("key")), as_str(t.get("operator")), as_str(t.get("value")),
                            as_str(t.get("effect")))
                 for t in as_list(raw) if isinstance(t, dict))


def tolerated(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint.key, taint.value, taint.effect) for t in tolerations)


@dataclass(frozen=True)
class PodFilter:
    """What the node filters read of one pod."""

    node_name: str
    node_selector: tuple[tuple[str, str], ...]
    affinity: NodeSelector | None
    """``requiredDuringSchedulingIgnoredDuringExecution`` (None: not set)."""
    tolerations: tuple[Toleration, ...]
    requests: Mapping[str, int]

    def signature(self) -> tuple[Any, ...]:
        """Everything the filters read of the pod, hashable: equal for pods filtered alike."""
        return (self.node_name, self.node_selector, self.affinity.terms if self.affinity is not None else None,
                self.tolerations, tuple(sorted(self.requests.items())))

    @classmethod
    def of(cls, pod: Any) -> PodFilter:
        spec = as_dict(as_dict(pod).get("spec"))
        selector = tuple(sorted((str(k), v if isinstance(v, str) else str(v))
                                for k, v in as_dict(spec.get("nodeSelector")).items()))
        required = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(REQUIRED)
        return cls(as_str(spec.get("nodeName")), selector, parse_node_selector(required),
                   tolerations_of(spec.get("tolerations")), pod_requests(pod))


class NodeFacts:
    """What the node filters read of one Node object."""

    __slots__ = ("name", "labels", "taints", "unschedulable", "allocatable")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        meta = as_dict(raw.get("metadata"))
        spec = as_dict(raw.get("spec"))
        self.name = as_str(meta.get("name"))
        self.labels = {k: v for k, v in as_dict(meta.get("labels")).items()
                       if isinstance(k, str) and isinstance(v, str)}
        self.taints = tuple(Taint(as_str(t.get("key")), as_str(t.get("value")), as_str(t.get("effect")))
                            for t in as_list(spec.get("taints")) if isinstance(t, dict))
        self.unschedulable = spec.get("unschedulable") is True
        self.allocatable: Amounts = node_allocatable(raw)


def static_reason(pod: PodFilter, node: NodeFacts, *, prebound: bool = False) -> Reason | None:
    """The first filter before NodeResourcesFit that ``node`` fails for ``pod``; None: all pass.

    ``prebound``: the pod sets ``spec.nodeName`` and is never scheduled; the kubelet's admission
    checks only the node name, NoExecute taints and node affinity (then resources).
    """
    if pod.node_name and pod.node_name != node.name:
        return Reason(Code.NODE_NAME, node=node.name, detail=pod.node_name)
    if node.unschedulable and not prebound and not tolerated(
            pod.tolerations, Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")):
        return Reason(Code.NODE_UNSCHEDULABLE, node=node.name)
    effects = ("NoExecute",) if prebound else FILTERED_EFFECTS
    for taint in node.taints:
        if taint.effect in effects and not tolerated(pod.tolerations, taint):
            return Reason(Code.NODE_TAINT, node=node.name, taint=taint.label())
    if any(node.labels.get(k) != v for k, v in pod.node_selector) or (
            pod.affinity is not None and not pod.affinity.matches(_Named(node))):
        return Reason(Code.NODE_AFFINITY, node=node.name)
    return None


class _Named:
    """A node as ``NodeSelector.matches`` reads it (name and labels)."""

    __slots__ = ("name", "labels")

    def __init__(self, node: NodeFacts) -> None:
        self.name = node.name
        self.labels = node.labels


def fit_reason(pod: PodFilter, node: NodeFacts, used: Mapping[str, int], pods: int) -> Reason | None:
    """NodeResourcesFit: ``used`` is what the ``pods`` pods on the node request together.

    Resources are checked in upstream's order (pods, cpu, memory, ephemeral-storage, then the
    others by name); the first insufficient one is the reason.
    """
    allowed = node.allocatable.get(PODS, 0)
    if pods + 1 > allowed:
        return Reason(Code.TOO_MANY_PODS, node=node.name, got=allowed)
    for name in _order(pod.requests):
        want = pod.requests[name]
        if want <= 0 or name == PODS:
            continue
        have = node.allocatable.get(name, 0)
        if want > have - used.get(name, 0):
            return Reason(Code.NODE_RESOURCES, node=node.name, capacity=name, amount=show(name, want),
                          limit=show(name, have), detail=show(name, used.get(name, 0)))
    return None


def _order(requests: Mapping[str, int]) -> list[str]:
    first = [n for n in ("cpu", "memory", "ephemeral-storage") if n in requests]
    return first + sorted(n for n in requests if n not in first)
