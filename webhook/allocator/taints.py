"""Device taints as the scheduler sees them: a slice's own taints plus the DeviceTaintRules that
select the device, and whether a request's tolerations tolerate them.

Pure. Upstream's scheduler does not read DeviceTaintRules itself: its ResourceSlice tracker
(``k8s.io/dynamic-resource-allocation/resourceslice/tracker``, ``applyPatches``) appends the
taint of every rule whose selector matches a device to that device's taints, and the allocator
reads the patched slices (``taintPreventsAllocation``). We keep the two apart instead (converted
slices are shared by every model; rules change on their own) and join them per device here, with
the same result:

- a rule with no ``deviceSelector`` selects nothing; each of ``driver``, ``pool``, ``device`` that
  is set must equal the device's (exact strings), an empty selector selects every device;
- the rules apply only while ``DRADeviceTaintRules`` is on (the tracker is a plain slice lister
  otherwise), and taints of either origin only while ``DRADeviceTaints`` is on;
- a taint with effect ``NoSchedule`` or ``NoExecute`` excludes the device unless one toleration of
  the request tolerates it; ``None`` and effects this release does not know are ignored;
- a toleration tolerates a taint when its effect is empty or equal, its key empty or equal, and
  its operator ``Exists``, or ``Equal`` (or empty) with an equal value; ``tolerationSeconds``
  plays no part in allocation (only in eviction, ``evicting_taints``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from webhook.raw import as_dict, as_str

BLOCKING = ("NoSchedule", "NoExecute")
"""The effects that keep a device from an untolerating request (allocator ``taintPreventsAllocation``)."""


class Taint(NamedTuple):
    """One taint of a device; ``rule`` names the DeviceTaintRule it comes from ("" for the slice's)."""

    key: str
    value: str
    effect: str
    rule: str = ""
    time_added: str = ""
    """``timeAdded`` as written (RFC 3339), "" when not set."""

    def label(self) -> str:
        """``key=value:effect``, or ``key:effect`` without a value (kubectl's taint notation)."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class Toleration(NamedTuple):
    key: str
    operator: str
    """``Equal`` or ``Exists`` (an empty one reads as ``Equal``, as upstream defaults it)."""
    value: str
    effect: str
    seconds: int | None = None
    """``tolerationSeconds`` (None: forever)."""




def parse_taint(raw: Any, rule: str = "") -> Taint | None:
    t = as_dict(raw)
    if not t:
        return None
    return Taint(as_str(t.get("key")), as_str(t.get("value")), as_str(t.get("effect")), rule,
                 as_str(t.get("timeAdded")))


def parse_toleration(raw: Any) -> Toleration:
    t = as_dict(raw)
    secs = t.get("tolerationSeconds")
    return Toleration(as_str(t.get("key")), as_str(t.get("operator")) or "Equal", as_str(t.get("value")),
                      as_str(t.get("effect")),
                      secs if isinstance(secs, int) and not isinstance(secs, bool) else None)


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """Upstream ``resourceclaim.ToleratesTaint``."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator == "Exists":
        return True
    return tol.operator == "Equal" and tol.value == taint.value


def untolerated(tolerations: tuple[Toleration, ...], taints: Iterable[Taint]) -> Taint | None:
    """The first taint that keeps the device from a request with ``tolerations`` (None: usable).
    On the search's hot path: most devices have no taint, and then this is one loop test."""
    for taint in taints:
        if taint.effect in BLOCKING and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


class TaintRules:
    """The DeviceTaintRules of one snapshot, indexed by what their selectors name.

    ``of(driver, pool, device)`` gives the taints of the rules that select that device, in
    snapshot order (cached per device: the search asks again and again).
    """

    __slots__ = ("_index", "_memo", "raws")

    def __init__(self, raws: tuple[Any, ...]) -> None:
        self.raws = raws
        """The raw rules of the snapshot (a model reuses these rules while they are the same)."""
        self._index: dict[tuple[str | None, str | None, str | None], list[tuple[int, Taint]]] = {}
        for i, raw in enumerate(raws):
            meta, spec = as_dict(as_dict(raw).get("metadata")), as_dict(as_dict(raw).get("spec"))
            sel = spec.get("deviceSelector")
            taint = parse_taint(spec.get("taint"), as_str(meta.get("name")))
            if not isinstance(sel, dict) or taint is None:
                continue  # no selector: no device (upstream); no taint: nothing to apply
            key = tuple(v if isinstance(v, str) else None for v in (sel.get("driver"), sel.get("pool"),
                                                                   sel.get("device")))
            self._index.setdefault(key, []).append((i, taint))  # type: ignore[arg-type]
        self._memo: dict[tuple[str, str, str], tuple[Taint, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._index)

    def of(self, driver: str, pool: str, device: str) -> tuple[Taint, ...]:
        key = (driver, pool, device)
        got = self._memo.get(key)
        if got is None:
            found: list[tuple[int, Taint]] = []
            for d in (driver, None):
                for p in (pool, None):
                    for n in (device, None):
                        found += self._index.get((d, p, n), ())
            got = tuple(t for _, t in sorted(found, key=lambda it: it[0]))
            if len(self._memo) > 200_000:
                self._memo.clear()
            self._memo[key] = got
        return got


NO_RULES = TaintRules(())
"""The rules when none apply (no DeviceTaintRules, or their gates off)."""


def selects(selector: Any, driver: str, pool: str, device: str) -> bool:
    """Whether a rule's ``deviceSelector`` selects the device (upstream ``ruleMatchesDevice``)."""
    if not isinstance(selector, dict):
        return False
    return all(not isinstance(want, str) or want == have for want, have in
               ((selector.get("driver"), driver), (selector.get("pool"), pool), (selector.get("device"), device)))
