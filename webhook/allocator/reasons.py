"""Why an allocation failed, as data: a ``Reason`` is a code plus the fields it needs.

The search, the pools, capacity and constraints return or note ``Reason`` values; nothing in the
allocator builds a sentence. Ranking keys on the code (``rank``); the words are written once,
here (``text``: the line ``simulate`` and its JSON show; ``warning``: the feasibility warning
form, which ends with the node). Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple

from webhook.quantity import readable


class Code(StrEnum):
    """What went wrong. The value is a stable kebab-case id (for tests and logs)."""

    # Fatal: the scheduler aborts the attempt (docs/allocator.md §10).
    FATAL = "fatal"
    CUT_SHORT = "cut-short"
    NOTE = "note"
    """A fact about the input (a reference not found, an unknown node), ranked first."""
    # Per device, noted by the search where it got furthest.
    GROUPS_EMPTY = "compatibility-groups-empty"
    COUNTER_EXHAUSTED = "counter-exhausted"
    CAPACITY_EXHAUSTED = "capacity-exhausted"
    CAPACITY_EXCEEDS = "capacity-exceeds"
    CAPACITY_POLICY = "capacity-violates-policy"
    CAPACITY_UNDECLARED = "capacity-undeclared"
    TAINT = "taint-not-tolerated"
    CONSTRAINT_MISSING = "constraint-attribute-missing"
    CONSTRAINT_UNSATISFIED = "constraint-not-satisfied"
    MATCH_TOO_FEW = "match-attribute-too-few"
    IN_USE = "in-use"
    NODE_OPERATIONS = "needs-node-operations"
    COUNTERS_GATE_OFF = "consumes-counters-gate-off"
    TOO_FEW = "too-few-devices"
    AT_MOST = "at-most-devices"
    OVER_LIMIT = "over-device-limit"
    POOL_INCOMPLETE = "pool-incomplete"
    POOL_INVALID = "pool-invalid"
    CLAIM_NOT_ON_NODE = "allocated-claim-not-on-node"
    SELECTOR_FALSE = "selector-false"
    BINDING_OFF = "binding-conditions-gate-off"
    ALL_NONE = "no-device-for-all"
    NO_DEVICES = "no-devices-on-node"
    NO_ALLOCATION = "cannot-allocate"
    NO_NODES = "no-nodes"
    # Node filters kube-scheduler runs before DynamicResources (``webhook.workloads.filters``).
    NODE_NAME = "node-name-mismatch"
    NODE_UNSCHEDULABLE = "node-unschedulable"
    NODE_TAINT = "node-taint-not-tolerated"
    NODE_AFFINITY = "node-affinity-mismatch"
    NODE_RESOURCES = "node-resources-insufficient"
    TOO_MANY_PODS = "too-many-pods"
    CLAIM_RESERVED = "claim-reserved-for-too-many"
    NODES_UNAVAILABLE = "nodes-unavailable"
    """A pod's summary: how many nodes failed which filter (``tally``)."""


_RANK: dict[Code, int] = {
    Code.FATAL: 0, Code.CUT_SHORT: 0, Code.NOTE: 0, Code.GROUPS_EMPTY: 0,
    Code.COUNTER_EXHAUSTED: 1, Code.CAPACITY_EXHAUSTED: 1, Code.CAPACITY_EXCEEDS: 1,
    Code.CAPACITY_POLICY: 1, Code.CAPACITY_UNDECLARED: 1, Code.TAINT: 1, Code.CONSTRAINT_MISSING: 1,
    Code.CONSTRAINT_UNSATISFIED: 1, Code.MATCH_TOO_FEW: 1,
    Code.IN_USE: 2, Code.NODE_OPERATIONS: 2, Code.COUNTERS_GATE_OFF: 2, Code.TOO_FEW: 2, Code.AT_MOST: 2,
    Code.OVER_LIMIT: 2, Code.POOL_INCOMPLETE: 2, Code.POOL_INVALID: 2, Code.CLAIM_NOT_ON_NODE: 2,
    Code.SELECTOR_FALSE: 3, Code.BINDING_OFF: 3, Code.ALL_NONE: 3,
    Code.NO_DEVICES: 4, Code.NO_ALLOCATION: 4, Code.NO_NODES: 4,
    Code.NODE_RESOURCES: 1, Code.TOO_MANY_PODS: 1, Code.CLAIM_RESERVED: 0, Code.NODES_UNAVAILABLE: 0,
    Code.NODE_TAINT: 2, Code.NODE_UNSCHEDULABLE: 2, Code.NODE_AFFINITY: 3, Code.NODE_NAME: 3,
}
"""Most useful first: fatal errors and empty group intersections; exhausted counters and
capacity, policy, constraint and taint failures; devices in use, incomplete or invalid pools,
too few devices; selectors that select nothing; the rest."""


