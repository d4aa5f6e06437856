"""The allocated state of the model: which devices are in use, whole or shared, and how much of
their capacity the shares consume (docs/allocator.md §3). Pure."""

from __future__ import annotations

from typing import Any

from webhook.allocator.devices import Num, interned_str, qnum
from webhook.gates import FeatureGates, Gate


class AllocatedState:
    """§3: devices in use (dedicated), shared devices, aggregated consumed capacity."""

    __slots__ = ("dedicated", "shared", "aggregated")

    def __init__(self) -> None:
        self.dedicated: set[tuple[str, str, str]] = set()
        self.shared: set[tuple[str, str, str]] = set()
        self.aggregated: dict[tuple[str, str, str], dict[str, Num]] = {}

    def copy(self) -> AllocatedState:
        c = AllocatedState()
        c.dedicated = set(self.dedicated)
        c.shared = set(self.shared)
        c.aggregated = {k: dict(v) for k, v in self.aggregated.items()}
        return c

    def is_allocated(self, key: tuple[str, str, str]) -> bool:
        return key in self.dedicated or key in self.shared or key in self.aggregated

    def add_results(self, results: list[Any], gates: FeatureGates, claim_driver_caps: Any = None) -> None:
        """Fold allocation results (raw dicts of ``status.allocation.devices.results``) in."""
        cc = gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY)
        for r in results:
            if not isinstance(r, dict) or r.get("adminAccess") is True:
                continue
            key = (interned_str(r.get("driver")), interned_str(r.get("pool")), interned_str(r.get("device")))
            if cc and r.get("shareID"):
                self.shared.add(key)
                consumed = r.get("consumedCapacity")
                if isinstance(consumed, dict):
                    agg = self.aggregated.setdefault(key, {})
                    for name, v in consumed.items():
                        val = qnum(v)
                        if isinstance(name, str) and val is not None:
                            agg[name] = agg.get(name, 0) + val  # keyed as written (§7.3)
            else:
                self.dedicated.add(key)
