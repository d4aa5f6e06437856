"""The webhook configurations: exactly our rules, safe defaults, failure policy switches, selectors."""

from __future__ import annotations

import pytest
import yaml

from tests.chart.helpers import SERVICE, Rendered, render, rendered_ci
from webhook.rules.registry import KINDS
from webhook.workloads import WORKLOAD_KINDS

#: The pod webhook's own rule; the main webhooks route every other kind of the registry.
POD_RULES = {("", "v1", "pods", "Namespaced")}
#: The workload kinds of the registry: records that only add feasibility (never validate).
WORKLOAD_RULES = {(r.group, r.versions[0], r.plural, "Namespaced") for r in KINDS.values() if r.kind in WORKLOAD_KINDS}
POD_CONDITION = {"name": "uses-claims-or-scheduling-group", "expression":
                 "has(object.spec.schedulingGroup) || (has(object.spec.resourceClaims) && "
                 "size(object.spec.resourceClaims) > 0)"}
GROUP_CONDITION = {"name": "uses-scheduling-group", "expression": "has(object.spec.schedulingGroup)"}
DRY_RUN_CONDITION = {"name": "dry-run-only", "expression": "request.dryRun == true"}
#: Derived from the kind registry, so a new kind cannot be left out of the chart (or the chart
#: route a kind we do not check): the preferred version of each (matchPolicy Equivalent sends
#: the others converted to it), at the kind's scope.
DRA_RULES = {(r.group, r.versions[0], r.plural, "Namespaced" if r.namespaced else "Cluster")
             for r in KINDS.values()} - POD_RULES - WORKLOAD_RULES


def _flat_rules(webhook: dict) -> tuple[set[tuple[str, str, str, str]], set[str]]:
    """(group, version, resource, scope) tuples and the union of operations of a webhook's rules."""
    triples, ops = set(), set()
    for rule in webhook["rules"]:
        ops |= set(rule["operations"])
        for g in rule["apiGroups"]:
            for v in rule["apiVersions"]:
                for r in rule["resources"]:
                    triples.add((g, v, r, rule["scope"]))
    return triples, ops


def _webhooks(r: Rendered) -> list[tuple[str, dict]]:
    return [(cfg["kind"], w) for cfg in r.webhook_configs() for w in cfg["webhooks"]]


def test_default_install_has_one_mutating_and_one_validating_webhook(default: Rendered):
    assert [w["name"] for w in default.one("MutatingWebhookConfiguration")["webhooks"]] == [
        "mutate.dra-webhook.io"]
    assert [w["name"] for w in default.one("ValidatingWebhookConfiguration")["webhooks"]] == [
        "validate.dra-webhook.io"]


def test_the_registry_routes_what_the_issue_asked_for():
    """The derivation holds the kinds it must (a registry that lost one would shrink the chart)."""
    assert {("resource.k8s.io", "v1", "deviceclasses", "Cluster"),
            ("resource.k8s.io", "v1", "devicetaintrules", "Cluster"),
            ("resource.k8s.io", "v1", "resourceslices", "Cluster")} <= DRA_RULES
    assert len(DRA_RULES) == len(KINDS) - 1 - len(WORKLOAD_RULES)


def test_rules_name_exactly_our_resources_and_operations(ci: Rendered):
    for _kind, w in _webhooks(ci):
        triples, ops = _flat_rules(w)
        if "pods" in w["name"]:
            assert triples == POD_RULES and ops == {"CREATE"}, w["name"]
        elif "workloads" in w["name"]:
            assert triples == WORKLOAD_RULES and ops == {"CREATE"}, w["name"]
        else:
            assert triples == DRA_RULES and ops == {"CREATE", "UPDATE"}, w["name"]
        # No wildcard anywhere, never subresources, never DELETE/CONNECT.
        for rule in w["rules"]:
            for field in ("apiGroups", "apiVersions", "resources", "operations"):
                assert "*" not in rule[field]
            assert not any("/" in r for r in rule["resources"])


