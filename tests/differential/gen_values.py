"""Value-level hypothesis strategies for the ResourceSlice generator: names at their length limits
and with bad characters, quantities in every notation, node selectors, label keys and values.

Every strategy mixes plainly valid values (most draws) with edge values: a limit at n-1, n and
n+1 (lengths are Go's, in bytes, so multi-byte characters sit at the limits too), the empty
value, characters a format refuses. `ABSENT` marks a member to leave out of its object; `put`
writes a drawn member or leaves it out.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

PERCENT = st.sampled_from(range(100))
#: A member that is left out of its object (as opposed to `None`, which is sent as JSON null).
ABSENT = object()


def put(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is not ABSENT:
        obj[key] = value


@functools.cache
def _index(n: int) -> st.SearchStrategy[int]:
    return st.sampled_from(range(n))


def choose(draw: st.DrawFn, options: Sequence[Any]) -> Any:
    """One of ``options``, uniformly (no strategy is built per call: they are cached by size)."""
    return options[draw(_index(len(options)))]


def chance(draw: st.DrawFn, percent: int) -> bool:
    """True in about ``percent`` draws in 100 (`st.integers` leans to its bounds; this does not)."""
    return bool(draw(PERCENT) < percent)


def pick(valid: list[Any], edges: list[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``valid`` (three draws in four), else one of ``edges``."""
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(valid),
                     st.sampled_from(edges))


def maybe(draw: st.DrawFn, value: Any, absent: int = 1, null: int = 1, empty: Any = ABSENT, of: int = 6) -> Any:
    """``value`` mostly; left out in ``absent`` draws of ``of``, null in ``null``, ``empty`` in one
    (when given): the three ways the apiserver reads "not set", beside the value."""
    roll = choose(draw, range(of))
    if roll < absent:
        return ABSENT
    if roll < absent + null:
        return None
    if roll == absent + null and empty is not ABSENT:
        return copy.copy(empty)
    return value


# --- names ---------------------------------------------------------------------------------


def subdomain(n: int, fill: str = "a") -> str:
    """A valid DNS subdomain of exactly ``n`` characters (labels of 63 joined by dots)."""
    out: list[str] = []
    while len(out) < n:
        out.append("." if len(out) % 64 == 63 else fill)
    if out and out[-1] == ".":
        out[-1] = fill
    return "".join(out)


def label(n: int, fill: str = "a") -> str:
    return fill * n


MULTIBYTE = "é"  # two bytes in UTF-8: Go's len() counts them twice

DRIVERS_OK = ["gpu.example.com", "dra.example.com", "example.com", "a", "x-y.z", "nic.vendor.io"]
DRIVERS_EDGE = [
    "", subdomain(62), subdomain(63), subdomain(64), "GPU.Example.com", "gpu_example.com", "-gpu.com",
    "gpu.com-", "gpu..com", ".gpu.com", "gpu.com.", "gpu/example.com", "gpü.com", MULTIBYTE * 31,
    MULTIBYTE * 32, " gpu.com", "gpu.com ", "a" * 64, "1.2.3.4", "*.example.com",
]

POOLS_OK = ["pool", "worker-1", "a/b", "gpu.example.com/pool-0", "p.q/r.s/t"]
POOLS_EDGE = [
    "", "a//b", "/a", "a/", "/", "A", "a_b", "a/B", subdomain(252), subdomain(253), subdomain(254),
    subdomain(126) + "/" + subdomain(126), subdomain(126) + "/" + subdomain(127), "a/" + subdomain(252),
    "a/" + subdomain(251), MULTIBYTE * 127, "-a/b", "a/b-", "a..b/c",
]

LABELS_OK = ["gpu-0", "dev", "a", "nic-12", "x0"]
LABELS_EDGE = ["", label(62), label(63), label(64), "GPU-0", "gpu_0", "-gpu", "gpu-", "gpu.0", "0",
               "é", MULTIBYTE * 32, "a b"]

NODES_OK = ["worker-1", "node.example.com", "n"]
NODES_EDGE = ["", "Worker-1", "worker_1", subdomain(253), subdomain(254), "-w", "w.", "w..x", "a/b"]

C_IDENTS_OK = ["model", "index", "memory", "cores", "a", "numa_node", "Model"]
C_IDENTS_EDGE = ["", "a" * 31, "a" * 32, "a" * 33, "_x", "x_", "9x", "x-y", "x.y", "é", "x y"]


@functools.cache
def qualified_names(driver: str = "gpu.example.com") -> st.SearchStrategy[str]:
    """Attribute and capacity keys: ``id`` or ``domain/id``, with every kind of bad form."""
    d = driver if isinstance(driver, str) and driver else "gpu.example.com"
    ok = C_IDENTS_OK + [f"{d}/model", "gpu.example.com/numa", "other.example.org/kind", f"{d}/index"]
    edge = C_IDENTS_EDGE + [
        subdomain(62) + "/x", subdomain(63) + "/x", subdomain(64) + "/x", "Upper.Example.COM/x", "/x", "x/",
        "/", "a/b/c", "a//b", "gpu.example.com/x/y", "bad_domain.com/x", "-a.com/x", "gpu.example.com/" + "a" * 32,
        "gpu.example.com/" + "a" * 33, "gpu.example.com/9x", "gpu.example.com/x-y", MULTIBYTE * 32 + "/x",
        subdomain(64) + "/" + "a" * 33,
    ]
    return pick(ok, edge)


