"""Allocator cases where we once answered differently from upstream's structured allocator.

Each row is the smallest form of a disagreement the generated differential test found (issue
15): a cluster state, the `simulate` inputs, gate overrides over the 1.37 defaults, and upstream's
answer (None: infeasible; else the devices per claim, in order). `test_upstream_rows.py` checks
ours against them without Go; `tests/differential/test_alloc_rows.py` checks that they are what
`dra-allocate` answers, so a row cannot drift away from upstream.
"""

from __future__ import annotations

from typing import Any

from tests.allocator.builders import (
    DRV,
    claim,
    counters,
    dev,
    device_class,
    first_available,
    node,
    req,
    result,
    rslice,
    taint_rule,
    toleration,
)

NODES = [node("node-1", zone="a"), node("node-2", zone="b"), device_class()]
#: The stable allocator runs when nothing beyond its features is on.
STABLE = {"DRAConsumableCapacity": False, "DRAFractionalCapacityRange": False, "DRADeviceBindingConditions": False}
NO_CC = {"DRAConsumableCapacity": False, "DRAFractionalCapacityRange": False}
NO_PD = {"DRAPartitionableDevices": False, "DRADeviceCompatibilityGroups": False}
#: PodGroup resourceClaims are stored (and simulated) only with these on.
WORKLOAD = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
#: The experimental allocator, with the alpha features the rows need.
EXPERIMENTAL = {"DRADeviceCompatibilityGroups": True, "DRAListTypeAttributes": True}


def C(*requests: dict[str, Any], name: str = "claim-0", **kw: Any) -> dict[str, Any]:
    return claim(name, *requests, **kw)


def sel(expr: str) -> list[str]:
    return [expr]


def group(*claims: str, templates: tuple[str, ...] = ()) -> dict[str, Any]:
    """A PodGroup of claims (and templates) found in the state: inputs are stored as the gates
    say, so a field a gate strips reaches the allocator only from the state."""
    refs = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    refs += [{"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"}, "spec": {"resourceClaims": refs}}


MODEL = f'device.attributes["{DRV}"].model == "a"'

Row = tuple[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, bool], list[list[str]] | None]

