"""Impact preview: what a DeviceTaintRule or DeviceClass write would do to the claims that exist.

Pure (the step budget and deadline come in as ``frame.Limits``). Upstream gives this feedback only
after the write, and only for a rule with ``effect: None`` (the eviction controller's status
condition); we answer before it, for every write, as ``feasibility:`` warnings, never a denial:

- **evictions** (DeviceTaintRule, effect ``NoExecute``): the allocated claims holding a device
  the rule selects, whose allocation does not tolerate the taint forever (a toleration with
  effect ``NoExecute`` and no ``tolerationSeconds``, as the device taint eviction controller
  reads ``results[].tolerations``): the pods using them would be evicted, at once or after the
  shortest ``tolerationSeconds``. Claims an UPDATE's old rule evicts already are not repeated.
- **pending claims that stop fitting**: each claim of the state without an allocation (for a
  DeviceClass: those whose requests name the class) is allocated alone against the state before
  and after the write; those that fit before and not after are named, the first with the reason
  it no longer fits on the node where it fit before.

Both follow the gates as the scheduler and the eviction controller do (no rule applies while
``DRADeviceTaintRules`` or ``DRADeviceTaints`` is off). Each claim's check has the step budget of
one feasibility check, and the request deadline bounds the whole preview; when either runs out
the preview says so. At most ``WARNINGS_MAX`` warnings, each at most ``WARNING_LENGTH_MAX``
characters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from webhook.allocator.allocation import CUT_SHORT
from webhook.allocator.claims import claim_label
from webhook.allocator.devices import interned_str
from webhook.allocator.engine import Call, allocate
from webhook.allocator.feasibility import PREFIX, WARNING_LENGTH_MAX, WARNINGS_MAX, middle, warning_line
from webhook.allocator.frame import Limits
from webhook.allocator.model import Model, model_for
from webhook.allocator.reasons import Reason
from webhook.allocator.taints import parse_taint, parse_toleration, selects, tolerates
from webhook.gates import FeatureGates, Gate
from webhook.raw import allocation_results, as_dict, as_list, claim_allocation
from webhook.state.base import ClusterSnapshot

PENDING_MAX = 200
"""Pending claims checked at most (each is two allocations)."""


def impact_warnings(obj: dict[str, Any], old: dict[str, Any] | None, snapshot: ClusterSnapshot,
                    gates: FeatureGates, limits: Limits) -> list[str]:
    """The preview of writing ``obj`` (over the stored ``old`` on UPDATE); [] when it harms nothing.
    ``limits`` are each claim's step budget (that of one feasibility check) and the deadline of
    the whole preview. Never raises: a failure is one "impact preview failed" warning."""
    try:
        return _warnings(obj, old, snapshot, gates, limits)
    except Exception as e:  # noqa: BLE001 - admission must never fail because of this check
        return [f"{PREFIX}impact preview failed: {type(e).__name__}"]


def _name(obj: Any) -> str:
    return interned_str(as_dict(as_dict(obj).get("metadata")).get("name"))


def _with(snapshot: ClusterSnapshot, kind: str, name: str, obj: dict[str, Any] | None) -> ClusterSnapshot:
    """``snapshot`` with the object of ``kind`` named ``name`` replaced by ``obj`` (removed for None)."""
    objs = tuple(o for o in snapshot.of(kind) if _name(o) != name) + ((obj,) if obj is not None else ())
    return ClusterSnapshot(MappingProxyType({**snapshot.objects, kind: objs}), snapshot.source,
                           snapshot.synced_at, snapshot.version)


@dataclass(frozen=True)
class _Preview:
    """What a write of one kind can do to existing claims."""

    affects: Callable[[dict[str, Any], str], bool]
    """Whether a pending claim may stop fitting when the object named so is written."""
    is_rule: bool
    """A DeviceTaintRule: it may evict (NoExecute), it names itself in reasons, and nothing
    applies it while its gates are off."""


_PREVIEWS: dict[str, _Preview] = {
    "DeviceTaintRule": _Preview(lambda raw, name: True, is_rule=True),
    "DeviceClass": _Preview(lambda raw, name: name in _classes_of(raw), is_rule=False),
}


def _warnings(obj: dict[str, Any], old: dict[str, Any] | None, snapshot: ClusterSnapshot, gates: FeatureGates,
              limits: Limits) -> list[str]:
    kind, name = interned_str(obj.get("kind")), _name(obj)
    what = _PREVIEWS.get(kind)
    if what is None or not name:
        return []
    stored = next((o for o in snapshot.of(kind) if _name(o) == name), None)
    # The state before the write: the old object as the request gives it (the live state has it
    # already; a `review --old-file` against a file state may not), else what the state holds
    # under that name (`review` of an edited copy is a CREATE, as `kubectl apply` is not).
    current = old if old is not None else stored
    before = snapshot if stored == current else _with(snapshot, kind, name, current)
    prev = model_for(snapshot, gates)
    before_model = prev if before is snapshot else Model(before, gates, prev)
    after_model = Model(_with(snapshot, kind, name, obj), gates, prev)
    out: list[str] = []
    if what.is_rule:
        already = {c for c, _ in _evicted(current, prev)}  # the rule as it is evicts these already
        evicted = sorted((c, s) for c, s in _evicted(obj, prev) if c not in already)
        if evicted:
            head = f"{PREFIX}NoExecute would evict the pods of {_count(len(evicted), 'allocated claim')}: "
            out.append(_names_line(head, [c + (f" after {s} s" if s else "") for c, s in evicted]))
        if not _rules_apply(gates):
            return out  # the scheduler ignores rules: no allocation changes
    pending = [raw for raw in snapshot.of("ResourceClaim") if isinstance(raw, dict)
               and not claim_allocation(raw) and what.affects(raw, name)]
    if pending:
        out += _stop_fitting(pending, (before_model, after_model), limits, this_rule=name if what.is_rule else "")
    return out[:WARNINGS_MAX]


def _rules_apply(gates: FeatureGates) -> bool:
    """Whether the scheduler and the eviction controller apply DeviceTaintRules."""
    return gates.enabled(Gate.DRA_DEVICE_TAINTS) and gates.enabled(Gate.DRA_DEVICE_TAINT_RULES)


def _evicted(rule: dict[str, Any] | None, model: Model) -> set[tuple[str, int]]:
    """(claim label, seconds until eviction) for every allocated claim ``rule`` evicts pods of."""
    if rule is None or not _rules_apply(model.gates):
        return set()  # the eviction controller ignores rules (and taints) then
    spec = as_dict(rule.get("spec"))
    taint = parse_taint(spec.get("taint"), _name(rule))
    if taint is None or taint.effect != "NoExecute":
        return set()
    out: dict[str, int] = {}
    for (ns, cname), raw in model.allocated_claims.items():
        results = allocation_results(raw)
        for r in map(as_dict, results):
            if not selects(spec.get("deviceSelector"), interned_str(r.get("driver")), interned_str(r.get("pool")),
                           interned_str(r.get("device"))):
                continue
            tols = [t for t in map(parse_toleration, as_list(r.get("tolerations")))
                    if t.effect == "NoExecute" and tolerates(t, taint)]
            if any(t.seconds is None for t in tols):
                continue  # tolerated forever
            wait = min((max(t.seconds or 0, 0) for t in tols), default=0)
            label = f"{ns}/{cname}"
            out[label] = min(out.get(label, wait), wait)
    return set(out.items())


def _classes_of(raw: dict[str, Any]) -> set[str]:
    """The DeviceClasses a claim's requests name (``exactly`` and every ``firstAvailable`` entry)."""
    out: set[str] = set()
    for req in map(as_dict, as_list(as_dict(as_dict(raw.get("spec")).get("devices")).get("requests"))):
        for body in [as_dict(req.get("exactly"))] + [as_dict(s) for s in as_list(req.get("firstAvailable"))]:
            if interned_str(body.get("deviceClassName")):
                out.add(interned_str(body.get("deviceClassName")))
    return out


