"""Feature gates: the gates Kubernetes 1.37 knows for DRA and workload scheduling.

Stdlib only. ``FeatureGates`` is an immutable snapshot passed down to rules and the allocator;
nothing below the config layer reads flags or the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from webhook import ConfigError

ALPHA, BETA, GA = "Alpha", "Beta", "GA"


@dataclass(frozen=True, slots=True)
class Gate:
    name: str
    stage: str
    default: bool
    locked: bool = False
    effect: str = ""
    """What the gate changes in this tool (shown by ``dra-webhook gates``)."""


_GATES = (
    Gate("DRAPartitionableDevices", BETA, True, effect=(
        "off: strips sharedCounters, consumesCounters, perDeviceNodeSelection and per-device node "
        "fields from new ResourceSlices; allocator skips such slices and devices")),
    Gate("DRAConsumableCapacity", BETA, True, effect=(
        "off: strips allowMultipleAllocations, requestPolicy, claim capacity requests and "
        "distinctAttribute; devices are never shared; no capacity defaulting")),
    Gate("DRADeviceCompatibilityGroups", ALPHA, False, effect=(
        "off: strips consumesCounters[].compatibilityGroups on write; allocator treats pools "
        "with grouped devices as incomplete. on: group intersections enforced")),
    Gate("DRAFractionalCapacityRange", BETA, True, effect=(
        "on: requestPolicy ranges use milli-unit arithmetic; off: values rounded up to integers")),
    Gate("DRADeviceTaints", GA, True, effect=(
        "off: strips device taints and request tolerations; allocator ignores taints")),
    Gate("DRADeviceBindingConditions", BETA, True, effect=(
        "off (or DRAResourceClaimDeviceStatus off): strips binding conditions; such devices "
        "are not allocatable")),
    Gate("DRAResourceClaimDeviceStatus", GA, True, effect="claim status.devices allowed"),
    Gate("DRAListTypeAttributes", ALPHA, False, effect=(
        "off: strips list-valued attributes (bools/ints/strings/versions)")),
    Gate("DRANodeAllocatableResources", ALPHA, False, effect=(
        "off: strips devices[].nodeAllocatableResources")),
    Gate("DRAOptionalNodeOperations", ALPHA, False, effect="off: skipNodeOperations rejected"),
    Gate("DRADerivedAttributes", ALPHA, False, effect="off: derivedAttributes rejected"),
    Gate("DRAResourcePoolStatus", ALPHA, False, effect="off: strips spec.partitionTypeAttribute"),
    Gate("DRAExtendedResource", GA, True, effect="DeviceClass extendedResourceName allowed"),
    Gate("DRAPrioritizedList", GA, True, locked=True, effect="firstAvailable requests allowed"),
    Gate("DRAAdminAccess", GA, True, locked=True, effect="adminAccess requests allowed"),
    Gate("GenericWorkload", BETA, False, effect=(
        "off (default): a default apiserver does not serve Workload/PodGroup; we still "
        "validate and add one warning")),
    Gate("DRAWorkloadResourceClaims", BETA, False, effect=(
        "off: strips PodGroup and template resourceClaims on write")),
    Gate("CompositePodGroup", ALPHA, False, effect=(
        "off: parentCompositePodGroupName and compositePodGroupTemplates are Forbidden")),
    Gate("PodGroupPreemptionPolicy", ALPHA, False, effect="off: preemptionPolicy is Forbidden"),
    Gate("TopologyAwareWorkloadScheduling", ALPHA, False, effect=(
        "off: strips schedulingConstraints on write")),
)

KNOWN: Mapping[str, Gate] = MappingProxyType({g.name: g for g in _GATES})


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """An immutable set of gate values; unknown names are refused at construction."""

    values: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType(
        {g.name: g.default for g in _GATES}))

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
        return FeatureGates(MappingProxyType(values))

    def enabled(self, name: str) -> bool:
        """Whether ``name`` is on. A name we do not know is a programming error (KeyError)."""
        return self.values[name]

    def changed(self) -> dict[str, bool]:
        """Gates that differ from their 1.37 default."""
        return {n: v for n, v in self.values.items() if v != KNOWN[n].default}

    def spec(self) -> str:
        """The ``--feature-gates`` text that reproduces this snapshot (non-defaults only)."""
        return ",".join(f"{n}={str(v).lower()}" for n, v in sorted(self.changed().items()))

    def as_dict(self) -> dict[str, bool]:
        return dict(sorted(self.values.items()))


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
