"""Import boundaries of ``webhook/``: no cycles, nothing imports upward, no dynamic rule dispatch,
and the pure layers never pull in Flask, kubernetes or gunicorn. In the allocator: no module reads
another's private members, and no function takes more than six parameters.

The import graph is read from the source: every ``import``, at module level, inside a function or
under ``if TYPE_CHECKING:`` (a cycle that only type checking closes is still two modules that
cannot be understood apart), so neither a lazy import nor a type-only one can hide a cycle.
Importing ``a.b.c`` from outside package ``a.b`` runs ``a/b/__init__.py`` and so everything it
re-exports: the graph has that edge too.
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
        "webhook.rules.scheduling.pod", "webhook.admission", "webhook.admission.pipeline",
        "webhook.admission.offline", "webhook.allocator",
        "webhook.allocator.feasibility", "webhook.cel", "webhook.defaulting", "webhook.versions",
        "webhook.versions.reporting", "webhook.workloads", "webhook.workloads.report",
        "webhook.rules.workloads.deployment", "webhook.planning", "webhook.planning.explain",
        "webhook.planning.capacity", "webhook.planning.whatif"]
FORBIDDEN = ("flask", "kubernetes", "gunicorn", "werkzeug")

LOWER = ("webhook.rules", "webhook.allocator", "webhook.cel", "webhook.state", "webhook.workloads",
         "webhook.planning")
UPPER = ("webhook.admission", "webhook.server", "webhook.cli")
RULE_HOOKS = {"apply_defaults", "mutate", "validate", "validate_update", "warnings", "state_warnings",
              "GROUP", "KIND", "VERSIONS", "NAMESPACED"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, modules: set[str], here: str) -> set[str]:
    """The ``webhook`` modules a module imports (a ``from pkg import name`` that names a submodule
    counts as importing the submodule), with the packages whose ``__init__`` that runs."""
    package = here if (ROOT / Path(*here.split(".")[1:]) / "__init__.py").exists() else here.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in modules else base)
    found = set()
    for m in out:
        parts = m.split(".")
        # The module itself, and each enclosing package the importer is not inside of.
        found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1)
                     if i == len(parts) or not here.startswith(".".join(parts[:i]) + "."))
    return {m for m in found if m in modules and m != here}


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


@pytest.mark.parametrize(("source", "here", "want"), [
    pytest.param("def f():\n    from webhook import c\n", "webhook.a", {"webhook.c"}, id="lazy-import"),
    pytest.param("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import webhook.b\n", "webhook.a",
                 {"webhook.b"}, id="type-checking-import"),
    pytest.param("from webhook.p import thing\n", "webhook.a", {"webhook.p"}, id="re-export-of-a-package"),
    pytest.param("from webhook.p.q import thing\n", "webhook.a", {"webhook.p", "webhook.p.q"},
                 id="a-submodule-runs-its-package-init"),
    pytest.param("from webhook.p.q import thing\n", "webhook.p.r", {"webhook.p.q"},
                 id="inside-the-package-its-init-already-ran"),
    pytest.param("from .q import thing\nfrom . import r\n", "webhook.p.s", {"webhook.p.q", "webhook.p.r"},
                 id="relative-imports"),
])
def test_imports_are_read_as_they_run(source: str, here: str, want: set[str]) -> None:
    modules = {"webhook", "webhook.a", "webhook.b", "webhook.c", "webhook.p", "webhook.p.q", "webhook.p.r",
               "webhook.p.s"}
    assert imported(ast.parse(source), modules, here) == want


def test_a_cycle_closed_only_under_type_checking_is_found() -> None:
    graph = {"webhook.a": imported(ast.parse("import webhook.b\n"), {"webhook.a", "webhook.b"}, "webhook.a"),
             "webhook.b": imported(ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    import webhook.a\n"), {"webhook.a", "webhook.b"}, "webhook.b")}
    assert cycles(graph) == [["webhook.a", "webhook.b"]]


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
    assert len(kind_modules) == 13
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


# ---------------------------------------------------------------- the allocator's modules keep to themselves
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}
PRIVATE_KNOWN = {
    # model.py reads a Slice's converted devices and shares devices.py's string interning.
    "webhook/allocator/model.py": {"imports _intern", "reads ._devices"},
}


def private_reads(source: str) -> set[str]:
    """Private names a module takes from another: ``from m import _x``, and ``obj._x`` where the
    module itself defines no ``_x`` (its own classes' privates are its own business)."""
    tree = ast.parse(source)
    own: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            own.add(n.attr)
        elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in n.targets):
            own.update(c.value for c in ast.walk(n.value) if isinstance(c, ast.Constant) and isinstance(c.value, str))

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API

    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            out |= {f"imports {a.name}" for a in n.names if private(a.name)}
        elif isinstance(n, ast.Attribute) and private(n.attr) and n.attr not in own:
            out.add(f"reads .{n.attr}")
    return out


@pytest.mark.parametrize(("source", "found"), [
    pytest.param("from webhook.m import _helper\n", {"imports _helper"}, id="private-import"),
    pytest.param("def f(search):\n    return search._reason\n", {"reads ._reason"}, id="another-objects-private"),
    pytest.param("class A:\n    def __init__(self):\n        self._x = 1\n    def same(self, other):\n"
                 "        return other._x\n", set(), id="own-class-private"),
    pytest.param("class A:\n    __slots__ = ('_y',)\ndef f(a):\n    return a._y\n", set(), id="own-slot"),
    pytest.param("def f(r):\n    return r._replace(x=1)\n", set(), id="namedtuple-api"),
])
def test_private_read_detector(source: str, found: set[str]) -> None:
    assert private_reads(source) == found


def test_no_allocator_module_reads_another_modules_private_members() -> None:
    bad = {}
    for f in sorted((ROOT / "allocator").rglob("*.py")):
        name = str(f.relative_to(ROOT.parent))
        extra = private_reads(f.read_text()) - PRIVATE_KNOWN.get(name, set())
        if extra:
            bad[name] = sorted(extra)
    assert bad == {}


PARAMETERS_MAX = 6


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller passes (``self``/``cls`` not counted; ``*args``/``**kw`` one each)."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return len(names) - (names[:1] in (["self"], ["cls"])) + bool(a.vararg) + bool(a.kwarg)


@pytest.mark.parametrize(("source", "count"), [
    pytest.param("def f(a, b, *, c=1): pass\n", 3, id="positional-and-keyword"),
    pytest.param("class A:\n    def m(self, a, b): pass\n", 2, id="self-not-counted"),
    pytest.param("def f(a, *args, **kw): pass\n", 3, id="star-args-one-each"),
])
def test_parameter_count(source: str, count: int) -> None:
    fn = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef))
    assert parameter_count(fn) == count


def test_no_allocator_function_takes_more_than_six_parameters() -> None:
    long = []
    for f in sorted((ROOT / "allocator").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > PARAMETERS_MAX:
                long.append(f"{f.relative_to(ROOT.parent)}:{node.name} ({parameter_count(node)})")
    assert long == []