def test_protocol_fields_on_every_webhook(ci: Rendered):
    for kind, w in _webhooks(ci):
        assert w["admissionReviewVersions"] == ["v1"]
        assert w["sideEffects"] == "None"  # kubectl --dry-run=server works
        assert w["matchPolicy"] == "Equivalent"
        svc = w["clientConfig"]["service"]
        assert svc == {"name": SERVICE, "namespace": "dra-system", "port": 443,
                       "path": "/mutate" if kind == "MutatingWebhookConfiguration" else "/validate"}
        assert "url" not in w["clientConfig"]
        if kind == "MutatingWebhookConfiguration":
            assert w["reinvocationPolicy"] == "Never"
        else:
            assert "reinvocationPolicy" not in w


def test_service_port_matches_webhook_client_config(ci: Rendered):
    (port,) = ci.one("Service")["spec"]["ports"]
    assert port["targetPort"] == "https"
    (cport,) = ci.container()["ports"]
    assert (cport["name"], cport["containerPort"]) == ("https", 8443)
    for _, w in _webhooks(ci):
        assert w["clientConfig"]["service"]["port"] == port["port"]


@pytest.mark.parametrize(("values", "mutating", "validating"), [
    pytest.param({}, "Ignore", "Fail", id="defaults-mutating-ignore-validating-fail"),
    pytest.param({"webhooks": {"validating": {"failurePolicy": "Ignore"}}}, "Ignore", "Ignore",
                 id="validating-ignore"),
    pytest.param({"webhooks": {"mutating": {"failurePolicy": "Fail"}}}, "Fail", "Fail",
                 id="mutating-fail"),
    pytest.param({"webhooks": {"forceFailurePolicyIgnore": True, "mutating": {"failurePolicy": "Fail"}}},
                 "Ignore", "Ignore", id="force-ignore-overrides-fail"),
    pytest.param({"webhooks": {"forceFailurePolicyIgnore": True, "pods": {"enabled": True}}},
                 "Ignore", "Ignore", id="force-ignore-covers-pod-webhooks"),
])
def test_failure_policy(values, mutating, validating):
    r = render(values)
    for w in r.one("MutatingWebhookConfiguration")["webhooks"]:
        assert w["failurePolicy"] == mutating, w["name"]
    for w in r.one("ValidatingWebhookConfiguration")["webhooks"]:
        assert w["failurePolicy"] == validating, w["name"]


def test_force_ignore_ci_file_leaves_no_fail_webhook():
    r = rendered_ci("force-ignore-values.yaml")
    assert {w["failurePolicy"] for _, w in _webhooks(r)} == {"Ignore"}


@pytest.mark.parametrize("timeout", [1, 5, 30])
def test_timeout_is_set_on_webhooks_and_followed_by_the_server_deadline(timeout):
    r = render({"webhooks": {"timeoutSeconds": timeout}, "config": {"deadlineMarginSeconds": 0.5}})
    assert {w["timeoutSeconds"] for _, w in _webhooks(r)} == {timeout}
    config = yaml.safe_load(r.one("ConfigMap")["data"]["config.yaml"])
    assert config["defaultTimeoutSeconds"] == timeout


def test_default_timeout_is_5_seconds(default: Rendered):
    assert {w["timeoutSeconds"] for _, w in _webhooks(default)} == {5}


