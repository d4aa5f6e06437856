"""Spec immutability on UPDATE (RC-UPD-1) with the apiserver's semantic equality. Pure."""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import FieldError, FieldPath, immutable
from webhook.quantity import try_parse


def semantic(value: Any) -> Any:
    """A comparable form: null members and empty lists dropped (Kubernetes' DeepEqual treats nil and
    empty slices alike), and quantity strings under ``capacity.requests`` compared by value."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if v is None or v == []:
                continue
            if k == "requests" and isinstance(v, dict):
                out[k] = {rk: _quantity_or(rv) for rk, rv in v.items()}
            else:
                out[k] = semantic(v)
        return out
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def _quantity_or(v: Any) -> Any:
    q = try_parse(v)
    return ("quantity", q.value) if q is not None else semantic(v)


def validate_spec_immutable(new: Any, old: Any, path: FieldPath) -> list[FieldError]:
    """One Invalid "field is immutable" at ``path`` when the spec changed semantically."""
    if semantic(new) != semantic(old):
        return [immutable(path, new)]
    return []
