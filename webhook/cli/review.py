"""``dra-webhook review``: the server's pipeline on local files.

The flags and the input files are read here; ``webhook.admission.offline.review_objects``
decides (the apiserver's decode step and defaults, then the pipeline: one ``Reviewed`` per
object); ``render`` prints.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from webhook import BadInput
from webhook.admission.offline import review_objects
from webhook.cli import render, render_compare
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
    parse_gate_names,
    review_sources,
)
from webhook.cli.progress import Progress
from webhook.state.files import load_objects_from_file


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
                        "object, a List for several; junit: one testcase per object (with --compare-gates: "
                        "the comparison as json/yaml, junit one testcase per difference)")
    r.set_defaults(run=run)


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
        print(render_compare.review_comparison(cmp, args.output))
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
