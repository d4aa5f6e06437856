"""Feature gates: the gates Kubernetes 1.37 knows for DRA and workload scheduling.

Stdlib only. ``FeatureGates`` is an immutable snapshot passed down to rules and the allocator;
nothing below the config layer reads flags or the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from webhook import ConfigError

ALPHA, BETA, GA = "Alpha", "Beta", "GA"


class Gate(StrEnum):
    """Gate names. ``FeatureGates.enabled`` takes only these, so a misspelt gate is a mypy error."""

    DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
    DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
    DRA_DEVICE_COMPATIBILITY_GROUPS = "DRADeviceCompatibilityGroups"
    DRA_FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"
    DRA_DEVICE_TAINTS = "DRADeviceTaints"
    DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
    DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
    DRA_LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
    DRA_NODE_ALLOCATABLE_RESOURCES = "DRANodeAllocatableResources"
    DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
    DRA_DERIVED_ATTRIBUTES = "DRADerivedAttributes"
    DRA_RESOURCE_POOL_STATUS = "DRAResourcePoolStatus"
    DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
    DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
    DRA_ADMIN_ACCESS = "DRAAdminAccess"
    GENERIC_WORKLOAD = "GenericWorkload"
    DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"
    COMPOSITE_POD_GROUP = "CompositePodGroup"
    POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
    DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
    DRA_PARTITIONABLE_DEVICES_TYPE = "DRAPartitionableDevicesType"
    DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"
    DRA_RESOURCE_CLAIM_GRANULAR_STATUS_AUTHORIZATION = "DRAResourceClaimGranularStatusAuthorization"
    DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"
    NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
    WORKLOAD_WITH_JOB = "WorkloadWithJob"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One known gate: stage, 1.37 default, lock, and what it changes here."""

    name: Gate
    stage: str
    default: bool
    locked: bool = False
    effect: str = ""
    """What the gate changes in this tool (shown by ``dra-webhook gates``)."""
    requires: tuple[Gate, ...] = ()
    """Gates that must be on for this one to be on (Kubernetes refuses to start otherwise)."""


