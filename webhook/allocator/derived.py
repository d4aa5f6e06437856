"""Derived attributes (DRADerivedAttributes, experimental allocator only): a request names CEL
expressions whose value per device stands in for an attribute in the claim's constraints.

Pure. The value is computed when a constraint looks the attribute up (after the device passed
every other check), once per device and expression; a compile or runtime error, or a value
that is not a scalar or a list of one scalar type, is fatal for the attempt, as upstream.
"""

from __future__ import annotations

from typing import Any

from webhook.allocator.claims import AllocError, BudgetExceeded
from webhook.allocator.constraints import EMPTY, LIST, Value
from webhook.allocator.model import Device
from webhook.allocator.reasons import fatal


def derived_value(expr: str, name: str, dev: Device, lists: bool, cache: dict[tuple[str, int], Value]) -> Value:
    """The value of derived attribute ``name`` (``expr``) on ``dev``; raises AllocError."""
    got = cache.get((expr, dev.uid))
    if got is not None:
        return got
    from webhook.cel import CelCompileError, CelDeadlineExceeded, CelRuntimeError, compile_result
    program = compile_result(expr, derived=True, list_types=lists)
    if isinstance(program, CelCompileError):
        raise AllocError(fatal(f"compile derived attribute {name} failed: {program}"))
    try:
        raw = program.value(dev.view())
    except CelDeadlineExceeded:  # out of time, not the device's fault
        raise BudgetExceeded(0, "deadline") from None
    except CelRuntimeError as e:
        raise AllocError(fatal(f"evaluate derived attribute {name} on device {dev.label()} failed: {e}")) from None
    got = _convert(raw, lists)
    if got is None:
        raise AllocError(fatal(f"evaluate derived attribute {name} on device {dev.label()} failed: "
                               f"unsupported CEL return type {type(raw).__name__}"))
    cache[(expr, dev.uid)] = got
    return got


def _scalar(v: Any) -> tuple[str, Any] | None:
    from celpy import celtypes

    from webhook.cel.library import CelSemver
    if isinstance(v, celtypes.BoolType):
        return "bool", bool(v)
    if isinstance(v, celtypes.IntType):
        return "int", int(v)
    if isinstance(v, celtypes.StringType):
        return "string", str(v)
    if isinstance(v, CelSemver):
        text = f"{v.major}.{v.minor}.{v.patch}" + ("-" + ".".join(v.pre) if v.pre else "")
        return "version", text + (f"+{v.build}" if v.build else "")
    return None


def _convert(v: Any, lists: bool) -> Value | None:
    one = _scalar(v)
    if one is not None:
        return (one[0], frozenset([one[1]]))
    if isinstance(v, list):
        if not v:
            return EMPTY
        items = [_scalar(x) for x in v]
        if any(i is None for i in items) or len({i[0] for i in items if i is not None}) != 1:
            return None
        if not lists:
            return LIST
        return (items[0][0], frozenset(i[1] for i in items if i is not None)) if items[0] else None
    return None