class Reason(NamedTuple):
    """One reason. Only the fields its code uses are set (see ``_BODY``)."""

    code: Code
    claim: str = ""
    """The claim label (``namespace/name``)."""
    request: str = ""
    """The request, or ``request/subrequest``."""
    device_class: str = ""
    """The DeviceClass of the request."""
    selector: str = ""
    """Which selector: ``class C selector #i`` or ``request selector #i``."""
    node: str = ""
    device: str = ""
    pool: str = ""
    """``driver/pool``."""
    counter: str = ""
    counter_set: str = ""
    capacity: str = ""
    """A capacity name as the device published it."""
    attribute: str = ""
    constraint: str = ""
    """``matchAttribute`` or ``distinctAttribute``."""
    taint: str = ""
    """``key=value:effect`` (``key:effect`` without a value)."""
    rule: str = ""
    """The DeviceTaintRule a taint comes from ("" for a taint the slice publishes)."""
    amount: str = ""
    limit: str = ""
    number: int = 0
    """Devices requested, steps taken, or how many devices gave this reason."""
    got: int = 0
    """Devices obtained or obtainable, or a limit."""
    detail: str = ""
    """Free text from below the allocator: a CEL or quantity error, a pool's defect, a note."""
    need: Any = None
    """The amounts that decide (``COUNTER_EXHAUSTED``, ``CAPACITY_EXHAUSTED``, ``TOO_FEW``; None
    when they do not): what one device of the request needs of a counter or a capacity (for
    ``TOO_FEW``, None: ``number`` says how many devices)."""
    free: Any = None
    """What is free of that counter or capacity now, or how many matching devices are free."""
    total: Any = None
    """The counter's or capacity's value, or how many devices on the node match the request."""


def rank(r: Reason) -> int:
    """Sort key: lower is more useful."""
    return _RANK[r.code]


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _left(r: Reason) -> str:
    """``: 2Gi of 8Gi free, the request needs 6Gi``."""
    return f": {readable(r.free)} of {readable(r.total)} free, the request needs {readable(r.need)}"


def amounts(r: Reason) -> dict[str, Any]:
    """A reason's amounts as JSON values: quantities as text (``"2Gi"``), device counts as numbers;
    {} when it carries none."""
    if r.total is None:
        return {}
    if r.code == Code.TOO_FEW:
        return {"free": r.free, "total": r.total}
    return {"need": readable(r.need), "free": readable(r.free), "total": readable(r.total)}


def plain(r: Reason) -> Reason:
    """``r`` without its amounts (the wording before amounts were known: shorter)."""
    return r._replace(need=None, free=None, total=None) if r.total is not None else r


_BODY: dict[Code, Callable[[Reason], str]] = {
    Code.CUT_SHORT: lambda r: f"the check was cut short after {r.number} steps ({r.detail})",
    Code.NOTE: lambda r: r.detail,
    Code.GROUPS_EMPTY: lambda r: f"compatibility group intersection empty on {r.counter_set}",
    Code.COUNTER_EXHAUSTED: lambda r: f"counter {r.counter} of {r.counter_set}" + (
        " exhausted" if r.total is None else _left(r)),
    Code.CAPACITY_EXHAUSTED: lambda r: f"capacity {r.capacity} of {r.device}" + (
        " exhausted" if r.total is None else _left(r)),
    Code.CAPACITY_EXCEEDS: lambda r: f"capacity {r.capacity} of {r.device}: {r.amount} exceeds {r.limit}",
    Code.CAPACITY_POLICY: lambda r: f"capacity {r.capacity} of {r.device}: {r.amount} violates the request policy",
    Code.CAPACITY_UNDECLARED: lambda r: f"device {r.device} has no capacity {r.capacity}",
    Code.TAINT: lambda r: f"taint {r.taint} on {r.device} not tolerated" if not r.rule else
    f"taint {r.taint} of DeviceTaintRule {r.rule} on {r.device} not tolerated",
    Code.CONSTRAINT_MISSING: lambda r: f"constraint {r.constraint} {r.attribute}: attribute missing on {r.device}",
    Code.CONSTRAINT_UNSATISFIED: lambda r: f"constraint {r.constraint} {r.attribute} not satisfied by {r.device}",
    Code.MATCH_TOO_FEW: lambda r: (f"constraint matchAttribute {r.attribute}: at most {r.got} of {r.number} "
                                   "devices share a value"),
    Code.IN_USE: lambda r: f"device {r.device} already in use",
    Code.NODE_OPERATIONS: lambda r: f"device {r.device} needs optional node operations (gate off)",
    Code.COUNTERS_GATE_OFF: lambda r: f"device {r.device} consumes counters (DRAPartitionableDevices off)",
    Code.TOO_FEW: lambda r: f"needs {r.number} devices, only {r.got} could be allocated" if r.total is None else
    (f"pool {r.pool} has " if r.pool else "") + f"{r.free} of {r.total} matching devices free, "
    f"the request needs {r.number}",
    Code.AT_MOST: lambda r: f"needs {r.number} devices, at most {r.got} could be allocated",
    Code.OVER_LIMIT: lambda r: f"over the {r.got}-device limit",
    Code.POOL_INCOMPLETE: lambda r: f"pool {r.pool} incomplete",
    Code.POOL_INVALID: lambda r: ("invalid resource pools were encountered" if not r.pool else
                                  f"invalid resource pools were encountered: {r.pool}: {r.detail}"),
    Code.CLAIM_NOT_ON_NODE: lambda r: f"resourceclaim {r.claim} not available on the node",
    Code.SELECTOR_FALSE: lambda r: f"{r.selector or 'selector'} false" + (
        f" for {r.number} devices" if r.number > 1 else ""),
    Code.BINDING_OFF: lambda r: f"device {r.device} has binding conditions (DRADeviceBindingConditions off)",
    Code.ALL_NONE: lambda r: "no device matches the class and selectors (All)",
    Code.NO_DEVICES: lambda r: f"no devices on node {r.node}",
    Code.NO_ALLOCATION: lambda r: "cannot allocate all claims",
    Code.NO_NODES: lambda r: "no nodes in the cluster state",
    Code.NODE_NAME: lambda r: f"the pod names node {r.detail} (spec.nodeName)",
    Code.NODE_UNSCHEDULABLE: lambda r: "node is unschedulable (spec.unschedulable)",
    Code.NODE_TAINT: lambda r: f"node taint {r.taint} not tolerated",
    Code.NODE_AFFINITY: lambda r: "node does not match the pod's node selector or required node affinity",
    Code.NODE_RESOURCES: lambda r: (f"Insufficient {r.capacity}: the pod requests {r.amount}, "
                                    f"{r.detail} of {r.limit} allocatable in use"),
    Code.TOO_MANY_PODS: lambda r: f"Too many pods: the node allows {r.got}",
    Code.CLAIM_RESERVED: lambda r: f"already reserved for {r.got} consumers, the limit",
    Code.NODES_UNAVAILABLE: lambda r: f"0/{r.number} nodes are available: {r.detail}",
}

