"""The one admission pipeline: mutate → validate the mutated object (and its opaque driver
parameters, when drivers ship schemas) → warnings and findings → feasibility.

Used by the HTTP server (``/mutate``, ``/validate``) and by ``dra-webhook review``; the two
shells only choose which parts of the outcome go into the response. Per-kind facts come from
the rules registry; the cluster state is read once per request (one ``StateView``) and handed
to every step. An object in an older served version (``webhook.versions``) is converted to v1
first and judged there; the answer is put back into the version that came in. Pure apart from
the clock used for the deadline: no Flask, no network.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from webhook import driverschemas
from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.response import build_response, sanitize_warnings
from webhook.allocator import Limits, poollint
from webhook.allocator.impact import impact_warnings
from webhook.config import Settings
from webhook.defaulting import plan_capacity_defaults
from webhook.fielderrors import FieldError
from webhook.findings import Finding
from webhook.gates import FeatureGates
from webhook.patch import PatchError, apply_patch
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules, no_state_warnings
from webhook.rules.registry import rules_for
from webhook.state.base import StateSource, StateView
from webhook.versions import PREFERRED, OlderVersion, older
from webhook.versions.reporting import Untranslatable
from webhook.workloads.report import feasibility_warnings

log = logging.getLogger(__name__)

Endpoint = Literal["mutate", "validate", "review"]


@dataclass(slots=True)
class Outcome:
    """Everything the pipeline found out about one request."""

    request: AdmissionRequest
    handled: bool = False
    errors: list[FieldError] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)
    """Applies to the object as it was sent (in its version)."""
    mutated: dict[str, Any] | None = None
    """The object as validated: with the patch applied, and converted to v1 when it came in an
    older version."""
    mutation_warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Lint (pool and standard-attribute findings): warnings, failures with ``review --strict``."""
    feasibility: list[str] = field(default_factory=list)
    feasibility_checked: bool = False

    @property
    def allowed(self) -> bool:
        return not self.errors


@dataclass(slots=True)
class Answer:
    """The AdmissionReview for one endpoint plus the facts the shells log and count (read-only by
    convention; not frozen, which costs a small review about 0.5 µs)."""

    review: dict[str, Any]
    allowed: bool
    warnings: list[str]
    """As sent: sanitised, capped."""
    patch: list[dict[str, Any]]
    """The JSON Patch sent (empty on ``/validate``)."""
    causes: list[str]
    """The fields of the causes of a denial."""


def evaluate(req: AdmissionRequest, settings: Settings, state: StateSource | None = None, *,
             deadline: float | None = None, endpoint: Endpoint = "review") -> Outcome:
    """Run the rules for one request. ``deadline`` is a ``time.monotonic()`` value.

    The state is read once (``StateView.of``), when the kind is one we check.
    """
    out = Outcome(req)
    if req.operation not in ("CREATE", "UPDATE") or req.obj is None:
        return out
    rules = rules_for(req.group, req.kind)
    if rules is None:
        return out
    if req.version and not rules.serves(req.version):
        out.notes.append(f"{req.kind} {req.group}/{req.version} is not checked; "
                         f"dra-webhook validates {rules.served()} (the versions Kubernetes 1.37 can serve)")
        return out
    out.handled = True
    sent = older(req.group, req.kind, req.version)
    told = older(req.group, req.kind, req.reporting_version)
    judged = req if sent is None else replace(
        req, version=PREFERRED, obj=sent.to_v1(req.obj), old=sent.to_v1(req.old) if req.old is not None else None)
    _judge(out, rules, judged, settings, state, deadline=deadline, endpoint=endpoint)
    if sent is not None:
        _put_back(out, sent, judged)
    if told is not None:
        out.errors = told.report(req.kind, out.errors)
        out.mutation_warnings = [told.warning_paths(req.kind, w) for w in out.mutation_warnings]
        if endpoint == "review" and (note := told.deprecation()):
            out.notes.insert(0, note)  # the apiserver's own warning; in a cluster it sends it itself
    return out


