"""Deployment hardening, probes, shutdown timing, HA, RBAC and the config file the server reads."""

from __future__ import annotations

import helm_python
import pytest
import yaml

from tests.chart.helpers import Rendered, render, rendered_ci
from webhook.config import Settings, parse_config
from webhook.gates import KNOWN
from webhook.state.base import KINDS
from webhook.state.reflector import KIND_APIS

GUNICORN_GRACEFUL_TIMEOUT = 25


def _pod(r: Rendered) -> dict:
    return r.one("Deployment")["spec"]["template"]["spec"]


def _mounts(r: Rendered) -> dict[str, str]:
    return {m["mountPath"]: m["name"] for m in r.container()["volumeMounts"]}


def _volumes(r: Rendered) -> dict[str, dict]:
    return {v["name"]: v for v in _pod(r)["volumes"]}


def _arg(r: Rendered, flag: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in r.container()["args"] if a.startswith(flag + "=")]
    return value


def test_container_security_context_is_hardened(ci: Rendered):
    sc = ci.container()["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["privileged"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}


def test_pod_security_context_is_hardened(ci: Rendered):
    psc = _pod(ci)["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 65532 != 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "hostNetwork" not in _pod(ci) and "hostPID" not in _pod(ci)


def test_writable_paths_are_empty_dirs(ci: Rendered):
    mounts, volumes = _mounts(ci), _volumes(ci)
    for path in ("/tmp", "/tmp/prometheus"):
        assert "emptyDir" in volumes[mounts[path]], path
    env = {e["name"]: e.get("value") for e in ci.container()["env"]}
    assert env["PROMETHEUS_MULTIPROC_DIR"] == "/tmp/prometheus"


def test_probes_use_https_on_the_serving_port(ci: Rendered):
    c = ci.container()
    expected = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
    for probe, path in expected.items():
        get = c[probe]["httpGet"]
        assert (get["scheme"], get["path"], get["port"]) == ("HTTPS", path, "https"), probe


def test_server_args_point_at_the_mounted_files(ci: Rendered):
    args = ci.container()["args"]
    assert args[0] == "serve" and "--in-cluster" in args
    assert _arg(ci, "--bind") == "0.0.0.0:8443"
    mounts, volumes = _mounts(ci), _volumes(ci)
    for flag, key in (("--tls-cert", "tls.crt"), ("--tls-key", "tls.key")):
        path = _arg(ci, flag)
        directory, _, filename = path.rpartition("/")
        assert filename == key and "secret" in volumes[mounts[directory]]
    config = _arg(ci, "--config")
    directory, _, filename = config.rpartition("/")
    volume = volumes[mounts[directory]]
    # Mounted as a directory (no subPath) so ConfigMap updates reach the live-reloading server.
    assert volume["configMap"]["name"] == ci.one("ConfigMap")["metadata"]["name"]
    assert filename in ci.one("ConfigMap")["data"]
    assert not any("subPath" in m for m in ci.container()["volumeMounts"])


def test_workers_and_threads_follow_values():
    r = render({"server": {"workers": 3, "threads": 7, "extraArgs": ["--client-ca=/x/ca.crt"]}})
    assert _arg(r, "--workers") == "3" and _arg(r, "--threads") == "7"
    assert r.container()["args"][-1] == "--client-ca=/x/ca.crt"


def test_graceful_shutdown_fits_in_the_grace_period(ci: Rendered):
    pod = _pod(ci)
    sleep = (ci.container().get("lifecycle") or {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    delay = float(_arg(ci, "--shutdown-delay"))
    assert sleep + delay + GUNICORN_GRACEFUL_TIMEOUT < pod["terminationGracePeriodSeconds"]


def test_default_shutdown_timing(default: Rendered):
    assert default.container()["lifecycle"] == {"preStop": {"sleep": {"seconds": 10}}}
    assert _pod(default)["terminationGracePeriodSeconds"] == 45


def test_no_cpu_limit_by_default(default: Rendered):
    res = default.container()["resources"]
    assert "cpu" not in res.get("limits", {}) and res["requests"]["cpu"]
    assert res["limits"]["memory"]


def test_default_ha_two_replicas_pdb_and_hostname_anti_affinity(default: Rendered):
    dep = default.one("Deployment")
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pdb = default.one("PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (term,) = _pod(default)["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    assert "topologySpreadConstraints" not in _pod(default) and "priorityClassName" not in _pod(default)


def test_service_selects_the_pods(ci: Rendered):
    labels = ci.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert ci.one("Service")["spec"]["selector"].items() <= labels.items()
    assert ci.one("Deployment")["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_single_replica_renders_no_pdb():
    assert rendered_ci("force-ignore-values.yaml").maybe("PodDisruptionBudget") is None


def test_production_options_topology_spread_priority_class_required_anti_affinity():
    r = rendered_ci("production-values.yaml")
    pod = _pod(r)
    assert pod["priorityClassName"] == "system-cluster-critical"
    (tsc,) = pod["topologySpreadConstraints"]
    assert (tsc["topologyKey"], tsc["whenUnsatisfiable"]) == ("topology.kubernetes.io/zone", "DoNotSchedule")
    assert "requiredDuringSchedulingIgnoredDuringExecution" in pod["affinity"]["podAntiAffinity"]
    assert r.container()["image"].endswith("@sha256:" + "0123456789abcdef" * 4)


def test_rbac_is_read_only_on_exactly_the_watched_kinds(ci: Rendered):
    role = ci.one("ClusterRole")
    granted = {(g, res): sorted(rule["verbs"])
               for rule in role["rules"] for g in rule["apiGroups"] for res in rule["resources"]}
    # Derived from the kinds the live state watches (state.base.KINDS, reflector.KIND_APIS): the
    # RBAC cannot drift from what the reflectors list.
    watched = {(api.api_version.rpartition("/")[0], api.path.rpartition("/")[2])
               for api in (KIND_APIS[k] for k in KINDS)}
    assert granted == dict.fromkeys(watched, ["get", "list", "watch"])
    assert ("resource.k8s.io", "devicetaintrules") in granted
    assert ("", "pods") in granted and ("", "nodes") in granted
    assert not any("resourceNames" in r or "nonResourceURLs" in r for r in role["rules"])
    assert ci.maybe("Role") is None and ci.maybe("RoleBinding") is None


def test_role_binding_grants_the_role_to_the_pod_service_account(ci: Rendered):
    binding = ci.one("ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": ci.one("ClusterRole")["metadata"]["name"]}
    sa = _pod(ci)["serviceAccountName"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "dra-system"}]
    assert ci.one("ServiceAccount")["metadata"]["name"] == sa


def test_rbac_can_be_left_to_the_operator():
    r = render({"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "pre-made"}})
    assert r.maybe("ClusterRole") is None and r.maybe("ServiceAccount") is None
    assert _pod(r)["serviceAccountName"] == "pre-made"


def test_config_file_is_accepted_by_the_server(ci: Rendered):
    text = ci.one("ConfigMap")["data"]["config.yaml"]
    settings = parse_config(text, Settings())
    values = ci.values
    assert settings.default_timeout_seconds == values["webhooks"]["timeoutSeconds"]
    assert settings.deadline_margin_seconds == values["config"]["deadlineMarginSeconds"]
    assert settings.max_warnings == values["config"]["maxWarnings"]
    assert settings.max_body_bytes == values["config"]["maxBodyBytes"]
    assert settings.allocator_max_steps == values["config"]["allocatorMaxSteps"]
    assert settings.state_stale_after_seconds == values["config"]["stateStaleAfterSeconds"]
    assert settings.state_watch_timeout_seconds == values["config"]["stateWatchTimeoutSeconds"]
    for name, on in (values["featureGates"] or {}).items():
        assert settings.gates.enabled(name) is on


def test_config_values_map_one_to_one():
    config = {"deadlineMarginSeconds": 1.5, "maxBodyBytes": 1048576, "maxWarnings": 3,
              "feasibility": False, "capacityDefaulting": False, "feasibilityTimeoutSeconds": 1.5,
              "allocatorMaxSteps": 1234, "logObjects": True, "stateStaleAfterSeconds": 45,
              "stateWatchTimeoutSeconds": 20}
    r = render({"config": config, "featureGates": {"GenericWorkload": True, "DRAConsumableCapacity": False}})
    data = yaml.safe_load(r.one("ConfigMap")["data"]["config.yaml"])
    assert data == {**config, "defaultTimeoutSeconds": 5,
                    "featureGates": {"GenericWorkload": True, "DRAConsumableCapacity": False}}
    s = parse_config(r.one("ConfigMap")["data"]["config.yaml"], Settings())
    assert (s.feasibility, s.capacity_defaulting, s.log_objects) == (False, False, True)
    assert (s.feasibility_timeout_seconds, s.allocator_max_steps) == (1.5, 1234)
    assert (s.state_stale_after_seconds, s.state_watch_timeout_seconds) == (45, 20)
    assert s.gates.enabled("GenericWorkload") and not s.gates.enabled("DRAConsumableCapacity")


def test_empty_feature_gates_mean_the_1_37_defaults(default: Rendered):
    s = parse_config(default.one("ConfigMap")["data"]["config.yaml"], Settings())
    assert s.gates.as_dict() == {name: g.default for name, g in KNOWN.items()}


def test_config_changes_do_not_restart_pods():
    # The server re-reads the mounted file; no checksum annotation rolls the Deployment.
    a = render({"featureGates": {"GenericWorkload": True}}).one("Deployment")
    b = render({"featureGates": {"GenericWorkload": False}}).one("Deployment")
    assert a == b


@pytest.mark.parametrize(("values", "message"), [
    pytest.param({"terminationGracePeriodSeconds": 30, "preStopSleepSeconds": 10},
                 "terminationGracePeriodSeconds", id="grace-period-too-short"),
    pytest.param({"terminationGracePeriodSeconds": 40, "preStopSleepSeconds": 10,
                  "server": {"shutdownDelaySeconds": 5}},
                 "terminationGracePeriodSeconds", id="shutdown-delay-not-covered"),
    pytest.param({"webhooks": {"timeoutSeconds": 1}, "config": {"deadlineMarginSeconds": 1}},
                 "deadlineMarginSeconds", id="deadline-margin-not-below-timeout"),
    pytest.param({"config": {"stateStaleAfterSeconds": 30, "stateWatchTimeoutSeconds": 30}},
                 "stateStaleAfterSeconds", id="staleness-bound-not-above-watch-timeout"),
    pytest.param({"replicaCount": 2, "podDisruptionBudget": {"minAvailable": 2}},
                 "minAvailable", id="pdb-blocks-every-drain"),
])
def test_render_refuses_unsafe_combinations(values, message):
    with pytest.raises(helm_python.HelmRenderError, match=message):
        render(values)


def test_rendered_args_are_accepted_by_the_real_cli(ci: Rendered):
    from webhook.cli import build_parser as _parser

    args = _parser().parse_args(ci.container()["args"])
    assert args.in_cluster and args.config == "/etc/dra-webhook/config/config.yaml"
    assert args.workers == ci.values["server"]["workers"]
    assert args.threads == ci.values["server"]["threads"]
