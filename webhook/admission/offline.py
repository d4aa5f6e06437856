"""Offline review: the apiserver's steps before webhooks, then the one pipeline, for objects that
reach us without an apiserver (``dra-webhook review`` and ``test``, the differential tests).

For each object: the apiserver's decode step (``decode``: an object it would refuse is reported
as refused, HTTP 400), its defaults (``with_defaults``), an AdmissionReview as it would send it
(``build_review``), then ``evaluate`` and ``respond`` as the server runs them (endpoint
``review``), and the pool lint over every ResourceSlice given, as one set. The answer is one
``Reviewed`` per object, data for the CLI to word. Pure apart from the request uids: no I/O.
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.admission import decode
from webhook.admission.envelope import parse_review
from webhook.admission.pipeline import Answer, Outcome, evaluate, pool_findings, respond
from webhook.admission.response import build_bad_request
from webhook.config import Settings
from webhook.rules.registry import KINDS, rules_for
from webhook.state.base import StateSource
from webhook.versions import older


@dataclass(frozen=True)
class Reviewed:
    """One object's review: what the pipeline found and the AdmissionReview it answers."""

    obj: dict[str, Any]
    """The object as given (before defaults)."""
    outcome: Outcome
    answer: Answer
    request: dict[str, Any]
    """The AdmissionReview request it answers."""
    origin: str = ""
    """The file it came from ("" when not from a file)."""
    problem: str = ""
    """Why the object was not checked (unknown kind, unserved version); "" when it was."""
    strict: bool = False
    """Reviewed under ``--strict``: not checked, or with findings, is a failure."""
    refused: str = ""
    """The apiserver's HTTP 400 message when it would not even decode the object; "" otherwise."""

    @property
    def subject(self) -> str:
        """``Kind name`` of the object as given (its ``generateName`` when it has no name)."""
        meta = meta_raw if isinstance(meta_raw := self.obj.get("metadata"), dict) else {}
        return f"{self.obj.get('kind')} {meta.get('name') or meta.get('generateName') or ''}"

    @property
    def findings(self) -> list[str]:
        """The lint findings (pool, standard attributes), worded whole."""
        return [f.text for f in self.outcome.findings]

    @property
    def failed(self) -> bool:
        """Denied, or (with ``--strict``) not checked or with findings."""
        return not self.answer.allowed or (self.strict and bool(self.problem or self.outcome.findings))

    @property
    def converted(self) -> dict[str, Any] | None:
        """The v1 object an object in an older version was judged as (converted as the apiserver
        converts it, the patch applied); None when it came in the version the rules judge."""
        judged = self.outcome.mutated
        sent = self.request.get("object")
        if judged is None or not isinstance(sent, dict) or judged.get("apiVersion") == sent.get("apiVersion"):
            return None
        return judged


