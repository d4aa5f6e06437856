"""What every command shares: exit codes, settings from flags, the cluster state, input files, and
reviewing every document of the input (``review`` and ``test``)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from webhook import BadInput
from webhook.admission.offline import review_objects
from webhook.cli.progress import Progress
from webhook.cli.results import Result, Skipped
from webhook.config import Settings, load_config_file
from webhook.gates import KNOWN, FeatureGates
from webhook.state.base import StateSource
from webhook.state.files import files_under, read_documents, read_text

EXIT_OK, EXIT_DENIED, EXIT_USAGE = 0, 1, 2
"""0 success (allowed, feasible, expectations met), 1 denied/infeasible, 2 bad input or usage."""

GATES_HELP = "feature gates, Kubernetes syntax: Name=true,Other=false (unknown names are an error)"
DRIVER_SCHEMAS_HELP = ("drivers' JSON Schemas for opaque config parameters: DIR/<driver>/*.json|yaml, each with "
                       "properties.apiVersion.const and properties.kind.const; parameters that violate one are "
                       "denied (wins over the config file's driverSchemas)")


def build_settings(feature_gates: str | None, config: str | None) -> Settings:
    """Defaults, then ``DRA_WEBHOOK_*`` environment variables, then the config file, then
    ``--feature-gates`` (flags win, as in Kubernetes)."""
    s = Settings.from_env()
    if config:
        s = load_config_file(config, s)
    if feature_gates:
        s = replace(s, gates=FeatureGates.parse(feature_gates, s.gates))
    return s


def load_cluster_state(path: str | None) -> StateSource:
    """``--cluster-state DIR``, or the shipped examples when it is not given (an empty
    directory gets a warning on stderr: every check would then run against nothing)."""
    from webhook.state.default import load_state
    if path:
        warn_if_empty(path)
    return load_state(path, None, False)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: a one-shot command builds the allocator's model of
    a large state (~100,000 objects for 500 nodes) and the collector would walk them again and
    again (a 1.7 ms pass in a 11 ms simulation); they live until the command exits anyway.
    Collection resumes afterwards, for callers in a longer-lived process (tests)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def warn_if_empty(path: str) -> None:
    """One warning line on stderr when a state directory holds no YAML/JSON files."""
    if Path(path).is_dir() and not files_under(path):
        print(f"dra-webhook: warning: cluster state {path} holds no *.yaml, *.yml or *.json files; "
              "feasibility is checked against an empty cluster", file=sys.stderr)


def parse_gate_names(text: str) -> list[str]:
    """``--compare-gates A,B``: known, unlocked gate names."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in KNOWN:
            raise BadInput(f"--compare-gates: unrecognized feature gate: {n}")
        if KNOWN[n].locked:
            raise BadInput(f"--compare-gates: {n} is locked to {str(KNOWN[n].default).lower()}")
    if not names:
        raise BadInput("--compare-gates: no gate names given")
    return names


@dataclass(frozen=True)
class Source:
    """One document of the input: the object, or why it is not a Kubernetes object."""

    origin: str
    """The file it came from ("-" for standard input)."""
    obj: dict[str, Any] | None
    problem: str = ""


def gather(paths: list[str]) -> list[Source]:
    """Every document of every ``-f PATH``: a file, a directory (recursive ``*.yaml``/``*.yml``/
    ``*.json``, sorted) or ``-``. A document that is not a Kubernetes object is kept as a
    ``Source`` with a problem (a note, or a failure with ``--strict``). Raises BadInput for a path
    that cannot be read and when no document at all is a Kubernetes object."""
    out: list[Source] = []
    for path in paths:
        files: list[str | Path]
        if path != "-" and Path(path).is_dir():
            files = list(files_under(path))
            if not files:
                raise BadInput(f"{path}: no *.yaml, *.yml or *.json files in this directory")
        else:
            files = [path]
        for f in files:
            out.extend(Source(origin, obj, problem) for origin, obj, problem in read_documents(read_text(f), str(f)))
    if not any(src.obj is not None for src in out):
        raise BadInput(out[0].problem if out else "no input")  # nothing to review at all: bad input
    return out


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


def add_state_flags(p: Any, default: str) -> None:
    """``--kubeconfig F | --cluster-state DIR`` of the commands that read a cluster once."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--kubeconfig", metavar="F",
                     help="read the live cluster with this kubeconfig (the current context)")
    src.add_argument("--cluster-state", metavar="DIR", help=f"cluster state directory (default: {default})")


def read_snapshot(kubeconfig: str | None, cluster_state: str | None, live: bool) -> Any:
    """The snapshot the state flags ask for: the live cluster (``--kubeconfig``, or, with
    ``live``, the kubeconfig kubectl would use) listed once, else ``--cluster-state`` or the
    shipped examples. Raises ConfigError when the cluster cannot be read."""
    if kubeconfig or (live and not cluster_state):
        from webhook.state.cluster import synced_snapshot
        return synced_snapshot(kubeconfig)
    return load_cluster_state(cluster_state).snapshot()


def read_inputs(paths: list[str]) -> list[dict[str, Any]]:
    """Every object of every ``-f`` path (BadInput when a file cannot be read or parsed)."""
    from webhook.state.files import load_objects_from_file
    out: list[dict[str, Any]] = []
    for path in paths:
        out.extend(load_objects_from_file(path))
    return out