def test_default_namespace_selector_excludes_kube_system_release_namespace_and_opt_out(default: Rendered):
    for _, w in _webhooks(default):
        assert w["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
             "values": ["kube-system", "dra-system"]},
            {"key": "dra-webhook.io/ignore", "operator": "DoesNotExist"},
        ]}
        assert "objectSelector" not in w and "matchConditions" not in w


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param({"excludeReleaseNamespace": False},
                 [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
                  {"key": "dra-webhook.io/ignore", "operator": "DoesNotExist"}],
                 id="release-namespace-not-excluded"),
    pytest.param({"excludeNamespaces": ["dra-system"]},
                 [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["dra-system"]},
                  {"key": "dra-webhook.io/ignore", "operator": "DoesNotExist"}],
                 id="release-namespace-listed-once"),
    pytest.param({"optOutLabel": "example.com/skip-dra"},
                 [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                   "values": ["kube-system", "dra-system"]},
                  {"key": "example.com/skip-dra", "operator": "DoesNotExist"}],
                 id="custom-opt-out-label"),
    pytest.param({"excludeNamespaces": [], "excludeReleaseNamespace": False, "optOutLabel": ""},
                 None, id="everything-off-matches-all"),
    pytest.param({"matchExpressions": [{"key": "team", "operator": "In", "values": ["ml"]}]},
                 [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                   "values": ["kube-system", "dra-system"]},
                  {"key": "dra-webhook.io/ignore", "operator": "DoesNotExist"},
                  {"key": "team", "operator": "In", "values": ["ml"]}],
                 id="extra-expressions-appended"),
])
def test_namespace_selector_options(values, expected):
    r = render({"webhooks": {"namespaceSelector": values}})
    for _, w in _webhooks(r):
        if expected is None:
            assert w["namespaceSelector"] == {}
        else:
            assert w["namespaceSelector"]["matchExpressions"] == expected


def test_pods_rule_is_off_by_default(default: Rendered):
    for _, w in _webhooks(default):
        assert ("", "v1", "pods", "Namespaced") not in _flat_rules(w)[0]


def test_pods_rule_matches_only_pods_using_claims_or_a_scheduling_group():
    """/validate warns about the feasibility of pods with claims or a group; /mutate only strips a
    schedulingGroup the gate drops, so it sees only those."""
    r = render({"webhooks": {"pods": {"enabled": True}}})
    for cfg in r.webhook_configs():
        names = [w["name"] for w in cfg["webhooks"]]
        assert len(names) == 2
        (pod_hook,) = [w for w in cfg["webhooks"] if "pods" in w["name"]]
        want = GROUP_CONDITION if cfg["kind"] == "MutatingWebhookConfiguration" else POD_CONDITION
        assert pod_hook["matchConditions"] == [want]
        assert pod_hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "dra-system"]


def test_workloads_rule_is_off_by_default(default: Rendered):
    assert not any("workloads" in w["name"] for _, w in _webhooks(default))


def test_workloads_rule_is_validating_only_dry_run_only_and_never_blocks():
    r = render({"webhooks": {"workloads": {"enabled": True}, "validating": {"failurePolicy": "Fail"}}})
    assert [w["name"] for w in r.one("MutatingWebhookConfiguration")["webhooks"]] == ["mutate.dra-webhook.io"]
    (hook,) = [w for w in r.one("ValidatingWebhookConfiguration")["webhooks"] if "workloads" in w["name"]]
    assert hook["name"] == "validate-workloads.dra-webhook.io"
    assert hook["matchConditions"] == [DRY_RUN_CONDITION]
    assert hook["failurePolicy"] == "Ignore"
    assert _flat_rules(hook) == (WORKLOAD_RULES, {"CREATE"})
    assert hook["clientConfig"]["service"]["path"] == "/validate"


def test_workload_rules_are_the_registrys_workload_kinds():
    assert {r[2] for r in WORKLOAD_RULES} == {"deployments", "replicasets", "statefulsets", "jobs", "cronjobs"}
    assert all(KINDS[(g, k)].feasibility and not KINDS[(g, k)].feasibility_on_update
               for g, k in KINDS if k in WORKLOAD_KINDS)


