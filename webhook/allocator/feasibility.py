"""Dry-run feasibility: claims of a ResourceClaim / ResourceClaimTemplate / PodGroup → warnings.

Pure (the deadline is a ``time.monotonic()`` value passed in). Used by ``/validate`` and
``review``; never a denial and never raises: at worst one "feasibility: check failed" warning.
PodGroups are checked jointly (one search over all their claims, an upper bound); when that
succeeds they are checked again claim by claim without revisiting, as the scheduler allocates
gangs today (#138765), and a warning says so when only the joint search succeeds. The second
check is skipped when the joint search took each claim's first fit in claim order: claim by
claim finds that same allocation (``Allocation.in_order``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.allocator.allocation import CUT_SHORT, Allocation
from webhook.allocator.engine import PER_CLAIM, Call, allocate, claims_from_template
from webhook.allocator.frame import Limits
from webhook.allocator.model import model_for
from webhook.allocator.reasons import Reason, body, plain, warning
from webhook.gates import FeatureGates
from webhook.raw import as_dict, as_list, claim_allocation
from webhook.state.base import ClusterSnapshot

WARNINGS_MAX = 3
"""Feasibility adds at most this many warnings (the most useful reasons first)."""
WARNING_LENGTH_MAX = 120
"""The apiserver's guidance for one warning; ours are worded to fit it."""
PREFIX = "feasibility: "


