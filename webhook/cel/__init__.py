"""CEL for DRA device selectors: compile once, evaluate per device.

Public interface (shared by the claim/class rules and the allocator):

    compile_selector(expr) -> Selector        cached; raises CelCompileError(message)
    compile_result(expr, derived=True)        an expression whose .value(view) is wanted (derived attributes)
    device_view(driver, attributes, capacity, allow_multiple) -> DeviceView
    Selector.matches(view) -> bool            raises CelRuntimeError(message)
    with deadline_scope(deadline): ...        evaluations stop there: CelDeadlineExceeded

Built on cel-python (``celpy``, pure Python) plus the Kubernetes functions in ``library`` and the
compile-time checks in ``check`` (see docs/cel.md for the choice). No I/O, no kubernetes imports.
"""

from __future__ import annotations

from webhook.cel.compile import (
    MAX_EXPRESSION_LENGTH,
    CelCompileError,
    CelDeadlineExceeded,
    CelRuntimeError,
    Selector,
    cache_info,
    clear_cache,
    compile_result,
    compile_selector,
    deadline_scope,
)
from webhook.cel.modes import DERIVED_TOTAL_MAX_COST
from webhook.cel.view import DeviceView, device_view

__all__ = [
    "DERIVED_TOTAL_MAX_COST", "MAX_EXPRESSION_LENGTH", "CelCompileError", "CelDeadlineExceeded",
    "CelRuntimeError", "DeviceView", "Selector", "cache_info", "clear_cache", "compile_result",
    "compile_selector", "deadline_scope", "device_view",
]
