"""The live transcripts of the docs are what `make sandbox` prints today.

docs/sandbox.md (its `$ kubectl` blocks) and the live section of docs/explain.md (`$ kubectl` and
`$ dra-webhook ... --kubeconfig $KUBECONFIG` blocks) run in document order, each document in a
sandbox of its own like `make sandbox` starts (scheduler and controller manager included), with
no FEATURE_GATES until a `<!-- transcripts: FEATURE_GATES=... -->` line names other gates: the
transcripts after it run in a fresh sandbox with those gates. `$KUBECONFIG` is the sandbox's
kubeconfig, as `make sandbox` tells its user to export it. A `dra-webhook` block without
`--kubeconfig` is offline: `tests/test_docs.py` runs those.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.e2e.conftest import REPO
from tests.rig.sandbox import Sandbox, parse_gates

pytestmark = pytest.mark.e2e

DOCS = [REPO / "docs" / "sandbox.md", REPO / "docs" / "explain.md"]
MARKER = re.compile(r"^<!-- transcripts: FEATURE_GATES=(\S*) -->$")
#: Events are written after the pod's status, asynchronously, and the scheduler's event is part
#: of what `explain pod/NAME` prints: a transcript that reads them is repeated until it shows
#: them (or this many seconds pass, and it fails with what it printed).
EVENTS_WAIT = 30.0


class Transcript(NamedTuple):
    doc: str
    gates: str
    cmd: str
    want: str
    code: int

    @property
    def live_cli(self) -> bool:
        """Ours, against the sandbox (``dra-webhook ... --kubeconfig``)."""
        return self.cmd.startswith("dra-webhook ") and "--kubeconfig" in self.cmd

    @property
    def waits_for_events(self) -> bool:
        return self.cmd.startswith("kubectl get events") or self.live_cli


def transcripts(doc: Path) -> list[Transcript]:
    """Every ``$ kubectl`` block of ``doc`` and every live ``$ dra-webhook`` one, in order."""
    out = []
    for gates, lines in _fenced_blocks(doc.read_text()):
        if not lines or not lines[0].startswith(("$ kubectl ", "$ dra-webhook ")):
            continue
        cmd = lines.pop(0)[2:]
        code = 0
        if lines and lines[-1].startswith("# exit code "):
            code = int(lines.pop()[len("# exit code "):])
        t = Transcript(doc.stem, gates, cmd, "\n".join(lines), code)
        if t.cmd.startswith("kubectl ") or t.live_cli:
            out.append(t)
    return out


def _fenced_blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    """(the gates in force, the lines) of every fenced block without a language tag."""
    block: list[str] | None = None
    tagged = False
    gates = ""
    for line in text.split("\n"):
        if block is None and (m := MARKER.match(line)):
            gates = m.group(1)
        elif line.startswith("```"):
            if block is None:
                block, tagged = [], line != "```"
            else:
                if not tagged:
                    yield gates, block
                block = None
        elif block is not None:
            block.append(line)


TRANSCRIPTS = [t for doc in DOCS for t in transcripts(doc)]


@pytest.fixture(scope="module")
def sandboxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], Sandbox]]:
    """What `make sandbox` starts, by document and FEATURE_GATES (one at a time: the last one asked for)."""
    running: dict[tuple[str, str], Sandbox] = {}
    yield running
    for sb in running.values():
        sb.stop()


def _sandbox(running: dict[tuple[str, str], Sandbox], t: Transcript,
             tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    key = (t.doc, t.gates)
    if key not in running:
        for old in list(running):
            running.pop(old).stop()
        running[key] = Sandbox(tmp_path_factory.mktemp("docs-sandbox"), parse_gates(t.gates), control_plane=True)
    return running[key]


def _run(sb: Sandbox, cmd: str) -> subprocess.CompletedProcess[str]:
    if cmd.startswith("kubectl "):
        return sb.kubectl(*shlex.split(cmd)[1:])
    kubeconfig = str(sb.api.kubeconfig())
    args = [a.replace("$KUBECONFIG", kubeconfig) for a in shlex.split(cmd)[1:]]
    return subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "KUBECONFIG": kubeconfig}, timeout=120)


@pytest.mark.parametrize("doc", [d.stem for d in DOCS])
def test_the_doc_has_transcripts(doc: str):
    mine = [t for t in TRANSCRIPTS if t.doc == doc]
    assert len(mine) >= 3
    assert any("pod" in t.cmd and "--dry-run" not in t.cmd for t in mine), "pods created for real"
    if doc == "sandbox":
        assert any(t.gates for t in mine), "a section under other gates"
    else:
        assert any(t.live_cli and "scheduler: " in t.want for t in mine), "ours beside the scheduler's"


@pytest.mark.parametrize("t", TRANSCRIPTS, ids=[f"{t.doc}:{t.gates + ' ' if t.gates else ''}{t.cmd[:64]}"
                                                 for t in TRANSCRIPTS])
def test_sandbox_transcript(sandboxes: dict[tuple[str, str], Sandbox], tmp_path_factory: pytest.TempPathFactory,
                            t: Transcript):
    sb = _sandbox(sandboxes, t, tmp_path_factory)
    deadline = time.monotonic() + (EVENTS_WAIT if t.waits_for_events else 0)
    while True:
        r = _run(sb, t.cmd)
        got = (r.stderr + r.stdout).rstrip("\n")
        if got == t.want or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    assert got == t.want
    assert r.returncode == t.code
