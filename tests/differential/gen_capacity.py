"""Device capacity with a requestPolicy, aimed at upstream's edges (for `gen_slices`).

Values are drawn as integer multiples of one unit (1, 1Gi, 1G, 100m, 1m, 0.5, 1u, 1n, 4Ei), so a
default, min, max, step and every validValue stand in a chosen relation to each other and to the
capacity value: below, on, above; on and off the step; sorted or not, duplicated by value or
only by their rounded integer (which is a duplicate when DRAFractionalCapacityRange is off, the
1.37 default); past int64 and the milli range. Each multiple is written in one of several
notations of the same value (`2Gi`, `2147483648`, `2048Mi`). A "wild" policy draws every field
from the general quantity strategy instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from tests.differential.gen_values import choose, maybe, put, quantity


def decimal(v: Fraction) -> str:
    """The exact decimal form of ``v`` (its denominator divides a power of ten)."""
    sign, v = ("-" if v < 0 else ""), abs(v)
    whole, frac = divmod(v, 1)
    if not frac:
        return f"{sign}{whole}"
    digits = ""
    while frac:
        frac *= 10
        d, frac = divmod(frac, 1)
        digits += str(d)
    return f"{sign}{whole}.{digits}"


@dataclass(frozen=True)
class Unit:
    name: str
    value: Fraction
    suffix: str = ""       # k units are written f"{k}{suffix}" ...
    scale: int = 1         # ... or f"{k * scale}{small}" in a smaller suffix, or as a decimal
    small: str = ""

    def notations(self, k: int) -> list[str]:
        out = [decimal(self.value * k)]
        if self.suffix:
            out.append(f"{k}{self.suffix}")
        if self.small or self.scale != 1:
            out.append(f"{k * self.scale}{self.small}")
        return out


UNITS = [
    Unit("one", Fraction(1), "", 1000, "m"),
    Unit("Gi", Fraction(2**30), "Gi", 1024, "Mi"),
    Unit("G", Fraction(10**9), "G", 1, "e9"),
    Unit("100m", Fraction(1, 10), "", 100, "m"),
    Unit("1m", Fraction(1, 1000), "m", 1000, "u"),
    Unit("half", Fraction(1, 2), "", 500, "m"),
    Unit("1u", Fraction(1, 10**6), "u", 1000, "n"),
    Unit("1n", Fraction(1, 10**9), "n"),
    Unit("4Ei", Fraction(2**62), "", 4, "Ei"),
]
MODES = ["range"] * 4 + ["values"] * 3 + ["default-only", "both", "empty", "wild", "wild"]
VALID_VALUES_COUNTS = [0, 1, 2, 3, 4, 9, 10, 11]


def capacity_with_policy(draw: st.DrawFn) -> dict[str, Any]:
    """One DeviceCapacity with a requestPolicy (for a device that allows multiple allocations)."""
    unit: Unit = choose(draw, UNITS)

    def q(k: int) -> str:
        return str(choose(draw, unit.notations(k)))

    c = choose(draw, [1, 2, 3, 4, 8, 10, 16, 100, 0])
    mode = choose(draw, MODES)
    if mode == "wild":
        return {"value": quantity(draw), "requestPolicy": wild_policy(draw)}
    if mode == "empty":
        return {"value": q(c), "requestPolicy": choose(draw, [{}, None])}
    policy: dict[str, Any] = {}
    put(policy, "default", maybe(draw, q(choose(draw, [0, 1, 2, c // 2, c, c, c + 1, -1, 3])), of=8))
    if mode in ("range", "both"):
        rng: dict[str, Any] = {}
        lo = choose(draw, [0, 0, 1, 1, 2, c, c + 1, -1])
        put(rng, "min", maybe(draw, q(lo), of=10))
        put(rng, "max", maybe(draw, q(choose(draw, [c, c, c - 1, lo, lo + 1, c + 1, 0])), absent=2, of=5))
        put(rng, "step", maybe(draw, q(choose(draw, [1, 1, 2, 3, c, c + 1, 0, -1])), absent=2, of=5))
        policy["validRange"] = rng
    if mode in ("values", "both"):
        ks = [choose(draw, range(-1, c + 3)) for _ in range(choose(draw, VALID_VALUES_COUNTS))]
        policy["validValues"] = [q(k) for k in (sorted(ks) if choose(draw, [True, False]) else ks)]
    return {"value": q(c), "requestPolicy": policy}


def wild_policy(draw: st.DrawFn) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    put(policy, "default", maybe(draw, quantity(draw, bad=False)))
    if choose(draw, [True, False]):
        policy["validRange"] = {}
        for k in ("min", "max", "step"):
            put(policy["validRange"], k, maybe(draw, quantity(draw, bad=False)))
    else:
        values = [quantity(draw, bad=False) for _ in range(choose(draw, [1, 2, 3, 4]))]
        put(policy, "validValues", maybe(draw, values, empty=[]))
    return policy
