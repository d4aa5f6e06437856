"""Standard device attributes (`webhook/rules/slices/standard.py`): one table of device attributes
and the findings each gets; the formats are those of upstream's `deviceattribute` package."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.fielderrors import FieldPath
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.slices.standard import FORMATS, NUMA_NODE, PCI_BUS_ID, PCIE_ROOT, device_findings, findings

AT = FieldPath.root("spec").child("devices").index(0)
ROOT, BUS, NUMA = (f"spec.devices[0].attributes[{n}]" for n in (PCIE_ROOT, PCI_BUS_ID, NUMA_NODE))


def lines(attrs: dict[str, Any]) -> list[str]:
    return [f.text for f in device_findings({"name": "gpu-0", "attributes": attrs}, "gpu.example.com", AT)]


@pytest.mark.parametrize(("attrs", "want"), [
    pytest.param({PCIE_ROOT: {"string": "pci0000:00"}, PCI_BUS_ID: {"string": "0000:3b:00.0"},
                  NUMA_NODE: {"int": 0}}, [], id="all-three-in-format"),
    pytest.param({PCIE_ROOT: {"string": "pci10000:00"}}, [], id="vmd-domain-of-five-digits"),
    pytest.param({NUMA_NODE: {"ints": [1, 0, 3]}}, [], id="numa-list-own-node-first"),
    pytest.param({"gpu.example.com/numaNode": {"int": -1}, "model": {"string": "x"}}, [],
                 id="other-domains-are-the-drivers-own"),
    pytest.param({NUMA_NODE: {"int": -1}},
                 [f'attribute: {NUMA}: -1 is not a NUMA node (-1 is the kernel\'s "no NUMA affinity"); '
                  f"want {FORMATS[NUMA_NODE]}"], id="numa-minus-one"),
    pytest.param({NUMA_NODE: {"int": 1024}},
                 [f"attribute: {NUMA}: 1024 is past the largest NUMA node id (1023); want {FORMATS[NUMA_NODE]}"],
                 id="numa-past-the-kernel-limit"),
    pytest.param({NUMA_NODE: {"ints": [0, 0]}},
                 [f"attribute: {NUMA}: [0, 0] names a node twice; want {FORMATS[NUMA_NODE]}"], id="numa-list-twice"),
    pytest.param({NUMA_NODE: {"string": "0"}},
                 [f"attribute: {NUMA}: a string, not an int; want {FORMATS[NUMA_NODE]}"], id="numa-as-string"),
    pytest.param({PCIE_ROOT: {"string": "not-a-pcie-root"}},
                 [f'attribute: {ROOT}: "not-a-pcie-root" is not in this format; want {FORMATS[PCIE_ROOT]}'],
                 id="pcie-root-not-in-format"),
    pytest.param({PCIE_ROOT: {"int": 0}}, [f"attribute: {ROOT}: an int, not a string; want {FORMATS[PCIE_ROOT]}"],
                 id="pcie-root-as-int"),
    pytest.param({PCI_BUS_ID: {"string": "0000:3B:00.0"}},
                 [f'attribute: {BUS}: "0000:3B:00.0" is not in this format; want {FORMATS[PCI_BUS_ID]}'],
                 id="bus-id-upper-case"),
    pytest.param({PCIE_ROOT: {"string": "pci0001:00"}, PCI_BUS_ID: {"string": "0000:3b:00.0"}},
                 [f'attribute: {ROOT}: "pci0001:00" is in PCI domain 0001, the device\'s {PCI_BUS_ID} '
                  f'"0000:3b:00.0" in domain 0000; a device\'s root complex is in its own domain'],
                 id="root-in-another-domain"),
    pytest.param({"resource.kubernetes.io/numanode": {"int": 0}},
                 ["attribute: spec.devices[0].attributes[resource.kubernetes.io/numanode]: resource.kubernetes.io/"
                  "numanode is not a standard attribute of Kubernetes 1.37 (those are resource.kubernetes.io/pcieRoot, "
                  "resource.kubernetes.io/pciBusID, resource.kubernetes.io/numaNode); did you mean "
                  "resource.kubernetes.io/numaNode?"], id="misspelt-standard-name"),
])
def test_standard_attributes(attrs: dict[str, Any], want: list[str]) -> None:
    assert lines(attrs) == want


def test_every_device_of_a_slice_is_read_and_odd_shapes_are_no_finding() -> None:
    ctx = RuleContext(gates=FeatureGates())
    obj = {"spec": {"driver": "gpu.example.com", "devices": [
        {"name": "a", "attributes": {NUMA_NODE: {"int": 0}}}, "x", {"name": "b", "attributes": "x"},
        {"name": "c", "attributes": {NUMA_NODE: {"int": -1}}}]}}
    assert [f.text.split(":")[1].strip() for f in findings(obj, ctx)] == [
        "spec.devices[3].attributes[resource.kubernetes.io/numaNode]"]
    assert findings({"spec": None}, ctx) == [] and findings({}, ctx) == []
