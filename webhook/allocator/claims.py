"""Claims as the search sees them, and the per-claim checks done before the search (§6.1).

Pure. ``parse_claim`` turns a raw ResourceClaim into ``Claim`` or raises ``AllocError`` carrying a
fatal ``Reason`` (worded "claim NS/NAME, request R: ..." as upstream words it). CEL selectors are
compiled here (cached by ``webhook.cel``), so a compile error is reported once, before any device is looked at.
"""

from __future__ import annotations

import itertools
from typing import Any

from webhook.allocator.constraints import Constraint, parse_constraint
from webhook.allocator.devices import interned_str
from webhook.allocator.model import DeviceClassInfo, Model
from webhook.allocator.reasons import Reason, fatal, text
from webhook.allocator.taints import Toleration, parse_toleration
from webhook.allocator.variant import EXPERIMENTAL, STABLE
from webhook.gates import Gate
from webhook.raw import as_dict, as_list

DEVICES_PER_CLAIM_MAX = 32
EXACT, ALL = "ExactCount", "All"


class AllocError(Exception):
    """A fatal outcome: the scheduler aborts the attempt (§10). ``reason`` says why."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(text(reason))
        self.reason = reason


class BudgetExceeded(Exception):
    """The step budget or the deadline ran out; ``steps`` were taken."""

    def __init__(self, steps: int, why: str) -> None:
        super().__init__(f"the check was cut short after {steps} steps ({why})")
        self.steps = steps
        self.why = why


class Selector:
    """A compiled CEL selector plus where it came from (cache keys and messages).

    ``cls`` is the DeviceClass name for a class selector ("" for a request selector); ``claim``
    and ``request`` are set for request selectors only (a class is shared by requests).
    """

    __slots__ = ("expr", "compiled", "cls", "index", "claim", "request")

    def __init__(self, expr: str, compiled: Any, cls: str, index: int, claim: str = "",
                 request: str = "") -> None:
        self.expr = expr
        self.compiled = compiled
        self.cls = cls
        self.index = index
        self.claim = claim
        self.request = request

    def label(self) -> str:
        """``class C: selector #i`` or ``selector #i`` (the prefix of an error about it)."""
        return f"class {self.cls}: selector #{self.index}" if self.cls else f"selector #{self.index}"

    def name(self) -> str:
        """``class C selector #i`` or ``request selector #i`` (which selector said no)."""
        return f"class {self.cls} selector #{self.index}" if self.cls else f"request selector #{self.index}"

    def error(self, detail: str) -> AllocError:
        """A fatal error about this selector (compile or runtime)."""
        return AllocError(fatal(f"{self.label()}: {detail}", self.claim, self.request))


class Leaf:
    """An ``exactly`` request or one ``firstAvailable`` subrequest: what a device slot needs."""

    __slots__ = ("name", "parent", "cls", "class_selectors", "selectors", "mode", "count", "admin",
                 "tolerations", "capacity", "sel_id", "cap_id", "derived")

    def __init__(self) -> None:
        self.name = ""
        self.parent = ""
        self.cls: DeviceClassInfo | None = None
        self.class_selectors: tuple[Selector, ...] = ()
        self.selectors: tuple[Selector, ...] = ()
        self.mode = EXACT
        self.count = 1
        self.admin = False
        self.tolerations: tuple[Toleration, ...] = ()
        self.capacity: Any = None
        self.sel_id = 0
        """The same number for leaves with the same class and selectors (``content_id``)."""
        self.cap_id = 0
        """The same number for leaves with the same capacity request (``content_id``)."""
        self.derived: dict[str, str] = {}
        """Derived attribute name -> CEL expression: what the claim's constraints use for it."""


class Request:
    __slots__ = ("name", "leaf", "subrequests")

    def __init__(self, name: str, leaf: Leaf | None, subrequests: tuple[Leaf, ...]) -> None:
        self.name = name
        self.leaf = leaf
        self.subrequests = subrequests


class Claim:
    __slots__ = ("label", "namespace", "name", "requests", "constraints", "raw")

    def __init__(self, label: str, namespace: str, name: str, requests: tuple[Request, ...],
                 constraints: tuple[Constraint, ...], raw: dict[str, Any]) -> None:
        self.label = label
        self.namespace = namespace
        self.name = name
        self.requests = requests
        self.constraints = constraints
        self.raw = raw