def new_uid() -> str:
    """A fresh request uid, as the apiserver gives every AdmissionReview."""
    return str(uuid.uuid4())


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def with_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with the defaults the apiserver applies on decode, in the object's own version
    (when we have rules for its kind and version)."""
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    rules = rules_for(group, kind)
    if rules is None or not rules.serves(version):
        return obj
    conv = older(group, kind, version)
    return conv.defaults(obj) if conv is not None and conv.defaults is not None else rules.apply_defaults(obj)


def build_review(obj: dict[str, Any], old: dict[str, Any] | None, operation: str,
                 dry_run: bool) -> dict[str, Any]:
    """An AdmissionReview request as the apiserver would send it for ``obj``."""
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    meta = meta_raw if isinstance(meta_raw := obj.get("metadata"), dict) else {}
    rules = rules_for(group, kind)
    namespaced = rules is not None and rules.namespaced
    old_meta = old_raw if isinstance(old_raw := (old or {}).get("metadata"), dict) else {}
    namespace = (meta.get("namespace") or old_meta.get("namespace") or "default") if namespaced else ""
    if namespaced and not meta.get("namespace") and isinstance(obj.get("metadata"), dict):
        # kubectl sends a namespaced object without one to "default" (an UPDATE to the stored
        # object's), and the apiserver sets metadata.namespace from the request path before any
        # webhook sees the object.
        obj = {**obj, "metadata": {**meta, "namespace": namespace}}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": new_uid(),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version,
                         "resource": rules.plural if rules else kind.lower() + "s"},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "name": str(meta.get("name") or ""),
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "dra-webhook-cli"},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": None,
        },
    }


def review_objects(objs: list[dict[str, Any]], old: dict[str, Any] | None, operation: str,
                   dry_run: bool, settings: Settings, state: StateSource | None, *,
                   pool_state: Sequence[Any] = (), progress: Callable[[int], None] | None = None,
                   as_webhook: bool = False) -> list[Reviewed]:
    """Review every object as the apiserver and our webhooks would: the apiserver's decode step
    (an object it cannot decode is refused, HTTP 400; null list items and map values become zero
    values), its defaults, then our pipeline; then the pool lint over every ResourceSlice given.

    The objects are one set: a pool given across many files is one pool, judged once over the
    slices the apiserver would store (the allowed ones, as mutated) plus ``pool_state`` (the
    slices of a cluster state the user named); CREATEs as a driver's complete publish, an UPDATE
    as a change in a live pool (``poollint``: ``complete``). With ``as_webhook`` each slice is
    judged alone, as the webhook judges a request: its pool as ``pool_state`` plus that slice
    shows it, a moment of a live pool. ``progress`` is called with the index of each object
    before it is reviewed.
    """
    outcomes: list[tuple[dict[str, Any], Outcome, dict[str, Any]] | Reviewed] = []
    for i, given in enumerate(objs):
        if progress is not None:
            progress(i)
        decoded = decode.decode(given)
        if (bad := decoded.failure) is not None:
            # The apiserver would refuse it before defaults, webhooks and validation (HTTP 400).
            doc = build_review(given, old, operation, dry_run)
            req = parse_review(doc)
            answer = Answer(build_bad_request(req.uid, bad.message, warnings=list(bad.hints)), False,
                            list(bad.hints), [], [])
            refused = " ".join((bad.message, *(f"({h})" for h in bad.hints)))
            outcomes.append(Reviewed(given, Outcome(req, handled=True), answer, doc["request"], refused=refused))
            continue
        stored = decode.decode(old).obj if old else None
        doc = build_review(with_defaults(decoded.obj), with_defaults(stored) if stored else None, operation, dry_run)
        outcomes.append((given, evaluate(parse_review(doc), settings, state, endpoint="review"), doc))
    # A CREATE of files is a driver's whole publish; an UPDATE changes one slice of a live pool.
    judged = [o[1] for o in outcomes if isinstance(o, tuple)]
    for group in ([[out] for out in judged] if as_webhook else [judged]):
        _add_pool_findings(group, pool_state, settings, complete=operation == "CREATE" and not as_webhook)
    return [o if isinstance(o, Reviewed) else _reviewed(*o, settings) for o in outcomes]


def _add_pool_findings(outcomes: list[Outcome], pool_state: Sequence[Any], settings: Settings, *,
                       complete: bool) -> None:
    """The pool findings of every slice the apiserver would store, judged as one set."""
    slices = [out for out in outcomes if out.handled and out.allowed and out.mutated is not None
              and (rules := rules_for(out.request.group, out.request.kind)) is not None and rules.pool_lint]
    if not slices:
        return
    found = pool_findings([out.mutated for out in slices if out.mutated is not None], pool_state,
                          settings.gates, complete=complete)
    for out, fs in zip(slices, found, strict=True):
        out.findings.extend(fs)


def _reviewed(given: dict[str, Any], out: Outcome, doc: dict[str, Any], settings: Settings) -> Reviewed:
    """One reviewed object: the response, with why it was not checked among its warnings."""
    problem = not_checked(out)
    if problem and not out.notes:
        out.notes.append(problem)  # every output format carries it (the server's own note otherwise)
    return Reviewed(given, out, respond(out, settings, "review"), doc["request"], problem=problem)


def not_checked(out: Outcome) -> str:
    """Why the pipeline passed an object through unchecked, with a spelling hint; "" if checked."""
    req = out.request
    if out.handled or req.operation not in ("CREATE", "UPDATE"):
        return ""
    rules = rules_for(req.group, req.kind)
    if rules is None:
        hint = did_you_mean(req.kind)
        return f"kind {req.kind} ({'/'.join(filter(None, (req.group, req.version)))}) is not one dra-webhook " \
               f"checks" + (f"; did you mean {hint}?" if hint else "")
    return f"{req.kind} {req.group}/{req.version} is not a version dra-webhook checks (it validates " \
           f"{rules.served()})"


def did_you_mean(kind: str) -> str:
    """The known kind a misspelt one is closest to ("" when none is close)."""
    known = {k.lower(): k for k in (r.kind for r in KINDS.values())}
    got = difflib.get_close_matches(kind.lower(), list(known), n=1, cutoff=0.75)
    return known[got[0]] if got else ""
