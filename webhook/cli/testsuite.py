"""``dra-webhook test``: run test suites (``*dra-test.yaml``) for DRA driver CI.

A suite names resources (files or directories, as ``review -f``), the gates and cluster state
to review them under, and what each resource's outcome must be (DESIGN.md, "Test suites"):

    apiVersion: dra-webhook.io/v1alpha1
    kind: TestSuite
    name: my-driver-slices
    featureGates: {DRADeviceCompatibilityGroups: true}   # optional
    clusterState: state/                                 # optional (example state otherwise)
    resources: [slices/, claims/big.yaml]
    expect:
    - resource: ResourceSlice/gpu-devices                # Kind/name or Kind/namespace/name
      result: denied                                     # allowed | denied
      causes: ["spec.devices[0]..."]                     # field paths that must all be causes
      warnings: ["feasibility:"]                         # substrings each in some warning
      stripped: ["/spec/devices/0/..."]                  # JSON pointers /mutate must remove
      poolFindings: ["duplicate device"]                 # substrings each in some pool finding
      fits: 3                                            # Pods and workloads: replicas placed

A resource without an expectation must be allowed, and every finding (pool or standard
attribute, which ``review --strict`` fails) must be expected: matched by a ``poolFindings`` or
``warnings`` substring. Paths are relative to the suite file; unknown keys are an error (exit 2).
Exit 0 every expectation met, 1 any not met.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from webhook import BadInput, ConfigError
from webhook.cli import render
from webhook.cli.common import (
    DRIVER_SCHEMAS_HELP,
    EXIT_DENIED,
    EXIT_OK,
    Source,
    gather,
    load_cluster_state,
    review_sources,
)
from webhook.cli.progress import Progress
from webhook.cli.results import CaseResult, Expectation, Reviewed, Skipped, Suite, SuiteResult
from webhook.cli.simulate import simulate_objects
from webhook.config import Settings
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import is_pod_source

API_VERSION = "dra-webhook.io/v1alpha1"
SUITE_SUFFIX = "dra-test.yaml"
_SUITE_KEYS = {"apiVersion", "kind", "name", "featureGates", "clusterState", "resources", "expect"}
_EXPECT_KEYS = {"resource", "result", "causes", "warnings", "stripped", "poolFindings", "fits"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("test", help="run test suites (*dra-test.yaml) for driver CI",
                       description="Review the resources of every test suite (files named *dra-test.yaml, "
                                   "found recursively under each PATH) and compare each outcome with "
                                   "what the suite expects. Exit 0 all expectations met, 1 any not met, "
                                   "2 bad suite or usage.")
    t.add_argument("paths", nargs="+", metavar="PATH", help="a suite file, or a directory to search")
    t.add_argument("-o", "--output", choices=["text", "json", "junit"], default="text")
    t.add_argument("--driver-schemas", metavar="DIR", help=DRIVER_SCHEMAS_HELP)
    t.set_defaults(run=run)


def find_suites(paths: list[str]) -> list[Path]:
    """Suite files: each PATH that is a file, and every ``*dra-test.yaml`` under each directory."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.rglob(f"*{SUITE_SUFFIX}") if f.is_file())
            if not found:
                raise BadInput(f"{p}: no *{SUITE_SUFFIX} test suites in this directory")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise BadInput(f"{p}: no such file or directory")
    return out


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"{where}: must be a list of strings")
    return tuple(value)