def _stop_fitting(pending: list[dict[str, Any]], models: tuple[Model, Model], limits: Limits,
                  this_rule: str = "") -> list[str]:
    """The pending-claims part: who fits under ``models`` (before, after the write) before and
    not after. Each check has the budget of ``limits``; one that runs out of it leaves its claim
    undecided; the deadline ends the preview. The reason of the first does not repeat
    ``this_rule`` (the rule under review)."""
    before, after = models
    call = Call(limits=limits)
    lost: list[tuple[str, Reason | None]] = []
    checked, undecided, out_of_time = 0, 0, False
    for raw in pending[:PENDING_MAX]:
        if _past(limits):
            out_of_time = True
            break
        b = allocate([raw], before, call)
        a = allocate([raw], after, call) if b.feasible else b
        if CUT_SHORT in (a.kind, b.kind):
            if _past(limits):
                out_of_time = True
                break
            undecided += 1
        elif not a.feasible and b.feasible:
            lost.append((claim_label(raw), None if lost else _why_not_there(raw, after, b.node, limits)))
        checked += 1
    out: list[str] = []
    if lost:
        out.append(_names_line(f"{PREFIX}{_count(len(lost), 'pending claim')} would no longer fit: ",
                               [c for c, _ in lost]))
        first = lost[0][1]
        if first is not None:
            out.append(warning_line(first._replace(rule="") if this_rule and first.rule == this_rule else first))
    if out_of_time or len(pending) > PENDING_MAX:
        out.append(f"{PREFIX}impact preview checked {checked} of {len(pending)} pending claims"
                   + (" (deadline)" if out_of_time else f" (at most {PENDING_MAX})"))
    elif undecided:
        out.append(f"{PREFIX}impact preview could not decide {_count(undecided, 'pending claim')} "
                   "(step budget of one check)")
    return out


def _past(limits: Limits) -> bool:
    """Whether the preview's deadline has passed."""
    return limits.deadline is not None and limits.clock() >= limits.deadline


def _why_not_there(raw: dict[str, Any], after: Model, node: str | None, limits: Limits) -> Reason | None:
    """Why the claim no longer fits on the node where it fit before (the reason that matters to
    whoever made the change), from a search of that node alone (the default step budget)."""
    if node is None:
        return None
    alone = Call(nodes=(node,), limits=Limits(deadline=limits.deadline, clock=limits.clock))
    ranked = allocate([raw], after, alone).ranked(1)
    return ranked[0] if ranked else None


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _names_line(head: str, names: list[str]) -> str:
    """``head`` and as many of ``names`` as fit in one warning (", ..." when some do not)."""
    line = head
    for i, n in enumerate(names):
        rest = ", ..." if i < len(names) - 1 else ""
        part = ("" if i == 0 else ", ") + n
        if len(line) + len(part) + len(rest) > WARNING_LENGTH_MAX:
            if i == 0:  # not even one name fits whole: shorten it
                return line + middle(n, max(WARNING_LENGTH_MAX - len(line) - len(rest), 12)) + rest
            return line + ", ..."
        line += part
    return line