def claims_for(obj: dict[str, Any], snapshot: ClusterSnapshot,
               extra: list[dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The claims an object asks for, plus notes about references not found.

    The one place that knows how claims derive from a ResourceClaim, a ResourceClaimTemplate or
    a PodGroup. Claims are used as given: the caller applies the apiserver's defaults to objects
    it reads from files (objects from the apiserver already carry them); the search reads an
    absent ``allocationMode``/``count`` as ExactCount/1 anyway. ``extra`` objects (e.g. other
    documents of a ``simulate`` input) are searched before the state.
    """
    kind = obj.get("kind")
    if kind == "ResourceClaim":
        return [obj], []
    if kind == "ResourceClaimTemplate":
        return [claims_from_template(obj)], []
    if kind != "PodGroup":
        return [], [f"kind {kind} has no claims"]
    return _podgroup_claims(obj, snapshot, extra or [])


def _podgroup_claims(obj: dict[str, Any], snapshot: ClusterSnapshot,
                     extra: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    meta = as_dict(obj.get("metadata"))
    ns = meta.get("namespace") or "default"

    def find(k: str, name: Any) -> dict[str, Any] | None:
        for o in extra:
            m = as_dict(o.get("metadata"))
            if o.get("kind") == k and m.get("name") == name and (m.get("namespace") or "default") == ns:
                return o
        if not isinstance(name, str):
            return None
        for o in snapshot.of(k):  # an object written without a namespace is in "default"
            m = as_dict(o.get("metadata"))
            if m.get("name") == name and (m.get("namespace") or "default") == ns:
                return o
        return None

    claims: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, entry in enumerate(as_list(as_dict(obj.get("spec")).get("resourceClaims"))):
        entry = as_dict(entry)
        if entry.get("resourceClaimName"):
            found = find("ResourceClaim", entry["resourceClaimName"])
            if found is None:
                notes.append(f"claim {ns}/{entry['resourceClaimName']} not found")
            else:
                claims.append(found)
        elif entry.get("resourceClaimTemplateName"):
            tpl = find("ResourceClaimTemplate", entry["resourceClaimTemplateName"])
            if tpl is None:
                notes.append(f"template {ns}/{entry['resourceClaimTemplateName']} not found")
            else:
                name = f"{meta.get('name', 'podgroup')}-{entry.get('name') or i}"
                claims.append(claims_from_template(tpl, name))
    return claims, notes


def subject(obj: Any) -> str | None:
    """What a feasibility warning is about ("claim x"), or None for an object without claims."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    name = _name(obj)
    return {"ResourceClaim": f"claim {name}", "ResourceClaimTemplate": f"claims from template {name}",
            "PodGroup": f"the claims of PodGroup {name}"}.get(str(kind))


def _per_pod_warning(name: str, greedy: Allocation, limit: int = WARNING_LENGTH_MAX) -> str:
    """A PodGroup whose claims fit only jointly: the scheduler, pod by pod, would not place them.
    The tail is the most useful reason: with its claim and request when they fit, else what ran out."""
    head = f"{PREFIX}PodGroup {name} fits only jointly, not pod by pod: " if len(name) <= 20 or \
        limit > WARNING_LENGTH_MAX else f"{PREFIX}fits only jointly, not pod by pod as the scheduler allocates: "
    ranked = greedy.ranked(1)
    if not ranked:
        return head + greedy.message
    for tail in (warning_line(ranked[0], limit=limit)[len(PREFIX):], body(ranked[0]), body(plain(ranked[0]))):
        if len(head) + len(tail) <= limit:
            return head + tail
    return head + middle(body(plain(ranked[0])), limit - len(head))


def _name(obj: Any) -> str:
    meta = as_dict(obj.get("metadata")) if isinstance(obj, dict) else {}
    return str(meta.get("name") or meta.get("generateName") or "?")


def warnings_for(outcome: Allocation, about: str, limit: int = WARNING_LENGTH_MAX) -> list[str]:
    """Warnings for an outcome: [] when feasible. Each fits ``limit`` by its wording."""
    if outcome.feasible:
        return []
    if outcome.kind == CUT_SHORT:
        return [f"{PREFIX}{outcome.message}; could not confirm that {about} can be allocated"]
    ranked = outcome.ranked(WARNINGS_MAX)
    if not ranked:
        return [f"{PREFIX}no node can allocate {about}: {outcome.message}"]
    return [warning_line(ranked[0], about, limit)] + [warning_line(r, limit=limit) for r in ranked[1:WARNINGS_MAX]]


def warning_line(r: Reason, about: str = "", limit: int = 0) -> str:
    """One feasibility warning for ``r``; with ``about`` the first one ("no node can allocate ...").

    Request reasons name the claim, the request and its DeviceClass. Wordings from the fullest
    to the tersest are tried (the node goes last: it is not a key fact); only when even the
    tersest passes ``limit`` (``WARNING_LENGTH_MAX``, the server's) are the longest names
    shortened in the middle. A reason's amounts (``reasons.amounts``) are dropped within a tier
    before a terser tier is tried. Offline the limit is unbounded: the fullest wording, names whole.
    """
    limit = limit or WARNING_LENGTH_MAX
    r = r._replace(claim=r.claim.rpartition("/")[2])
    for tier in (0, 1, 2, 3) if about else (1, 2, 3):
        for form in (r, plain(r)):  # with the amounts, then (shorter) without them
            line = _worded(form, about, tier)
            if len(line) <= limit:
                return line
    return _squeezed(plain(r), about, limit)


def _worded(r: Reason, about: str, tier: int) -> str:
    """Tier 0: "no node can allocate <about>: ..."; 1: "claim C request R (class K): ... on N";
    2: the same without the node; 3: "claim C/R (K): ..."."""
    if not r.request:
        return f"{PREFIX}no node can allocate {about}: {warning(r)}" if tier == 0 else f"{PREFIX}{warning(r)}"
    named = r.selector.startswith("class ")  # the selector already names the class
    who = f"request {r.request}" + (f" (class {r.device_class})" if r.device_class and not named else "")
    what = body(r) + (f" on {r.node}" if r.node and tier < 2 else "")
    if tier == 0:
        return f"{PREFIX}no node can allocate {about}: {who}: {what}"
    if tier == 3:
        cls = f" ({r.device_class})" if r.device_class and not named else ""
        return f"{PREFIX}claim {r.claim}/{r.request}{cls}: {what}"
    return f"{PREFIX}claim {r.claim} {who}: {what}"


_NAMES = ("claim", "device_class", "node", "device", "pool", "counter", "counter_set", "capacity",
          "attribute", "request", "selector", "rule", "taint", "detail")
"""What may be shortened, longest first; ``detail`` (free text, e.g. an upstream error) included,
so that every warning fits by its wording and the server never has to cut one the CLI shows whole."""


def _squeezed(r: Reason, about: str, limit: int) -> str:
    """The tersest line with its longest names shortened in the middle until it fits."""
    line = _worded(r, about, 3)
    floor = 12
    while len(line) > limit:
        name = max(_NAMES, key=lambda f: len(getattr(r, f)))
        value = getattr(r, name)
        if len(value) <= floor:
            if floor == 12:  # every name is short already: go on to 7 characters each
                floor = 7
                continue
            break  # nothing left to shorten: the response builder clips the rest
        shorter: dict[str, Any] = {name: middle(value, max(floor, len(value) - (len(line) - limit)))}
        r = r._replace(**shorter)
        line = _worded(r, about, 3)
    return line


def middle(name: str, n: int) -> str:
    """``name`` in at most ``n`` characters: its start and end around ``...``."""
    if len(name) <= n:
        return name
    keep = n - 3
    return name[: (keep + 1) // 2] + "..." + name[len(name) - keep // 2:]


def feasibility_warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, *,
                         deadline: float, max_steps: int, max_length: int = WARNING_LENGTH_MAX) -> list[str]:
    """Warnings for ResourceClaim, ResourceClaimTemplate and PodGroup objects; [] when feasible.

    Each is worded to fit ``max_length`` (the server's 120 characters; the CLI's is unbounded, so
    it gets the fullest wording with every name whole); free text past it is left to the
    response builder, the one place that clips.
    """
    return checked(lambda: _warnings(obj, snapshot, gates, deadline, max_steps, max_length))


def checked(check: Callable[[], list[str]]) -> list[str]:
    """``check()``'s warnings, or one "check failed" warning when it raises: admission must
    never fail because of a feasibility check."""
    try:
        return check()
    except Exception as e:  # noqa: BLE001 - the one place such a failure becomes a warning
        return [f"{PREFIX}check failed: {type(e).__name__}: {e}"]


def _warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, deadline: float,
              max_steps: int, limit: int) -> list[str]:
    about = subject(obj)
    if about is None or claim_allocation(obj):
        return []
    claims, notes = claims_for(obj, snapshot)
    out = [f"{PREFIX}{n} in the cluster state" for n in notes]
    if not claims:
        return out[:WARNINGS_MAX]
    model = model_for(snapshot, gates)
    limits = Limits(max_steps, deadline)
    outcome = allocate(claims, model, Call(limits=limits))
    out += warnings_for(outcome, about, limit)
    if outcome.feasible and obj.get("kind") == "PodGroup" and len(claims) > 1 and not outcome.in_order:
        # Only a joint solution that went back into an earlier claim can fail claim by claim.
        greedy = allocate(claims, model, Call(mode=PER_CLAIM, limits=limits))
        if not greedy.feasible and greedy.kind != CUT_SHORT:
            out.append(_per_pod_warning(_name(obj), greedy, limit))
    return out[:WARNINGS_MAX]
