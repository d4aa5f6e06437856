"""Static device fit for one request: CEL selectors (cached per device); taints are ``taints.py``.

Pure. A CEL runtime error is fatal for the attempt (docs/allocator.md §6.3): it becomes an
``AllocError`` naming the selector.
"""

from __future__ import annotations

from webhook.allocator.claims import BudgetExceeded, Selector
from webhook.allocator.model import Device, Model


def selector_matches(model: Model, sel: Selector, dev: Device) -> bool:
    """Cached CEL evaluation; a runtime error is fatal for the attempt (§6.3)."""
    hide = model.hide_multi and "allowMultipleAllocations" in sel.expr  # the stable allocator's view
    key = "\0stable\0" + sel.expr if hide else sel.expr
    cache = model.sel_cache.get(key)
    if cache is None:
        cache = model.sel_cache[key] = {}
    got = cache.get(dev.uid)
    if got is None:
        from webhook.cel import CelDeadlineExceeded, CelRuntimeError
        try:
            got = bool(sel.compiled.matches(dev.view(hide)))
        except CelDeadlineExceeded:  # out of time, not the device's fault: never cached
            raise BudgetExceeded(0, "deadline") from None
        except CelRuntimeError as e:
            got = f"CEL runtime error: {e}"
        except Exception as e:  # an engine bug must not crash admission; report it as fatal
            got = f"CEL evaluation failed: {e}"
        cache[dev.uid] = got
    if isinstance(got, str):
        raise sel.error(got)
    return got
