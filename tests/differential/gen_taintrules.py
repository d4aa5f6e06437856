"""Generated DeviceTaintRules (`resource.k8s.io/v1`) for differential 2: CREATE objects, UPDATE
pairs of the main resource and `/status` triples.

A drawn rule is mostly well formed, with edges in every part of it:

- the selector absent, null or `{}`; its `driver`, `pool` and `device` each absent, null, empty,
  valid or at an edge (`gen_values`: lengths at the limits in bytes, upper case, bad characters,
  slashes in pool names);
- the taint absent, null or `{}`; its key and value at their edges, its effect one of the three,
  empty, absent, null, `PreferNoSchedule` (a node effect) or unknown; `timeAdded` set, null or
  absent;
- a status on CREATE (the strategy drops it);
- sometimes a wrong JSON type or an unknown field (`gen_wrong`): the apiserver refuses those
  while decoding (HTTP 400).

UPDATE edits of a stored valid rule change the effect (to an unknown one too: it is only
checked when it changes), the key, value, selector and `timeAdded`, or send a status to the main
resource. `/status` triples store a valid rule, optionally write a first status, then dry-run a
second: conditions valid, duplicated by type, more than 8, and with each field at an edge.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.differential import gen_common as common
from tests.differential.gen_values import (
    ABSENT,
    DRIVERS_EDGE,
    DRIVERS_OK,
    LABEL_KEYS_EDGE,
    LABEL_KEYS_OK,
    LABEL_VALUES_EDGE,
    LABEL_VALUES_OK,
    LABELS_EDGE,
    LABELS_OK,
    POOLS_EDGE,
    POOLS_OK,
    chance,
    choose,
    maybe,
    pick,
    put,
)
from tests.differential.gen_wrong import unknown_field, wrong_type

API = "resource.k8s.io/v1"
EFFECTS_OK = ["NoSchedule", "NoExecute", "None"]
EFFECTS_EDGE = ["", "PreferNoSchedule", "Bogus", "noschedule", "NONE", None, ABSENT]
TIMES = ["2024-01-01T00:00:00Z", "2030-06-15T12:30:45Z", None, ABSENT]

DRIVER = pick(DRIVERS_OK, DRIVERS_EDGE + [None, ABSENT])
POOL = pick(POOLS_OK, POOLS_EDGE + [None, ABSENT])
DEVICE = pick(LABELS_OK, LABELS_EDGE + [None, ABSENT])
KEY = pick(LABEL_KEYS_OK, LABEL_KEYS_EDGE + [ABSENT])
VALUE = pick(LABEL_VALUES_OK, LABEL_VALUES_EDGE + [ABSENT])
EFFECT = pick(EFFECTS_OK, EFFECTS_EDGE)

CONDITION_OK = {"type": "EvictionInProgress", "status": "False", "reason": "NoEffect", "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}
#: One field of a condition at an edge: (member, values).
CONDITION_EDGES: list[tuple[str, list[Any]]] = [
    ("type", ["", "Ready", "example.com/Ready", "bad type", "a" * 317, None]),
    ("status", ["True", "Unknown", "", "true", "Bogus", None]),
    ("reason", ["", "Fine", "9bad", "ends-", "a" * 1025, "a:b_c", None]),
    ("message", ["", "x" * 32769, "ok"]),
    ("lastTransitionTime", [None, "2030-01-01T00:00:00Z"]),
    ("observedGeneration", [-1, 0, 7, None]),
]


def selector(draw: st.DrawFn) -> Any:
    roll = choose(draw, range(10))
    if roll == 0:
        return ABSENT
    if roll == 1:
        return None
    if roll == 2:
        return {}
    out: dict[str, Any] = {}
    for key, strat in (("driver", DRIVER), ("pool", POOL), ("device", DEVICE)):
        put(out, key, draw(strat))
    return out


def taint(draw: st.DrawFn) -> Any:
    roll = choose(draw, range(20))
    if roll == 0:
        return maybe(draw, {}, absent=1, null=1, of=3)
    out: dict[str, Any] = {}
    put(out, "key", draw(KEY))
    put(out, "value", draw(VALUE))
    put(out, "effect", draw(EFFECT))
    if chance(draw, 30):
        put(out, "timeAdded", choose(draw, TIMES))
    return out


def condition(draw: st.DrawFn, i: int) -> dict[str, Any]:
    out = {**CONDITION_OK, "type": f"Cond{i}" if i else CONDITION_OK["type"]}
    if chance(draw, 40):
        member, values = choose(draw, CONDITION_EDGES)
        value = choose(draw, values)
        if value is None and chance(draw, 50):
            out.pop(member)
        else:
            out[member] = value
    return out


def status(draw: st.DrawFn) -> dict[str, Any]:
    n = choose(draw, [0, 1, 1, 2, 3, 8, 9])
    conditions = [condition(draw, i) for i in range(n)]
    if n > 1 and chance(draw, 20):
        conditions[-1]["type"] = conditions[0].get("type")  # a duplicate type
    return {"conditions": conditions} if n or chance(draw, 50) else {}


@st.composite
def taint_rules(draw: st.DrawFn) -> dict[str, Any]:
    """One DeviceTaintRule at the edges (module docstring); a few fail to decode."""
    spec: dict[str, Any] = {}
    put(spec, "deviceSelector", selector(draw))
    put(spec, "taint", taint(draw))
    obj: dict[str, Any] = {"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "generated-rule"},
                           "spec": spec}
    if chance(draw, 8):
        obj["status"] = status(draw)
    roll = draw(st.sampled_from(range(100)))
    if roll < 5:
        wrong_type(draw, spec)
    elif roll < 7:
        unknown_field(draw, spec)
    elif roll == 7:
        obj["spec"] = None
    elif roll == 8:
        del obj["spec"]
    return obj


def valid_rule(draw: st.DrawFn) -> dict[str, Any]:
    """A rule the apiserver stores (the old side of an UPDATE)."""
    sel: dict[str, Any] = {}
    for key, values in (("driver", DRIVERS_OK), ("pool", POOLS_OK), ("device", LABELS_OK)):
        if chance(draw, 50):
            sel[key] = choose(draw, values)
    t: dict[str, Any] = {"key": choose(draw, LABEL_KEYS_OK), "effect": choose(draw, EFFECTS_OK)}
    put(t, "value", choose(draw, LABEL_VALUES_OK + [ABSENT]))
    spec: dict[str, Any] = {"taint": t}
    put(spec, "deviceSelector", choose(draw, [sel, sel, {}, ABSENT]))
    return {"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "old"}, "spec": spec}


#: UPDATE edits: (path below spec or the object, strategy of the new value).
EDITS: list[tuple[tuple[str, ...], st.SearchStrategy[Any]]] = [
    (("spec", "taint", "effect"), EFFECT),
    (("spec", "taint", "effect"), st.sampled_from(["Bogus", "PreferNoSchedule", ""])),
    (("spec", "taint", "key"), KEY),
    (("spec", "taint", "value"), VALUE),
    (("spec", "taint", "timeAdded"), st.sampled_from(TIMES)),
    (("spec", "deviceSelector", "driver"), DRIVER),
    (("spec", "deviceSelector", "pool"), POOL),
    (("spec", "deviceSelector", "device"), DEVICE),
    (("spec", "deviceSelector"), st.sampled_from([None, ABSENT, {}])),
    (("status",), st.just({"conditions": [CONDITION_OK]})),
]


@st.composite
def taint_rule_update_pairs(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """A valid rule to store and one or two edits of what was stored."""
    old = valid_rule(draw)
    ops = []
    for _ in range(choose(draw, [1, 1, 2])):
        path, strat = choose(draw, EDITS)
        value = draw(strat)
        ops.append((path, common.ABSENT if value is ABSENT else value))  # the edit's own "delete"
    return old, common.Edit(tuple(ops), name="DeviceTaintRule:")


@st.composite
def taint_rule_statuses(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """(a valid rule to store, a first status to write or None, the status to dry-run)."""
    return valid_rule(draw), (status(draw) if chance(draw, 30) else None), status(draw)


TAINT_RULES = taint_rules()
TAINT_RULE_UPDATE_PAIRS = taint_rule_update_pairs()
TAINT_RULE_STATUSES = taint_rule_statuses()
