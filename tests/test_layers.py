"""Import boundaries of ``webhook/``: no cycles, nothing imports upward, no dynamic rule dispatch,
and the pure layers never pull in Flask, kubernetes or gunicorn.

The import graph is read from the source (every ``import``, at module level or inside a
function; ``if TYPE_CHECKING:`` blocks excluded), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "webhook"

PURE = ["webhook.fielderrors", "webhook.quantity", "webhook.gates", "webhook.patch",
        "webhook.rules", "webhook.rules.names", "webhook.rules.registry", "webhook.rules.slices.resourceslice",
        "webhook.rules.claims.resourceclaim", "webhook.rules.claims.resourceclaimtemplate",
        "webhook.rules.scheduling.podgroup", "webhook.rules.scheduling.workload",
        "webhook.rules.scheduling.pod", "webhook.admission", "webhook.admission.pipeline", "webhook.allocator",
        "webhook.allocator.feasibility", "webhook.cel", "webhook.defaulting"]
FORBIDDEN = ("flask", "kubernetes", "gunicorn", "werkzeug")

LOWER = ("webhook.rules", "webhook.allocator", "webhook.cel", "webhook.state")
UPPER = ("webhook.admission", "webhook.server", "webhook.cli")
RULE_HOOKS = {"apply_defaults", "mutate", "validate", "validate_update", "warnings", "state_warnings",
              "GROUP", "KIND", "VERSIONS", "NAMESPACED"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imported(tree: ast.AST, modules: set[str], here: str) -> set[str]:
    """The ``webhook`` modules a module imports (a ``from pkg import name`` that names a submodule
    counts as importing the submodule)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in modules and m != here}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = sorted(root.rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imported(ast.parse(f.read_text()), modules, module_name(f)) for f in files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(found)


GRAPH = import_graph()


@pytest.mark.parametrize(("graph", "want"), [
    pytest.param({"a": {"b"}, "b": {"c"}, "c": set()}, [], id="chain"),
    pytest.param({"a": {"b"}, "b": {"a"}}, [["a", "b"]], id="two-cycle"),
    pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]], id="three-cycle"),
])
def test_cycle_finder(graph: dict[str, set[str]], want: list[list[str]]) -> None:
    assert cycles(graph) == want


def test_lazy_and_type_checking_imports_are_read_as_they_run() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import webhook.b\n"
                     "def f():\n    from webhook import c\n")
    assert imported(tree, {"webhook.b", "webhook.c", "webhook"}, "webhook.a") == {"webhook.c"}


def test_the_graph_sees_every_module() -> None:
    assert "webhook.allocator.search" in GRAPH and "webhook.cli.render" in GRAPH
    assert "webhook.allocator.claims" in GRAPH["webhook.allocator.search"]


def test_no_import_cycles_inside_webhook() -> None:
    assert cycles(GRAPH) == []


@pytest.mark.parametrize("lower", LOWER)
def test_lower_layers_never_import_upward(lower: str) -> None:
    bad = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if m == lower or m.startswith(lower + ".")
                 for t in targets if any(t == u or t.startswith(u + ".") for u in UPPER))
    assert bad == []


def test_the_allocator_never_imports_the_rules() -> None:
    bad = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if m.startswith("webhook.allocator")
                 for t in targets if t.startswith("webhook.rules"))
    assert bad == []


def dynamic_dispatch(source: str) -> list[str]:
    """``ModuleType``, ``importlib.import_module`` and ``getattr(x, "<rule hook>")`` uses."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "ModuleType" or (
                isinstance(node, ast.Attribute) and node.attr == "ModuleType") or (
                isinstance(node, ast.ImportFrom) and any(a.name == "ModuleType" for a in node.names)):
            out.append(f"ModuleType at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            out.append(f"import_module at line {node.lineno}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in RULE_HOOKS):
            out.append(f"getattr(..., {node.args[1].value!r}) at line {node.lineno}")
    return out


@pytest.mark.parametrize(("source", "found"), [
    pytest.param("from types import ModuleType\n", 1, id="module-type"),
    pytest.param("import importlib\nm = importlib.import_module('webhook.rules.x')\n", 1, id="import-module"),
    pytest.param("hook = getattr(rules, 'state_warnings', None)\n", 1, id="getattr-hook"),
    pytest.param("rules = rules_for(g, k)\nrules.validate(obj, ctx)\n", 0, id="typed-record"),
])
def test_dispatch_detector(source: str, found: int) -> None:
    assert len(dynamic_dispatch(source)) == found


def test_rules_are_dispatched_through_typed_records_only() -> None:
    bad = {str(f.relative_to(ROOT)): got for f in sorted(ROOT.rglob("*.py"))
           if (got := dynamic_dispatch(f.read_text()))}
    assert bad == {}


def test_every_kind_module_is_registered() -> None:
    from webhook.rules.kind import KindRules
    from webhook.rules.registry import KINDS

    kind_modules = [module_name(f) for f in sorted((ROOT / "rules").rglob("*.py"))
                    if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RULES"
                                                             for t in n.targets)
                           for n in ast.parse(f.read_text()).body)]
    assert len(kind_modules) == 8
    records = [importlib.import_module(m).RULES for m in kind_modules]
    assert all(isinstance(r, KindRules) for r in records)
    assert sorted(r.key for r in records) == sorted(KINDS)


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_do_not_import_io_frameworks(module):
    assert importlib.util.find_spec(module) is not None, f"{module} is missing"
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


FILE_LINES_MAX, FUNCTION_LINES_MAX = 500, 60
SIZE_EXEMPT = {"webhook/server/app.py:create_app"}
"""Split by the issue-13 branch (server/ is its part of issue 16); drop the entry after the merge."""


def test_no_file_over_500_lines_and_no_function_over_60() -> None:
    big_files = [str(f.relative_to(ROOT.parent)) for f in sorted(ROOT.rglob("*.py"))
                 if len(f.read_text().splitlines()) > FILE_LINES_MAX]
    long_functions = []
    for f in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None \
                    and node.end_lineno - node.lineno + 1 > FUNCTION_LINES_MAX:
                name = f"{f.relative_to(ROOT.parent)}:{node.name}"
                if name not in SIZE_EXEMPT:
                    long_functions.append(name)
    assert big_files == [] and long_functions == []
