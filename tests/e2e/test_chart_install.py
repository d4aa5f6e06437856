"""The chart installed for real: Helm's own install, upgrade and uninstall (the Helm v4 SDK through
helm-python-sdk, as `helm install` runs them) against kube-apiserver 1.37, for every values file
in `charts/dra-webhook/ci/` -- each cert mode (self-signed, cert-manager with its CRDs, an existing
Secret) and the production-like install with its ServiceMonitor and NetworkPolicy.

Every object of the release is stored by the real apiserver, so each passed its validation (and
strict field validation of the cert-manager and ServiceMonitor objects against the minimal CRDs in
`tests/chart/crds/`). No kubelet or controller manager runs: the Deployment is stored, not rolled
out (tests/container/ runs the image itself). The apiserver's audit log shows the order Helm
deletes in on uninstall.

Then the ServiceAccount's rights, as the apiserver reports them to that account: only get, list
and watch on the kinds of the cluster state; and a webhook whose account lacks one of them says
which in /readyz and in its log.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import requests
import yaml

from tests.chart.helpers import CHART_DIR, CI_FILES, RELEASE, load_values
from tests.rig.cluster import REPO, Cluster, RigError
from tests.rig.procs import Proc, free_port
from webhook.state.reflector import KIND_APIS, KindAPI

pytestmark = pytest.mark.e2e

CRDS = sorted((REPO / "tests" / "chart" / "crds").glob("*.yaml"))
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata", "verbs": ["delete"]}, {"level": "None"}]}
WEBHOOK_CONFIGS = {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
#: The kinds the live state lists and watches (webhook/state/reflector.py), as RBAC names them.


def _resource(api: KindAPI) -> str:
    """``kubectl auth can-i --list``'s name of the kind's resource: plural.group (core: plural)."""
    plural = api.path.rpartition("/")[2]
    group = api.api_version.rpartition("/")[0]
    return f"{plural}.{group}" if group else plural


STATE_RESOURCES = {_resource(api) for api in KIND_APIS.values()}
"""Every kind the live state lists and watches (the one list of them: the reflector's)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("chart-install")
    policy = d / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    c = Cluster(d, {"GenericWorkload": True}, apiserver_args=(
        "--audit-policy-file", str(policy), "--audit-log-path", str(d / "audit.log"),
        "--audit-log-mode", "blocking"))
    try:
        for crd in CRDS:
            _must(c, "apply", "-f", str(crd))
        _must(c, "wait", "--for", "condition=Established", "crd", "--all", "--timeout", "60s")
        yield c
    finally:
        c.stop()


def _must(c: Cluster, *args: str, input: str | None = None) -> str:
    r = c.api.kubectl(*args, input=input)
    if r.returncode != 0:
        raise RigError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _helm(c: Cluster, namespace: str) -> helm_python.Config:
    return helm_python.Config(kubeconfig_path=c.api.kubeconfig(), namespace=namespace)


def _install(c: Cluster, namespace: str, values: dict[str, Any]) -> dict[str, Any]:
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        with _helm(c, namespace) as helm:
            return dict(helm.install(chart, RELEASE, values, namespace=namespace, create_namespace=True,
                                     timeout=120))
    finally:
        chart.close()


def _objects(manifest: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(manifest) if d]


def _in_cluster(c: Cluster, manifest: str) -> list[dict[str, Any]]:
    """The release's objects as the apiserver stores them (kubectl fails if one is missing)."""
    return list(json.loads(_must(c, "get", "-f", "-", "-o", "json", input=manifest))["items"])


def _secret(c: Cluster, namespace: str, name: str) -> dict[str, str]:
    data = json.loads(_must(c, "get", "secret", name, "-n", namespace, "-o", "json"))["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def _deletes(c: Cluster) -> list[dict[str, Any]]:
    """DELETE requests that succeeded, in the order the apiserver answered them."""
    out = []
    for line in (c.dir / "audit.log").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("stage") == "ResponseComplete" and (ev.get("responseStatus") or {}).get("code", 0) < 300:
            out.append(ev["objectRef"])
    return out


@pytest.mark.parametrize("values_file", CI_FILES, ids=[f.removesuffix("-values.yaml") for f in CI_FILES])
def test_install_upgrade_and_uninstall(cluster: Cluster, values_file: str) -> None:
    ns = "dra-" + values_file.removesuffix("-values.yaml")
    values = load_values(values_file)
    mode = (values.get("certs") or {}).get("mode", "selfSigned")

    rel = _install(cluster, ns, values)
    assert (rel["revision"], rel["status"]) == (1, "deployed"), rel
    rendered = _objects(rel["manifest"])
    stored = _in_cluster(cluster, rel["manifest"])
    assert [(o["kind"], o["metadata"]["name"]) for o in stored] == \
        [(o["kind"], o["metadata"]["name"]) for o in rendered]
    kinds = {o["kind"] for o in stored}
    assert {"Deployment", "Service", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
            "ValidatingWebhookConfiguration"} <= kinds
    if mode == "certManager":
        assert "Certificate" in kinds
    if values.get("serviceMonitor", {}).get("enabled"):
        assert {"ServiceMonitor", "NetworkPolicy", "PodDisruptionBudget"} <= kinds
    configs = [o for o in stored if o["kind"].endswith("WebhookConfiguration")]
    fullname = configs[0]["metadata"]["name"]

    ca_before = _secret(cluster, ns, f"{fullname}-ca") if mode == "selfSigned" else {}
    tls_before = _secret(cluster, ns, f"{fullname}-tls") if mode == "selfSigned" else {}
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        with _helm(cluster, ns) as helm:
            up = dict(helm.upgrade(chart, RELEASE, values, namespace=ns, timeout=120))
    finally:
        chart.close()
    assert (up["revision"], up["status"]) == (2, "deployed"), up
    stored = _in_cluster(cluster, up["manifest"])
    if mode == "selfSigned":
        # `lookup` read the CA back: the same CA, a new serving certificate signed by it, and the
        # configurations still trust that CA.
        ca_after, tls_after = _secret(cluster, ns, f"{fullname}-ca"), _secret(cluster, ns, f"{fullname}-tls")
        assert ca_after == ca_before
        assert tls_after["tls.crt"] != tls_before["tls.crt"] and tls_after["ca.crt"] == ca_before["tls.crt"]
        for cfg in (o for o in stored if o["kind"].endswith("WebhookConfiguration")):
            assert {base64.b64decode(w["clientConfig"]["caBundle"]).decode() for w in cfg["webhooks"]} == \
                {ca_before["tls.crt"]}

    with _helm(cluster, ns) as helm:
        helm.uninstall(RELEASE, timeout=120)
    r = cluster.api.kubectl("get", "-f", "-", "-o", "name", input=up["manifest"])
    assert r.stdout.strip() == "" and r.stderr.count("NotFound") == len(stored), r.stderr
    # Helm deleted the webhook configurations before anything that serves them.
    order = [o["resource"] for o in _deletes(cluster)
             if o.get("namespace") == ns or (o["resource"] in WEBHOOK_CONFIGS and o.get("name") == fullname)]
    assert WEBHOOK_CONFIGS & set(order), order
    last_config = max(i for i, res in enumerate(order) if res in WEBHOOK_CONFIGS)
    first_backend = min(i for i, res in enumerate(order) if res in ("deployments", "services", "secrets"))
    assert last_config < first_backend, order


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[dict[str, Any]]:
    """The default install, kept for the RBAC tests."""
    rel = _install(cluster, "dra-rbac", {})
    yield rel
    with _helm(cluster, "dra-rbac") as helm:
        helm.uninstall(RELEASE, timeout=120)


def _account(installed: dict[str, Any]) -> str:
    (sa,) = [o for o in _objects(installed["manifest"]) if o["kind"] == "ServiceAccount"]
    return str(sa["metadata"]["name"])


def _token_kubeconfig(c: Cluster, account: str, namespace: str) -> Path:
    token = _must(c, "create", "token", account, "-n", namespace, "--duration", "1h").strip()
    return c.api.kubeconfig(f"{namespace}-{account}", token=token)


def _rights(c: Cluster, kubeconfig: Path) -> dict[str, set[str]]:
    """`kubectl auth can-i --list` as that identity: resource or non-resource URL -> verbs."""
    r = c.api.kubectl("auth", "can-i", "--list", "--no-headers", kubeconfig=kubeconfig)
    assert r.returncode == 0, r.stderr
    out: dict[str, set[str]] = {}
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        what = line.split()[0]  # a resource, or for a non-resource URL row "[/api]"
        verbs = line[line.rindex("["):].strip("[] ").split()
        out.setdefault(what, set()).update(verbs)
    return out


def test_the_service_account_may_only_read_the_state_kinds(cluster: Cluster,
                                                            installed: dict[str, Any]) -> None:
    """Beyond what every authenticated identity may do (an account with no binding at all, here),
    the chart's account may get, list and watch the kinds of the cluster state, and nothing else."""
    _must(cluster, "create", "serviceaccount", "nobody", "-n", "dra-rbac")
    baseline = _rights(cluster, _token_kubeconfig(cluster, "nobody", "dra-rbac"))
    rights = _rights(cluster, _token_kubeconfig(cluster, _account(installed), "dra-rbac"))
    granted = {r: v - baseline.get(r, set()) for r, v in rights.items()}
    assert {r: v for r, v in granted.items() if v} == {r: {"get", "list", "watch"} for r in STATE_RESOURCES}
    assert not STATE_RESOURCES & baseline.keys(), baseline


def test_a_missing_right_is_named_by_readyz_and_the_log(cluster: Cluster, installed: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """The chart's ClusterRole without `nodes`, bound to another account: the webhook serving with
    that account's token never becomes ready and says which right it lacks."""
    (role,) = [o for o in _objects(installed["manifest"]) if o["kind"] == "ClusterRole"]
    role["metadata"] = {"name": "dra-webhook-lacking"}
    role["rules"] = [{**r, "resources": [x for x in r["resources"] if x != "nodes"]} for r in role["rules"]]
    _must(cluster, "apply", "-f", "-", input=yaml.safe_dump(role))
    _must(cluster, "create", "serviceaccount", "lacking", "-n", "dra-rbac")
    _must(cluster, "create", "clusterrolebinding", "dra-webhook-lacking", "--clusterrole", "dra-webhook-lacking",
          "--serviceaccount", "dra-rbac:lacking")
    kc = _token_kubeconfig(cluster, "lacking", "dra-rbac")
    certs = tmp_path / "certs"
    subprocess.run([sys.executable, "-m", "webhook", "certs", "--service", "s", "--namespace", "n", "--out",
                    str(certs), "--dev"], check=True, capture_output=True, timeout=60, cwd=REPO)
    port = free_port()
    proc = Proc("dra-webhook", [sys.executable, "-m", "webhook", "serve", "--bind", f"127.0.0.1:{port}",
                                "--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key"),
                                "--kubeconfig", str(kc), "--workers", "1", "--shutdown-delay", "0"],
                tmp_path / "webhook.log", env={"PYTHONPATH": str(REPO)}, cwd=REPO)
    try:
        def lacking_named() -> bool:
            r = requests.get(f"https://127.0.0.1:{port}/readyz", timeout=2, verify=str(certs / "ca.crt"))
            return r.status_code == 503 and "list nodes" in r.json().get("reasons", {}).get("state", "")
        proc.wait_until(lacking_named, 60, "/readyz naming the missing right")
        body = requests.get(f"https://127.0.0.1:{port}/readyz", timeout=2, verify=str(certs / "ca.crt")).json()
        assert body["reasons"]["state"].startswith("missing RBAC rights: list nodes ("), body
        logged = [line for line in proc.tail(200_000).splitlines() if "cannot list nodes" in line]
        assert logged and "system:serviceaccount:dra-rbac:lacking" in logged[0], proc.tail()
    finally:
        proc.stop()
