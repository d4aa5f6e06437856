"""Gate profiles of the differential tests, built from upstream's own gate table.

`dra-allocate --print-gates` lists every gate the 1.37 components register, with its default and
its dependencies. A profile turns gates on or off and then repairs dependencies the way an
operator must (upstream refuses to start otherwise): gates that need a gate turned off go off.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess

from tests.rig.cluster import BIN, ensure_binaries

#: The gates the profiles vary: every DRA gate and the workload-scheduling gates.
SCHEDULING = ("GenericWorkload", "DRAWorkloadResourceClaims", "CompositePodGroup", "PodGroupPreemptionPolicy",
              "TopologyAwareWorkloadScheduling", "WorkloadWithJob")
OFF_IN_TURN = ("DRAPartitionableDevices", "DRAConsumableCapacity", "DRADeviceCompatibilityGroups",
               "DRAWorkloadResourceClaims", "GenericWorkload")


@functools.cache
def upstream_gates() -> dict[str, dict[str, object]]:
    """name -> {default, stage, locked, dependencies} as the 1.37 components know them."""
    ensure_binaries()
    out = subprocess.run([str(BIN / "dra-allocate"), "--print-gates"], capture_output=True, text=True,
                         timeout=60, check=True)
    return {g["name"]: g for g in json.loads(out.stdout)}


def _dependents(gate: str) -> set[str]:
    table = upstream_gates()
    out: set[str] = set()
    todo = [gate]
    while todo:
        g = todo.pop()
        for name, info in table.items():
            if g in info["dependencies"] and name not in out:  # type: ignore[operator]
                out.add(name)
                todo.append(name)
    return out


def _with_dependencies(gates: set[str]) -> set[str]:
    table = upstream_gates()
    out, todo = set(gates), list(gates)
    while todo:
        for dep in table[todo.pop()]["dependencies"]:  # type: ignore[attr-defined]
            if dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


def all_on() -> dict[str, bool]:
    """Every DRA and workload-scheduling gate on (with what they depend on), locked gates left alone."""
    table = upstream_gates()
    wanted = {n for n in table if n.startswith("DRA") or n in SCHEDULING}
    return {n: True for n in sorted(_with_dependencies(wanted)) if not table[n]["locked"]}


def every_profile() -> dict[str, dict[str, bool]]:
    """name -> apiserver gates: 1.37 defaults, everything on, and each of OFF_IN_TURN off in turn."""
    on = all_on()
    out: dict[str, dict[str, bool]] = {"all-on": on, "defaults": {}}
    for gate in OFF_IN_TURN:
        off = {gate} | _dependents(gate)
        out[f"no-{gate}"] = {**on, **{g: False for g in off if g in upstream_gates()
                                      and not upstream_gates()[g]["locked"]}}
    return out


def profiles() -> dict[str, dict[str, bool]]:
    """`every_profile()`, narrowed by `DIFF_PROFILES=all-on,defaults` (names, comma-separated) for
    quick local runs; `all-on` always stays (generated cases are judged in it).
    """
    out = every_profile()
    if only := os.environ.get("DIFF_PROFILES"):
        keep = {"all-on", *(n.strip() for n in only.split(","))}
        out = {k: v for k, v in out.items() if k in keep}
    return out
