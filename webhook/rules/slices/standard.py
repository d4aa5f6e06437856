"""Standard device attributes (``resource.kubernetes.io/*``): the formats Kubernetes 1.37 defines.

The apiserver checks an attribute's name and that it holds one typed value, not what a standard
attribute means. Upstream's ``k8s.io/dynamic-resource-allocation/deviceattribute`` package,
which drivers use to publish them, defines three:

- ``pcieRoot``: a string ``pci<domain>:<bus>``, the PCIe root complex as sysfs names it
  (``pci0000:00``: lowercase hex, a domain of four or more digits, a bus of two);
- ``pciBusID``: a string in extended BDF notation ``<domain>:<bus>:<device>.<function>``
  (``0000:3b:00.0``: lowercase hex, 4:2:2.1 digits, the helper's own pattern);
- ``numaNode``: the device's NUMA node, an int from 0 to 1023 (the kernel's limit), or with
  ``DRAListTypeAttributes`` a list of them, the device's own node first; a device without NUMA
  affinity (the kernel's -1) must not publish it at all (it would match every other such device
  in a ``matchAttribute`` constraint).

A value that is not in its format, another name in the domain, or a ``pcieRoot`` in another PCI
domain than the device's ``pciBusID`` becomes an ``attribute:`` finding naming the field and the
expected format. Pure; raw JSON in, findings out, never raises.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from webhook.fielderrors import FieldPath
from webhook.findings import Finding
from webhook.rules.context import RuleContext

DOMAIN = "resource.kubernetes.io/"
PCIE_ROOT, PCI_BUS_ID, NUMA_NODE = (f"{DOMAIN}{n}" for n in ("pcieRoot", "pciBusID", "numaNode"))
NUMA_NODES_MAX = 1024
"""NUMA node ids are below this (the kernel's MAX_NUMNODES; upstream's helper refuses more)."""

PCIE_ROOT_RE = re.compile(r"pci([0-9a-f]{4,8}):[0-9a-f]{2}\Z")
PCI_BUS_ID_RE = re.compile(r"([0-9a-f]{4}):[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]\Z")

FORMATS = {
    PCIE_ROOT: 'a string "pci<domain>:<bus>" in lowercase hex, e.g. "pci0000:00"',
    PCI_BUS_ID: 'a string "<domain>:<bus>:<device>.<function>" in lowercase hex, e.g. "0000:3b:00.0"',
    NUMA_NODE: (f"an int from 0 to {NUMA_NODES_MAX - 1} (or, with DRAListTypeAttributes, a list of them, the "
                f"device's own node first); a device without NUMA affinity must not publish it"),
}
"""The expected format of each standard attribute, as findings quote it."""


def _line(path: FieldPath, what: str, name: str) -> Finding:
    return Finding("attribute", f"attribute: {path}: {what}; want {FORMATS[name]}",
                   f"attribute: {path}: {what}")


def _shown(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _value(attr: Any) -> tuple[str, Any]:
    """(the one member set, its value) of an attribute value; ("", None) when not exactly one."""
    if not isinstance(attr, dict):
        return "", None
    members = [(k, v) for k, v in attr.items() if v is not None]
    return members[0] if len(members) == 1 else ("", None)


def _full(key: Any, driver: str) -> str:
    """An attribute's fully qualified name (a bare name is in the driver's own domain)."""
    key = str(key)
    return key if "/" in key else f"{driver}/{key}"


def _numa_problem(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        return "not an int"
    if v < 0:
        return f"{v} is not a NUMA node (-1 is the kernel's \"no NUMA affinity\")"
    if v >= NUMA_NODES_MAX:
        return f"{v} is past the largest NUMA node id ({NUMA_NODES_MAX - 1})"
    return ""


def _a(kind: str) -> str:
    """"an int", "a string", "a list of strings", ... for the member an attribute value sets."""
    kind = kind or "value"
    if kind.endswith("s"):  # the list members: ints, strings, versions, bools
        return f"a list of {kind}"
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _check(name: str, kind: str, value: Any) -> str:
    """What is wrong with one standard attribute's value ("" when it is in its format)."""
    if name == NUMA_NODE:
        if kind == "int":
            return _numa_problem(value)
        if kind == "ints" and isinstance(value, list):
            if not value:
                return "an empty list"
            bad = next((p for p in map(_numa_problem, value) if p), "")
            if bad:
                return f"{_shown(value)}: {bad}"
            return f"{_shown(value)} names a node twice" if len(set(value)) != len(value) else ""
        return f"{_a(kind)}, not an int"
    if kind != "string" or not isinstance(value, str):
        return f"{_a(kind)}, not a string"
    pattern = PCIE_ROOT_RE if name == PCIE_ROOT else PCI_BUS_ID_RE
    return "" if pattern.match(value) else f"{_shown(value)} is not in this format"


def device_findings(device: Any, driver: str, path: FieldPath) -> list[Finding]:
    """The standard-attribute findings of one device at ``path``."""
    attrs = device.get("attributes") if isinstance(device, dict) else None
    if not isinstance(attrs, dict):
        return []
    out: list[Finding] = []
    values: dict[str, str] = {}
    for key, attr in attrs.items():
        name = _full(key, driver)
        if not name.startswith(DOMAIN):
            continue
        p = path.child("attributes").key(str(key))
        if name not in FORMATS:
            short = name[len(DOMAIN):]
            close = difflib.get_close_matches(short.lower(), [n[len(DOMAIN):].lower() for n in FORMATS], n=1)
            hint = next((n for n in FORMATS if close and n[len(DOMAIN):].lower() == close[0]), "")
            out.append(Finding("attribute", f"attribute: {p}: {name} is not a standard attribute of Kubernetes 1.37 "
                                            f"(those are {', '.join(FORMATS)})"
                                            + (f"; did you mean {hint}?" if hint else "")))
            continue
        kind, value = _value(attr)
        if problem := _check(name, kind, value):
            out.append(_line(p, problem, name))
        elif kind == "string":
            values[name] = value
    root, bus = PCIE_ROOT_RE.match(values.get(PCIE_ROOT, "")), PCI_BUS_ID_RE.match(values.get(PCI_BUS_ID, ""))
    if root and bus and int(root.group(1), 16) != int(bus.group(1), 16):
        out.append(Finding("attribute", f"attribute: {path.child('attributes').key(PCIE_ROOT)}: "
                                        f"{_shown(values[PCIE_ROOT])} is in PCI domain {root.group(1)}, the device's "
                                        f"{PCI_BUS_ID} {_shown(values[PCI_BUS_ID])} in domain {bus.group(1)}; "
                                        f"a device's root complex is in its own domain"))
    return out


def findings(obj: dict[str, Any], ctx: RuleContext) -> list[Finding]:
    """``KindRules.findings`` of a ResourceSlice: every device's standard attributes."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), list):
        return []
    driver = spec["driver"] if isinstance(spec.get("driver"), str) else ""
    devices = FieldPath.root("spec").child("devices")
    out: list[Finding] = []
    for i, device in enumerate(spec["devices"]):
        out.extend(device_findings(device, driver, devices.index(i)))
    return out
