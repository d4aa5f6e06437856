"""Dry-run feasibility: claims of a ResourceClaim / ResourceClaimTemplate / PodGroup → warnings.

Pure (the deadline is a ``time.monotonic()`` value passed in). Used by ``/validate`` and
``review``; never a denial and never raises: at worst one "feasibility: check failed" warning.
PodGroups are checked jointly (one search over all their claims, an upper bound); when that
succeeds they are checked again claim by claim without revisiting, as the scheduler allocates
gangs today (#138765), and a warning says so when only the joint search succeeds.
"""

from __future__ import annotations

import re
from typing import Any

from webhook.allocator.engine import CUT_SHORT, JOINT, PER_CLAIM, Outcome, allocate, claims_from_template
from webhook.allocator.model import _d, _l, model_for
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

MAX_WARNING = 120
MAX_WARNINGS = 3
PREFIX = "feasibility: "


def claims_for(obj: dict[str, Any], snapshot: ClusterSnapshot,
               extra: list[dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The claims an object asks for, plus notes about references not found.

    Claims are used as given: the caller applies the apiserver's defaults to objects it reads
    from files (objects from the apiserver already carry them); the search reads an absent
    ``allocationMode``/``count`` as ExactCount/1 anyway.

    ``extra`` objects (e.g. other documents of a ``simulate`` input) are searched before the state.
    """
    kind = obj.get("kind")
    meta = _d(obj.get("metadata"))
    ns = meta.get("namespace") or "default"
    if kind == "ResourceClaim":
        return [obj], []
    if kind == "ResourceClaimTemplate":
        return [claims_from_template(obj)], []
    if kind != "PodGroup":
        return [], [f"kind {kind} has no claims"]
    claims: list[dict[str, Any]] = []
    notes: list[str] = []

    def find(k: str, name: Any) -> dict[str, Any] | None:
        for o in extra or ():
            m = _d(o.get("metadata"))
            if o.get("kind") == k and m.get("name") == name and (m.get("namespace") or "default") == ns:
                return o
        return snapshot.find(k, name, ns) if isinstance(name, str) else None

    for i, entry in enumerate(_l(_d(obj.get("spec")).get("resourceClaims"))):
        entry = _d(entry)
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


_REASON = re.compile(r"^(?P<node>[^: ]+): (?:claim (?P<claim>\S+) request (?P<req>\S+): )?(?P<text>.*)$")


def describe(reason: str) -> str:
    """``worker-1: claim ns/c request r: X`` → ``X on worker-1``."""
    m = _REASON.match(reason)
    if not m:
        return reason
    return f"{m['text']} on {m['node']}"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_WARNING else text[: MAX_WARNING - 1] + "…"


def warnings_for(outcome: Outcome, subject: str) -> list[str]:
    """Warnings for an outcome: [] when feasible."""
    if outcome.feasible:
        return []
    if outcome.kind == CUT_SHORT:
        return [_clip(f"{PREFIX}{outcome.message}; could not confirm that {subject} can be allocated")]
    texts = outcome.reason_texts()
    first = describe(texts[0]) if texts else outcome.message
    out = [_clip(f"{PREFIX}no node can allocate {subject}: {first}")]
    for t in texts[1:MAX_WARNINGS]:
        out.append(_clip(f"{PREFIX}{describe(t)}"))
    return out


def feasibility_warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, *,
                         deadline: float, max_steps: int) -> list[str]:
    """Warnings for ResourceClaim, ResourceClaimTemplate and PodGroup objects; [] when feasible."""
    try:
        return _warnings(obj, snapshot, gates, deadline, max_steps)
    except Exception as e:  # noqa: BLE001 - admission must never fail because of this check
        return [_clip(f"{PREFIX}check failed: {type(e).__name__}: {e}")]


def _warnings(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, deadline: float,
              max_steps: int) -> list[str]:
    if not isinstance(obj, dict) or obj.get("kind") not in ("ResourceClaim", "ResourceClaimTemplate",
                                                            "PodGroup"):
        return []
    if _d(_d(obj.get("status")).get("allocation")):
        return []
    name = _d(obj.get("metadata")).get("name") or _d(obj.get("metadata")).get("generateName") or "?"
    kind = obj["kind"]
    subject = {"ResourceClaim": f"claim {name}", "ResourceClaimTemplate": f"claims from template {name}",
               "PodGroup": f"the claims of PodGroup {name}"}[kind]
    claims, notes = claims_for(obj, snapshot)
    out = [_clip(f"{PREFIX}{n} in the cluster state") for n in notes]
    if not claims:
        return out[:MAX_WARNINGS]
    model = model_for(snapshot, gates)
    outcome = allocate(claims, model, mode=JOINT, max_steps=max_steps, deadline=deadline)
    out += warnings_for(outcome, subject)
    if outcome.feasible and kind == "PodGroup" and len(claims) > 1:
        greedy = allocate(claims, model, mode=PER_CLAIM, max_steps=max_steps, deadline=deadline)
        if not greedy.feasible and greedy.kind != CUT_SHORT:
            texts = greedy.reason_texts()
            out.append(_clip(f"{PREFIX}claims of PodGroup {name} fit jointly but not one by one as the "
                             f"scheduler allocates them: {describe(texts[0]) if texts else greedy.message}"))
    return out[:MAX_WARNINGS]
