"""Consumable capacity (docs/allocator.md §7): what a request consumes on a device, and whether it fits.

Pure and exact: amounts are ``model.Num`` (ints when integral, as every amount of a usual
request is, else Fractions), so the hot path compares and adds ints. ``consumed_capacity`` is
public: the capacity-defaulting feature reuses it. Names are resolved to fully-qualified
``<domain>/<id>`` keys (a bare name belongs to the device's driver); results report the
spelling the device published.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any

from webhook.allocator.model import CapSpec, Device, Num, num
from webhook.allocator.reasons import Code, Reason
from webhook.gates import FeatureGates, Gate
from webhook.quantity import DECIMAL, INT64_MAX, Quantity, try_parse


class CapacityError(Exception):
    """A request that cannot be represented, or a negative resolved value: aborts the attempt."""


Consumed = dict[str, tuple[Num, str]]
"""full capacity name -> (consumed value, display format)."""


def _exact(v: Fraction) -> Num:
    got = num(v)
    assert got is not None
    return got


def _fmt(raw: Any) -> str:
    q = try_parse(raw) if raw is not None else None
    return q.format if q is not None else DECIMAL


def _milli(v: Num) -> int | None:
    """Exact milli value, or None when ``v`` has finer precision or leaves int64."""
    m = v * 1000
    if m.denominator != 1 or abs(m.numerator) > INT64_MAX:
        return None
    return m.numerator


def _use_milli(spec: CapSpec, fractional: bool) -> bool:
    if not fractional:
        return False
    for v in (spec.vmin, spec.vmax, spec.step):
        if v is not None and _milli(v) is None:
            return False
    return spec.step is None or (_milli(spec.step) or 0) >= 1


def resolve_requests(device: Device, request_capacity: Any) -> dict[str, tuple[Num, str]] | None:
    """Request names -> full names of ``device``. None when the device lacks one of them.

    A requested name is looked up in the device's capacity map as written (as upstream does):
    ``mem`` and ``<driver>/mem`` are different names here, unlike in CEL. Raises CapacityError
    for an unparsable amount.
    """
    reqs = request_capacity.get("requests") if isinstance(request_capacity, dict) else None
    if not isinstance(reqs, dict):
        return {}
    driver = device.slice.driver
    raw = device.raw_capacity
    out: dict[str, tuple[Num, str]] = {}
    for name, amount in reqs.items():
        if not isinstance(name, str) or name not in raw:
            return None
        full = name if "/" in name else f"{driver}/{name}"
        if full not in device.capnames:
            return None
        q = try_parse(amount)
        if q is None:
            raise CapacityError(f"capacity {name!r}: invalid quantity {amount!r}")
        v = q.value
        out[full] = (v.numerator if v.denominator == 1 else v, q.format)
    return out


def _round_range(req: Num, fmt: str, spec: CapSpec, fractional: bool) -> tuple[Num, str]:
    assert spec.vmin is not None
    if req < spec.vmin:
        return spec.vmin, _fmt(spec.raw_min)
    if spec.step is None:
        return req, fmt
    sfmt = _fmt(spec.raw_step)
    if _use_milli(spec, fractional):
        rm = _milli(req)
        if rm is None:
            raise CapacityError(f"request {Quantity(req, fmt)} is not a representable milli value")
        step_m, min_m = _milli(spec.step) or 1, _milli(spec.vmin) or 0
        n = -(-(rm - min_m) // step_m)
        val = min_m + step_m * n
        if val > INT64_MAX:
            raise CapacityError(f"rounding request {Quantity(req, fmt)} up to the next step passes "
                                "the milli-value range")
        return _exact(Fraction(val, 1000)), sfmt
    if req > INT64_MAX:
        raise CapacityError(f"request {Quantity(req, fmt)} exceeds MaxInt64")
    ri, si, mi = ceil(req), ceil(spec.step), ceil(spec.vmin)
    if si <= 0:
        return ri, sfmt
    n = -(-(ri - mi) // si)
    val = mi + si * n
    if mi >= 0 and val > INT64_MAX:
        raise CapacityError(f"rounding request {Quantity(req, fmt)} up to the next step passes MaxInt64")
    return val, sfmt


def consumed_amount(requested: tuple[Num, str] | None, spec: CapSpec,
                    fractional: bool) -> tuple[Num, str]:
    """§7.2 for one capacity: the amount a request consumes (before the fit check)."""
    if requested is None:
        if spec.default is not None:
            return spec.default, _fmt(spec.raw_default)
        return spec.value, _fmt(spec.raw_value)
    req, fmt = requested
    if not spec.has_policy:
        return req, fmt
    if spec.vmin is not None:
        return _round_range(req, fmt, spec, fractional)
    if spec.valid_values is not None:
        for v in spec.valid_values:
            if req <= v:
                return v, fmt
    return req, fmt


def violates_policy(val: Num, spec: CapSpec, fractional: bool) -> bool:
    """§7.3: whether ``val`` breaks the request policy (never when it equals the default, as numbers)."""
    if not spec.has_policy:
        return False
    if spec.default is not None and val == spec.default:
        return False
    if spec.raw_min is not None or spec.raw_max is not None or spec.raw_step is not None:
        if spec.vmax is not None and val > spec.vmax:
            return True
        if spec.step is not None:
            vmin = spec.vmin or 0
            if _use_milli(spec, fractional):
                rv = _milli(val)
                if rv is None:
                    return True
                diff, step = rv - (_milli(vmin) or 0), _milli(spec.step) or 1
            else:
                diff, step = ceil(val) - ceil(vmin), ceil(spec.step)
            if step == 0 or diff % step != 0:
                return True
        return False
    if spec.valid_values:
        return val not in spec.valid_values
    return False


def consumed_capacity(device: Device, request_capacity: Any, gates: FeatureGates) -> Consumed | Reason:
    """What ``request_capacity`` (a request's raw ``capacity``) consumes on ``device``.

    Returns every declared capacity's consumed amount, or the ``Reason`` why the device cannot
    serve the request at all (undeclared name, policy violation, larger than the capacity
    value). Ignores current usage. Raises CapacityError for the fatal cases (§7.3).
    """
    fractional = gates.enabled(Gate.DRA_FRACTIONAL_CAPACITY_RANGE)
    resolved = resolve_requests(device, request_capacity)
    if resolved is None:
        reqs = request_capacity.get("requests") if isinstance(request_capacity, dict) else {}
        missing = sorted(str(n) for n in (reqs or {}) if not _declares(device, n))
        return Reason(Code.CAPACITY_UNDECLARED, device=device.name, capacity=missing[0] if missing else "?")
    out: Consumed = {}
    for full, status, spec in device.caps:
        val, fmt = consumed_amount(resolved.get(full), spec, fractional)
        if val < 0:
            raise CapacityError(f"capacity {status!r}: capacity value is negative")
        out[full] = (val, fmt)
    for full, status, spec in device.caps:
        val = out[full][0]
        if violates_policy(val, spec, fractional):
            return Reason(Code.CAPACITY_POLICY, device=device.name, capacity=status, amount=str(Quantity(val)))
        if val > spec.value:
            return Reason(Code.CAPACITY_EXCEEDS, device=device.name, capacity=status, amount=str(Quantity(val)),
                          limit=str(Quantity(spec.value)))
    return out


def _declares(device: Device, name: Any) -> bool:
    if not isinstance(name, str):
        return False
    full = name if "/" in name else f"{device.slice.driver}/{name}"
    return full in device.capnames


def remaining_fit(device: Device, consumed: Consumed, allocated: dict[str, Num] | None,
                  attempt: dict[str, Num] | None) -> Reason | None:
    """§7.3: None when ``consumed`` fits next to what is already used; else the reason."""
    for full, status, spec in device.caps:
        need = consumed[full][0]
        used: Num = 0
        if allocated:  # recorded under the name the allocation wrote: the device's spelling counts
            used += allocated.get(status, 0)
        if attempt:
            used += attempt.get(full, 0)
        if need + used > spec.value:
            return Reason(Code.CAPACITY_EXHAUSTED, device=device.name, capacity=status, need=need,
                          free=spec.value - used, total=spec.value)
    return None


def render_consumed(device: Device, consumed: Consumed) -> dict[str, str]:
    """``consumedCapacity`` of a result, keyed by the device's own spelling."""
    return {status: str(Quantity(consumed[full][0], consumed[full][1]))
            for full, status, _ in device.caps}
