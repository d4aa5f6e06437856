"""Static device fit for one request: CEL selectors (cached per device); taints are ``taints.py``.

Pure. A CEL runtime error is fatal for the attempt (docs/allocator.md §6.3): it becomes an
``AllocError`` naming the selector.
"""

from __future__ import annotations

from typing import Any

from webhook.allocator.claims import BudgetExceeded, Selector
from webhook.allocator.model import Device, Model


def selector_matches(model: Model, sel: Selector, dev: Device) -> bool:
    """Cached CEL evaluation; a runtime error is fatal for the attempt (§6.3)."""
    hide = hides_multi(model, sel)
    key = "\0stable\0" + sel.expr if hide else sel.expr
    cache = model.sel_cache.get(key)
    if cache is None:
        cache = model.sel_cache[key] = {}
    got = cache.get(dev.uid)
    if got is None:
        got = cache[dev.uid] = evaluate(sel, dev.view(hide))
    if isinstance(got, str):
        raise sel.error(got)
    return got


def hides_multi(model: Model, sel: Selector) -> bool:
    """Whether ``sel`` sees the device as the stable allocator shows it (no ``allowMultipleAllocations``)."""
    return model.hide_multi and "allowMultipleAllocations" in sel.expr


def evaluate(sel: Selector, view: Any) -> bool | str:
    """``sel`` on a device's CEL view: the verdict, or the text of the fatal error it raises.
    Raises BudgetExceeded at the deadline (out of time, not the device's fault: never cached)."""
    from webhook.cel import CelDeadlineExceeded, CelRuntimeError
    try:
        return bool(sel.compiled.matches(view))
    except CelDeadlineExceeded:
        raise BudgetExceeded(0, "deadline") from None
    except CelRuntimeError as e:
        return f"CEL runtime error: {e}"
    except Exception as e:  # an engine bug must not crash admission; report it as fatal
        return f"CEL evaluation failed: {e}"
