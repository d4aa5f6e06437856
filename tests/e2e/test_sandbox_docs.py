"""The kubectl transcripts of docs/sandbox.md are what `make sandbox` prints today.

Transcripts run in document order against a sandbox like `make sandbox` starts (scheduler and
controller manager included), with no FEATURE_GATES until a `<!-- transcripts: FEATURE_GATES=...
-->` line names other gates: the transcripts after it run in a fresh sandbox with those gates.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import REPO
from tests.rig.sandbox import Sandbox, parse_gates

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "sandbox.md"
MARKER = re.compile(r"^<!-- transcripts: FEATURE_GATES=(\S*) -->$")
#: Events are written after the pod's status, asynchronously: a transcript reading them is
#: repeated until it shows them (or this many seconds pass, and it fails with what it printed).
EVENTS_WAIT = 30.0


def _transcripts() -> list[tuple[str, str, str, int]]:
    """(FEATURE_GATES, command, expected stderr+stdout, exit code) for every ``$ kubectl`` block."""
    out = []
    for gates, lines in _fenced_blocks(DOC.read_text()):
        if not lines or not lines[0].startswith("$ kubectl "):
            continue
        cmd = lines.pop(0)[2:]
        code = 0
        if lines and lines[-1].startswith("# exit code "):
            code = int(lines.pop()[len("# exit code "):])
        out.append((gates, cmd, "\n".join(lines), code))
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


TRANSCRIPTS = _transcripts()


@pytest.fixture(scope="module")
def sandboxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Sandbox]]:
    """What `make sandbox` starts, by FEATURE_GATES (one at a time: the last one asked for)."""
    running: dict[str, Sandbox] = {}
    yield running
    for sb in running.values():
        sb.stop()


def _sandbox(running: dict[str, Sandbox], gates: str, tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    if gates not in running:
        for old in list(running):
            running.pop(old).stop()
        running[gates] = Sandbox(tmp_path_factory.mktemp("docs-sandbox"), parse_gates(gates), control_plane=True)
    return running[gates]


def test_the_doc_has_transcripts():
    assert len(TRANSCRIPTS) >= 4
    assert any(g for g, _, _, _ in TRANSCRIPTS), "a section under other gates"
    assert any("pod" in c and "--dry-run" not in c for _, c, _, _ in TRANSCRIPTS), "pods created for real"


@pytest.mark.parametrize(("gates", "cmd", "want", "code"), TRANSCRIPTS,
                         ids=[f"{g + ' ' if g else ''}{c[8:70]}" for g, c, _, _ in TRANSCRIPTS])
def test_sandbox_transcript(sandboxes: dict[str, Sandbox], tmp_path_factory: pytest.TempPathFactory,
                            gates: str, cmd: str, want: str, code: int):
    sb = _sandbox(sandboxes, gates, tmp_path_factory)
    deadline = time.monotonic() + (EVENTS_WAIT if cmd.startswith("kubectl get events") else 0)
    while True:
        r = sb.kubectl(*shlex.split(cmd)[1:])
        got = (r.stderr + r.stdout).rstrip("\n")
        if got == want or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    assert got == want
    assert r.returncode == code
