"""values.schema.json is strict and matches the server; values.yaml documents every key."""

from __future__ import annotations

import json
import re

import helm_python
import jsonschema
import pytest
import yaml

from tests.chart.helpers import CHART_DIR, CI_FILES, load_values, render
from webhook.gates import KNOWN

SCHEMA = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _helm_accepts(values: dict) -> bool:
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        chart.validate_schema(values)
        return True
    except helm_python.HelmValuesError:
        return False
    finally:
        chart.close()


def test_schema_is_a_valid_draft7_schema():
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("values_file", ["values.yaml", *CI_FILES])
def test_shipped_values_pass_the_schema(values_file):
    values = (yaml.safe_load((CHART_DIR / "values.yaml").read_text()) if values_file == "values.yaml"
              else load_values(values_file))
    assert _helm_accepts(values)


BAD_VALUES = [
    pytest.param({"replicaCount": 0}, "/replicaCount", id="zero-replicas"),
    pytest.param({"replicaCount": "2"}, "/replicaCount", id="replicas-as-string"),
    pytest.param({"replicas": 2}, "replicas", id="unknown-top-level-key"),
    pytest.param({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy", id="bad-pull-policy"),
    pytest.param({"image": {"digest": "sha256:abc"}}, "/image/digest", id="short-digest"),
    pytest.param({"image": {"registry": "x"}}, "registry", id="unknown-image-key"),
    pytest.param({"webhooks": {"timeoutSeconds": 0}}, "/webhooks/timeoutSeconds", id="timeout-below-1"),
    pytest.param({"webhooks": {"timeoutSeconds": 31}}, "/webhooks/timeoutSeconds", id="timeout-above-30"),
    pytest.param({"webhooks": {"validating": {"failurePolicy": "fail"}}},
                 "/webhooks/validating/failurePolicy", id="failure-policy-wrong-case"),
    pytest.param({"webhooks": {"mutating": {"reinvocationPolicy": "Always"}}},
                 "/webhooks/mutating/reinvocationPolicy", id="bad-reinvocation-policy"),
    pytest.param({"webhooks": {"forceFailurePolicyIgnore": "yes"}}, "/webhooks/forceFailurePolicyIgnore",
                 id="force-ignore-not-bool"),
    pytest.param({"webhooks": {"sideEffects": "Some"}}, "sideEffects", id="side-effects-not-configurable"),
    pytest.param({"webhooks": {"matchConditions": [{"name": "x"}]}}, "/webhooks/matchConditions/0",
                 id="match-condition-without-expression"),
    pytest.param({"webhooks": {"matchConditions": [{"name": f"c{i}", "expression": "true"}
                                                   for i in range(64)]}},
                 "/webhooks/matchConditions", id="too-many-match-conditions"),
    pytest.param({"webhooks": {"namespaceSelector": {"excludeNamespaces": ["Kube_System"]}}},
                 "/webhooks/namespaceSelector/excludeNamespaces/0", id="namespace-not-dns-label"),
    pytest.param({"webhooks": {"namespaceSelector": {
                      "matchExpressions": [{"key": "a", "operator": "Equals"}]}}},
                 "/webhooks/namespaceSelector/matchExpressions/0/operator", id="bad-selector-operator"),
    pytest.param({"featureGates": {"DRAFancyThing": True}}, "DRAFancyThing", id="unknown-feature-gate"),
    pytest.param({"featureGates": {"GenericWorkload": "true"}}, "/featureGates/GenericWorkload",
                 id="gate-value-as-string"),
    pytest.param({"featureGates": {"DRAPrioritizedList": False}}, "/featureGates/DRAPrioritizedList",
                 id="locked-gate-turned-off"),
    pytest.param({"config": {"maxWarnings": 0}}, "/config/maxWarnings", id="zero-warnings"),
    pytest.param({"config": {"deadlineMarginSeconds": -1}}, "/config/deadlineMarginSeconds",
                 id="negative-margin"),
    pytest.param({"config": {"maxBodyBytes": "3Mi"}}, "/config/maxBodyBytes", id="body-limit-as-quantity"),
    pytest.param({"config": {"verbose": True}}, "verbose", id="unknown-config-key"),
    pytest.param({"certs": {"mode": "auto"}}, "/certs/mode", id="unknown-cert-mode"),
    pytest.param({"certs": {"mode": "existingSecret"}}, "/certs/existingSecret",
                 id="existing-secret-mode-without-secret"),
    pytest.param({"certs": {"mode": "existingSecret",
                            "existingSecret": {"name": "t", "caBundle": "LS0tLS1CRUdJTg=="}}},
                 "/certs/existingSecret/caBundle", id="ca-bundle-base64-instead-of-pem"),
    pytest.param({"certs": {"selfSigned": {"certValidityDays": 0}}}, "/certs/selfSigned/certValidityDays",
                 id="zero-day-cert"),
    pytest.param({"certs": {"certManager": {"duration": "90 days"}}}, "/certs/certManager/duration",
                 id="cert-manager-duration-not-go-duration"),
    pytest.param({"certs": {"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}}},
                 "/certs/certManager/issuerRef", id="issuer-ref-without-name"),
    pytest.param({"podAntiAffinity": "soft"}, "/podAntiAffinity", id="bad-anti-affinity-preset"),
    pytest.param({"topologySpread": {"whenUnsatisfiable": "Ignore"}}, "/topologySpread/whenUnsatisfiable",
                 id="bad-when-unsatisfiable"),
    pytest.param({"preStopSleepSeconds": -1}, "/preStopSleepSeconds", id="negative-prestop"),
    pytest.param({"podDisruptionBudget": {"minAvailable": "150%"}}, "/podDisruptionBudget/minAvailable",
                 id="pdb-over-100-percent"),
    pytest.param({"service": {"type": "ExternalName"}}, "/service/type", id="external-name-service"),
    pytest.param({"service": {"port": 70000}}, "/service/port", id="port-out-of-range"),
    pytest.param({"serviceMonitor": {"enabled": "true"}}, "/serviceMonitor/enabled",
                 id="monitor-enabled-string"),
    pytest.param({"networkPolicy": {"egressPorts": [0]}}, "/networkPolicy/egressPorts/0",
                 id="egress-port-zero"),
    pytest.param({"resources": {"requests": {"cpu": "100m"}, "limit": {}}}, "limit", id="resources-typo"),
    pytest.param({"server": {"logLevel": "trace"}}, "/server/logLevel", id="bad-log-level"),
]


@pytest.mark.parametrize(("values", "where"), BAD_VALUES)
def test_schema_rejects_bad_values(values, where):
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        with pytest.raises(helm_python.HelmValuesError) as info:
            chart.validate_schema(values)
    finally:
        chart.close()
    assert where in str(info.value)


def test_install_with_a_bad_values_file_fails(tmp_path):
    bad = tmp_path / "bad-values.yaml"
    bad.write_text("webhooks:\n  timeoutSeconds: 60\n  failurePolicy: Fail\n")
    with pytest.raises(helm_python.HelmValuesError, match="timeoutSeconds"):
        render(helm_python.values_from_yaml(bad.read_text()))


@pytest.mark.parametrize(("values", "accepted"), [
    pytest.param({"certs": {"mode": "existingSecret", "existingSecret": {"name": "t", "caBundle": PEM}}},
                 True, id="existing-secret-complete"),
    pytest.param({"certs": {"certManager": {"issuerRef": {}}}}, True, id="empty-issuer-ref"),
    pytest.param({"podDisruptionBudget": {"minAvailable": "50%"}}, True, id="pdb-percentage"),
    pytest.param({"featureGates": {name: KNOWN[name].default for name in KNOWN}}, True, id="every-gate"),
    pytest.param({"global": {"imageRegistry": "x"}}, True, id="helm-globals"),
])
def test_schema_accepts_good_values(values, accepted):
    assert _helm_accepts(values) is accepted


def test_schema_feature_gates_are_the_servers():
    gates = SCHEMA["properties"]["featureGates"]
    assert gates["additionalProperties"] is False
    assert set(gates["properties"]) == set(KNOWN)
    for name, gate in KNOWN.items():
        prop = gates["properties"][name]
        if gate.locked:
            assert prop["const"] is gate.default, name
        else:
            assert prop["type"] == "boolean", name


def _strict_objects(schema: dict, path: str = "") -> list[str]:
    """Dotted paths of every object in the schema that has declared properties."""
    out = []
    if schema.get("properties"):
        out.append(path)
        for key, sub in schema["properties"].items():
            out += _strict_objects(sub, f"{path}.{key}" if path else key)
    return out


def test_every_schema_object_with_properties_is_closed():
    def node(path: str) -> dict:
        n = SCHEMA
        for part in filter(None, path.split(".")):
            n = n["properties"][part]
        return n
    for path in _strict_objects(SCHEMA):
        assert node(path).get("additionalProperties") is False, path or "<root>"


def _documented_keys() -> tuple[set[str], set[str]]:
    """(keys present in values.yaml as dotted paths, keys whose comment block names them)."""
    lines = (CHART_DIR / "values.yaml").read_text(encoding="utf-8").splitlines()
    stack: list[tuple[int, str]] = []
    present, documented = set(), set()
    comments: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append(stripped.lstrip("#").strip())
            continue
        m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", line)
        if not m:
            if not stripped:
                comments = []
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        present.add(path)
        if comments and (comments[0].startswith(path + " --") or comments[0].startswith(path + " ")):
            documented.add(path)
        comments = []
    return present, documented


def test_values_yaml_documents_every_key():
    present, documented = _documented_keys()
    # Kubernetes objects passed through whole: the object is documented, not its fields.
    free_form = {"podSecurityContext", "securityContext", "resources"}
    sections = {p for p in _strict_objects(SCHEMA) if p}  # groups whose children carry the docs
    must = {p for p in present
            if p in free_form or (p not in sections and p.split(".")[0] not in free_form)}
    assert len(must) > 60
    assert must - documented == set()
