"""Compiling DRA selector expressions once and evaluating them against devices.

``compile_selector`` parses with cel-python, runs the static checks of ``check``, binds the
Kubernetes functions of ``library`` and caches the result per expression text (LRU).
``device_view`` (in ``view``) converts one ResourceSlice device into the ``device`` variable
once, so a selector can be matched against many devices cheaply.

Evaluation is bounded twice, as upstream bounds it: the static estimate (``cost``) refuses
expressions whose worst case is over ``MAX_COST``, and a run-time meter stops an evaluation that
spends ``MAX_COST`` units (a CelRuntimeError for that device, in cel-go's words). The meter also
watches the deadline of ``deadline_scope`` (set by the caller around optional work): past it,
evaluation raises ``CelDeadlineExceeded``, which is not a device's fault and must not be cached
as one. Pure apart from reading the clock for that deadline: no I/O.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError, CELParser
from celpy.evaluation import CELEvalError, Evaluator

from webhook.cel import extensions, parser
from webhook.cel.check import DEVICE_FIELDS, Checker, CheckError, ProgramError
from webhook.cel.cost import MAX_COST, TRAVERSAL, estimate
from webhook.cel.library import FUNCTIONS, type_name
from webhook.cel.modes import Mode, result_type_error
from webhook.cel.native import NativeError, NativeEval, NativeFallback, translate
from webhook.cel.view import DeviceView

MAX_EXPRESSION_LENGTH = 10 * 1024
"""Upstream ``CELSelectorExpressionMaxLength`` (10 Ki bytes)."""

CACHE_SIZE = 1024
_RECURSION_LIMIT = 12_000
"""Evaluation recurses once per parse-tree level; check.MAX_TREE_DEPTH keeps trees below this."""


class CelCompileError(ValueError):
    """The expression does not compile; ``message`` is the compiler's text."""

    def __init__(self, message: str, *, too_complex: bool = False, internal: bool = False, cost: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.too_complex = too_complex
        """True when the expression compiles but its estimated cost exceeds the limit."""
        self.internal = internal
        """True when it compiles but no program can be built from it (upstream's InternalError)."""
        self.cost = cost
        """The estimated cost when ``too_complex`` (it still counts toward a claim's budget)."""


class CelRuntimeError(RuntimeError):
    """Evaluating a selector on a device failed (missing key, non-bool result, bad value...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CelDeadlineExceeded(Exception):
    """Evaluation stopped because the deadline of ``deadline_scope`` passed (not an error of the
    device or the expression: the caller ran out of time)."""


COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
"""cel-go's runtime error when an evaluation spends more than its cost limit."""
CHECK_EVERY = 128
"""The meter reads the clock once per this many evaluation steps."""

_scope = threading.local()


@contextmanager
def deadline_scope(deadline: float | None) -> Iterator[None]:
    """Evaluations in this thread stop at ``deadline`` (a ``time.monotonic()`` value) inside
    the block, raising ``CelDeadlineExceeded``; None leaves only the cost limit. Nests."""
    saved = getattr(_scope, "deadline", None)
    _scope.deadline = deadline if saved is None or deadline is None else min(saved, deadline)
    try:
        yield
    finally:
        _scope.deadline = saved


class _Meter:
    """Cost spent by one evaluation, and the deadline it must stop at."""

    __slots__ = ("left", "deadline", "steps")

    def __init__(self, budget: int, deadline: float | None) -> None:
        self.left = budget
        self.deadline = deadline
        self.steps = 0

    def spend(self, units: int) -> None:
        """Charge ``units``; raises CelRuntimeError (cel-go's words) past the budget."""
        self.left -= units
        if self.left < 0:
            raise CelRuntimeError(COST_EXCEEDED)

    def tick(self) -> None:
        """One evaluation step: a unit of cost, and now and then a look at the clock."""
        self.spend(1)
        self.steps += 1
        if self.deadline is not None and not self.steps % CHECK_EVERY and time.monotonic() > self.deadline:
            raise CelDeadlineExceeded


class _MeteredEvaluator(Evaluator):
    """celpy's tree-walking evaluator with every node visit (and the size of every string or
    list a node yields) charged to a ``_Meter``; macro bodies share their parent's meter."""

    def __init__(self, ast: lark.ParseTree, activation: Any, meter: _Meter) -> None:
        super().__init__(ast, activation)
        self.meter = meter

    def sub_evaluator(self, ast: lark.ParseTree) -> Evaluator:
        """The evaluator of a macro body: same activation chain, same meter."""
        return _MeteredEvaluator(ast, self.activation, self.meter)

    # lark's Interpreter routes every child visit through _visit_tree (visit() and
    # visit_children() both do), so this one override sees each node exactly once.
    def _visit_tree(self, tree: lark.ParseTree) -> Any:
        self.meter.tick()
        value = super()._visit_tree(tree)
        # Long strings and lists cost what reading them costs (cel-go's traversal factor).
        if isinstance(value, (str, bytes, list)) and len(value) > 16:
            self.meter.spend(int(len(value) * TRAVERSAL))
        return value


_DRIVER_EQ = re.compile(r"""\s*device\.driver\s*==\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*""")


def _driver_guard(expression: str) -> tuple[str | None, bool]:
    """(driver literal, whether the literal comparison is the whole expression)."""
    m = _DRIVER_EQ.match(expression)
    if not m:
        return None, False
    literal = m.group(1) if m.group(1) is not None else m.group(2)
    rest = expression[m.end():]
    if not rest:
        return literal, True
    if rest.startswith("&&") and "||" not in rest and "?" not in rest:
        return literal, False
    return None, False


class Selector:
    """A compiled selector. ``matches`` is safe to call from several threads."""

    __slots__ = ("expression", "cost", "_program", "_guard", "_guard_only", "_native")

    def __init__(self, expression: str, program: Any, cost: int, native: NativeEval | None = None) -> None:
        self.expression = expression
        self.cost = cost
        self._program = program
        self._guard, self._guard_only = _driver_guard(expression)
        self._native = native
        """Pure-Python evaluator when the whole expression is made of common shapes (native.py)."""

    def matches(self, view: DeviceView) -> bool:
        """True when the device satisfies the expression. Raises CelRuntimeError."""
        if view.error:
            raise CelRuntimeError(view.error)
        if self._guard is not None:
            if view.driver != self._guard:
                return False
            if self._guard_only:
                return True
        if self._native is not None:
            try:
                return self._native(view)
            except NativeError as e:
                raise CelRuntimeError(e.message) from None
            except NativeFallback:
                pass  # an operand of a type the native path does not model: ask celpy
        return self._evaluate(view)

    def _evaluate(self, view: DeviceView) -> bool:
        """The celpy evaluation (``matches`` without the native shortcuts), metered."""
        result = self._value(view)
        if not isinstance(result, celtypes.BoolType):
            raise CelRuntimeError(f"CEL result of type {type_name(result)} could not be converted to bool")
        return bool(result)

    def value(self, view: DeviceView) -> Any:
        """The value on the device, of any type (a derived attribute's). Raises CelRuntimeError."""
        if view.error:
            raise CelRuntimeError(view.error)
        return self._value(view)

    def _value(self, view: DeviceView) -> Any:
        meter = _Meter(MAX_COST, getattr(_scope, "deadline", None))
        # Checked before starting too: a loop over many devices must stop at once, not after
        # CHECK_EVERY steps of each device.
        if meter.deadline is not None and time.monotonic() > meter.deadline:
            raise CelDeadlineExceeded
        evaluator = _MeteredEvaluator(self._program.ast, self._program.new_activation(), meter)
        try:
            result = evaluator.evaluate({"device": view.value})
        except CELEvalError as e:
            raise CelRuntimeError(_runtime_message(e)) from None
        except RecursionError:  # pragma: no cover - check.MAX_TREE_DEPTH prevents it
            raise CelRuntimeError("expression recursion limit exceeded") from None
        except (TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError) as e:
            # celpy lets some Python errors out on odd operand types; they are runtime errors.
            raise CelRuntimeError(f"no such overload: {e}") from None
        return result

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


_INNER_ERROR = re.compile(r"""CELEvalError\(\*\((["'])(.*?)\1, """)


def _runtime_message(e: CELEvalError) -> str:
    """cel-go's wording for a celpy evaluation error (missing keys, failed operands of ``&&``/``||``)."""
    text = str(e.args[0]) if e.args else "evaluation error"
    if text.startswith(("found no matching overload for _&&_", "found no matching overload for _||_")) \
            and len(e.args) > 2:
        # Both operands failed: report the first operand's error, as cel-go does.
        inner = _INNER_ERROR.search(str(e.args[2]))
        if inner:
            text = inner.group(2).replace("\\'", "'").replace('\\"', '"')
    key: Any = None
    if text.startswith("no such member in mapping: "):
        key = text[len("no such member in mapping: "):].strip("'\"")
    elif text == "no such key" and len(e.args) > 2 and e.args[2]:
        key = e.args[2][0]
    if key is not None:
        return (f"no such key: {key} (consider using has() or the in operator to check "
                "whether the key exists)")
    return text.split(" (in activation")[0]


# --- compilation and cache ---------------------------------------------------------------

_lock = threading.Lock()
_env: celpy.Environment | None = None
_cache: OrderedDict[tuple[str, bool, bool, bool], Selector | CelCompileError] = OrderedDict()
#: The eight modes, made once (the cache is keyed by the flags: a tuple of plain values hashes fast).
_MODES = {(d, lt, cc): Mode(d, lt, cc) for d in (False, True) for lt in (False, True) for cc in (False, True)}


def _build_scanners(lark_parser: lark.Lark) -> None:
    """Build every scanner of the parser's lexer with the environment. lark's contextual lexer
    compiles one regular expression per set of parser states, each on first use: the first
    expressions a process compiles paid ~10 ms between them for that, more than a whole one-shot
    allocation of a claim that fits (B6). Built here, they are part of start-up (~10 ms once)."""
    lexer = getattr(getattr(lark_parser, "parser", None), "lexer", None)
    for basic in {id(b): b for b in getattr(lexer, "lexers", {}).values()}.values():
        getattr(basic, "scanner", None)


def _environment() -> celpy.Environment:
    """The one celpy environment of the process (built on first use: it costs ~0.3 s), parsing
    with ``parser.Parser`` (trees without source positions)."""
    global _env
    if _env is None:
        lark_parser = parser.build()
        if CELParser.CEL_PARSER is None:
            # celpy.Environment() builds celpy's parser unless one exists: let it find this one
            # rather than spend another 0.3 s on a parser nothing here would use.
            CELParser.CEL_PARSER = lark_parser
        env = celpy.Environment()
        env.cel_parser = parser.Parser(lark_parser)
        _build_scanners(lark_parser)
        _env = env
    # Every celpy.Environment() sets the process's recursion limit to 2500 (another one built
    # later, by a library user or a test, lowers it again): checked on every compile.
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    return _env


def _build(expression: str, mode: Mode) -> Selector | CelCompileError:
    """Compile one expression: length, parse, static checks, result type, cost; then bind the functions."""
    if expression.strip() == "":
        return CelCompileError("compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input "
                               "'<EOF>' expecting an expression")
    if len(expression.encode("utf-8", "surrogatepass")) > MAX_EXPRESSION_LENGTH:
        return CelCompileError(f"must have at most {MAX_EXPRESSION_LENGTH} bytes")
    env = _environment()
    # celpy has no optional-field syntax (a.?b, m[?k]): it is checked as a plain selection.
    checked = extensions.OPTIONAL_SELECT.sub(lambda m: "." if m.group(0) == ".?" else "[", expression)
    try:
        tree = env.compile(checked)
    except CELParseError as e:
        return CelCompileError(_syntax_message(e))
    except (lark.exceptions.LarkError, RecursionError, ValueError) as e:
        return CelCompileError(f"compilation failed: ERROR: <input>:1:1: Syntax error: {e}")
    fields = DEVICE_FIELDS if mode.consumable_capacity else \
        {k: v for k, v in DEVICE_FIELDS.items() if k != "allowMultipleAllocations"}
    try:
        result_type = Checker(tree, device_fields=fields, list_types=mode.list_types).run()
    except ProgramError as e:
        return CelCompileError(str(e), internal=True)
    except CheckError as e:
        return CelCompileError(f"compilation failed: {e}")
    cost = estimate(tree)
    if (bad := result_type_error(tree, result_type, mode)) is not None:
        return CelCompileError(bad)
    if cost > MAX_COST:
        return CelCompileError("too complex, exceeds cost limit", too_complex=True, cost=cost)
    # dyn() only changes the static type; celpy has no such function.
    functions: dict[str, Callable[..., Any]] = dict(FUNCTIONS, dyn=lambda v: v)
    functions["_&&_"], functions["_||_"] = _logical_and, _logical_or
    program = env.program(tree, functions=functions)
    return Selector(expression, program, cost, translate(tree))


def _logical_and(x: Any, y: Any) -> Any:
    """``&&`` reporting the first operand's error when both fail (celpy hides both)."""
    # celpy turns ``error && error`` into a "no matching overload for _&&_" error whose text
    # hides both; cel-go reports the first operand's error.
    if isinstance(x, CELEvalError) and isinstance(y, CELEvalError):
        return x
    return celtypes.logical_and(x, y)


def _logical_or(x: Any, y: Any) -> Any:
    """``||`` with the same error rule as ``_logical_and``."""
    if isinstance(x, CELEvalError) and isinstance(y, CELEvalError):
        return x
    return celtypes.logical_or(x, y)


def _syntax_message(e: CELParseError) -> str:
    """A parse error in cel-go's layout: position, then the excerpt with a caret."""
    excerpt = str(e.args[0]) if e.args else ""
    lines = excerpt.rstrip("\n").split("\n")
    where = f"<input>:{e.line or 1}:{e.column or 1}"
    body = "\n | ".join(lines)
    return f"compilation failed: ERROR: {where}: Syntax error: unexpected input\n | {body}"


def compile_result(expression: str, *, derived: bool = False, list_types: bool = False,
                   consumable_capacity: bool = True) -> Selector | CelCompileError:
    """Compile (or fetch from the cache) without raising; errors are cached too. A selector
    unless ``derived`` (a derived attribute's expression); the flags follow the gates that
    change the environment."""
    key = (expression, derived, list_types, consumable_capacity)
    # The lock guards the LRU only: compiling happens outside it, so two threads may compile
    # the same new expression at once; both get the same answer.
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    built = _build(expression, _MODES[derived, list_types, consumable_capacity])
    with _lock:
        _cache[key] = built
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return built


def compile_selector(expression: str) -> Selector:
    """The compiled selector for ``expression`` (cached). Raises CelCompileError."""
    if not isinstance(expression, str):
        raise CelCompileError("expression must be a string")
    built = compile_result(expression)
    if isinstance(built, CelCompileError):
        raise built
    return built


def cache_info() -> tuple[int, int]:
    """(entries, capacity) of the compile cache; for tests and metrics."""
    with _lock:
        return len(_cache), CACHE_SIZE


def clear_cache() -> None:
    """Forget every compiled expression (tests)."""
    with _lock:
        _cache.clear()