def load_suite(path: Path) -> Suite:
    """Parse and check one suite; BadInput (exit 2) with a one-line reason when it is not valid."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise BadInput(f"{path}: not a readable YAML test suite: {e}".splitlines()[0]) from None
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: a test suite is a mapping (apiVersion, kind: TestSuite, ...)")
    unknown = sorted(set(map(str, doc)) - _SUITE_KEYS)
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_SUITE_KEYS))})")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != "TestSuite":
        raise BadInput(f"{path}: want apiVersion: {API_VERSION} and kind: TestSuite")
    gates = doc.get("featureGates") or {}
    if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
        raise BadInput(f"{path}: featureGates must map gate names to true or false")
    resources = _strings(doc.get("resources"), f"{path}: resources")
    if not resources:
        raise BadInput(f"{path}: resources must name at least one file or directory")
    state = doc.get("clusterState")
    if state is not None and not isinstance(state, str):
        raise BadInput(f"{path}: clusterState must be a directory path")
    expect = doc.get("expect") or []
    if not isinstance(expect, list):
        raise BadInput(f"{path}: expect must be a list")
    return Suite(path, str(doc.get("name") or path.stem), {str(k): v for k, v in gates.items()},
                 path.parent / state if state else None, tuple(path.parent / r for r in resources),
                 tuple(_expectation(e, f"{path}: expect[{i}]") for i, e in enumerate(expect)))


def _expectation(e: Any, where: str) -> Expectation:
    if not isinstance(e, dict):
        raise BadInput(f"{where}: must be a mapping")
    unknown = sorted(set(map(str, e)) - _EXPECT_KEYS)
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_EXPECT_KEYS))})")
    resource, result = e.get("resource"), e.get("result", "allowed")
    if not isinstance(resource, str) or resource.count("/") not in (1, 2):
        raise BadInput(f"{where}: resource must be Kind/name or Kind/namespace/name")
    if result not in ("allowed", "denied"):
        raise BadInput(f"{where}: result must be allowed or denied, not {result!r}")
    fits = e.get("fits")
    if fits is not None and (not isinstance(fits, int) or isinstance(fits, bool) or fits < 0):
        raise BadInput(f"{where}: fits must be a number of replicas (0 or more)")
    return Expectation(resource, result, _strings(e.get("causes"), f"{where}.causes"),
                       _strings(e.get("warnings"), f"{where}.warnings"),
                       _strings(e.get("stripped"), f"{where}.stripped"),
                       _strings(e.get("poolFindings"), f"{where}.poolFindings"), fits)


def _ids(r: Reviewed) -> set[str]:
    """``Kind/name`` and ``Kind/namespace/name`` of a reviewed object."""
    req = r.outcome.request
    ids = {f"{req.kind}/{req.display_name}"}
    if req.namespace:
        ids.add(f"{req.kind}/{req.namespace}/{req.display_name}")
    return ids


def check(r: Reviewed, e: Expectation | None) -> list[str]:
    """What of the expectation (allowed, when there is none) the review does not meet."""
    e = e or Expectation("", "allowed")
    got = "allowed" if r.answer.allowed else "denied"
    out = [] if got == e.result else [f"expected {e.result}, got {got}" + (
        f" ({'; '.join(f'{x.field}: {x.body()}' for x in r.outcome.errors)})" if got == "denied" else "")]
    causes = {x.field for x in r.outcome.errors} if not r.answer.allowed else set()
    out += [f"no cause at {c} (causes: {', '.join(sorted(causes)) or 'none'})" for c in e.causes if c not in causes]
    out += [f"no warning contains {w!r}" for w in e.warnings if not any(w in x for x in r.answer.warnings)]
    removed = {op["path"] for op in r.answer.patch if op.get("op") == "remove"}
    out += [f"{p} is not removed by /mutate" for p in e.stripped if p not in removed]
    pools = [f.text for f in r.outcome.findings if f.topic == "pool"]
    out += [f"no pool finding contains {w!r}" for w in e.pool_findings if not any(w in x for x in pools)]
    expected = e.pool_findings + e.warnings
    out += [f"a finding the suite does not expect: {f}" for f in r.findings if not any(w in f for w in expected)]
    return out


def check_fits(obj: dict[str, Any], fits: int, snapshot: ClusterSnapshot, gates: FeatureGates) -> list[str]:
    """What ``fits`` expects of a Pod or workload that ``simulate`` does not place."""
    if not is_pod_source(obj):
        return ["fits applies to Pods and workloads only"]
    try:
        placement = simulate_objects([obj], snapshot, gates, None).placement
    except BadInput as e:
        return [f"fits: {e}"]
    assert placement is not None
    if placement.placed == fits:
        return []
    why = f": {placement.failed.outcome.message}" if placement.failed is not None else ""
    return [f"expected {fits} replica(s) placed, got {'at least ' if placement.cut else ''}"
            f"{placement.placed} of {placement.replicas}{why}"]


def run_suite(suite: Suite, base: Settings) -> SuiteResult:
    """Review the suite's resources under its gates and state; one case per resource."""
    try:
        gates = FeatureGates().with_overrides(suite.gates)
    except ConfigError as e:
        raise BadInput(f"{suite.file}: featureGates: {e}") from None
    settings = replace(base, gates=gates)
    if suite.cluster_state is not None and not suite.cluster_state.is_dir():
        raise BadInput(f"{suite.file}: clusterState {suite.cluster_state}: not a directory")
    state = load_cluster_state(str(suite.cluster_state) if suite.cluster_state else None)
    sources: list[Source] = gather([str(p) for p in suite.resources])
    pools = state.snapshot().of("ResourceSlice") if suite.cluster_state else ()  # a state the suite names
    results = review_sources(sources, None, "CREATE", False, settings, state, strict=True, pool_state=pools)
    expect = {e.resource: e for e in suite.expect}
    cases: list[CaseResult] = []
    seen: set[str] = set()
    for r in results:
        if isinstance(r, Skipped):
            cases.append(CaseResult(r.origin, r.origin, [r.problem]))
            continue
        ids = _ids(r)
        want = next((expect[i] for i in sorted(ids) if i in expect), None)
        seen |= ids
        name = want.resource if want else min(ids, key=len)
        failures = ([r.problem] if r.problem else []) + check(r, want)
        if want is not None and want.fits is not None:
            failures += check_fits(r.obj, want.fits, state.snapshot(), gates)
        cases.append(CaseResult(name, r.origin, failures, list(r.answer.warnings)))
    cases += [CaseResult(e.resource, str(suite.file), ["no such resource among the suite's resources"])
              for e in suite.expect if e.resource not in seen]
    return SuiteResult(suite, cases)


def run(args: argparse.Namespace) -> int:
    base = replace(Settings(), max_warning_length=sys.maxsize)  # offline: warnings whole
    if args.driver_schemas:
        base = base.with_driver_schemas(args.driver_schemas)
    suites = [load_suite(p) for p in find_suites(args.paths)]
    results = []
    with Progress.on_tty("test") as progress:
        for i, suite in enumerate(suites):
            progress.step(i, len(suites), suite.name)
            results.append(run_suite(suite, base))
    print(render.suites(results, args.output))
    return EXIT_OK if all(r.passed for r in results) else EXIT_DENIED