def test_match_conditions_and_object_selector_pass_through():
    cond = {"name": "only-gpu", "expression": "object.metadata.name != 'skip'"}
    sel = {"matchLabels": {"dra-webhook.io/enabled": "true"}}
    r = render({"webhooks": {"matchConditions": [cond], "objectSelector": sel, "pods": {"enabled": True},
                             "workloads": {"enabled": True}}})
    for kind, w in _webhooks(r):
        assert w["objectSelector"] == sel
        if "pods" in w["name"]:
            own = GROUP_CONDITION if kind == "MutatingWebhookConfiguration" else POD_CONDITION
            assert w["matchConditions"] == [own, cond]
        elif "workloads" in w["name"]:
            assert w["matchConditions"] == [DRY_RUN_CONDITION, cond]
        else:
            assert w["matchConditions"] == [cond]


@pytest.mark.parametrize(("values", "kinds"), [
    pytest.param({"webhooks": {"mutating": {"enabled": False}}}, {"ValidatingWebhookConfiguration"},
                 id="validating-only"),
    pytest.param({"webhooks": {"validating": {"enabled": False}}}, {"MutatingWebhookConfiguration"},
                 id="mutating-only"),
])
def test_each_configuration_can_be_disabled(values, kinds):
    assert {c["kind"] for c in render(values).webhook_configs()} == kinds


def test_configurations_are_release_objects_not_hooks(ci: Rendered):
    # helm uninstall deletes release objects (webhook configurations first in Helm's uninstall
    # order), so no Fail webhook outlives its backend.
    for cfg in ci.webhook_configs():
        annotations = cfg["metadata"].get("annotations") or {}
        assert "helm.sh/hook" not in annotations
        assert "helm.sh/resource-policy" not in annotations


def test_notes_show_a_server_side_dry_run_and_the_emergency_procedure(default: Rendered):
    assert "kubectl apply --dry-run=server -f -" in default.notes
    assert "kind: ResourceClaim" in default.notes
    assert "kubectl delete validatingwebhookconfiguration dra-dra-webhook" in default.notes
    assert "Failure policy: validating=Fail mutating=Ignore timeout=5s" in default.notes


def test_notes_example_is_a_valid_resource_claim(default: Rendered):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kubernetes_validate

        text = default.notes.split("<<'YAML' | kubectl apply --dry-run=server -f -\n", 1)[1]
        text = text.split("   YAML\n", 1)[0]
        claim = yaml.safe_load("\n".join(line[3:] for line in text.splitlines()))
        assert claim["kind"] == "ResourceClaim"
        kubernetes_validate.validate(claim, "1.37.0", strict=True)


@pytest.mark.parametrize(("url", "want"), [
    pytest.param("https://127.0.0.1:8443", "https://127.0.0.1:8443", id="host-port"),
    pytest.param("https://127.0.0.1:8443/", "https://127.0.0.1:8443", id="trailing-slash-dropped"),
    pytest.param("https://webhook.example.com", "https://webhook.example.com", id="dns-name"),
])
def test_url_client_config_replaces_the_service(url: str, want: str):
    ca = rendered_ci("existing-secret-values.yaml").values["certs"]["existingSecret"]["caBundle"]
    r = render({"webhooks": {"url": url, "pods": {"enabled": True}},
                "certs": {"mode": "existingSecret", "existingSecret": {"name": "tls", "caBundle": ca}}})
    seen = set()
    for kind, w in _webhooks(r):
        path = "/mutate" if kind == "MutatingWebhookConfiguration" else "/validate"
        assert w["clientConfig"]["url"] == want + path
        assert "service" not in w["clientConfig"]
        assert w["clientConfig"]["caBundle"]
        seen.add(w["name"])
    assert len(seen) == 4


@pytest.mark.parametrize("url", [
    pytest.param("http://127.0.0.1:8443", id="plain-http"),
    pytest.param("https://127.0.0.1:8443/validate", id="with-path"),
    pytest.param("https://h/?x=1", id="with-query"),
])
def test_url_client_config_must_be_a_bare_https_base(url: str):
    with pytest.raises(Exception, match="url"):
        render({"webhooks": {"url": url}})