_DRA = (Gate.DYNAMIC_RESOURCE_ALLOCATION,)
# Stages, defaults, locks and dependencies as the 1.37 components register them at their default
# emulation version (tests/differential/test_gates_diff.py compares with `dra-allocate --print-gates`).
_GATES = (
    GateSpec(Gate.DRA_PARTITIONABLE_DEVICES, BETA, True, requires=_DRA, effect=(
        "off: strips sharedCounters, consumesCounters, perDeviceNodeSelection and per-device node "
        "fields from new ResourceSlices; allocator skips such slices and devices")),
    GateSpec(Gate.DRA_CONSUMABLE_CAPACITY, BETA, True, requires=_DRA, effect=(
        "off: strips allowMultipleAllocations, requestPolicy, claim capacity requests and "
        "distinctAttribute; devices are never shared; no capacity defaulting")),
    GateSpec(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS, ALPHA, False,
             requires=(*_DRA, Gate.DRA_PARTITIONABLE_DEVICES), effect=(
                 "off: strips consumesCounters[].compatibilityGroups on write; allocator treats pools "
                 "with grouped devices as incomplete. on: group intersections enforced")),
    GateSpec(Gate.DRA_FRACTIONAL_CAPACITY_RANGE, BETA, False, requires=(Gate.DRA_CONSUMABLE_CAPACITY,), effect=(
        "on: requestPolicy ranges use milli-unit arithmetic; off (the 1.37 default while the "
        "minimum compatibility version is 1.36): values rounded up to integers")),
    GateSpec(Gate.DRA_DEVICE_TAINTS, GA, True, requires=_DRA, effect=(
        "off: strips device taints and request tolerations; allocator ignores taints, DeviceTaintRules too")),
    GateSpec(Gate.DRA_DEVICE_TAINT_RULES, GA, True, requires=(Gate.DRA_DEVICE_TAINTS,), effect=(
        "off: the allocator and the impact preview ignore DeviceTaintRules (the apiserver still "
        "serves and validates them)")),
    GateSpec(Gate.DRA_DEVICE_BINDING_CONDITIONS, BETA, True,
             requires=(*_DRA, Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS), effect=(
                 "off (or DRAResourceClaimDeviceStatus off): strips binding conditions; such devices "
                 "are not allocatable")),
    GateSpec(Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS, GA, True, locked=True, effect="claim status.devices allowed"),
    GateSpec(Gate.DRA_RESOURCE_CLAIM_GRANULAR_STATUS_AUTHORIZATION, BETA, True,
             requires=(*_DRA, Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS),
             effect="authorization of claim status updates (not handled here)"),
    GateSpec(Gate.DRA_LIST_TYPE_ATTRIBUTES, ALPHA, False, requires=_DRA, effect=(
        "off: strips list-valued attributes (bools/ints/strings/versions)")),
    GateSpec(Gate.DRA_NODE_ALLOCATABLE_RESOURCES, ALPHA, False, requires=_DRA, effect=(
        "off: strips devices[].nodeAllocatableResources")),
    GateSpec(Gate.DRA_OPTIONAL_NODE_OPERATIONS, ALPHA, False, requires=(*_DRA, Gate.NODE_DECLARED_FEATURES),
             effect="off: strips spec.skipNodeOperations from new ResourceSlices"),
    GateSpec(Gate.DRA_DERIVED_ATTRIBUTES, ALPHA, False, requires=_DRA, effect="off: strips derivedAttributes"),
    GateSpec(Gate.DRA_RESOURCE_POOL_STATUS, ALPHA, False, requires=_DRA,
             effect="ResourcePoolStatusRequest API (not handled here); needed by DRAPartitionableDevicesType"),
    GateSpec(Gate.DRA_PARTITIONABLE_DEVICES_TYPE, ALPHA, False,
             requires=(*_DRA, Gate.DRA_PARTITIONABLE_DEVICES, Gate.DRA_RESOURCE_POOL_STATUS),
             effect="off: strips spec.partitionTypeAttribute"),
    GateSpec(Gate.DRA_SCHEDULER_FILTER_TIMEOUT, BETA, True, requires=_DRA,
             effect="scheduler filter timeout (not handled here)"),
    GateSpec(Gate.DRA_EXTENDED_RESOURCE, GA, True, locked=True, requires=_DRA,
             effect="DeviceClass extendedResourceName allowed"),
    GateSpec(Gate.DRA_PRIORITIZED_LIST, GA, True, locked=True, requires=_DRA,
             effect="firstAvailable requests allowed"),
    GateSpec(Gate.DRA_ADMIN_ACCESS, GA, True, locked=True, requires=_DRA, effect="adminAccess requests allowed"),
    GateSpec(Gate.DYNAMIC_RESOURCE_ALLOCATION, GA, True, locked=True, effect="the resource.k8s.io API"),
    GateSpec(Gate.NODE_DECLARED_FEATURES, GA, True, locked=True, effect="needed by DRAOptionalNodeOperations"),
    GateSpec(Gate.GENERIC_WORKLOAD, BETA, False, effect=(
        "off (default): a default apiserver does not serve Workload/PodGroup; we still "
        "validate and add one warning")),
    GateSpec(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS, BETA, False, requires=(*_DRA, Gate.GENERIC_WORKLOAD), effect=(
        "off: strips PodGroup and template resourceClaims on write")),
    GateSpec(Gate.COMPOSITE_POD_GROUP, ALPHA, False,
             requires=(Gate.GENERIC_WORKLOAD, Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING), effect=(
                 "off: strips parentCompositePodGroupName and compositePodGroupTemplates on write")),
    GateSpec(Gate.POD_GROUP_PREEMPTION_POLICY, ALPHA, False, requires=(Gate.GENERIC_WORKLOAD,),
             effect="off: strips preemptionPolicy on write"),
    GateSpec(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, ALPHA, False, requires=(Gate.GENERIC_WORKLOAD,), effect=(
        "off: strips schedulingConstraints on write")),
    GateSpec(Gate.WORKLOAD_WITH_JOB, ALPHA, False, requires=(Gate.GENERIC_WORKLOAD,),
             effect="Job integration of workloads (not handled here)"),
)

