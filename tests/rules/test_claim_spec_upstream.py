"""Claim spec rows found by the differential tests (issue 15): each is a case where we answered
differently from the 1.37 apiserver, kept here with upstream's answer so it runs without Go. Run
against a ResourceClaim and a ResourceClaimTemplate, as ``test_claim_spec`` does; the manifest
differential test sends every object of these tables to the real apiserver as well."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.rules.test_claim_spec import GPU, KINDS, R, causes, devices, req, sel, sub
from webhook.fielderrors import ErrorType as T

DA = "DRADerivedAttributes=true"
DA_LISTS = "DRADerivedAttributes=true,DRAListTypeAttributes=true"
BIG = 10 * 1024 - len('{"k":""}')


def derived(name: str | None = "dra.example.com/numa", expr: str | None = 'device.attributes["x"].numa') -> Any:
    d: dict[str, Any] = {}
    if name is not None:
        d["name"] = name
    if expr is not None:
        d["expression"] = expr
    return d


def numa(requests: list[str] | None = None, attr: str = "dra.example.com/numa") -> dict[str, Any]:
    return {"matchAttribute": attr, **({"requests": requests} if requests is not None else {})}


def nested(depth: int, width: int, body: str = "true") -> str:
    lst = "[" + ", ".join(str(i) for i in range(width)) + "]"
    for d in range(depth):
        body = f"{lst}.all(x{d}, {body})"
    return body


D0 = "{d}.requests[0].exactly"
FIND = "int('1'.find('[0-9]*')) < 100"  # upstream's own test body: five levels of it cost ~0.6 M
CASES = [
    # -- opaque config --------------------------------------------------------------------------
    pytest.param(devices(req(), config=[{"requests": ["gpu"]}]), {("{d}.config[0].opaque", T.REQUIRED)}, "",
                 id="opaque-missing-is-required-at-opaque"),
    pytest.param(devices(req(), config=[{"opaque": {"driver": "dra.example.com", "parameters": {"k": "x" * BIG}}}]),
                 set(), "", id="opaque-parameters-at-the-10ki-limit"),
    pytest.param(devices(req(), config=[{"opaque": {"driver": "dra.example.com",
                                                    "parameters": {"k": "<" * (BIG // 6 + 1)}}}]),
                 {("{d}.config[0].opaque.parameters", T.TOO_LONG)}, "",
                 id="opaque-parameters-measured-as-go-encodes-them"),
    pytest.param(devices(req(), config=[{"opaque": {"driver": "a" * 64 + ".", "parameters": {}}}]),
                 {("{d}.config[0].opaque.driver", T.TOO_LONG), ("{d}.config[0].opaque.driver", T.INVALID)}, "",
                 id="driver-too-long-and-malformed-both-reported"),
    # -- fully qualified names ------------------------------------------------------------------
    pytest.param(devices(req(), constraints=[numa(attr="Dra.Example.com/numa")]),
                 {("{d}.constraints[0].matchAttribute", T.INVALID)}, "",
                 id="fqn-domain-must-be-lower-case"),
    pytest.param(devices(req(), constraints=[numa(attr="a/b/c")]), set(), "", id="fqn-with-two-slashes-not-checked"),
    pytest.param(devices(req(), constraints=[numa(attr="a" * 64 + "/x")]),
                 {("{d}.constraints[0].matchAttribute", T.TOO_LONG)}, "", id="fqn-domain-over-63"),
    pytest.param(devices(req(), constraints=[{"distinctAttribute": "dra.example.com/" + "a" * 33}]),
                 {("{d}.constraints[0].distinctAttribute", T.TOO_LONG)}, "", id="fqn-identifier-over-32"),
    # -- CEL --------------------------------------------------------------------------------------
    pytest.param(devices(req(selectors=[sel(""), {"cel": {}}])),
                 {(D0 + ".selectors[0].cel.expression", T.INVALID), (D0 + ".selectors[1].cel.expression", T.INVALID)},
                 "", id="cel-empty-expression-is-a-syntax-error"),
    pytest.param(devices(req(selectors=[sel('cel.bind(d, device.attributes["x"], d.a == 1)'),
                                        sel("'1'.find('[0-9]*') == '1'"), sel('isIP("1.2.3.4")'),
                                        sel("sets.contains([1, 2], [1])"), sel("[[1], [2]].flatten() == [1, 2]"),
                                        sel('[1, 2].all(i, v, v > i)'), sel('duration("1s") > duration("0s")'),
                                        sel('device.attributes["x"].?model.orValue("") == "a"')])),
                 set(), "", id="cel-base-environment-libraries"),
    pytest.param(devices(req(selectors=[sel('device.driver.find("(") == ""')])),
                 {(D0 + ".selectors[0].cel.expression", T.INTERNAL)}, "", id="cel-find-with-a-bad-regex-literal"),
    pytest.param(devices(req(selectors=[sel('device.driver.matches("(")'), sel('duration("1x") > duration("1s")'),
                                        sel('[1, "a"] == [1, "a"]'), sel("size(1) == 1"), sel("1.5 % 2.0 == 1.0"),
                                        sel("device.capacity.memory"), sel('quantity("1").sign() == 1'),
                                        sel('"%q".format([1]) == ""')])),
                 {(D0 + f".selectors[{i}].cel.expression", T.INVALID) for i in range(8)}, "",
                 id="cel-compile-errors-upstream-reports"),
    pytest.param(devices(req(selectors=[sel('device.driver.split("").all(c, device.driver.split("").all(d, c == d))'),
                                        sel('["a", "b"].join("-") == "a-b"'), sel("type(device.driver) == string"),
                                        sel(nested(3, 40)),
                                        sel('device.driver.split(".").all(p, p.startsWith("x"))')])),
                 {(D0 + f".selectors[{i}].cel.expression", T.FORBIDDEN) for i in range(3)}, "",
                 id="cel-cost-as-upstream-estimates-it"),
    # -- derived attributes -------------------------------------------------------------------------
    pytest.param(devices(req(derivedAttributes=[derived()]), constraints=[numa()]), set(), DA,
                 id="derived-used-by-a-constraint-on-every-request"),
    pytest.param(devices(req(derivedAttributes=[derived()]), constraints=[numa(["other"])], ),
                 {(D0 + ".derivedAttributes[0].name", T.INVALID), ("{d}.constraints[0].requests[0]", T.INVALID)}, DA,
                 id="derived-not-used-by-a-constraint-on-this-request"),
    pytest.param(devices({"name": "gpu", "firstAvailable": [sub("a", derivedAttributes=[derived()])]},
                         constraints=[numa(["gpu"])]), set(), DA, id="derived-on-a-subrequest-used-via-its-parent"),
    pytest.param(devices(req(derivedAttributes=[derived(None, None), derived(None, "1")]), constraints=[numa()]),
                 {(D0 + ".derivedAttributes[0].name", T.REQUIRED),
                  (D0 + ".derivedAttributes[0].expression", T.REQUIRED),
                  (D0 + ".derivedAttributes[1].name", T.REQUIRED), (D0 + ".derivedAttributes[1]", T.DUPLICATE)}, DA,
                 id="derived-name-and-expression-required-names-unique"),
    pytest.param(devices(req(derivedAttributes=[derived(expr="device.attributes"), derived("derived/b", "[1.5]")]),
                         constraints=[numa(), numa(attr="derived/b")]),
                 {(D0 + ".derivedAttributes[0].expression", T.INVALID),
                  (D0 + ".derivedAttributes[1].expression", T.INVALID)}, DA_LISTS,
                 id="derived-result-must-be-a-scalar-or-a-list-of-them"),
    pytest.param(devices(req(derivedAttributes=[derived(expr="[1, 2, 3]")]), constraints=[numa()]),
                 {(D0 + ".derivedAttributes[0].expression", T.INVALID)}, DA, id="derived-lists-need-list-attributes"),
    pytest.param(devices(req(derivedAttributes=[derived(expr="[1, 2, 3]")]), constraints=[numa()]), set(), DA_LISTS,
                 id="derived-lists-with-list-attributes"),
    pytest.param(devices(req(derivedAttributes=[derived(expr=nested(5, 10, FIND) + " ? 1 : 2"),
                                                derived("derived/b", nested(5, 10, FIND) + " ? 1 : 2")]),
                         constraints=[numa(), numa(attr="derived/b")]),
                 {("{d}", T.FORBIDDEN)}, DA, id="derived-costs-share-one-budget"),
    pytest.param(devices(req(derivedAttributes=[derived(expr=nested(7, 10) + " ? 1 : 2")]), constraints=[numa()]),
                 {(D0 + ".derivedAttributes[0].expression", T.FORBIDDEN), ("{d}", T.FORBIDDEN)}, DA,
                 id="derived-expression-over-its-own-cost-limit"),
    pytest.param(devices(req(derivedAttributes=[derived(None, None)])), set(), "",
                 id="derived-attributes-dropped-with-their-gate-off"),
    # -- requests ---------------------------------------------------------------------------------
    pytest.param(devices({"name": "gpu", "exactly": {"deviceClassName": "-bad", "count": -1},
                          "firstAvailable": [{"name": "-s", "deviceClassName": "Bad", "count": -5,
                                              "tolerations": [{"operator": "Bogus"}]}]}),
                 {("{d}.requests[0]", T.INVALID), ("{d}.requests[0].firstAvailable[0].deviceClassName", T.INVALID),
                  ("{d}.requests[0].firstAvailable[0].tolerations[0].operator", T.NOT_SUPPORTED)}, "",
                 id="both-set-only-the-declarative-checks-look-inside"),
    pytest.param(devices({"firstAvailable": []}, {"exactly": None}),
                 {("{d}.requests[0]", T.REQUIRED), ("{d}.requests[0].name", T.INVALID),
                  ("{d}.requests[1]", T.REQUIRED), ("{d}.requests[1].name", T.INVALID),
                  ("{d}.requests[1]", T.DUPLICATE)},
                 "", id="requests-without-names-are-duplicates"),
    pytest.param(devices({"name": "gpu", "firstAvailable": [sub("s")]}, req("gpu"), config=[
        {"requests": ["gpu/s"], "opaque": {"driver": "dra.example.com", "parameters": {}}}]),
                 {("{d}.requests[1]", T.DUPLICATE), ("{d}.config[0].requests[0]", T.INVALID)}, "",
                 id="a-later-request-of-the-same-name-replaces-the-earlier"),
    pytest.param(devices(req(tolerations=[{"key": "k", "operator": "Exists"}] * 17)), set(), "",
                 id="tolerations-have-no-limit"),
    pytest.param(devices(req(tolerations=[{"key": "Example.com/key", "operator": "Equal", "value": "a" * 64}])),
                 {(D0 + ".tolerations[0].key", T.INVALID), (D0 + ".tolerations[0].value", T.INVALID)}, "",
                 id="toleration-key-prefix-lower-case-value-a-label-value"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dev", "want", "gates"), CASES)
def test_upstream_rows(kind: Any, dev: dict[str, Any], want: set[tuple[str, T]], gates: str) -> None:
    mod, build, prefix = kind
    expected = {(f.replace("{d}", prefix).replace(R, prefix + ".requests"), t) for f, t in want}
    assert causes(mod, build(copy.deepcopy(dev)), gates) == expected


def test_derived_attributes_are_stripped_with_the_gate_off() -> None:
    from tests.rules.test_claim_spec import as_claim
    from webhook.gates import FeatureGates
    from webhook.patch import apply_patch
    from webhook.rules.claims import resourceclaim
    from webhook.rules.context import RuleContext
    obj = resourceclaim.apply_defaults(as_claim(devices(req(derivedAttributes=[derived()]), constraints=[numa()])))
    m = resourceclaim.mutate(obj, RuleContext(FeatureGates.defaults()))
    out = apply_patch(obj, m.ops)
    assert "derivedAttributes" not in out["spec"]["devices"]["requests"][0]["exactly"]
    assert m.warnings == ["DRADerivedAttributes is off: removed spec.devices.requests[0].exactly.derivedAttributes"]
    assert json.dumps(out).count(GPU) == 1