def _judge(out: Outcome, rules: KindRules, req: AdmissionRequest, settings: Settings,
           state: StateSource | None, *, deadline: float | None, endpoint: Endpoint) -> None:
    """Mutate, validate, warnings and feasibility of ``req`` (in the version the rules judge)."""
    view = StateView.of(state) if state is not None and _reads_state(rules, req, settings, endpoint) else None
    ctx = RuleContext(gates=settings.gates, operation=req.operation, old=req.old,
                      subresource=req.subresource, dry_run=req.dry_run)
    mutation, obj = _mutate(rules, req, ctx, settings, view, defaults=endpoint != "validate",
                            deadline=deadline)
    out.patch = mutation.ops
    out.mutation_warnings = mutation.warnings
    out.mutated = obj
    if endpoint == "mutate":
        return
    if ctx.is_update() and req.old is not None:
        out.errors = list(rules.validate_update(obj, req.old, ctx))
    else:
        out.errors = list(rules.validate(obj, ctx))
    if settings.driver_schemas is not None and req.subresource == "":
        errors, notes = driverschemas.check(settings.driver_schemas, rules.opaque_parameters(obj),
                                            rules.opaque_parameters(req.old) if ctx.is_update() and req.old else ())
        out.errors.extend(errors)
        out.notes.extend(notes)
    out.notes.extend(rules.warnings(obj, ctx))
    out.notes.extend(_state_notes(rules, obj, view))
    out.findings.extend(rules.findings(obj, ctx))
    if rules.pool_lint and endpoint == "validate" and out.allowed and view is not None:
        # The webhook judges the slice's pool as the live state plus this slice shows it, in the
        # middle of whatever the driver is publishing (complete=False). ``review`` judges the
        # whole set of files it was given instead (``pool_findings`` with complete=True).
        (found,) = pool_findings([obj], view.snapshot.of("ResourceSlice"), settings.gates, complete=False)
        out.findings.extend(found)
    if out.allowed and settings.feasibility and req.subresource == "":
        if rules.feasibility and (req.operation == "CREATE" or (req.dry_run and rules.feasibility_on_update)):
            out.feasibility = _feasibility(obj, settings, view, deadline)
            out.feasibility_checked = True
        elif rules.impact:
            out.feasibility = _feasibility(obj, settings, view, deadline, old=req.old, impact=True)
            out.feasibility_checked = True


def _reads_state(rules: KindRules, req: AdmissionRequest, settings: Settings, endpoint: Endpoint) -> bool:
    """Whether any step of this request reads the cluster state: capacity defaulting (not on
    ``/validate``), state notes, pool lint, feasibility (not on ``/mutate``). Most ``/mutate``
    requests (pods, PodGroups, slices, updates) need none, and reading a live source costs a
    small review a noticeable share of its time."""
    if endpoint != "validate" and rules.capacity_defaulting and req.operation == "CREATE" \
            and settings.capacity_defaulting:
        return True
    if endpoint == "mutate":
        return False
    return rules.pool_lint or rules.state_warnings is not no_state_warnings or (
        settings.feasibility and req.subresource == "" and (rules.feasibility or rules.impact))


def _put_back(out: Outcome, sent: OlderVersion, judged: AdmissionRequest) -> None:
    """The v1 patch as a patch of the object in the version it was sent in. One with no
    counterpart there is our bug: logged, and the object goes through unpatched (never a bad
    patch for the apiserver)."""
    try:
        out.patch = sent.patch(judged.kind, out.patch)
    except Untranslatable:
        log.exception("internal error: patch has no %s form (uid=%s kind=%s)", sent.version, judged.uid,
                      judged.kind)
        out.patch, out.mutation_warnings, out.mutated = [], [], judged.obj


def pool_findings(subjects: Sequence[dict[str, Any]], others: Iterable[Any], gates: FeatureGates, *,
                  complete: bool) -> list[list[Finding]]:
    """For each subject, the findings of its pool (``poollint.findings_for``), as the pipeline
    carries them. The one entry to the pool lint for the server and ``review``; never raises
    (a failure is logged and gives no findings: lint must not fail a request)."""
    try:
        per_subject = poollint.findings_for(subjects, others, gates, complete=complete)
        worded: dict[int, Finding] = {}  # a finding of many slices (a pool's count) is worded once
        return [[worded.get(id(f)) or worded.setdefault(id(f), poollint.finding(f)) for f in found]
                for found in per_subject]
    except Exception:
        log.exception("pool lint failed")
        return [[] for _ in subjects]


def _mutate(rules: KindRules, req: AdmissionRequest, ctx: RuleContext, settings: Settings,
            view: StateView | None, *, defaults: bool,
            deadline: float | None) -> tuple[Mutation, dict[str, Any]]:
    """The rules' strips plus, when ``defaults``, capacity defaulting; and the patched object.

    ``/validate`` skips defaulting: the validating webhook cannot return a patch, and the
    capacity requests it would add are never validated (RC-EX-8), so it cannot change a verdict.
    """
    assert req.obj is not None
    mutation = rules.mutate(req.obj, ctx)
    obj = _patched(req, req.obj, mutation)
    if obj is None:
        return Mutation(), req.obj
    if defaults and rules.capacity_defaulting and req.operation == "CREATE" \
            and settings.capacity_defaulting and view is not None:
        try:
            extra = plan_capacity_defaults(obj, view.snapshot, settings.gates,
                                           deadline=_budget_end(settings, deadline))
        except Exception:  # defaulting is a convenience: never fail the request for it
            log.exception("capacity defaulting failed (uid=%s)", req.uid)
            extra = Mutation()
        defaulted = _patched(req, obj, extra)
        if defaulted is not None:
            mutation.extend(extra)
            obj = defaulted
    return mutation, obj