KNOWN: Mapping[str, GateSpec] = MappingProxyType({g.name.value: g for g in _GATES})


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """An immutable set of gate values; unknown names are refused at construction."""

    values: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType(
        {g.name.value: g.default for g in _GATES}))

    @classmethod
    def defaults(cls) -> FeatureGates:
        return cls()

    @classmethod
    def parse(cls, spec: str | None, base: FeatureGates | None = None) -> FeatureGates:
        """Parse Kubernetes ``--feature-gates`` syntax (``A=true,B=false``) over ``base``.

        Raises ``ConfigError`` for unknown names, bad values or a locked gate set to its opposite.
        """
        return (base or cls()).with_overrides(parse_spec(spec or ""))

    def with_overrides(self, overrides: Mapping[str, bool]) -> FeatureGates:
        values = dict(self.values)
        for name, value in overrides.items():
            gate = KNOWN.get(name)
            if gate is None:
                raise ConfigError(f"unrecognized feature gate: {name}")
            if gate.locked and value != gate.default:
                raise ConfigError(
                    f"cannot set feature gate {name} to {str(value).lower()}, "
                    f"feature is locked to {str(gate.default).lower()}")
            values[name] = value
        missing = _unmet_dependencies(values)
        if missing:
            raise ConfigError("; ".join(f"{g} is enabled, but depends on features that are disabled: "
                                        f"[{' '.join(deps)}]" for g, deps in missing.items()))
        return FeatureGates(MappingProxyType(values))

    def toggled(self, names: Iterable[str], value: bool) -> FeatureGates:
        """``names`` set to ``value``, with the dependencies repaired as an operator must: turning a
        gate on also turns on the gates it requires; turning one off also turns off the gates that
        require it. Raises ``ConfigError`` for unknown or locked gates."""
        values = dict(self.values)
        todo = list(names)
        while todo:
            name = todo.pop()
            spec = KNOWN.get(name)
            if spec is None:
                raise ConfigError(f"unrecognized feature gate: {name}")
            if values[name] == value or (spec.locked and value == spec.default):
                continue
            values[name] = value
            if value:
                todo.extend(str(d) for d in spec.requires)
            else:
                todo.extend(g.name for g in _GATES if spec.name in g.requires)
        return self.with_overrides({n: v for n, v in values.items() if v != self.values[n]})

    def enabled(self, name: Gate) -> bool:
        """Whether gate ``name`` is on."""
        return self.values[name]

    def changed(self) -> dict[str, bool]:
        """Gates that differ from their 1.37 default."""
        return {n: v for n, v in self.values.items() if v != KNOWN[n].default}

    def spec(self) -> str:
        """The ``--feature-gates`` text that reproduces this snapshot (non-defaults only)."""
        return ",".join(f"{n}={str(v).lower()}" for n, v in sorted(self.changed().items()))

    def as_dict(self) -> dict[str, bool]:
        return dict(sorted(self.values.items()))


def _unmet_dependencies(values: Mapping[str, bool]) -> dict[str, list[str]]:
    """Enabled gates whose required gates are off, as Kubernetes checks them at start-up."""
    out: dict[str, list[str]] = {}
    for spec in _GATES:
        if values.get(spec.name, False):
            off = [str(d) for d in spec.requires if not values.get(d, False)]
            if off:
                out[str(spec.name)] = off
    return out


def parse_spec(spec: str | Mapping[str, object]) -> dict[str, bool]:
    """``"A=true,B=false"`` (or a mapping from a config file) → ``{"A": True, "B": False}``."""
    if isinstance(spec, Mapping):
        items: Iterable[tuple[str, object]] = spec.items()
    else:
        pairs = [p.strip() for p in spec.split(",") if p.strip()]
        items = []
        for p in pairs:
            name, sep, text = p.partition("=")
            if not sep:
                raise ConfigError(f"missing bool value for {name.strip()}")
            items.append((name.strip(), text.strip()))
    out: dict[str, bool] = {}
    for name, value in items:
        if name not in KNOWN:
            raise ConfigError(f"unrecognized feature gate: {name}")
        out[name] = _as_bool(name, value)
    return out


def _as_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "t"):
        return True
    if text in ("false", "0", "f"):
        return False
    raise ConfigError(f"invalid value of {name}={value}, err: strconv.ParseBool: parsing "
                      f"{str(value)!r}: invalid syntax")
