"""Generated PodGroups and Workloads (`scheduling.k8s.io/v1beta1`) for differential 2.

Each object is valid but for a few fields drawn at their edges (`how_many_edges`):
schedulingPolicy's basic/gang union and gang.minCount (0, negative, int32 max), workloadRef
names, parentCompositePodGroupName with and without workloadRef, resourceClaims (up to 5,
duplicates, name edges, the claim/template union), schedulingConstraints topology,
disruptionMode (single, all, both, neither), priorityClassName / priority / preemptionPolicy,
Workload podGroupTemplates (up to 9), compositePodGroupTemplates trees (depth, name clashes
across the tree, childless nodes, priority consistency), controllerRef, null / [] / absent
for the optional lists, wrong JSON types, and a null, {} or "" as a list item or map value
(`gen_zeros`). UPDATE pairs edit a stored valid object
(immutability, the gang NoSet/NoUnset rule, template NoAddItem/NoRemoveItem).

PodGroup CREATEs go through the Priority admission plugin first: it refuses (403, not
comparable) a priority or preemptionPolicy other than what the named PriorityClass says, and a
class that does not exist. So PodGroups mostly carry the values their class gives (the oracle's
`prepare` makes every class an object names, value 1000; `PRIORITY_CLASSES` are made by the
test with other settings); the priority edges are reached through Workload templates (no
admission plugin there) and through UPDATEs.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.differential.gen_common import (
    ABSENT,
    Chooser,
    Edit,
    Lazy,
    assign,
    dns_label,
    dns_subdomain,
    how_many_edges,
    path_segment,
    pick,
    put,
    qualified_name,
    strategy,
)
from tests.differential.gen_zeros import uniform, zero_item

API = "scheduling.k8s.io/v1beta1"
HIGHEST_USER_PRIORITY = 1_000_000_000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

#: PriorityClasses the test creates (kubectl create, so `prepare`'s apply leaves them alone):
#: name -> (value, preemptionPolicy). `prepare` gives every other class named value 1000.
PRIORITY_CLASSES: dict[str, tuple[int, str | None]] = {"never-preempt": (1000, "Never")}
#: Built into every apiserver (scheduling's bootstrap): values above the user maximum.
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
PREPARED_VALUE = 1000
CLASS_NAMES = ("high", "batch-low", "p" * 253, "never-preempt")

COUNTS = (1, 2, 3, 8, 64, INT32_MAX)
COUNT_EDGES = (0, -1, INT32_MIN, 1, INT32_MAX)
PRIORITY_EDGES = (0, 1, -1, HIGHEST_USER_PRIORITY - 1, HIGHEST_USER_PRIORITY, HIGHEST_USER_PRIORITY + 1,
                  INT32_MIN, INT32_MAX)
PREEMPTION_EDGES = ("Never", "PreemptLowerPriority", "", "never", "Bogus", None)


def class_priority(name: str) -> int:
    """What the Priority admission plugin sets for a PodGroup naming ``name`` ("" -> 0)."""
    if not name:
        return 0
    if name in SYSTEM_CLASSES:
        return SYSTEM_CLASSES[name]
    return PRIORITY_CLASSES.get(name, (PREPARED_VALUE, None))[0]


def class_preemption(name: str) -> str:
    return (PRIORITY_CLASSES.get(name, (0, None))[1] if name else None) or "PreemptLowerPriority"


# --- the fields PodGroups and templates share -------------------------------------------------


def scheduling_policy(c: Chooser, edge: bool, count: str = "minCount") -> Any:
    if not edge:
        return pick(c, [(1, {"basic": {}}), (2, Lazy(lambda: {"gang": {count: c.choice(COUNTS)}}))])
    return pick(c, [
        (6, Lazy(lambda: {"gang": {count: c.choice(COUNT_EDGES)}})),
        (1, {}), (1, None), (1, ABSENT), (1, {"basic": {}, "gang": {count: 2}}),
        (1, {"basic": None}), (1, {"gang": None}), (1, {"gang": {}}), (1, {"basic": {}, "gang": None}),
        (1, {"gang": {count: 1}, "basic": None}), (1, {"basic": None, "gang": None}),
    ])


def scheduling_constraints(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(3, ABSENT), (2, Lazy(lambda: {"topology": [{"key": qualified_name(c, ok=True)}]}))])
    return pick(c, [
        (6, Lazy(lambda: {"topology": [{"key": qualified_name(c)}]})),
        (1, None), (1, {}), (1, {"topology": None}), (1, {"topology": []}), (1, {"topology": [{}]}),
        (1, {"topology": [{"key": ""}]}),
        (1, {"topology": [{"key": "topology.kubernetes.io/rack"}, {"key": "topology.kubernetes.io/zone"}]}),
    ])


CLAIM_EDGES = ("claim", "template", "both", "neither", "empty-claim", "empty-template", "null-and-set", "no-name",
               "empty-name")


def claim(c: Chooser, edge: bool, name: str) -> dict[str, Any]:
    item: dict[str, Any] = {"name": name}
    if not edge:
        item[c.choice(("resourceClaimName", "resourceClaimTemplateName"))] = dns_subdomain(c, ok=True)
        return item
    how = c.choice(CLAIM_EDGES)
    if how in ("claim", "both"):
        item["resourceClaimName"] = dns_subdomain(c)
    if how in ("template", "both", "null-and-set"):
        item["resourceClaimTemplateName"] = dns_subdomain(c)
    if how == "null-and-set":
        item["resourceClaimName"] = None
    if how == "empty-claim":
        item["resourceClaimName"] = ""
    if how == "empty-template":
        item["resourceClaimTemplateName"] = ""
    if how == "no-name":
        del item["name"]
        item["resourceClaimName"] = "c"
    if how == "empty-name":
        item["name"] = ""
        item["resourceClaimTemplateName"] = "t"
    return item


def resource_claims(c: Chooser, edge: bool) -> Any:
    if not edge:
        if c.index(3):
            return ABSENT
        names = list(dict.fromkeys(dns_label(c, ok=True) for _ in range(c.integer(1, 4))))
        return [claim(c, False, n) for n in names]
    shape = c.choice(("names", "members", "count", "duplicate", "null", "empty"))
    if shape == "null":
        return None
    if shape == "empty":
        return []
    if shape == "count":
        return [claim(c, False, f"c{i}") for i in range(c.choice((4, 5)))]
    names = [dns_label(c, ok=shape != "names") for _ in range(c.integer(1, 4))]
    if shape == "duplicate":
        names.append(names[0])
    return [claim(c, shape == "members" and c.boolean(), n) for n in names]


def disruption_mode(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(3, ABSENT), (2, {"single": {}}), (2, {"all": {}})])
    return pick(c, [(1, None), (2, {}), (2, {"single": {}, "all": {}}), (1, {"single": None}),
                    (1, {"single": None, "all": {}}), (1, {"all": None}), (1, {"all": {}}), (1, {"single": {}})])


def workload_ref(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(1, ABSENT), (2, Lazy(lambda: {"workloadName": dns_subdomain(c, ok=True),
                                                        "templateName": dns_label(c, ok=True)}))])
    return pick(c, [(6, Lazy(lambda: {"workloadName": dns_subdomain(c), "templateName": dns_label(c)})),
                    (1, None), (1, {}), (1, {"workloadName": "w"}), (1, {"templateName": "t"}),
                    (1, {"workloadName": "", "templateName": ""})])


#: A wrong JSON type or an unknown field somewhere in a PodGroup spec or a template
#: (path below the spec or template, value); the apiserver refuses the body (400).
WRONG_TYPES: tuple[tuple[tuple[Any, ...], Any], ...] = (
    (("schedulingPolicy", "gang", "minCount"), "3"), (("schedulingPolicy", "gang", "minCount"), 1.5),
    (("schedulingPolicy", "gang", "minCount"), INT32_MAX + 1), (("schedulingPolicy", "gang", "minCount"), True),
    (("schedulingPolicy",), []), (("schedulingPolicy", "basic"), 1), (("schedulingPolicy", "basic", "x"), 1),
    (("schedulingPolicy", "gang", "extra"), 1), (("priority",), "1"), (("priority",), 1.5),
    (("priority",), INT32_MAX + 1), (("priority",), INT32_MIN - 1), (("priorityClassName",), 5),
    (("disruptionMode", "single"), 5), (("disruptionMode", "single", "x"), 1), (("resourceClaims",), {}),
    (("resourceClaims",), ["c"]), (("schedulingConstraints", "topology"), {"key": "k"}),
    (("preemptionPolicy",), 1), (("extra",), True),
)


def wrong_type(c: Chooser, target: dict[str, Any], extra: tuple[tuple[tuple[Any, ...], Any], ...] = ()) -> None:
    path, value = c.choice(WRONG_TYPES + extra)
    assign(target, path, value)


# --- PodGroup ----------------------------------------------------------------------------------


def podgroup_priority(c: Chooser, spec: dict[str, Any], edge: bool) -> None:
    """priorityClassName, priority and preemptionPolicy; consistent with the class unless ``edge``."""
    if not edge:
        name = pick(c, [(3, ABSENT), (2, ""), (4, Lazy(lambda: c.choice(CLASS_NAMES)))])
        put(spec, "priorityClassName", name)
        cls = name if isinstance(name, str) else ""
        put(spec, "priority", pick(c, [(2, ABSENT), (1, class_priority(cls))]))
        # Absent, the apiserver defaults it to PreemptLowerPriority (PodGroupPreemptionPolicy on)
        # before the plugin compares it with the class's.
        policy = class_preemption(cls)
        if policy != "PreemptLowerPriority":
            spec["preemptionPolicy"] = policy
        else:
            put(spec, "preemptionPolicy", pick(c, [(2, ABSENT), (1, policy)]))
        return
    how = c.choice(("class-name", "system", "system-no-priority", "priority", "preemption", "null"))
    if how == "class-name":  # valid ones exist (prepare), invalid ones are refused by admission
        spec["priorityClassName"] = dns_subdomain(c)
    elif how == "system":  # the class's own value, above what validation allows
        spec["priorityClassName"] = name = c.choice(sorted(SYSTEM_CLASSES))
        spec["priority"] = SYSTEM_CLASSES[name]
    elif how == "system-no-priority":
        spec["priorityClassName"] = c.choice(sorted(SYSTEM_CLASSES))
    elif how == "priority":
        spec["priority"] = c.choice(PRIORITY_EDGES)
    elif how == "preemption":
        spec["preemptionPolicy"] = c.choice(PREEMPTION_EDGES)
    else:
        for key in ("priorityClassName", "priority", "preemptionPolicy"):
            put(spec, key, c.choice((None, ABSENT)))


POD_GROUP_FIELDS = ("workloadRef", "parent", "schedulingPolicy", "schedulingConstraints", "resourceClaims",
                    "disruptionMode", "priority", "wrong-type", "status", "spec", "zero-item")


def podgroup_spec(c: Chooser, edges: set[str]) -> Any:
    f = c.filler()

    def by(name: str) -> Chooser:
        return c if name in edges else f

    spec: dict[str, Any] = {}
    put(spec, "workloadRef", workload_ref(by("workloadRef"), "workloadRef" in edges))
    if "parent" in edges:
        put(spec, "parentCompositePodGroupName", pick(c, [(6, Lazy(lambda: dns_subdomain(c))), (1, ""), (1, None)]))
        if c.boolean():
            spec.pop("workloadRef", None)
    elif isinstance(spec.get("workloadRef"), dict) and f.boolean():
        spec["parentCompositePodGroupName"] = dns_subdomain(f, ok=True)
    put(spec, "schedulingPolicy", scheduling_policy(by("schedulingPolicy"), "schedulingPolicy" in edges))
    put(spec, "schedulingConstraints", scheduling_constraints(by("schedulingConstraints"),
                                                              "schedulingConstraints" in edges))
    put(spec, "resourceClaims", resource_claims(by("resourceClaims"), "resourceClaims" in edges))
    put(spec, "disruptionMode", disruption_mode(by("disruptionMode"), "disruptionMode" in edges))
    podgroup_priority(by("priority"), spec, "priority" in edges)
    if "wrong-type" in edges:
        wrong_type(c, spec, ((("workloadRef",), "w"), (("workloadRef", "workloadName"), 5),
                             (("parentCompositePodGroupName",), 5), (("podGroupTemplateRef",), {"workload": {}})))
    if "spec" in edges:
        return c.choice((None, ABSENT, {}, "spec", []))
    return spec


def podgroup(c: Chooser) -> dict[str, Any]:
    edges = how_many_edges(c, POD_GROUP_FIELDS)
    obj: dict[str, Any] = {"apiVersion": API, "kind": "PodGroup",
                           "metadata": {"name": dns_subdomain(c.filler(), ok=True), "namespace": "default"}}
    put(obj, "spec", podgroup_spec(c, edges))
    if "status" in edges:  # wiped on CREATE
        obj["status"] = c.choice(({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "Bogus"}]},
                                  {"resourceClaimStatuses": [{"name": "nope"}]}, None))
    if "zero-item" in edges:
        zero_item(uniform(c), obj)
    return obj



# --- Workload ----------------------------------------------------------------------------------


TEMPLATE_FIELDS = ("name", "schedulingPolicy", "schedulingConstraints", "resourceClaims", "disruptionMode",
                   "priority", "preemptionPolicy", "wrong-type")


def template_priority(c: Chooser, edge: bool) -> tuple[Any, Any]:
    """(priorityClassName, priority) of a template: the Workload's one, or an edge."""
    if not edge:
        return (pick(c, [(3, ABSENT), (1, ""), (3, Lazy(lambda: c.choice(CLASS_NAMES)))]),
                pick(c, [(3, ABSENT), (1, 0), (2, Lazy(lambda: c.choice(PRIORITY_EDGES)))]))
    return (pick(c, [(4, Lazy(lambda: dns_subdomain(c))), (1, ""), (1, None), (1, ABSENT)]),
            pick(c, [(4, Lazy(lambda: c.choice(PRIORITY_EDGES))), (1, None), (1, ABSENT)]))


