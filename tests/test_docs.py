"""The command transcripts in the docs are what the commands print today."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["docs/feasibility.md", "docs/gate-experiments.md", "docs/driver-ci.md", "docs/explain.md"]


def transcripts():
    """(doc, command, expected output, expected exit code or None) for every ``$ dra-webhook`` block."""
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        # A fence at the start of a line whose block starts with the command: the closing fence
        # of a ```sh block is never taken for an opening one.
        for block in re.findall(r"^```\n(\$ dra-webhook .*?)^```", text, flags=re.S | re.M):
            lines = block.rstrip("\n").split("\n")
            cmd = lines.pop(0)
            while cmd.endswith("\\"):
                cmd = cmd[:-1] + lines.pop(0).strip()
            if "..." in cmd or "--kubeconfig" in cmd:
                continue  # abbreviated in the text, or live (tests/e2e/test_sandbox_docs.py runs it)
            code = None
            if lines and lines[-1].startswith("# exit code "):
                code = int(lines.pop()[len("# exit code "):])
            yield pytest.param(cmd[2:], "\n".join(lines), code, id=f"{Path(doc).stem}:{cmd[14:70]}")


def _timeless(text: str) -> str:
    """The output with simulate's measured time (``stats.allocateSeconds``) blanked."""
    return re.sub(r'("allocateSeconds": )[-+.eE0-9]+', r"\1N", text)


@pytest.mark.parametrize(("cmd", "want", "code"), list(transcripts()))
def test_doc_transcript(cmd, want, code):
    args = shlex.split(cmd)[1:]
    r = subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert _timeless(r.stdout.rstrip("\n")) == _timeless(want)
    if code is not None:
        assert r.returncode == code


def test_readme_module_map_names_every_module():
    """A newcomer reaches the right file from the README in one hop: every module is named."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("## How it is built"):]
    block = block[: block.index("```", block.index("```") + 3)]
    missing = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "webhook").rglob("*.py")
                     if f.name != "__init__.py" and f.name not in block
                     and f.parent.name != "server" and f.parent.name != "cel")
    packages = sorted({f.parent.name for f in (ROOT / "webhook").rglob("*.py")} - {"webhook"})
    assert missing == []
    assert [p for p in packages if f"{p}/" not in block] == []


_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*(?:\.(?:py|md|json|yaml)|/)")
_MODULE_MEMBER = re.compile(r"([\w-]+(?:/[\w-]+)+)\.[A-Za-z_]\w*")


def architecture_paths() -> list[str]:
    """Every file or directory ``docs/architecture.md`` names in backticks: ``admission/offline.py``
    (under the repository or ``webhook/``), ``tests/test_docs.py``, ``state/``, a bare ``model.py``
    (somewhere under ``webhook/``), and the module of ``cli/results.Simulation``. Placeholders
    (``<command>``) and URL paths (``/validate``) are not paths."""
    text = (ROOT / "docs/architecture.md").read_text()
    out = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        if _PATH.fullmatch(token):
            out.add(token)
        elif m := _MODULE_MEMBER.fullmatch(token):
            out.add(m.group(1) + ".py")
    return sorted(out)


def _exists(path: str) -> bool:
    if "/" not in path.rstrip("/"):
        return any((ROOT / "webhook").rglob(path.rstrip("/")))
    return any((base / path).exists() for base in (ROOT, ROOT / "webhook"))


def test_architecture_names_many_paths():
    got = architecture_paths()
    assert len(got) > 60 and "admission/offline.py" in got and "cli/results.py" in got


@pytest.mark.parametrize("path", architecture_paths())
def test_every_path_in_architecture_exists(path):
    assert _exists(path), f"docs/architecture.md names {path}, which is not in the repository"
