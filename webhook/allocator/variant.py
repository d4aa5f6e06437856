"""Which upstream allocator variant a gate set selects (docs/allocator.md §1).

The scheduler turns gates into allocator features (``dynamicresources.AllocatorFeatures``) and
runs the most stable of three implementations that supports all of them: ``stable`` (admin
access, prioritized list, partitionable devices, device taints), ``incubating`` (+ binding
conditions, consumable capacity, fractional capacity ranges) or ``experimental`` (+ list-type
attributes, optional node operations, derived attributes, compatibility groups). The variants
differ in a few decisions (docs/upstream-differences.md); the model records which one applies.
Pure.
"""

from __future__ import annotations

from webhook.gates import FeatureGates, Gate

STABLE, INCUBATING, EXPERIMENTAL = "stable", "incubating", "experimental"
BINDING = "binding"
"""The one feature made of two gates: DRADeviceBindingConditions and DRAResourceClaimDeviceStatus."""

_FEATURES = (Gate.DRA_ADMIN_ACCESS, Gate.DRA_PRIORITIZED_LIST, Gate.DRA_PARTITIONABLE_DEVICES,
             Gate.DRA_DEVICE_TAINTS, Gate.DRA_CONSUMABLE_CAPACITY, Gate.DRA_FRACTIONAL_CAPACITY_RANGE,
             Gate.DRA_LIST_TYPE_ATTRIBUTES, Gate.DRA_OPTIONAL_NODE_OPERATIONS, Gate.DRA_DERIVED_ATTRIBUTES,
             Gate.DRA_DEVICE_COMPATIBILITY_GROUPS)
_STABLE = {Gate.DRA_ADMIN_ACCESS, Gate.DRA_PRIORITIZED_LIST, Gate.DRA_PARTITIONABLE_DEVICES, Gate.DRA_DEVICE_TAINTS}
_INCUBATING = _STABLE | {BINDING, Gate.DRA_CONSUMABLE_CAPACITY, Gate.DRA_FRACTIONAL_CAPACITY_RANGE}


def features(gates: FeatureGates) -> set[str]:
    """The allocator features the scheduler derives from ``gates``."""
    out: set[str] = {g for g in _FEATURES if gates.enabled(g)}
    if gates.enabled(Gate.DRA_DEVICE_BINDING_CONDITIONS) and gates.enabled(Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS):
        out.add(BINDING)
    return out


def variant(gates: FeatureGates) -> str:
    """``stable``, ``incubating`` or ``experimental``: the first whose features cover the gates'."""
    have = features(gates)
    if have <= _STABLE:
        return STABLE
    if have <= _INCUBATING:
        return INCUBATING
    return EXPERIMENTAL
