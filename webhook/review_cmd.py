"""``dra-webhook review`` and ``simulate``: the server's pipeline and allocator on local files.

Objects are first given the defaults the apiserver applies before it calls webhooks, so a
manifest as a user writes it is judged as the apiserver would judge it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from webhook import BadInput
from webhook.admission.pipeline import Outcome, review
from webhook.admission.response import decode_patch
from webhook.cli import EXIT_DENIED, EXIT_OK, build_settings, dump, new_uid
from webhook.config import Settings
from webhook.gates import KNOWN
from webhook.rules.registry import rules_for
from webhook.state.base import StateSource
from webhook.state.files import load_objects_from_file


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


def _state_for(path: str | None) -> StateSource:
    """``--cluster-state DIR``, or the shipped examples when it is not given."""
    from webhook.state.default import load_state
    return load_state(path, None, False)


def _review_all(objs: list[dict[str, Any]], old: dict[str, Any] | None, operation: str,
                dry_run: bool, settings: Settings,
                state: StateSource | None) -> list[tuple[dict[str, Any], Outcome]]:
    results = []
    for obj in objs:
        doc = build_review(with_defaults(obj), with_defaults(old) if old else None, operation, dry_run)
        results.append(review(doc, settings, state, endpoint="review"))
    return results


def cmd_review(args: argparse.Namespace) -> int:
    settings = build_settings(args.feature_gates, args.config)
    if args.no_feasibility:
        settings = replace(settings, feasibility=False)
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
    state = _state_for(args.cluster_state) if settings.feasibility else None
    if args.compare_gates:
        from webhook.experiments import compare_review
        code, text = compare_review(objs, old, operation, args.dry_run, settings, state,
                                    parse_gate_names(args.compare_gates), args.output)
        print(text)
        return code
    results = _review_all(objs, old, operation, args.dry_run, settings, state)
    denied = any(not r["response"]["allowed"] for r, _ in results)
    if args.output == "json":
        if len(results) == 1:
            print(dump(results[0][0]))
        else:
            print(dump({"apiVersion": "v1", "kind": "List", "items": [r for r, _ in results]}))
    else:
        print("\n".join(render_text(r, o) for r, o in results))
    return EXIT_DENIED if denied else EXIT_OK


def parse_gate_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in KNOWN:
            raise BadInput(f"--compare-gates: unrecognized feature gate: {n}")
        if KNOWN[n].locked:
            raise BadInput(f"--compare-gates: {n} is locked to {str(KNOWN[n].default).lower()}")
    if not names:
        raise BadInput("--compare-gates: no gate names given")
    return names


def render_text(resp: dict[str, Any], out: Outcome) -> str:
    """A readable report of one review."""
    req = out.request
    r = resp["response"]
    verdict = "ALLOWED" if r["allowed"] else "DENIED"
    ns = f"{req.namespace}/" if req.namespace else ""
    api = "/".join(filter(None, (req.group, req.version)))
    lines = [f"{req.kind} {ns}{req.display_name} ({api}, {req.operation}"
             f"{', dry-run' if req.dry_run else ''}): {verdict}"]
    if not out.handled:
        lines.append("  (no rules for this kind: passed through)")
    if not r["allowed"]:
        lines.append("  causes:")
        for c in r["status"]["details"]["causes"]:
            lines.append(f"    {c['field']}: {c['message']}")
    ops = decode_patch(resp)
    if ops:
        lines.append("  patch:")
        for op in ops:
            value = f" {json.dumps(op['value'], ensure_ascii=False)}" if "value" in op else ""
            lines.append(f"    {op['op']} {op['path']}{value}")
    if r.get("warnings"):
        lines.append("  warnings:")
        lines.extend(f"    - {w}" for w in r["warnings"])
    return "\n".join(lines)


def cmd_simulate(args: argparse.Namespace) -> int:
    from webhook.simulate import run_simulate

    settings = build_settings(args.feature_gates, None)
    objs: list[dict[str, Any]] = []
    for f in args.files:
        objs.extend(load_objects_from_file(f))
    snapshot = _state_for(args.cluster_state).snapshot()
    if args.compare_gates:
        from webhook.experiments import compare_simulate
        code, text = compare_simulate(objs, snapshot, settings, parse_gate_names(args.compare_gates),
                                      args.node, args.podgroup_mode, args.output)
        print(text)
        return code
    code, text = run_simulate(objs, snapshot, settings.gates, args.node,
                              podgroup_mode=args.podgroup_mode, output=args.output)
    print(text.rstrip("\n"))
    return int(code)

