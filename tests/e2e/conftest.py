"""Fixtures of the end-to-end tests: the rig's sandbox (real etcd, kube-apiserver 1.37, kubectl,
and `dra-webhook serve` registered from our chart). See tests/rig/ and docs/sandbox.md.

A failure to build or start upstream is a test error with the build or process output, never a skip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.differential.manifests import CORPUS, SERVED
from tests.rig.sandbox import Sandbox

REPO = Path(__file__).resolve().parents[2]
WARNING = re.compile(r"^Warning: (.*)$", re.M)


def corpus_entries() -> list[dict[str, Any]]:
    """Entries the corpus marks valid, in a version 1.37 can serve (resource.k8s.io v1beta1 and
    v1beta2 too: the chart's webhooks see them converted to v1)."""
    if not CORPUS.exists():
        pytest.fail(f"corpus not found at {CORPUS} (it lives beside the repo, in ../shared)")
    return [e for e in json.loads(CORPUS.read_text())
            if e["intendedValid"] is True and e["object"].get("apiVersion") in SERVED]


def corpus_gates() -> dict[str, bool]:
    """Every gate a valid served corpus entry needs, on (plus the scheduling APIs' gates)."""
    gates = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
    for e in corpus_entries():
        gates.update({g: True for g, on in (e.get("gates") or {}).items() if on})
    return gates


def warnings_of(stderr: str) -> list[str]:
    """The warnings kubectl printed (one `Warning: ...` line each)."""
    return WARNING.findall(stderr)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The shared sandbox: every gate the corpus uses on, examples/cluster/ loaded.

    Tests that change its state undo their change before they end.
    """
    sb = Sandbox(tmp_path_factory.mktemp("sandbox"), corpus_gates())
    yield sb
    sb.stop()
