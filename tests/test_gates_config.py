"""Feature gates and settings: Kubernetes syntax, unknown names refused, config files."""

from __future__ import annotations

import pytest

from webhook import ConfigError
from webhook.config import Settings, parse_config
from webhook.gates import KNOWN, FeatureGates


def test_defaults_are_the_1_37_defaults():
    g = FeatureGates.defaults()
    assert g.enabled("DRAPartitionableDevices") and g.enabled("DRAConsumableCapacity")
    assert not g.enabled("DRADeviceCompatibilityGroups")
    assert not g.enabled("GenericWorkload") and not g.enabled("DRAWorkloadResourceClaims")
    assert g.changed() == {}
    for name in ("DRAPartitionableDevices", "DRAConsumableCapacity", "DRADeviceCompatibilityGroups",
                 "GenericWorkload", "DRAWorkloadResourceClaims", "CompositePodGroup"):
        assert name in KNOWN


@pytest.mark.parametrize(("spec", "want"), [
    pytest.param("DRADeviceCompatibilityGroups=true", {"DRADeviceCompatibilityGroups": True}, id="one"),
    pytest.param(" GenericWorkload=True , DRAConsumableCapacity=false ",
                 {"GenericWorkload": True, "DRAConsumableCapacity": False}, id="spaces-and-case"),
    pytest.param("", {}, id="empty"),
    pytest.param("DRAConsumableCapacity=true", {}, id="default-value-is-no-change"),
])
def test_parse_spec(spec, want):
    assert FeatureGates.parse(spec).changed() == want


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param("NoSuchGate=true", "unrecognized feature gate: NoSuchGate", id="unknown"),
    pytest.param("GenericWorkload=yes", "invalid value of GenericWorkload=yes", id="bad-bool"),
    pytest.param("GenericWorkload", "missing bool value for GenericWorkload", id="no-value"),
    pytest.param("DRAPrioritizedList=false", "locked to true", id="locked"),
])
def test_bad_specs_are_config_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        FeatureGates.parse(spec)


def test_spec_round_trips():
    g = FeatureGates.parse("GenericWorkload=true,DRAConsumableCapacity=false")
    assert FeatureGates.parse(g.spec()) == g


def test_config_file_overrides_gates_and_limits():
    s = parse_config("featureGates:\n  DRADeviceCompatibilityGroups: true\nmaxWarnings: 5\n"
                     "feasibility: false\n", Settings())
    assert s.gates.enabled("DRADeviceCompatibilityGroups")
    assert s.max_warnings == 5 and s.feasibility is False
    assert len(s.config_hash) == 16


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("featureGates: {Nope: true}", "unrecognized feature gate", id="unknown-gate"),
    pytest.param("maxWarnings: -1", "must be greater than zero", id="negative-limit"),
    pytest.param("feasibility: maybe", "must be true or false", id="bad-bool"),
    pytest.param("colour: blue", "unknown key 'colour'", id="unknown-key"),
    pytest.param("- a\n- b", "must be a mapping", id="not-a-mapping"),
    pytest.param("a: [", "not valid YAML", id="bad-yaml"),
])
def test_bad_config_files_are_refused(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text, Settings())


@pytest.mark.parametrize(("names", "value", "want_on", "want_off"), [
    pytest.param(["DRAWorkloadResourceClaims"], True, {"DRAWorkloadResourceClaims", "GenericWorkload"}, set(),
                 id="on-brings-what-it-requires"),
    pytest.param(["CompositePodGroup"], True,
                 {"CompositePodGroup", "TopologyAwareWorkloadScheduling", "GenericWorkload"}, set(),
                 id="on-brings-requirements-transitively"),
    pytest.param(["DRADeviceTaints"], False, set(), {"DRADeviceTaints", "DRADeviceTaintRules"},
                 id="off-takes-what-requires-it"),
    pytest.param(["DRAPartitionableDevices"], False, set(), {"DRAPartitionableDevices"},
                 id="off-with-dependents-already-off"),
])
def test_toggled_repairs_dependencies(names, value, want_on, want_off):
    g = FeatureGates().toggled(names, value)
    assert {n for n in want_on if g.values[n]} == want_on
    assert {n for n in want_off if not g.values[n]} == want_off


def test_toggled_refuses_locked_and_unknown_gates():
    with pytest.raises(ConfigError, match="locked"):
        FeatureGates().toggled(["DRAPrioritizedList"], False)
    with pytest.raises(ConfigError, match="unrecognized"):
        FeatureGates().toggled(["DRAFancy"], True)


@pytest.mark.parametrize(("spec", "needs"), [
    pytest.param("DRAWorkloadResourceClaims=true", "GenericWorkload", id="workload-claims-need-generic-workload"),
    pytest.param("DRADeviceTaints=false", "DRADeviceTaints", id="taint-rules-need-taints"),
    pytest.param("GenericWorkload=true,CompositePodGroup=true", "TopologyAwareWorkloadScheduling",
                 id="composite-needs-topology"),
])
def test_a_gate_without_what_it_depends_on_is_refused_as_kubernetes_refuses_it(spec, needs):
    with pytest.raises(ConfigError, match=rf"is enabled, but depends on features that are disabled: \[.*{needs}"):
        FeatureGates.parse(spec)