def _patched(req: AdmissionRequest, obj: dict[str, Any], mutation: Mutation) -> dict[str, Any] | None:
    """``obj`` with the mutation applied; None (logged) when it does not apply, which is our bug:
    never let it turn into a bad patch for the apiserver."""
    if not mutation.ops:
        return obj
    try:
        patched: dict[str, Any] = apply_patch(obj, mutation.ops)
        return patched
    except PatchError:
        log.exception("internal error: patch does not apply (uid=%s kind=%s)", req.uid, req.kind)
        return None


def _budget_end(settings: Settings, deadline: float | None) -> float:
    """When optional work (defaulting, feasibility) must stop: before the request deadline
    minus the margin, and at most ``feasibility_timeout_seconds`` from now."""
    now = time.monotonic()
    end = (deadline if deadline is not None else now + settings.default_timeout_seconds) \
        - settings.deadline_margin_seconds
    return min(end, now + settings.feasibility_timeout_seconds)


def _state_notes(rules: KindRules, obj: dict[str, Any], view: StateView | None) -> list[str]:
    """Kind-specific notes that need the cluster state (e.g. a pod joining a PodGroup)."""
    if view is None:
        return []
    try:
        return rules.state_warnings(obj, view.snapshot)
    except Exception:
        log.exception("state-based warnings failed")
        return []


def _feasibility(obj: dict[str, Any], settings: Settings, view: StateView | None,
                 deadline: float | None, *, old: dict[str, Any] | None = None, impact: bool = False) -> list[str]:
    """Feasibility warnings (with ``impact``: the impact preview of a write over ``old``); any
    failure here only ever becomes a warning."""
    if view is None:
        return []
    if not view.ready:
        return ["feasibility: not checked, cluster state is not synced yet"]
    now = time.monotonic()
    budget_end = _budget_end(settings, deadline)
    if budget_end <= now:
        return ["feasibility: not checked, no time left before the request deadline"]
    try:
        if impact:
            warnings = impact_warnings(obj, old, view.snapshot, settings.gates,
                                       Limits(settings.allocator_max_steps, budget_end))
        else:
            warnings = feasibility_warnings(obj, view.snapshot, settings.gates, deadline=budget_end,
                                            max_steps=settings.allocator_max_steps,
                                            max_length=settings.max_warning_length)
        if view.stale:  # first, so the warning cap never drops it
            warnings.insert(0, f"feasibility: {view.stale}; the answer may be out of date")
        return warnings
    except Exception as e:  # a failure in the check only ever adds a warning
        log.exception("feasibility check failed")
        return [f"feasibility: check failed: {type(e).__name__}"]


def respond(out: Outcome, settings: Settings, endpoint: Endpoint,
            api_version: str = "admission.k8s.io/v1") -> Answer:
    """The AdmissionReview for one endpoint.

    ``mutate``: allowed, the patch and the mutation warnings (never a denial: validation is the
    validating webhook's job). ``validate``: the verdict plus every warning, never a patch.
    ``review`` (CLI): everything.
    """
    req = out.request
    if endpoint == "mutate":
        warnings = out.mutation_warnings + out.notes
        allowed, errors, patch = True, [], out.patch
    else:
        lint = [f.line(settings.max_warning_length) for f in out.findings]
        warnings = out.mutation_warnings + out.notes + lint + out.feasibility
        allowed, errors = out.allowed, out.errors
        patch = out.patch if endpoint == "review" else []
    sent = sanitize_warnings(warnings, max_count=settings.max_warnings,
                             max_length=settings.max_warning_length)
    body = build_response(req.uid, allowed=allowed, errors=errors, kind=req.kind, group=req.group,
                          name=req.display_name, patch=patch, api_version=api_version, warnings=sent)
    return Answer(body, allowed, sent, patch, [e.field for e in errors])


def review(doc: Any, settings: Settings, state: StateSource | None = None, *,
           endpoint: Endpoint = "review", deadline: float | None = None) -> tuple[dict[str, Any], Outcome]:
    """Parse an AdmissionReview document, evaluate it and build the response.

    Raises ``BadReview`` when ``doc`` is not an AdmissionReview.
    """
    req = parse_review(doc)
    out = evaluate(req, settings, state, deadline=deadline, endpoint=endpoint)
    return respond(out, settings, endpoint).review, out