def _selectors(raw: Any, cls: str, claim: str = "", request: str = "") -> tuple[Selector, ...]:
    """The compiled selectors of a class (``cls``) or of a request (``claim``, ``request``)."""
    from webhook.cel import CelCompileError, compile_selector

    out = []
    for i, s in enumerate(as_list(raw)):
        expr = as_dict(as_dict(s).get("cel")).get("expression")
        sel = Selector(expr if isinstance(expr, str) else "", None, cls, i, claim, request)
        if not sel.expr:
            raise sel.error("CEL expression empty (unsupported selector type?)")
        try:
            sel.compiled = compile_selector(sel.expr)
        except CelCompileError as e:
            raise sel.error(f"CEL compile error: {e}") from None
        out.append(sel)
    return tuple(out)


def class_selectors(cls: DeviceClassInfo) -> tuple[Selector, ...]:
    """The compiled selectors of a device class, kept on it (a compile error raises every time)."""
    got: tuple[Selector, ...] | None = cls.compiled
    if got is None:
        got = cls.compiled = _selectors(cls.selectors, cls.name)
    return got


def parse_leaf(body: dict[str, Any], name: str, parent: str, label: str, model: Model) -> Leaf:
    """Request ``name`` (``parent``: its request, itself for an ``exactly`` request) of claim
    ``label`` from its ``exactly`` or subrequest ``body``; AllocError for §6.1 failures."""
    gates = model.gates

    def error(detail: str) -> AllocError:
        return AllocError(fatal(detail, label, name))

    leaf = Leaf()
    leaf.name, leaf.parent = name, parent
    derived = [as_dict(a) for a in as_list(body.get("derivedAttributes"))]
    if derived:  # only the experimental allocator, with the gate on, knows them
        if model.variant != EXPERIMENTAL or not gates.enabled(Gate.DRA_DERIVED_ATTRIBUTES):
            raise error("cannot handle request with derived attributes, the feature is disabled")
        leaf.derived = {interned_str(a.get("name")): interned_str(a.get("expression")) for a in derived}
    if "adminAccess" in body and body["adminAccess"] is not None and not gates.enabled(Gate.DRA_ADMIN_ACCESS):
        raise error("admin access is requested, but the feature is disabled")
    leaf.admin = body.get("adminAccess") is True
    if body.get("capacity") is not None and model.variant != STABLE:  # stable never looks at it
        if not gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY):
            raise error("has capacity requests, but the DRAConsumableCapacity feature is disabled")
        leaf.capacity = body["capacity"]
    cls_name = body.get("deviceClassName")
    if not isinstance(cls_name, str) or not cls_name:
        raise error("missing device class name (unsupported request type?)")
    cls = model.classes.get(cls_name)
    if cls is None:
        raise error(f"could not retrieve device class {cls_name}: "
                    f"deviceclass.resource.k8s.io \"{cls_name}\" not found")
    leaf.cls = cls
    leaf.class_selectors = class_selectors(cls)
    leaf.selectors = _selectors(body.get("selectors"), "", label, name)
    mode = body.get("allocationMode", EXACT)
    if mode in (None, ""):
        mode = EXACT
    if mode not in (EXACT, ALL):
        raise error(f"unsupported count mode {mode}")
    leaf.mode = mode
    count = body.get("count", 1)
    leaf.count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
    on = gates.enabled(Gate.DRA_DEVICE_TAINTS)
    leaf.tolerations = tuple(parse_toleration(t) for t in as_list(body.get("tolerations"))) if on else ()
    leaf.sel_id = content_id(("sel", cls_name, tuple(x.expr for x in leaf.class_selectors),
                              tuple(x.expr for x in leaf.selectors)))
    leaf.cap_id = content_id(("cap", repr(leaf.capacity)))
    return leaf


_IDS: dict[tuple[Any, ...], int] = {}
_NEXT = itertools.count(1)
_IDS_MAX = 4096


def content_id(content: tuple[Any, ...]) -> int:
    """A number for ``content``: equal contents get equal numbers, different ones never do
    (numbers are not reused: when the table is full it starts afresh with new numbers). The
    searches key their per-device caches on it, so the claims of a PodGroup made from one
    template share every evaluation."""
    got = _IDS.get(content)
    if got is None:
        if len(_IDS) >= _IDS_MAX:
            _IDS.clear()
        got = _IDS[content] = next(_NEXT)
    return got


def claim_label(raw: dict[str, Any]) -> str:
    meta = as_dict(raw.get("metadata"))
    ns = interned_str(meta.get("namespace"))
    name = interned_str(meta.get("name")) or interned_str(meta.get("generateName"))
    return f"{ns or 'default'}/{name}"  # a claim written without a namespace is in "default"