def pod_group_template(c: Chooser, name: Any, prio: tuple[Any, Any], edges: set[str]) -> dict[str, Any]:
    """A PodGroupTemplate: valid (from ``c``'s filler) but for ``edges``."""
    f = c.filler()

    def by(field: str) -> Chooser:
        return c if field in edges else f

    t: dict[str, Any] = {}
    put(t, "name", name if "name" not in edges
        else pick(c, [(4, Lazy(lambda: dns_label(c))), (1, ABSENT), (1, None)]))
    put(t, "schedulingPolicy", scheduling_policy(by("schedulingPolicy"), "schedulingPolicy" in edges))
    put(t, "schedulingConstraints", scheduling_constraints(by("schedulingConstraints"),
                                                           "schedulingConstraints" in edges))
    put(t, "resourceClaims", resource_claims(by("resourceClaims"), "resourceClaims" in edges))
    put(t, "disruptionMode", disruption_mode(by("disruptionMode"), "disruptionMode" in edges))
    pcn, priority = template_priority(c, True) if "priority" in edges else prio
    put(t, "priorityClassName", pcn)
    put(t, "priority", priority)
    put(t, "preemptionPolicy", c.choice(PREEMPTION_EDGES) if "preemptionPolicy" in edges
        else pick(f, [(6, ABSENT), (1, "Never"), (1, "PreemptLowerPriority")]))
    if "wrong-type" in edges:
        wrong_type(c, t, ((("name",), 5),))
    return t


