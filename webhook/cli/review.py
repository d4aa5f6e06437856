"""``dra-webhook review``: the server's pipeline on local files.

Objects are first given the defaults the apiserver applies before it calls webhooks, so a
manifest as a user writes it is judged as the apiserver would judge it. ``review_objects``
decides (one ``Reviewed`` per object); ``render`` prints.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

from webhook import BadInput
from webhook.admission.envelope import parse_review
from webhook.admission.pipeline import Answer, Outcome, evaluate, respond
from webhook.cli import render
from webhook.cli.common import (
    EXIT_DENIED,
    EXIT_OK,
    GATES_HELP,
    build_settings,
    load_cluster_state,
    new_uid,
    parse_gate_names,
)
from webhook.config import Settings
from webhook.rules.registry import rules_for
from webhook.state.base import StateSource
from webhook.state.files import load_objects_from_file


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser("review", help="run the admission pipeline on a local object",
                       description="Mutate, validate the mutated object, then check feasibility, "
                                   "exactly as the server does. Exit 0 allowed, 1 denied, 2 bad input.")
    r.add_argument("-f", "--filename", dest="file", required=True,
                   help="YAML or JSON file with one or more objects ('-' for stdin)")
    r.add_argument("--old-file", help="the stored object, for an UPDATE")
    r.add_argument("--operation", choices=["CREATE", "UPDATE"],
                   help="default: UPDATE with --old-file, else CREATE")
    r.add_argument("--dry-run", action="store_true", help="review as a dry-run request")
    r.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    r.add_argument("--config", metavar="FILE", help="YAML config file, as for serve")
    r.add_argument("--cluster-state", metavar="DIR",
                   help="cluster state for feasibility warnings (default: the shipped examples)")
    r.add_argument("--no-feasibility", action="store_true", help="skip feasibility warnings")
    r.add_argument("--compare-gates", metavar="NAMES",
                   help="run with these gates on and off and show the differences")
    r.add_argument("-o", "--output", choices=["text", "json"], default="text")
    r.set_defaults(run=run)


@dataclass(frozen=True)
class Reviewed:
    """One object's review: what the pipeline found and the AdmissionReview it answers."""

    obj: dict[str, Any]
    """The object as given (before defaults)."""
    outcome: Outcome
    answer: Answer


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def with_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with the apiserver's defaults applied (when we have rules for its kind)."""
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    rules = rules_for(group, str(obj.get("kind", "")))
    if rules is None or version not in ("v1", "v1beta1"):
        return obj
    return rules.apply_defaults(obj)


def build_review(obj: dict[str, Any], old: dict[str, Any] | None, operation: str,
                 dry_run: bool) -> dict[str, Any]:
    """An AdmissionReview request as the apiserver would send it for ``obj``."""
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    meta = meta_raw if isinstance(meta_raw := obj.get("metadata"), dict) else {}
    rules = rules_for(group, kind)
    namespaced = rules is not None and rules.namespaced
    namespace = (meta.get("namespace") or "default") if namespaced else ""
    if namespaced and not meta.get("namespace") and isinstance(obj.get("metadata"), dict):
        # kubectl sends a namespaced object without one to "default", and the apiserver sets
        # metadata.namespace from the request path before any webhook sees the object.
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
                   dry_run: bool, settings: Settings, state: StateSource | None) -> list[Reviewed]:
    """Review every object (defaults first), as the server's ``review`` endpoint would."""
    results = []
    for obj in objs:
        doc = build_review(with_defaults(obj), with_defaults(old) if old else None, operation, dry_run)
        out = evaluate(parse_review(doc), settings, state, endpoint="review")
        results.append(Reviewed(obj, out, respond(out, settings, "review")))
    return results


def _inputs(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str]:
    """(objects, old object, operation) from the flags."""
    objs = load_objects_from_file(args.file)
    old = None
    if args.old_file:
        olds = load_objects_from_file(args.old_file)
        if len(olds) != 1 or len(objs) != 1:
            raise BadInput("--old-file needs exactly one object in each file")
        old = olds[0]
    operation = args.operation or ("UPDATE" if old is not None else "CREATE")
    if operation == "UPDATE" and old is None:
        raise BadInput("--operation UPDATE needs --old-file")
    return objs, old, operation


def run(args: argparse.Namespace) -> int:
    settings = build_settings(args.feature_gates, args.config)
    if args.no_feasibility:
        settings = replace(settings, feasibility=False)
    objs, old, operation = _inputs(args)
    state = load_cluster_state(args.cluster_state) if settings.feasibility else None
    if args.compare_gates:
        from webhook.cli.compare import compare_review
        cmp = compare_review(lambda s: review_objects(objs, old, operation, args.dry_run, s, state),
                             settings, parse_gate_names(args.compare_gates))
        print(render.review_comparison(cmp, args.output))
        return cmp.exit_code
    results = review_objects(objs, old, operation, args.dry_run, settings, state)
    print(render.reviews_json(results) if args.output == "json" else render.reviews_text(results))
    return EXIT_DENIED if any(not r.answer.allowed for r in results) else EXIT_OK
