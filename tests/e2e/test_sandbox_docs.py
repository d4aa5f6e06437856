"""The kubectl transcripts of docs/sandbox.md are what a default `make sandbox` prints today."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import REPO
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "sandbox.md"


def _transcripts() -> list[tuple[str, str, int]]:
    """(command, expected stderr+stdout, exit code) for every ``$ kubectl`` block."""
    out = []
    for lines in _fenced_blocks(DOC.read_text()):
        if not lines or not lines[0].startswith("$ kubectl "):
            continue
        cmd = lines.pop(0)[2:]
        code = 0
        if lines and lines[-1].startswith("# exit code "):
            code = int(lines.pop()[len("# exit code "):])
        out.append((cmd, "\n".join(lines), code))
    return out


def _fenced_blocks(text: str) -> Iterator[list[str]]:
    """The lines of every fenced block without a language tag."""
    block: list[str] | None = None
    tagged = False
    for line in text.split("\n"):
        if line.startswith("```"):
            if block is None:
                block, tagged = [], line != "```"
            else:
                if not tagged:
                    yield block
                block = None
        elif block is not None:
            block.append(line)


TRANSCRIPTS = _transcripts()


@pytest.fixture(scope="module")
def default_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """What `make sandbox` starts with no FEATURE_GATES."""
    sb = Sandbox(tmp_path_factory.mktemp("docs-sandbox"))
    yield sb
    sb.stop()


def test_the_doc_has_transcripts():
    assert len(TRANSCRIPTS) >= 4


@pytest.mark.parametrize(("cmd", "want", "code"), TRANSCRIPTS, ids=[c[8:70] for c, _, _ in TRANSCRIPTS])
def test_sandbox_transcript(default_sandbox: Sandbox, cmd: str, want: str, code: int):
    r = default_sandbox.kubectl(*shlex.split(cmd)[1:])
    assert (r.stderr + r.stdout).rstrip("\n") == want
    assert r.returncode == code