ROWS: list[Row] = [
    # F1: capacity request names are looked up in the device's capacity map as written.
    ("capacity-request-qualified-vs-bare-device-name", NODES + [rslice("s1", [
        dev("bare", allowMultipleAllocations=True, capacity={"mem": {"value": "8Gi"}}),
        dev("qual", allowMultipleAllocations=True, capacity={f"{DRV}/mem": {"value": "8Gi"}})])],
     [C(req(capacity={"requests": {f"{DRV}/mem": "1Gi"}}))], {}, [["qual"]]),
    ("capacity-request-bare-vs-qualified-device-name", NODES + [rslice("s1", [
        dev("qual", capacity={f"{DRV}/mem": {"value": "8Gi"}}), dev("bare", capacity={"mem": {"value": "8Gi"}})])],
     [C(req(capacity={"requests": {"mem": "1Gi"}}))], {}, [["bare"]]),
    # F2: a fatal error (CEL at run time, All over an incomplete pool) ends the whole attempt.
    ("cel-runtime-error-on-first-node-ends-the-attempt", NODES + [
        rslice("s1", [dev("no-model")], node_name="node-1"),
        rslice("s2", [dev("a", attrs={"model": "a"})], node_name="node-2", pool="p2")],
     [C(req(selectors=sel(MODEL)))], {}, None),
    ("all-over-incomplete-pool-on-first-node-ends-the-attempt", NODES + [
        rslice("half", [dev("x")], node_name="node-1", count=2),
        rslice("s2", [dev("y")], node_name="node-2", pool="p2")],
     [C(req(mode="All"))], {}, None),
    # F18: kube-scheduler filters every node (below 100): a fatal error on a node after the one
    # that fits still fails the attempt (issue 25: the three kinds its differential run saw).
    ("cel-runtime-error-on-a-later-node-fails-the-attempt", NODES + [
        rslice("s1", [dev("a", attrs={"model": "a"})], node_name="node-1"),
        rslice("s2", [dev("no-model")], node_name="node-2", pool="p2")],
     [C(req(selectors=sel(MODEL)))], {}, None),
    ("all-over-incomplete-pool-on-a-later-node-fails-the-attempt", NODES + [
        rslice("s1", [dev("x")], node_name="node-1"),
        rslice("half", [dev("y")], node_name="node-2", pool="p2", count=2)],
     [C(req(mode="All"))], {}, None),
    ("all-with-unmatched-attribute-on-a-later-node-fails-the-attempt", NODES + [
        rslice("s1", [dev("a", attrs={"numa": 0}), dev("b", attrs={"numa": 0})], node_name="node-1"),
        rslice("s2", [dev("c", attrs={"numa": 0}), dev("d", attrs={"numa": 1})], node_name="node-2", pool="p2")],
     [C(req(mode="All"), constraints=[{"matchAttribute": f"{DRV}/numa"}])], {}, None),
    ("a-later-node-that-only-fails-leaves-the-answer", NODES + [
        rslice("s1", [dev("a", attrs={"model": "a"})], node_name="node-1"),
        rslice("s2", [dev("b", attrs={"model": "b"})], node_name="node-2", pool="p2")],
     [C(req(selectors=sel(MODEL)))], {}, [["a"]]),
    # F4: distinctAttribute is enforced whatever DRAConsumableCapacity says...
    # (stored while the gate was on: CREATE strips distinctAttribute with it off)
    ("distinct-attribute-with-consumable-capacity-off", NODES + [rslice("s1", [
        dev("a", attrs={"pf": "pf0"}), dev("b", attrs={"pf": "pf0"}), dev("c", attrs={"pf": "pf1"})]),
        C(req("r0"), req("r1"), constraints=[{"distinctAttribute": f"{DRV}/pf"}])],
     [group("claim-0")], {**NO_CC, **WORKLOAD}, [["a", "c"]]),
    # ... except by the stable allocator, which does not know the constraint (F4), never looks at
    # capacity requests (F3) and shows CEL no allowMultipleAllocations (F5).
    ("stable-distinct-attribute-is-an-error", NODES + [rslice("s1", [dev("a", attrs={"pf": "pf0"})]),
                                                        C(req(), constraints=[{"distinctAttribute": f"{DRV}/pf"}])],
     [group("claim-0")], {**STABLE, **WORKLOAD}, None),
    ("stable-ignores-capacity-requests", NODES + [rslice("s1", [dev("a", capacity={"mem": {"value": "1Gi"}})]),
                                                  C(req(capacity={"requests": {"mem": "8Gi"}}))],
     [group("claim-0")], {**STABLE, **WORKLOAD}, [["a"]]),
    ("stable-cel-never-sees-allow-multiple-allocations", NODES + [rslice("s1", [
        dev("a", allowMultipleAllocations=True)])],
     [C(req(selectors=sel("device.allowMultipleAllocations")))], STABLE, None),
    ("incubating-cel-sees-allow-multiple-allocations-with-cc-off", NODES + [rslice("s1", [
        dev("a", allowMultipleAllocations=True)])],
     [C(req(selectors=sel("device.allowMultipleAllocations")))], NO_CC, [["a"]]),
    # F6: DRAPartitionableDevices off hides the counter slice from the node, not from the pool.
    ("pd-off-plain-device-beside-counter-devices", NODES + [
        rslice("counters", shared={"gpu-0": {"memory": "8Gi"}}, count=2),
        rslice("devices", [dev("part", consumesCounters=[counters("gpu-0", memory="4Gi")]), dev("plain")],
               count=2)],
     [C(req())], NO_PD, [["plain"]]),
    # F7: per-device node selection is checked after the selectors, which may fail on the way.
    ("per-device-selector-error-on-a-device-of-another-node", NODES + [rslice(
        "s1", [dev("elsewhere", nodeName="node-2"), dev("here", nodeName="node-1", attrs={"model": "a"})],
        node_name=None, perDeviceNodeSelection=True)],
     [C(req(selectors=sel(MODEL)))], {}, None),
    # F8: a newer generation among slices the gates hide still makes the older one obsolete.
    ("hidden-newer-generation-makes-the-pool-obsolete", NODES + [
        rslice("old-plain", [dev("x")], count=2),
        rslice("old-grouped", [dev("y", consumesCounters=[counters("cs", ["mig"], memory="1")])], count=2),
        rslice("new-grouped", [dev("y", consumesCounters=[counters("cs", ["mig"], memory="1")])], generation=2),
        rslice("other", [dev("z")], pool="other")],
     [C(req(mode="All"))], {}, [["z"]]),
    # F9: undoing an admin pick of a device another claim holds keeps that claim's mark.
    ("admin-pick-undo-keeps-the-other-claims-mark", NODES + [rslice("s1", [dev("g0"), dev("g1")])],
     [C(req(mode="All", adminAccess=True), name="all-admin"),
      C(req("r0", adminAccess=True), req("r1"), name="mixed")], {}, None),
    # F10: version attributes compare as written (build metadata counts).
    ("distinct-version-build-metadata-differs", NODES + [rslice("s1", [
        dev("a", attributes={"v": {"version": "1.0.0"}}), dev("b", attributes={"v": {"version": "1.0.0+b1"}})])],
     [C(req(count=2), constraints=[{"distinctAttribute": f"{DRV}/v"}])], {}, [["a", "b"]]),
    # F12: a pool goes last for binding conditions only on its slices that target the node.
    ("binding-device-on-another-nodes-slice-keeps-the-pool-order", NODES + [
        rslice("a-here", [dev("first")], pool="a-pool", count=2),
        rslice("a-there", [dev("bound", bindingConditions=["ready"], bindingFailureConditions=["failed"])],
               pool="a-pool", node_name="node-2", count=2),
        rslice("b", [dev("second")], pool="b-pool")],
     [C(req())], {}, [["first"]]),
    # F13: skipNodeOperations (a slice field) matters to the experimental allocator only.
    ("skip-node-operations-ignored-by-incubating", NODES + [rslice("s1", [dev("a")], skipNodeOperations=["*"])],
     [C(req())], {}, [["a"]]),
    ("skip-node-operations-needs-the-gate-in-experimental", NODES + [
        rslice("s1", [dev("a")], skipNodeOperations=["*"])],
     [C(req())], EXPERIMENTAL, None),
    ("skip-node-operations-needs-a-declaring-node", [
        {**node("node-1"), "status": {"declaredFeatures": ["DRAOptionalNodeOperations"]}}, device_class(),
        rslice("s1", [dev("a")], skipNodeOperations=["*"])],
     [C(req())], {**EXPERIMENTAL, "DRAOptionalNodeOperations": True, "NodeDeclaredFeatures": True}, [["a"]]),
    # F14: an allocated input claim holds its devices.
    ("allocated-input-claim-holds-its-device", NODES + [rslice("s1", [dev("g0"), dev("g1")])],
     [claim("held", req(), allocation=[result("g0")]), C(req())], {}, [["g1"]]),
    # F15: a list attribute with DRAListTypeAttributes off: the first device in scope only.
    ("list-attribute-gate-off-first-device-passes", NODES + [rslice("s1", [
        dev("a", attributes={"links": {"strings": ["l0"]}}), dev("b", attributes={"links": {"strings": ["l0"]}})])],
     [C(req(), constraints=[{"matchAttribute": f"{DRV}/links"}])], {}, [["a"]]),
    ("list-attribute-gate-off-second-device-fails", NODES + [rslice("s1", [
        dev("a", attributes={"links": {"strings": ["l0"]}}), dev("b", attributes={"links": {"strings": ["l0"]}})])],
     [C(req(count=2), constraints=[{"matchAttribute": f"{DRV}/links"}])], {}, None),
    # F16: consumedCapacity counts against the capacity of exactly the name it was written with.
    ("consumed-capacity-respelled-does-not-count", NODES + [
        rslice("s1", [dev("nic", allowMultipleAllocations=True, capacity={"bw": {"value": "10"}})]),
        claim("old", req(), allocation=[result("nic", shareID="u1", consumedCapacity={f"{DRV}/bw": "9"})])],
     [C(req(capacity={"requests": {"bw": "5"}}))], {}, [["nic"]]),
    # F11: derived attributes, in the experimental allocator with their gate only.
    ("derived-attribute-matches-two-drivers-topology", NODES + [
        rslice("s1", [dev("g0", attrs={"numa": 0}), dev("g1", attrs={"numa": 1})]),
        rslice("s2", [dev("n1", attrs={"node": 1})], driver="nic.example.com", pool="nics"),
        device_class("nic", driver="nic.example.com")],
     [C(req("gpu", derivedAttributes=[{"name": "derived/numa",
                                       "expression": f'device.attributes["{DRV}"].numa'}]),
        req("nic", cls="nic", derivedAttributes=[{"name": "derived/numa",
                                                  "expression": 'device.attributes["nic.example.com"].node'}]),
        constraints=[{"matchAttribute": "derived/numa"}])],
     {**EXPERIMENTAL, "DRADerivedAttributes": True}, [["g1", "n1"]]),
    ("derived-attribute-outside-experimental-is-an-error", NODES + [
        rslice("s1", [dev("g0", attrs={"numa": 0})]),
        C(req(derivedAttributes=[{"name": "derived/numa", "expression": f'device.attributes["{DRV}"].numa'}]),
          constraints=[{"matchAttribute": "derived/numa"}])], [group("claim-0")], WORKLOAD, None),
    ("derived-attribute-runtime-error-is-fatal", NODES + [rslice("s1", [dev("g0"), dev("g1", attrs={"numa": 0})])],
     [C(req(derivedAttributes=[{"name": "derived/numa", "expression": f'device.attributes["{DRV}"].numa'}]),
        constraints=[{"matchAttribute": "derived/numa"}])], {**EXPERIMENTAL, "DRADerivedAttributes": True}, None),
    # F17: PodGroup references: a state object written without a namespace is in "default".
    ("podgroup-template-without-namespace-in-state", NODES + [
        rslice("s1", [dev("g0")]),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "tpl"},
         "spec": {"spec": {"devices": {"requests": [req()]}}}}],
     [group(templates=("tpl",))], WORKLOAD, [["g0"]]),
    # DeviceTaintRules, applied as the scheduler's slice tracker applies them (dra-allocate runs it).
    ("taint-rule-no-schedule-skips-the-device", NODES + [rslice("s1", [dev("g0"), dev("g1")]),
                                                         taint_rule("r", device="g0")],
     [C(req())], {}, [["g1"]]),
    ("taint-rule-tolerated", NODES + [rslice("s1", [dev("g0"), dev("g1")]), taint_rule("r", device="g0")],
     [C(req(tolerations=[toleration()]))], {}, [["g0"]]),
    ("taint-rule-none-only-reports", NODES + [rslice("s1", [dev("g0")]), taint_rule("r", "None")],
     [C(req())], {}, [["g0"]]),
    ("taint-rule-unknown-effect-is-ignored", NODES + [rslice("s1", [dev("g0")]), taint_rule("r", "Bogus")],
     [C(req())], {}, [["g0"]]),
    ("taint-rule-without-selector-selects-nothing", NODES + [rslice("s1", [dev("g0")]),
                                                             taint_rule("r", "NoExecute", selector=None)],
     [C(req())], {}, [["g0"]]),
    ("taint-rule-empty-selector-selects-everything", NODES + [rslice("s1", [dev("g0")]), taint_rule("r")],
     [C(req())], {}, None),
    ("taint-rule-pool-of-one-node", NODES + [rslice("s1", [dev("g0")], pool="p1"),
                                             rslice("s2", [dev("g0")], pool="p2", node_name="node-2"),
                                             taint_rule("r", "NoExecute", pool="p1")],
     [C(req())], {}, [["g0"]]),
    ("taint-rule-driver-mismatch", NODES + [rslice("s1", [dev("g0")]), taint_rule("r", driver="other.example.com")],
     [C(req())], {}, [["g0"]]),
    ("taint-rule-gate-off-ignored", NODES + [rslice("s1", [dev("g0")]), taint_rule("r")],
     [C(req())], {"DRADeviceTaintRules": False}, [["g0"]]),
    ("taint-rule-toleration-value-must-match", NODES + [rslice("s1", [dev("g0")]), taint_rule("r", value="a")],
     [C(req(tolerations=[toleration(operator="Equal", value="b")]))], {}, None),
    ("taint-rule-toleration-other-effect", NODES + [rslice("s1", [dev("g0")]), taint_rule("r", "NoExecute")],
     [C(req(tolerations=[toleration(effect="NoSchedule")]))], {}, None),
    ("taint-rule-no-execute-tolerated-for-a-while-allocates", NODES + [
        rslice("s1", [dev("g0")]), taint_rule("r", "NoExecute")],
     [C(req(tolerations=[toleration(effect="NoExecute", tolerationSeconds=0)]))], {}, [["g0"]]),
    ("slice-taint-and-rule-taint-both-tolerated", NODES + [
        rslice("s1", [dev("g0", taints=[{"key": "example.com/own", "effect": "NoSchedule"}])]), taint_rule("r")],
     [C(req(tolerations=[toleration(), toleration("example.com/own")]))], {}, [["g0"]]),
    ("slice-taint-kept-with-rules-gate-off", NODES + [
        rslice("s1", [dev("g0", taints=[{"key": "example.com/own", "effect": "NoSchedule"}]), dev("g1")])],
     [C(req())], {"DRADeviceTaintRules": False}, [["g1"]]),
    ("taints-gate-off-ignores-rules-and-slice-taints", NODES + [
        rslice("s1", [dev("g0", taints=[{"key": "example.com/own", "effect": "NoSchedule"}])]), taint_rule("r")],
     [C(req())], {"DRADeviceTaints": False, "DRADeviceTaintRules": False}, [["g0"]]),
    # firstAvailable: the first subrequest that can be satisfied wins (guards the search order).
    ("first-available-second-subrequest", NODES + [rslice("s1", [dev("g0")])],
     [C(first_available("r", req("two", count=2), req("one")))], {}, [["g0"]]),
]

assert len({r[0] for r in ROWS}) == len(ROWS), "row ids must be unique"