def composite_template(c: Chooser, name: str, prio: tuple[Any, Any], depth: int, names: list[str],
                       edges: set[str]) -> dict[str, Any]:
    """A CompositePodGroupTemplate at ``depth`` (1 = top) with children; ``names`` collects every
    name used in the tree so that they stay unique (the "names" edge breaks that afterwards)."""
    f = c.filler()
    t: dict[str, Any] = {"name": name}
    policy_edge = "composite-policy" in edges and c.boolean()
    put(t, "schedulingPolicy", scheduling_policy(c if policy_edge else f, policy_edge, count="minGroupCount"))
    put(t, "schedulingConstraints", scheduling_constraints(f, False))
    mode_edge = "composite-disruption" in edges and c.boolean()
    put(t, "disruptionMode", disruption_mode(c if mode_edge else f, mode_edge))
    put(t, "priorityClassName", prio[0])
    put(t, "priority", prio[1])
    put(t, "preemptionPolicy", pick(f, [(6, ABSENT), (1, "Never")]))
    max_depth = 5 if "depth" in edges else 3
    n_composites = f.integer(0, 2) if depth < max_depth else 0
    if "depth" in edges and depth < max_depth and c.index(3):
        n_composites = max(n_composites, 1)
    n_groups = f.integer(0 if n_composites else 1, 3)
    if "childless" in edges and c.index(4) == 0:
        n_composites = n_groups = 0
    if n_groups or f.boolean():
        t["podGroupTemplates"] = [pod_group_template(f, fresh_name(f, names), prio, set()) for _ in range(n_groups)]
    if n_composites or f.index(4) == 0:
        t["compositePodGroupTemplates"] = [composite_template(c, fresh_name(f, names), prio, depth + 1, names, edges)
                                           for _ in range(n_composites)]
    return t


