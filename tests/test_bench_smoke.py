"""Smoke test of the benchmark suite: ``python -m bench --quick`` runs and writes its table.

Not a timing test: ratios are never asserted, only that every benchmark produced rows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import gen

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.integration
def test_quick_suite_runs_and_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert text.strip() == proc.stdout.strip()
    assert "| bench | case | value | floor | ratio | target | met | context |" in text
    for bench in ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10"):
        assert f"| {bench} |" in text, f"no {bench} row"
    assert "benchmark crashed" not in text


@pytest.mark.parametrize("argv", [
    pytest.param(["--only", "B99"], id="unknown-benchmark"),
])
def test_bad_arguments_are_refused(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown benchmark" in proc.stderr


def test_percentile_is_nearest_rank() -> None:
    from bench.common import percentile
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0
    assert percentile([float(i) for i in range(1, 101)], 50) == 50.0
    assert percentile([3.0], 99) == 3.0


@pytest.mark.parametrize("case", sorted(gen.b1_objects()))
def test_b1_objects_are_admitted(case: str) -> None:
    """B1 times the admission of valid objects: one the rules deny would time a denial instead
    (the PodGroup did, once the apiserver's disruptionMode default became required)."""
    from webhook.admission.envelope import parse_review
    from webhook.admission.pipeline import evaluate
    from webhook.config import Settings
    from webhook.gates import FeatureGates
    review = parse_review(gen.admission_review(gen.b1_objects()[case]))
    out = evaluate(review, Settings(gates=FeatureGates.parse(gen.GATES)), None, endpoint="validate")
    assert out.handled and out.errors == []


@pytest.mark.parametrize(("quick", "subset", "name"), [
    pytest.param(False, False, "results.md", id="full-run-replaces-the-results"),
    pytest.param(False, True, "results-partial.md", id="only-writes-beside-them"),
    pytest.param(True, False, "results-quick.md", id="quick-writes-beside-them"),
    pytest.param(True, True, "results-quick.md", id="quick-only-writes-beside-them"),
])
def test_only_a_full_run_replaces_the_results(quick: bool, subset: bool, name: str) -> None:
    from bench.__main__ import default_out
    assert default_out(quick, subset).name == name


def test_the_before_column_puts_an_earlier_figure_beside_the_same_case() -> None:
    from bench.common import Report, Row, read_table
    old = Report(quick=False, rows=[Row("B1", "case a", "2.00 ms", "1.00 ms", 2.0),
                                    Row("B1", "no ratio", "5 µs")])
    before = read_table(old.table())
    assert before == {("B1", "case a"): ("2.00 ms", "2.00×"), ("B1", "no ratio"): ("5 µs", "–")}
    new = Report(quick=False, rows=[Row("B1", "case a", "1.00 ms", "1.00 ms", 1.0),
                                    Row("B1", "no ratio", "4 µs"), Row("B2", "new case", "1 ms")])
    lines = new.table(before).splitlines()
    assert lines[0].split(" | ")[5] == "before"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [c[5] for c in cells] == ["2.00 ms (2.00×)", "5 µs", "–"]