def parse_claim(raw: dict[str, Any], model: Model) -> Claim:
    """A ResourceClaim (raw, defaulted) as the search sees it; AllocError for §6.1 failures."""
    gates = model.gates
    label = claim_label(raw)
    meta = as_dict(raw.get("metadata"))
    devices = as_dict(as_dict(raw.get("spec")).get("devices"))
    reqs: list[Request] = []
    lower_bound = 0
    for r in as_list(devices.get("requests")):
        r = as_dict(r)
        name = interned_str(r.get("name"))
        if isinstance(r.get("firstAvailable"), list) and r.get("exactly") is None:
            if not gates.enabled(Gate.DRA_PRIORITIZED_LIST):
                raise AllocError(fatal("has subrequests, but the DRAPrioritizedList feature is disabled",
                                       label, name))
            subs = tuple(parse_leaf(as_dict(s), f"{name}/{interned_str(as_dict(s).get('name'))}", name, label, model)
                         for s in r["firstAvailable"])
            if not subs:
                raise AllocError(fatal("firstAvailable is empty", label, name))
            lower_bound += min(s.count if s.mode == EXACT else 0 for s in subs)
            reqs.append(Request(name, None, subs))
        elif isinstance(r.get("exactly"), dict):
            leaf = parse_leaf(r["exactly"], name, name, label, model)
            lower_bound += leaf.count if leaf.mode == EXACT else 0
            reqs.append(Request(name, leaf, ()))
        else:
            raise AllocError(fatal("unsupported request type (neither exactly nor firstAvailable)",
                                   label, name))
    if lower_bound > DEVICES_PER_CLAIM_MAX:
        raise too_many_devices(label, lower_bound)
    cons: list[Constraint] = []
    for i, c in enumerate(as_list(devices.get("constraints"))):
        c = as_dict(c)
        names = frozenset(interned_str(n) for n in as_list(c.get("requests")))
        got = parse_constraint(c, names, label, i, model.variant == STABLE)
        if isinstance(got, Reason):
            raise AllocError(got)
        cons.append(got)
    return Claim(label, interned_str(meta.get("namespace")), interned_str(meta.get("name")), tuple(reqs), tuple(cons),
                 raw)


def renamed(claim: Claim, raw: dict[str, Any]) -> Claim:
    """``claim`` (parsed) as ``parse_claim(raw)`` would parse it, for a ``raw`` that differs from
    ``claim.raw`` in its name only (claims made from one template for two pods): requests and
    constraints are the same objects but for the claim's label, which request selectors carry
    for their error messages."""
    meta = raw["metadata"]
    ns, name = interned_str(meta.get("namespace")), interned_str(meta.get("name"))
    label = f"{ns or 'default'}/{name}"  # ``claim_label``: a made claim has a name
    reqs = tuple(r if not _labeled(r) else
                 Request(r.name, _relabeled(r.leaf, label) if r.leaf is not None else None,
                         tuple(_relabeled(s, label) for s in r.subrequests))
                 for r in claim.requests)
    return Claim(label, ns, name, reqs, claim.constraints, raw)


def _labeled(r: Request) -> bool:
    """Whether some leaf of ``r`` names its claim (a request selector does, for its errors)."""
    return bool(r.leaf.selectors) if r.leaf is not None else any(s.selectors for s in r.subrequests)


def _relabeled(leaf: Leaf, label: str) -> Leaf:
    """``leaf`` with its selectors naming claim ``label`` (the same leaf when none does); every
    slot copied (``tests/allocator/test_claims_renamed.py`` checks the list)."""
    if not leaf.selectors:
        return leaf
    out = Leaf.__new__(Leaf)
    out.name, out.parent, out.cls, out.class_selectors = leaf.name, leaf.parent, leaf.cls, leaf.class_selectors
    out.mode, out.count, out.admin, out.tolerations = leaf.mode, leaf.count, leaf.admin, leaf.tolerations
    out.capacity, out.sel_id, out.cap_id, out.derived = leaf.capacity, leaf.sel_id, leaf.cap_id, leaf.derived
    out.selectors = tuple(Selector(s.expr, s.compiled, s.cls, s.index, label, s.request) for s in leaf.selectors)
    return out


def too_many_devices(label: str, total: int) -> AllocError:
    """§6.1: a claim asking for more than 32 devices."""
    return AllocError(fatal(f"number of requested devices {total} exceeds the claim limit of "
                            f"{DEVICES_PER_CLAIM_MAX}", label))