TALLY = {
    Code.NODE_NAME: "node(s) didn't match the requested node name",
    Code.NODE_UNSCHEDULABLE: "node(s) were unschedulable",
    Code.NODE_TAINT: "node(s) had untolerated taint(s)",
    Code.NODE_AFFINITY: "node(s) didn't match Pod's node affinity/selector",
    Code.TOO_MANY_PODS: "Too many pods",
    Code.NO_ALLOCATION: "cannot allocate all claims",
    Code.CLAIM_NOT_ON_NODE: "resourceclaim not available on the node",
}
"""How kube-scheduler's "0/N nodes are available" event counts each kind of node failure."""


def tally(total: int, counts: dict[tuple[Code, str], int]) -> Reason:
    """The summary of a pod no node can take: ``counts`` maps (code, resource for
    ``NODE_RESOURCES``) to how many nodes failed with it (``NO_ALLOCATION``: nodes that passed
    the filters but not DynamicResources), worded like the scheduler's event ("0/3 nodes are
    available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s)")."""
    phrases: dict[str, int] = {}
    for (code, what), n in counts.items():
        phrase = f"Insufficient {what}" if code == Code.NODE_RESOURCES else TALLY.get(code) or text(Reason(code))
        phrases[phrase] = phrases.get(phrase, 0) + n
    # As the scheduler sorts them: as strings, count and words together ("1 node(s) ..." before
    # "6 cannot ...", and "10 ..." before "2 ..."), as kube-scheduler 1.37 prints them.
    parts = sorted(f"{n} {phrase}" for phrase, n in phrases.items())
    return Reason(Code.NODES_UNAVAILABLE, number=total, detail=", ".join(parts) or "no nodes")


def body(r: Reason) -> str:
    """What happened, without the claim, request and node it happened to."""
    if r.code == Code.FATAL:
        return r.detail
    return _BODY[r.code](r)


def _subject(r: Reason) -> str:
    """The ``claim C request R: `` prefix (``claim C, request R: `` for fatal errors, as upstream)."""
    if r.code == Code.CLAIM_NOT_ON_NODE or not r.claim:
        return ""
    if not r.request:
        return f"claim {r.claim}: "
    return f"claim {r.claim}, request {r.request}: " if r.code == Code.FATAL else \
        f"claim {r.claim} request {r.request}: "


def text(r: Reason) -> str:
    """The line ``simulate`` prints for a node (and, with ``node: `` in front, its JSON reason)."""
    return _subject(r) + body(r)


def full(r: Reason) -> str:
    """``node: text``, or the text alone for a reason that belongs to no node."""
    return f"{r.node}: {text(r)}" if r.node else text(r)


def warning(r: Reason) -> str:
    """The feasibility-warning form: ``<what> on <node>`` (claim and request are the warning's subject)."""
    if not r.node:
        return text(r)
    what = body(r) if r.request else text(r)
    return f"{what} on {r.node}"


def fatal(detail: str, claim: str = "", request: str = "") -> Reason:
    return Reason(Code.FATAL, claim=claim, request=request, detail=detail)


def note(detail: str) -> Reason:
    return Reason(Code.NOTE, detail=detail)