def fresh_name(c: Chooser, names: list[str]) -> str:
    name = c.choice(("workers", "driver", "ps", "launcher", "eval")) + f"-{len(names)}"
    names.append(name)
    return name


def templates_in(tree: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every template dict of a composite tree (composites and pod group templates)."""
    out = []
    for t in tree:
        out.append(t)
        out += t.get("podGroupTemplates") or []
        out += templates_in(t.get("compositePodGroupTemplates") or [])
    return out


def controller_ref(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(2, ABSENT), (1, Lazy(lambda: {"apiGroup": c.choice(("batch", "", "jobset.x-k8s.io")),
                                                        "kind": path_segment(c, ok=True),
                                                        "name": path_segment(c, ok=True)}))])
    ref: dict[str, Any] = {"apiGroup": "batch", "kind": "Job", "name": "trainer"}
    key = c.choice(("apiGroup", "kind", "name", "null", "missing"))
    if key == "apiGroup":
        ref["apiGroup"] = dns_subdomain(c)
    elif key in ("kind", "name"):
        ref[key] = path_segment(c)
    elif key == "missing":
        del ref[c.choice(("apiGroup", "kind", "name"))]
    else:
        return None
    return ref


WORKLOAD_FIELDS = ("controllerRef", "templates", "template-field", "shape", "priority", "names", "depth",
                   "childless", "composite-policy", "composite-disruption", "wrong-type", "zero-item")
COMPOSITE_EDGES = {"depth", "childless", "composite-policy", "composite-disruption"}


def workload_spec(c: Chooser, edges: set[str]) -> dict[str, Any]:
    f = c.filler()
    spec: dict[str, Any] = {}
    put(spec, "controllerRef", controller_ref(c if "controllerRef" in edges else f, "controllerRef" in edges))
    prio = template_priority(f, False)
    names: list[str] = []
    if f.index(4) and not edges & COMPOSITE_EDGES:
        n = pick(f, [(6, Lazy(lambda: f.integer(1, 3))), (1, Lazy(lambda: f.integer(4, 8)))]) \
            if "templates" not in edges else c.choice((0, 1, 8, 9))
        groups = [pod_group_template(f, fresh_name(f, names), prio, set()) for _ in range(n)]
        if "template-field" in edges and groups:
            i = c.index(len(groups))
            groups[i] = pod_group_template(c, groups[i]["name"], prio, set(c.sample(TEMPLATE_FIELDS, c.integer(1, 2))))
        spec["podGroupTemplates"] = groups
        if "templates" in edges and not n and c.boolean():
            del spec["podGroupTemplates"]
            put(spec, "podGroupTemplates", c.choice((None, ABSENT)))
    else:
        n = f.integer(1, 3) if "templates" not in edges else c.choice((0, 8, 9))
        spec["compositePodGroupTemplates"] = [composite_template(c, fresh_name(f, names), prio, 1, names, edges)
                                              for _ in range(n)]
    tree = templates_in(spec.get("compositePodGroupTemplates") or []) + list(spec.get("podGroupTemplates") or [])
    if "names" in edges and len(tree) > 1:  # a name used twice: in one list, or anywhere in the tree
        a, b = c.sample(range(len(tree)), 2)
        tree[b]["name"] = tree[a].get("name")
    if "priority" in edges and tree:  # one template disagrees with the rest
        t = tree[c.index(len(tree))]
        for key, value in zip(("priorityClassName", "priority"), template_priority(c, c.boolean()), strict=True):
            t.pop(key, None)
            put(t, key, value)
    if "shape" in edges:
        shape(c, spec)
    if "wrong-type" in edges:
        target = tree[c.index(len(tree))] if tree and c.boolean() else spec
        wrong_type(c, target, ((("controllerRef",), "Job"), (("podGroupTemplates",), {}),
                               (("compositePodGroupTemplates",), "c"), (("name",), 5)))
    return spec


def shape(c: Chooser, spec: dict[str, Any]) -> None:
    """The podGroupTemplates / compositePodGroupTemplates union at its edges."""
    how = c.choice(("both", "neither", "empty-groups", "null-groups", "empty-composites"))
    if how == "both":
        spec["podGroupTemplates"] = spec.get("podGroupTemplates") or [
            {"name": "extra", "schedulingPolicy": {"basic": {}}}]
        spec["compositePodGroupTemplates"] = spec.get("compositePodGroupTemplates") or [
            {"name": "extra-c", "schedulingPolicy": {"basic": {}},
             "podGroupTemplates": [{"name": "extra-c-g", "schedulingPolicy": {"basic": {}}}]}]
    elif how == "neither":
        spec.pop("podGroupTemplates", None)
        spec.pop("compositePodGroupTemplates", None)
    elif how == "empty-groups":
        spec["podGroupTemplates"] = []
    elif how == "null-groups":
        spec["podGroupTemplates"] = None
    else:
        spec["compositePodGroupTemplates"] = []


def workload(c: Chooser) -> dict[str, Any]:
    edges = how_many_edges(c, WORKLOAD_FIELDS)
    obj = {"apiVersion": API, "kind": "Workload",
           "metadata": {"name": dns_subdomain(c.filler(), ok=True), "namespace": "default"},
           "spec": workload_spec(c, edges)}
    if "zero-item" in edges:
        zero_item(uniform(c), obj)
    return obj


# --- UPDATE pairs ------------------------------------------------------------------------------


def podgroup_update_pair(c: Chooser) -> tuple[dict[str, Any], Edit]:
    """A valid PodGroup to store and one or two changes to what was stored."""
    old = {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": "old", "namespace": "default"},
           "spec": podgroup_spec(c.filler(), set())}
    s = ("spec",)
    options: list[tuple[int, Any]] = [
        (5, Lazy(lambda: (s + ("schedulingPolicy", "gang", "minCount"), c.choice(COUNT_EDGES)))),
        (3, Lazy(lambda: (s + ("schedulingPolicy",), scheduling_policy(c, c.boolean())))),
        (2, Lazy(lambda: (s + ("schedulingPolicy", c.choice(("gang", "basic"))),
                          c.choice((ABSENT, None, {}, {"minCount": 3}))))),
        (3, Lazy(lambda: (s + ("workloadRef",), workload_ref(c, c.boolean())))),
        (1, Lazy(lambda: (s + ("workloadRef", "templateName"), dns_label(c)))),
        (2, Lazy(lambda: (s + ("parentCompositePodGroupName",),
                          pick(c, [(2, Lazy(lambda: dns_subdomain(c, ok=True))), (1, ABSENT),
                                   (1, Lazy(lambda: dns_subdomain(c)))])))),
        (3, Lazy(lambda: (s + ("resourceClaims",), resource_claims(c, c.boolean())))),
        (1, Lazy(lambda: (s + ("resourceClaims", 0, "resourceClaimName"), dns_subdomain(c, ok=True)))),
        (2, Lazy(lambda: (s + ("schedulingConstraints",), scheduling_constraints(c, c.boolean())))),
        (2, Lazy(lambda: (s + ("disruptionMode",), disruption_mode(c, c.boolean())))),
        (2, Lazy(lambda: (s + ("priorityClassName",), pick(c, [(2, Lazy(lambda: c.choice(CLASS_NAMES))), (1, ""),
                                                               (1, ABSENT), (1, Lazy(lambda: dns_subdomain(c)))])))),
        (3, Lazy(lambda: (s + ("priority",), pick(c, [(4, Lazy(lambda: c.choice(PRIORITY_EDGES))), (1, ABSENT),
                                                      (1, None)])))),
        (2, Lazy(lambda: (s + ("preemptionPolicy",), pick(c, [(3, Lazy(lambda: c.choice(PREEMPTION_EDGES))),
                                                              (1, ABSENT)])))),
        (1, Lazy(lambda: (("status",), {"conditions": [{"type": "X", "status": "Bogus"}]}))),
    ]
    return old, Edit(tuple(pick(c, options) for _ in range(c.integer(1, 2))), name="PodGroup:")


def workload_update_pair(c: Chooser) -> tuple[dict[str, Any], Edit]:
    """A valid Workload to store and one or two changes to what was stored."""
    f = c.filler()
    spec: dict[str, Any] = {}
    put(spec, "controllerRef", controller_ref(f, False))
    prio = template_priority(f, False)
    names: list[str] = []
    if f.index(4):
        spec["podGroupTemplates"] = [pod_group_template(f, fresh_name(f, names), prio, set())
                                     for _ in range(f.integer(1, 4))]
    else:
        spec["compositePodGroupTemplates"] = [composite_template(f, fresh_name(f, names), prio, 1, names, set())
                                              for _ in range(f.integer(1, 2))]
    old = {"apiVersion": API, "kind": "Workload", "metadata": {"name": "old", "namespace": "default"}, "spec": spec}
    s = ("spec",)
    groups = spec.get("podGroupTemplates") or []
    pgt, cpgt = s + ("podGroupTemplates",), s + ("compositePodGroupTemplates",)
    options: list[tuple[int, Any]] = [
        (3, Lazy(lambda: (pgt + (len(groups),),   # NoAddItem (a new name, or one already in the tree)
                          pod_group_template(f, c.choice(("added", names[0])), prio, set())))),
        (3, Lazy(lambda: (pgt + (c.index(max(len(groups), 1)),), ABSENT))),   # NoRemoveItem
        (2, Lazy(lambda: (pgt + (0, "name"), c.choice(("renamed", names[-1]))))),
        (3, Lazy(lambda: (pgt + (0, "schedulingPolicy", "gang", "minCount"), c.choice(COUNT_EDGES)))),
        (2, Lazy(lambda: (pgt + (0, "schedulingPolicy"), scheduling_policy(c, c.boolean())))),
        (2, Lazy(lambda: (pgt + (0, "priority"), pick(c, [(3, Lazy(lambda: c.choice(PRIORITY_EDGES))), (1, ABSENT)])))),
        (1, Lazy(lambda: (pgt + (0, "priorityClassName"), c.choice(CLASS_NAMES + ("",))))),
        (2, Lazy(lambda: (pgt + (0, "resourceClaims"), resource_claims(c, c.boolean())))),
        (2, Lazy(lambda: (pgt + (0, "schedulingConstraints"), scheduling_constraints(c, c.boolean())))),
        (1, Lazy(lambda: (pgt + (0, "disruptionMode"), disruption_mode(c, c.boolean())))),
        (1, Lazy(lambda: (pgt + (0, "preemptionPolicy"), c.choice(PREEMPTION_EDGES)))),
        (1, Lazy(lambda: (pgt, list(reversed(copy.deepcopy(groups)))))),
        (3, Lazy(lambda: (s + ("controllerRef",), pick(c, [(2, Lazy(lambda: controller_ref(c, c.boolean()))),
                                                           (1, ABSENT)])))),
        (2, Lazy(lambda: (cpgt + (0, "schedulingPolicy", "gang", "minGroupCount"), c.choice(COUNT_EDGES)))),
        (1, Lazy(lambda: (cpgt + (0, "schedulingPolicy"), scheduling_policy(c, True, count="minGroupCount")))),
        (2, Lazy(lambda: (cpgt + (0, "podGroupTemplates", 0), ABSENT))),
        (1, Lazy(lambda: (cpgt + (0, "name"), "renamed"))),
        (1, Lazy(lambda: (cpgt + (0, "priority"), c.choice(PRIORITY_EDGES)))),
        (1, Lazy(lambda: (cpgt, ABSENT))),
    ]
    return old, Edit(tuple(pick(c, options) for _ in range(c.integer(1, 2))), name="Workload:")


PODGROUPS = strategy(podgroup)
WORKLOADS = strategy(workload)
PODGROUP_UPDATE_PAIRS = strategy(podgroup_update_pair)
WORKLOAD_UPDATE_PAIRS = strategy(workload_update_pair)
