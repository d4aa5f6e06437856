"""Static device fit for one request: CEL selectors (cached per device) and taints.

Pure. A CEL runtime error is fatal for the attempt (docs/allocator.md §6.3): it becomes an
``AllocError`` naming the selector.
"""

from __future__ import annotations

from webhook.allocator.claims import BudgetExceeded, Leaf, Selector
from webhook.allocator.model import Device, Model

_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


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


def untolerated_taint(leaf: Leaf, dev: Device) -> str | None:
    """``key=value:effect`` of the first NoSchedule/NoExecute taint ``leaf`` does not tolerate."""
    for tkey, tval, effect in dev.taints:
        if effect in _TAINT_EFFECTS and not _tolerated(leaf.tolerations, tkey, tval, effect):
            return f"{tkey}={tval}:{effect}"
    return None


def _tolerated(tolerations: tuple[tuple[str, str, str, str], ...], key: str, value: str, effect: str) -> bool:
    for tkey, op, tval, teffect in tolerations:
        if teffect and teffect != effect:
            continue
        if tkey and tkey != key:
            continue
        if op == "Exists":
            return True
        if op == "Equal" and tval == value:
            return True
    return False