LABEL_KEYS_OK = ["ready", "example.com/ready", "dra.example.com/attached", "x_y", "a.b-c"]
LABEL_KEYS_EDGE = [
    "", "a" * 63, "a" * 64, MULTIBYTE * 32, "p/q/r", "-x", "x-", "X", "example.com/", "/x", subdomain(253) + "/x",
    subdomain(254) + "/x", "Example.COM/x", "example.com/" + "a" * 64, "a b", "é",
]
LABEL_VALUES_OK = ["", "true", "v1", "a.b_c-d", "1"]
LABEL_VALUES_EDGE = ["a" * 63, "a" * 64, "bad value", "-x", "x-", "é", "a/b"]


# --- quantities ----------------------------------------------------------------------------

MANTISSAS = ["0", "1", "2", "5", "10", "100", "1024", "1.5", "0.5", ".5", "5.", "0.001", "123456789",
             "9223372036854775807", "9223372036854775808", "18446744073709551616", "1" + "0" * 30, "0.000000001",
             "1.0000000001", "00012"]
SUFFIXES = ["", "", "", "m", "u", "n", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "E3",
            "e-3", "e18", "e19", "e-9", "e-10", "e+2", "e0"]
SIGNS = ["", "", "", "", "+", "-"]
QUANTITY_BAD = ["", " ", "1.2.3", "1iB", "1KB", "abc", "1e", "5.e", "--1", "0x10", "1_000", "١", "1 Gi", "+-1",
                "1m1", "1.5.Gi", "1k1k", "\t2Gi", "1\n", "1e9223372036854775808", "1Ki2"]
#: Accepted by the apiserver's parser, some surprisingly: digits may be missing ("Gi" and "-" are
#: zero), binary-suffixed values are capped at int64's maximum, the nano rounding of negative
#: values goes away from zero, exponents may have leading zeros or a sign.
QUANTITY_ODD = [" 1", "1 ", "+1", "-0", "0.0", "1e1000", "1e-1000", "8Ei", "7Ei", "9.3e18", "1Ei", "Gi", "e3", "k",
                "+", "-", ".", "-.Gi", "-0.5n", "-1.0000000001", "16Ei", "9223372036854775808Ki", "1e0003", "1E+3",
                "00", "1.", "5.Gi", "-00012Ei", "1" + "0" * 21, "123456789012345678901234", "0.0000000000001"]
QUANTITY_NUMBERS = [0, 1, 2, 1.5, -1, 1e20, 1024]
PLAIN_QUANTITIES = ["1", "2", "4", "8", "16", "40Gi", "80Gi", "1Gi", "100m", "1k", "10G", "0"]


def quantity(draw: st.DrawFn, bad: bool = True) -> Any:
    """A quantity in any notation (strings, and JSON numbers, which the apiserver also reads);
    a malformed one (a decode error for the whole object) in about one draw in 25."""
    roll = draw(PERCENT)
    if bad and roll < 4:
        return choose(draw, QUANTITY_BAD)
    if roll < 16:
        return choose(draw, QUANTITY_ODD)
    if roll < 24:
        return choose(draw, QUANTITY_NUMBERS)
    if roll < 50:
        return choose(draw, PLAIN_QUANTITIES)
    return choose(draw, SIGNS) + choose(draw, MANTISSAS) + choose(draw, SUFFIXES)


# --- node selectors ------------------------------------------------------------------------

SELECTOR_KEYS = ["kubernetes.io/hostname", "zone", "topology.kubernetes.io/zone"]
SELECTOR_KEYS_EDGE = ["a/b/c", "", "-bad", "x" * 63, "x" * 64, subdomain(254) + "/x", "Example.com/x"]
SELECTOR_VALUES = ["a", "1", "worker-1", "", "bad value", "x" * 63, "x" * 64, "-1", "10"]
SELECTOR_OPS = pick(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"], ["Bogus", "", "in", ABSENT])
SELECTOR_KEY = pick(SELECTOR_KEYS, SELECTOR_KEYS_EDGE)
FIELD_KEY = pick(["metadata.name"], ["spec.nodeName", "", "metadata.labels"])
FIELD_OPS = pick(["In", "NotIn"], ["Exists", "Gt", "", ABSENT])
FIELD_VALUES = [["worker-1"], ["worker-1"], [], ["a", "b"], ["Bad_Name"], ABSENT, [subdomain(254)]]


def node_requirement(draw: st.DrawFn) -> dict[str, Any]:
    req: dict[str, Any] = {"key": draw(SELECTOR_KEY)}
    put(req, "operator", draw(SELECTOR_OPS))
    if not chance(draw, 15):
        req["values"] = [choose(draw, SELECTOR_VALUES) for _ in range(choose(draw, [0, 1, 1, 2, 3]))]
    return req


def field_requirement(draw: st.DrawFn) -> dict[str, Any]:
    req: dict[str, Any] = {"key": draw(FIELD_KEY)}
    put(req, "operator", draw(FIELD_OPS))
    put(req, "values", list(v) if isinstance(v := choose(draw, FIELD_VALUES), list) else v)
    return req


def node_selector_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {}
    n = choose(draw, [1, 1, 1, 2, 3, 0, -1, -2])  # -1: absent, -2: null
    if n >= 0:
        term["matchExpressions"] = [node_requirement(draw) for _ in range(n)]
    elif n == -2:
        term["matchExpressions"] = None
    if chance(draw, 20):
        term["matchFields"] = [field_requirement(draw) for _ in range(choose(draw, [1, 1, 2, 0]))]
    return term


def node_selector(draw: st.DrawFn) -> Any:
    """A NodeSelector: usually one term, sometimes none, two, an empty term, or no terms at all."""
    shape = choose(draw, [1, 1, 1, 1, 1, 1, 0, 2, "absent", "null"])
    if shape == "absent":
        return {}
    if shape == "null":
        return {"nodeSelectorTerms": None}
    return {"nodeSelectorTerms": [node_selector_term(draw) for _ in range(shape)]}
