"""Device capacity and ``requestPolicy`` (consumable capacity): rules RS-CAP-*, RP-*.

A capacity map is checked only for a new device or when its capacity changed (the caller
decides). ``requestPolicy`` is Forbidden unless the device sets ``allowMultipleAllocations:
true``; otherwise the policy is checked against the capacity ``value``:

* ``validValues``: sorted, ≤ 10 (TooMany skips the items, so the default is then "not
  found" too), each ≤ capacity, unique, and the default one of them;
* ``validRange``: ``min`` required and ≤ capacity, ``default`` within [min, max],
  ``max`` ≤ capacity, ``step`` > 0 with ``min + step`` ≤ capacity, and both the default and
  ``max`` reachable as ``min + k·step``.

Arithmetic mode follows DRAFractionalCapacityRange: on, any fractional value switches the
range to exact milli-units (values finer than 1m or beyond int64 milli are refused); off, or
with integers only, values are read as upstream ``Quantity.Value()`` (rounded up), guarded
to [0, MaxInt64] when a step is set. Duplicate keys in ``validValues`` follow the same
switch: integer ``Value()`` with the gate off, the exact decimal with it on.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, duplicate, forbidden, invalid, required, too_many
from webhook.quantity import INT64_MAX, Quantity
from webhook.rules.shape import as_list, as_object
from webhook.rules.slices.common import as_quantity, validate_map, validate_qualified_name

VALID_VALUES_MAX = 10
MIN_INT64 = -(2**63)
NEGATIVE_MSG = "must be greater than or equal to 0"
OVER_INT64_MSG = f"must not be larger than {INT64_MAX}"
NOT_MILLI_MSG = "value cannot be represented as a milli value"


def validate_capacity_map(
    capacity: Any, path: FieldPath, allow_multiple: bool, fractional: bool
) -> list[FieldError]:
    """``spec.devices[i].capacity``: qualified-name keys, parseable values, request policies."""

    def item(cap: Any, p: FieldPath) -> list[FieldError]:
        return validate_capacity(cap, p, allow_multiple, fractional)

    return validate_map(capacity, path, -1, validate_qualified_name, item)


def validate_capacity(cap: Any, path: FieldPath, allow_multiple: bool, fractional: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    c = as_object(cap, path, errs)
    if c is None:
        return errs
    value = as_quantity(c.get("value"), path.child("value"), errs)
    policy_path = path.child("requestPolicy")
    policy = c.get("requestPolicy")
    if policy is None:
        return errs
    if not allow_multiple:
        errs.append(forbidden(policy_path, "allowMultipleAllocations must be true"))
        # The apiserver still has to decode the policy: unparsable quantities are reported too.
        _parse_policy(policy, policy_path, errs)
        return errs
    parsed = _parse_policy(policy, policy_path, errs)
    if errs or parsed is None:
        return errs
    return validate_request_policy(
        value if value is not None else Quantity(0), parsed, policy_path, fractional
    )


class _Policy:
    __slots__ = ("default", "valid_values", "range_set", "min", "max", "step")

    def __init__(self) -> None:
        self.default: Quantity | None = None
        self.valid_values: list[Quantity] = []
        self.range_set = False
        self.min: Quantity | None = None
        self.max: Quantity | None = None
        self.step: Quantity | None = None


def _parse_policy(policy: Any, path: FieldPath, errs: list[FieldError]) -> _Policy | None:
    """Decode a requestPolicy the way the apiserver would; bad shapes/quantities add errors."""
    start = len(errs)
    p = as_object(policy, path, errs)
    if p is None:
        return None
    out = _Policy()
    out.default = as_quantity(p.get("default"), path.child("default"), errs)
    vv_path = path.child("validValues")
    for k, v in enumerate(as_list(p.get("validValues"), vv_path, errs) or []):
        # A JSON null decodes to a zero Quantity.
        q = Quantity(0) if v is None else as_quantity(v, vv_path.index(k), errs)
        if q is not None:
            out.valid_values.append(q)
    r_path = path.child("validRange")
    r = as_object(p.get("validRange"), r_path, errs)
    if r is not None:
        out.range_set = True
        out.min = as_quantity(r.get("min"), r_path.child("min"), errs)
        out.max = as_quantity(r.get("max"), r_path.child("max"), errs)
        out.step = as_quantity(r.get("step"), r_path.child("step"), errs)
    return out if len(errs) == start else None


def validate_request_policy(
    capacity: Quantity, policy: _Policy, path: FieldPath, fractional: bool
) -> list[FieldError]:
    if policy.valid_values and policy.range_set:
        return [
            forbidden(
                path,
                'exactly one policy can be specified, cannot specify "validValues" '
                'and "validRange" at the same time',
            )
        ]
    if policy.valid_values:
        if policy.default is None:
            return [required(path.child("default"), "required when validValues is defined")]
        return _valid_values(
            policy.default, capacity, policy.valid_values, path.child("validValues"), fractional
        )
    if policy.range_set:
        if policy.default is None:
            return [required(path.child("default"), "required when validRange is defined")]
        return _valid_range(policy.default, capacity, policy, path.child("validRange"), fractional)
    return []


def _int_key(q: Quantity) -> str:
    """Upstream ``Value()`` as a decimal string, saturated to int64 as the Go value is."""
    return str(min(max(q.int_value(), MIN_INT64), INT64_MAX))


def _dec_key(q: Quantity) -> str:
    """The exact decimal value, without trailing zeros (``1`` and ``1.0`` give the same key)."""
    v = q.value
    sign = "-" if v < 0 else ""
    v = abs(v)
    whole, frac = divmod(v, 1)
    if frac == 0:
        return f"{sign}{whole}"
    digits = ""
    while frac and len(digits) < 40:
        frac *= 10
        d, frac = divmod(frac, 1)
        digits += str(int(d))
    return f"{sign}{whole}.{digits}"


def _valid_values(
    default: Quantity, capacity: Quantity, values: list[Quantity], path: FieldPath, fractional: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    for i in range(len(values) - 1):
        if values[i] > values[i + 1]:
            errs.append(
                invalid(path.index(i + 1), str(values[i + 1]), "values must be sorted in ascending order")
            )
    found = False
    if len(values) > VALID_VALUES_MAX:
        errs.append(too_many(path, len(values), VALID_VALUES_MAX))
    else:
        key = _dec_key if fractional else _int_key
        for k, option in enumerate(values):
            if option > capacity:
                errs.append(
                    invalid(path.index(k), str(option), f"option is larger than capacity value: {capacity}")
                )
            if option == default:
                found = True
        seen: set[str] = set()
        for k, option in enumerate(values):
            kk = key(option)
            if kk in seen:
                errs.append(duplicate(path.index(k), kk))
            seen.add(kk)
    if not found:
        errs.append(invalid(path, str(default), "default value is not valid according to the requestPolicy"))
    return errs


def _milli_safe(q: Quantity) -> bool:
    """True when ``q`` equals ``NewMilliQuantity(q.MilliValue())``: exact in int64 milli-units."""
    return q.is_milli_exact() and MIN_INT64 <= q.value * 1000 <= INT64_MAX


def _valid_range(
    default: Quantity, capacity: Quantity, policy: _Policy, path: FieldPath, fractional: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    lo, hi, step = policy.min, policy.max, policy.step
    if lo is None:
        return [required(path.child("min"), "required when validRange is defined")]
    if lo > capacity:
        errs.append(invalid(path.child("min"), str(lo), f"min is larger than capacity value: {capacity}"))
    if default < lo:
        errs.append(invalid(path.child("default"), str(default), f"default is less than min: {lo}"))
    if hi is not None:
        if lo > hi:
            errs.append(invalid(path.child("max"), str(lo), f"min is larger than max: {hi}"))
        if hi > capacity:
            errs.append(invalid(path.child("max"), str(hi), f"max is larger than capacity value: {capacity}"))
        if default > hi:
            errs.append(invalid(path.child("default"), str(default), f"default is more than max: {hi}"))
    named = [("default", default), ("min", lo), ("max", hi), ("step", step)]
    use_milli = False
    if fractional:
        use_milli = any(q is not None and not q.is_integer() for q in (lo, hi, step, default))
        if use_milli:
            unsafe = [
                invalid(path.child(n), str(q), NOT_MILLI_MSG)
                for n, q in named
                if q is not None and not _milli_safe(q)
            ]
            if unsafe:
                return errs + unsafe
    if step is None:
        return errs
    if step.value <= 0:
        errs.append(invalid(path.child("step"), str(step), "must be greater than zero"))
        return errs
    one_step = lo + step
    if one_step > capacity:
        errs.append(
            invalid(
                path.child("step"),
                str(step),
                f"one step {one_step} is larger than capacity value: {capacity}",
            )
        )
    if not use_milli:
        bounds = [_int64_range(q, path.child(n)) for n, q in named if q is not None]
        bound_errs = [e for e in bounds if e is not None]
        if bound_errs:
            return errs + bound_errs
    errs.extend(_step_multiple(default, lo, step, use_milli, path.child("step")))
    if hi is not None:
        errs.extend(_step_multiple(hi, lo, step, use_milli, path.child("step")))
    return errs


def _int64_range(q: Quantity, path: FieldPath) -> FieldError | None:
    if q.value < 0:
        return invalid(path, str(q), NEGATIVE_MSG)
    if q.value > INT64_MAX:
        return invalid(path, str(q), OVER_INT64_MSG)
    return None


def _step_multiple(
    value: Quantity, lo: Quantity, step: Quantity, use_milli: bool, path: FieldPath
) -> list[FieldError]:
    if use_milli:
        v, m, s = value.milli_value(), lo.milli_value(), step.milli_value()
    else:
        v, m, s = value.int_value(), lo.int_value(), step.int_value()
    if s == 0 or Fraction(v - m) % s != 0:
        return [invalid(path, str(value), f"value is not a multiple of a given step ({step}) from ({lo})")]
    return []
