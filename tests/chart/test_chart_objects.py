"""Every rendered object is a valid Kubernetes 1.37 object, and the chart lints clean.

Built-in kinds are checked strictly (unknown fields are errors) with `kubernetes-validate`'s
1.37 OpenAPI schemas; the CRD kinds (cert-manager, prometheus-operator) against the small
schemas below, which cover the fields the chart writes.
"""

from __future__ import annotations

import tomllib
import warnings

import helm_python
import jsonschema
import pytest

from tests.chart.helpers import CHART_DIR, CI_FILES, Rendered, load_values

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kubernetes_validate

K8S_VERSION = "1.37.0"

BUILTIN = {
    ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"), ("v1", "ServiceAccount"),
    ("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
}

_META = {"type": "object", "required": ["name", "namespace"], "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"}, "labels": {"type": "object"}}}
_ISSUER_REF = {"type": "object", "additionalProperties": False, "required": ["name"], "properties": {
    "name": {"type": "string"}, "kind": {"type": "string"}, "group": {"type": "string"}}}
_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}


def _crd(spec: dict) -> dict:
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "additionalProperties": False,
            "properties": {"apiVersion": {}, "kind": {}, "metadata": _META, "spec": spec}}


CRD_SCHEMAS = {
    ("cert-manager.io/v1", "Issuer"): _crd({
        "type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
        "properties": {"selfSigned": {"type": "object"},
                       "ca": {"type": "object", "required": ["secretName"], "additionalProperties": False,
                              "properties": {"secretName": {"type": "string"}}}}}),
    ("cert-manager.io/v1", "Certificate"): _crd({
        "type": "object", "additionalProperties": False, "required": ["secretName", "issuerRef"],
        "properties": {
            "secretName": {"type": "string"}, "commonName": {"type": "string", "maxLength": 64},
            "isCA": {"type": "boolean"}, "duration": _DURATION, "renewBefore": _DURATION,
            "dnsNames": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "usages": {"type": "array", "items": {"enum": [
                "server auth", "client auth", "digital signature", "key encipherment"]}},
            "privateKey": {"type": "object", "additionalProperties": False, "properties": {
                "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]}, "size": {"type": "integer"},
                "rotationPolicy": {"enum": ["Never", "Always"]}}},
            "issuerRef": _ISSUER_REF}}),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _crd({
        "type": "object", "additionalProperties": False, "required": ["selector", "endpoints"],
        "properties": {
            "selector": {"type": "object"}, "namespaceSelector": {"type": "object"},
            "endpoints": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "properties": {
                    "port": {"type": "string"}, "scheme": {"enum": ["http", "https"]},
                    "path": {"type": "string"}, "interval": _DURATION, "scrapeTimeout": _DURATION,
                    "tlsConfig": {"type": "object"}}}}}}),
}


def _validate(obj: dict) -> None:
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key in BUILTIN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    elif key in CRD_SCHEMAS:
        jsonschema.Draft7Validator(CRD_SCHEMAS[key]).validate(obj)
    else:
        pytest.fail(f"unexpected object kind {key}")


def test_ci_values_files_exist():
    assert {"default-values.yaml", "cert-manager-values.yaml", "existing-secret-values.yaml",
            "production-values.yaml", "force-ignore-values.yaml"} <= set(CI_FILES)


def test_every_object_matches_the_kubernetes_1_37_schema(ci: Rendered):
    assert ci.objects
    for obj in ci.objects:
        try:
            _validate(obj)
        except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as e:
            msg = str(e).splitlines()[0]
            pytest.fail(f"{obj['kind']}/{obj['metadata'].get('name')}: {msg}")


@pytest.mark.parametrize("obj", [
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
                  "spec": {"ports": [{"port": 443, "targetPrt": "https"}]}}, id="builtin-unknown-field"),
    pytest.param({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                  "metadata": {"name": "x", "namespace": "y"},
                  "spec": {"secretName": "s", "issuerRef": {"name": "i"}, "dnsName": ["a"]}},
                 id="crd-unknown-field"),
])
def test_the_object_validator_rejects_unknown_fields(obj):
    with pytest.raises((kubernetes_validate.ValidationError, jsonschema.ValidationError)):
        _validate(obj)


def test_objects_are_namespaced_in_the_release_namespace(ci: Rendered):
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                      "ValidatingWebhookConfiguration"}
    for obj in ci.objects:
        ns = obj["metadata"].get("namespace")
        if obj["kind"] in cluster_scoped:
            assert ns is None, obj["kind"]
        else:
            assert ns == "dra-system", obj["kind"]


def test_names_are_unique_per_kind(ci: Rendered):
    seen = [(o["kind"], o["metadata"]["name"]) for o in ci.objects]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("values_file", CI_FILES)
def test_helm_lint_has_no_errors_or_warnings(values_file):
    report = helm_python.lint(str(CHART_DIR), load_values(values_file), strict=True,
                              namespace="dra-system", kube_version="v1.37.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


def test_helm_lint_reports_a_broken_values_file():
    report = helm_python.lint(str(CHART_DIR), {"replicaCount": "two"}, namespace="dra-system",
                              kube_version="v1.37.0")
    assert any(m["severity"] == 3 for m in report["messages"]) or report["errors"]


def test_chart_metadata_matches_the_package():
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        meta = chart.metadata
    finally:
        chart.close()
    project = tomllib.loads((CHART_DIR.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["appVersion"] == project["project"]["version"]
    # preStop sleep action, matchConditions and resource.k8s.io/v1 need Kubernetes >= 1.34.
    assert meta["kubeVersion"] == ">=1.34.0-0"
