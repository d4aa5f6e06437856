"""The optional NetworkPolicy: only the kube-apiserver (and listed scrapers) reach the webhook port.

Before, the chart's policy admitted port 8443 from anywhere unless ``ingressFrom`` was set, so
any pod could still open idle or slow connections to the webhook.
"""

from __future__ import annotations

import helm_python
import pytest

from tests.chart.helpers import CHART_DIR, render, rendered_ci

APISERVER = [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
SCRAPER = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


def test_no_network_policy_by_default():
    assert render({}).maybe("NetworkPolicy") is None


@pytest.mark.parametrize(("metrics_from", "peers"), [
    pytest.param([], APISERVER, id="apiserver-only"),
    pytest.param(SCRAPER, APISERVER + SCRAPER, id="apiserver-and-a-metrics-scraper"),
])
def test_only_the_apiserver_and_listed_scrapers_reach_the_webhook_port(metrics_from, peers):
    out = render({"networkPolicy": {"enabled": True, "apiserver": APISERVER, "metricsFrom": metrics_from}})
    policy = out.one("NetworkPolicy")["spec"]
    pod_labels = out.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert "Ingress" in policy["policyTypes"]
    assert policy["ingress"] == [{"ports": [{"port": 8443, "protocol": "TCP"}], "from": peers}]
    container_ports = {p["containerPort"] for p in out.container()["ports"]}
    assert container_ports == {8443}  # the only port the pod serves is the one the policy guards


def test_enabling_it_without_the_apiserver_peers_fails_the_render():
    with pytest.raises(Exception, match="networkPolicy.enabled needs networkPolicy.apiserver"):
        render({"networkPolicy": {"enabled": True}})


def test_the_production_example_enables_it():
    policy = rendered_ci("production-values.yaml").one("NetworkPolicy")["spec"]
    assert policy["ingress"][0]["from"][0] == {"ipBlock": {"cidr": "10.0.0.0/24"}}


def test_the_old_open_ingress_key_is_refused():
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        with pytest.raises(helm_python.HelmValuesError) as info:
            chart.validate_schema({"networkPolicy": {"ingressFrom": []}})
    finally:
        chart.close()
    assert "ingressFrom" in str(info.value)
