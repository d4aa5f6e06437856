"""Quality gates from STYLE.md: ruff (E, F, I, B, UP, W) on the code and tests, mypy strict on webhook/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [
    pytest.param([sys.executable, "-m", "ruff", "check", "webhook", "tests", "bench"], id="ruff"),
    pytest.param([sys.executable, "-m", "mypy", "webhook"], id="mypy-strict"),
])
def test_lint_is_clean(cmd):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
