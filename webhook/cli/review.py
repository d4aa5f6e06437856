"""``dra-webhook review``: the server's pipeline on local files.

Objects are first given the defaults the apiserver applies before it calls webhooks, so a
manifest as a user writes it is judged as the apiserver would judge it. ``review_objects``
decides (one ``Reviewed`` per object); ``render`` prints.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from webhook import BadInput
from webhook.admission import decode
from webhook.admission.envelope import parse_review
from webhook.admission.pipeline import Answer, Outcome, evaluate, pool_findings, respond
from webhook.admission.response import build_bad_request
from webhook.cli import render
from webhook.cli.common import (
    DRIVER_SCHEMAS_HELP,
    EXIT_DENIED,
    EXIT_OK,
    GATES_HELP,
    Source,
    build_settings,
    collector_paused,
    gather,
    load_cluster_state,
    new_uid,
    parse_gate_names,
)
from webhook.cli.progress import Progress
from webhook.cli.results import Result, Reviewed, Skipped
from webhook.config import Settings
from webhook.rules.registry import KINDS, rules_for
from webhook.state.base import StateSource
from webhook.state.files import load_objects_from_file
from webhook.versions import older


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser("review", help="run the admission pipeline on local objects",
                       description="Mutate, validate the mutated object, then check findings and "
                                   "feasibility, exactly as the server does, for every object of every -f "
                                   "PATH; all the objects are one set (a pool given across files is one pool). "
                                   "Exit 0 all allowed, 1 any denied (or, with --strict, not "
                                   "understood), 2 bad input or usage.")
    r.add_argument("-f", "--filename", dest="paths", action="extend", nargs="+", required=True,
                   metavar="PATH",
                   help="a YAML/JSON file (one or more objects, a List), a directory (every *.yaml, "
                        "*.yml, *.json below it) or '-' for stdin; repeatable, and a shell glob works")
    r.add_argument("--old-file", help="the stored object, for an UPDATE")
    r.add_argument("--operation", choices=["CREATE", "UPDATE"],
                   help="default: UPDATE with --old-file, else CREATE")
    r.add_argument("--dry-run", action="store_true", help="review as a dry-run request")
    r.add_argument("--strict", action="store_true",
                   help="fail (exit 1) on objects of an unknown kind, an unserved version, documents that "
                        "are not Kubernetes objects, and findings (pool: / attribute: warnings), instead of "
                        "passing them with a note or a warning")
    r.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    r.add_argument("--config", metavar="FILE", help="YAML config file, as for serve")
    r.add_argument("--cluster-state", metavar="DIR",
                   help="cluster state for feasibility warnings (default: the shipped examples)")
    r.add_argument("--no-feasibility", action="store_true", help="skip feasibility warnings")
    r.add_argument("--as-webhook", action="store_true",
                   help="answer as the webhook answers each request in a cluster, so the warnings are "
                        "exactly what kubectl would print: worded to fit the server's warning length "
                        "(120 characters unless --config says otherwise), and each slice's pool judged "
                        "as the cluster state plus that slice shows it, a moment of a live pool (by "
                        "default the files are a driver's whole publish and warnings are printed whole)")
    r.add_argument("--driver-schemas", metavar="DIR", help=DRIVER_SCHEMAS_HELP)
    r.add_argument("--compare-gates", metavar="NAMES",
                   help="run with these gates on and off and show the differences")
    r.add_argument("-o", "--output", choices=["text", "json", "yaml", "junit"], default="text",
                   help="text (default); json/yaml: the AdmissionReview (request and response) of each "
                        "object, a List for several; junit: one testcase per object")
    r.set_defaults(run=run)




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
        if (bad := decoded.error) is not None:
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


def _old(args: argparse.Namespace, sources: list[Source]) -> tuple[dict[str, Any] | None, str]:
    """(old object, operation) from the flags."""
    old = None
    if args.old_file:
        olds = load_objects_from_file(args.old_file)
        if len(olds) != 1 or len(sources) != 1:
            raise BadInput("--old-file needs exactly one object in each file")
        old = olds[0]
    operation = args.operation or ("UPDATE" if old is not None else "CREATE")
    if operation == "UPDATE" and old is None:
        raise BadInput("--operation UPDATE needs --old-file")
    return old, operation


def review_sources(sources: list[Source], old: dict[str, Any] | None, operation: str, dry_run: bool,
                   settings: Settings, state: StateSource | None, strict: bool,
                   progress: Progress | None = None, pool_state: Sequence[Any] = (),
                   as_webhook: bool = False) -> list[Result]:
    """Every document reviewed, in input order, as one set (``review_objects``); non-objects
    become ``Skipped``."""
    objs = [(i, src) for i, src in enumerate(sources) if src.obj is not None]

    def step(k: int) -> None:
        if progress is not None:
            progress.step(objs[k][0], len(sources), objs[k][1].origin)

    reviewed = review_objects([src.obj for _, src in objs if src.obj is not None], old, operation, dry_run,
                              settings, state, pool_state=pool_state, progress=step, as_webhook=as_webhook)
    got = {i: replace(r, origin=src.origin, strict=strict) for (i, src), r in zip(objs, reviewed, strict=True)}
    return [got[i] if i in got else Skipped(src.origin, src.problem, strict) for i, src in enumerate(sources)]


def cluster_slices(path: str | None) -> tuple[Any, ...]:
    """The ResourceSlices of a cluster state the user named (none without one: the shipped
    example state is for feasibility, not a pool anyone publishes into)."""
    return load_cluster_state(path).snapshot().of("ResourceSlice") if path else ()


def run(args: argparse.Namespace) -> int:
    # Offline, warnings are printed whole: the apiserver's 120-character budget is the server's.
    settings = build_settings(args.feature_gates, args.config)
    if not args.as_webhook:
        settings = replace(settings, max_warning_length=sys.maxsize)
    if args.driver_schemas:
        settings = settings.with_driver_schemas(args.driver_schemas)
    if args.no_feasibility:
        settings = replace(settings, feasibility=False)
    sources = gather(args.paths)
    old, operation = _old(args, sources)
    state = load_cluster_state(args.cluster_state) if settings.feasibility else None
    pool_state = cluster_slices(args.cluster_state)
    if args.compare_gates:
        from webhook.cli.compare import compare_review
        objs = [s.obj for s in sources if s.obj is not None]
        cmp = compare_review(lambda s: review_objects(objs, old, operation, args.dry_run, s, state,
                                                      pool_state=pool_state, as_webhook=args.as_webhook),
                             settings, parse_gate_names(args.compare_gates))
        print(render.review_comparison(cmp, args.output))
        return cmp.exit_code
    # Every object, outcome and response lives until they are printed: no collection in between
    # (10,000 slices: linear time instead of 2× from repeated full collections).
    with Progress.on_tty("review") as progress, collector_paused():
        results = review_sources(sources, old, operation, args.dry_run, settings, state, args.strict,
                                 progress if len(sources) > 1 else None, pool_state, args.as_webhook)
    text, notes = render.reviews(results, args.output)
    for note in notes:
        print(note, file=sys.stderr)
    print(text)
    return EXIT_DENIED if any(r.failed for r in results) else EXIT_OK
