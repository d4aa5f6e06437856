"""The exception tree in ``webhook/__init__.py``'s docstring names every exception class of the
package, and nothing that is not one."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

import webhook

ROOT = Path(webhook.__file__).parent


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _is_builtin_exception(name: str) -> bool:
    got = getattr(builtins, name, None)
    return isinstance(got, type) and issubclass(got, BaseException)


def exception_classes(sources: dict[str, str]) -> dict[str, str]:
    """class name -> file, for every class (at any depth) whose bases lead to a built-in
    exception, through classes of the same sources included."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = (path, [_base_name(b) for b in node.bases])
    found: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, (path, bases) in classes.items():
            if name not in found and any(_is_builtin_exception(b) or b in found for b in bases):
                found[name] = path
                grew = True
    return found


@pytest.mark.parametrize(("source", "want"), [
    pytest.param("class A(ValueError): pass\n", {"A"}, id="builtin-base"),
    pytest.param("class A(Exception): pass\nclass B(A): pass\n", {"A", "B"}, id="through-our-own-class"),
    pytest.param("class B(A): pass\nclass A(RuntimeError): pass\n", {"A", "B"}, id="defined-after-its-subclass"),
    pytest.param("class A(errors.Error): pass\nclass Error(Exception): pass\n", {"A", "Error"}, id="dotted-base"),
    pytest.param("class Decoded:\n    pass\nclass DecodeFailureValue(Decoded): pass\n", set(), id="not-an-exception"),
    pytest.param("def f():\n    class _Stop(Exception): pass\n", {"_Stop"}, id="nested-in-a-function"),
])
def test_the_finder_tells_exception_classes(source: str, want: set[str]) -> None:
    assert set(exception_classes({"m.py": source})) == want


def _package_sources() -> dict[str, str]:
    return {str(f.relative_to(ROOT.parent)): f.read_text() for f in sorted(ROOT.rglob("*.py"))}


def test_every_exception_class_is_in_the_package_docstring() -> None:
    doc = webhook.__doc__ or ""
    missing = {name: path for name, path in exception_classes(_package_sources()).items()
               if not re.search(rf"(?<![\w.]){re.escape(name)}\b", doc)}
    assert missing == {}


def test_the_docstring_names_no_exception_class_that_is_gone() -> None:
    doc = webhook.__doc__ or ""
    tree = doc[doc.index("WebhookError"):doc.index("User objects")]
    named = set(re.findall(r"[├└]── (\w+)", tree))
    assert named and named <= set(exception_classes(_package_sources()))
