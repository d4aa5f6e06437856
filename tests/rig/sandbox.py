"""The sandbox: a real kube-apiserver 1.37 that calls `dra-webhook serve` for DRA and PodGroup writes.

`Sandbox` starts etcd and kube-apiserver (gates from FEATURE_GATES), with `control_plane=True`
also kube-scheduler and kube-controller-manager (so pods really schedule), renders our Helm chart
with a `url` client config pointing at a loopback `dra-webhook serve`, applies the chart's
ServiceAccount and RBAC, runs the webhook's live state as that ServiceAccount (a token from
the TokenRequest API, so the chart's ClusterRole is proved enough), registers the chart's
Mutating- and ValidatingWebhookConfiguration and loads `examples/cluster/` (Nodes registered as
ready, kubelet-less nodes: `tests/rig/control.py`).

`make sandbox` runs `python -m tests.rig.sandbox` (with the scheduler and the controller manager):
it prints the kubeconfig and what to try, and stops everything on Ctrl-C. The e2e tests use the
same class as a fixture; those that only need the apiserver leave the control plane off.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.rig.cluster import REPO, ApiServer, Cluster, RigError, gate_spec
from tests.rig.control import register_nodes
from tests.rig.procs import Proc, ProcError, free_port

RELEASE = NAMESPACE = "dra-webhook"
EXAMPLES = REPO / "examples" / "cluster"
#: The sandbox serves scheduling.k8s.io/v1beta1, which needs GenericWorkload (beta, off in 1.37).
BASE_GATES = {"GenericWorkload": True}
WEBHOOK_READY_TIMEOUT = 60


def parse_gates(spec: str | None) -> dict[str, bool]:
    """`A=true,B=false` -> dict; an empty or missing spec is {}. Raises ValueError on bad syntax."""
    out: dict[str, bool] = {}
    for part in (spec or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise ValueError(f"bad feature gate {part!r} (want Name=true or Name=false)")
        out[name.strip()] = value.strip().lower() == "true"
    return out


def render_chart(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Our chart rendered with the real Helm engine (helm-python-sdk), as objects."""
    import helm_python

    chart = helm_python.Chart.load(str(REPO / "charts" / "dra-webhook"))
    try:
        out = chart.render(dict(values), name=RELEASE, namespace=NAMESPACE, is_install=True)
    finally:
        chart.close()
    objs: list[dict[str, Any]] = []
    for path, text in sorted(out.items()):
        if not path.endswith(".txt"):
            objs.extend(d for d in yaml.safe_load_all(text) if d)
    return objs


class Webhook:
    """`dra-webhook serve` over TLS on loopback, following the apiserver live (--kubeconfig)."""

    def __init__(self, workdir: Path, gates: Mapping[str, bool], extra_args: tuple[str, ...] = ()) -> None:
        """Make its serving certificate (`dra-webhook certs --dev`) and pick its port; not started yet."""
        self.dir = workdir / "webhook"
        self.certs = self.dir / "certs"
        subprocess.run([sys.executable, "-m", "webhook", "certs", "--service", RELEASE, "--namespace", NAMESPACE,
                        "--out", str(self.certs), "--dev"], check=True, capture_output=True, timeout=60, cwd=REPO)
        self.kubeconfig: Path | None = None
        self.extra_args = extra_args
        self.port = free_port()
        self.gates = dict(gates)
        self.proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_pem(self) -> str:
        return (self.certs / "ca.crt").read_text()

    def start(self) -> None:
        """Start on the same port as before (the registered URL stays valid); wait for /readyz."""
        assert self.kubeconfig is not None, "set the webhook's kubeconfig before starting it"
        cmd = [sys.executable, "-m", "webhook", "serve", "--bind", f"127.0.0.1:{self.port}",
               "--tls-cert", str(self.certs / "tls.crt"), "--tls-key", str(self.certs / "tls.key"),
               "--kubeconfig", str(self.kubeconfig), "--feature-gates", gate_spec(self.gates),
               "--workers", "2", "--shutdown-delay", "0", *self.extra_args]
        env = {"PYTHONPATH": str(REPO)}
        self.proc = Proc("dra-webhook", cmd, self.dir / "webhook.log", env=env, cwd=REPO)
        self.proc.wait_until(lambda: self.get("/readyz").status_code == 200, WEBHOOK_READY_TIMEOUT,
                             "/readyz (cluster state synced)")

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, timeout=2, verify=str(self.certs / "ca.crt"))

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def restart(self, gates: Mapping[str, bool] | None = None) -> None:
        self.stop()
        if gates is not None:
            self.gates = dict(gates)
        self.start()


class Sandbox:
    """A cluster, the webhook registered from the chart, and the example state loaded."""

    def __init__(self, workdir: Path, gates: Mapping[str, bool] | None = None, *,
                 webhook_gates: Mapping[str, bool] | None = None, chart_values: Mapping[str, Any] | None = None,
                 load_examples: bool = True, webhook_args: tuple[str, ...] = (), control_plane: bool = False) -> None:
        self.dir = workdir
        self.gates = {**BASE_GATES, **(gates or {})}
        self.cluster = Cluster(workdir, self.gates, control_plane=control_plane)
        self.webhook: Webhook | None = None
        try:
            self.webhook = Webhook(workdir, {**self.gates, **(webhook_gates or {})}, webhook_args)
            self.api.kubectl("create", "namespace", NAMESPACE)
            self._ensure_default_service_account("default")
            token = self._webhook_identity()
            self.webhook.kubeconfig = self.api.kubeconfig("dra-webhook", token=token)
            self.webhook.start()
            self.register(chart_values or {})
            if load_examples:
                self.load(EXAMPLES)
        except BaseException:
            self.stop()
            raise

    @property
    def api(self) -> ApiServer:
        return self.cluster.api

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return self.api.kubectl(*args, input=input, timeout=timeout)

    def must(self, *args: str, input: str | None = None) -> str:
        """kubectl that must succeed; its stdout."""
        r = self.kubectl(*args, input=input)
        if r.returncode != 0:
            raise RigError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout

    # -- setup ---------------------------------------------------------------------------------

    def _ensure_default_service_account(self, namespace: str) -> None:
        # Without kube-controller-manager nobody creates `default` ServiceAccounts (with it, not at
        # once); pods need one to pass the ServiceAccount admission plugin. AlreadyExists is fine.
        self.kubectl("create", "serviceaccount", "default", "-n", namespace)

    def chart_values(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        assert self.webhook is not None
        values: dict[str, Any] = {
            "webhooks": {"url": self.webhook.url, "pods": {"enabled": True}, "workloads": {"enabled": True}},
            "certs": {"mode": "existingSecret",
                      "existingSecret": {"name": f"{RELEASE}-tls", "caBundle": self.webhook.ca_pem}},
            "featureGates": dict(self.gates),
        }
        return _merge(values, extra)

    def _webhook_identity(self) -> str:
        """Apply the chart's ServiceAccount, ClusterRole and binding; a token for that account."""
        objs = render_chart(self.chart_values({}))
        rbac = [o for o in objs if o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")]
        assert {o["kind"] for o in rbac} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}, rbac
        self.must("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
        (sa,) = [o for o in rbac if o["kind"] == "ServiceAccount"]
        self.service_account = sa["metadata"]["name"]
        return self.must("create", "token", self.service_account, "-n", NAMESPACE, "--duration", "24h").strip()

    def register(self, extra_values: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Apply the chart's webhook configurations (with ``extra_values``); wait until they act."""
        objs = render_chart(self.chart_values(extra_values or {}))
        configs = [o for o in objs if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
        self.must("apply", "-f", "-", input=yaml.safe_dump_all(configs))
        self.wait_webhook_active()
        return configs

    def unregister(self) -> None:
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            self.kubectl("delete", kind, RELEASE, "--ignore-not-found")

    def wait_webhook_active(self, timeout: float = 30) -> None:
        """Until the apiserver calls the webhook: a dry-run claim on a class nobody has gets our warning."""
        probe = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "rig-probe", "namespace": "default"},
                 "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "rig-probe"}}]}}}
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            r = self.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe))
            last = r.stderr
            if "feasibility:" in r.stderr:
                return
            time.sleep(0.3)
        raise RigError(f"the apiserver does not call the webhook after {timeout} s; last kubectl stderr: {last}")

    def load(self, path: Path) -> None:
        """Create the objects of a state directory; claims get their `status.allocation` too, and
        Nodes are registered as a kubelet would leave them (ready, with allocatable)."""
        objs = load_manifests(path)
        register_nodes(self.api, [o for o in objs if o.get("kind") == "Node"])
        self.must("apply", "-f", "-", input=yaml.safe_dump_all([_without_status(o) for o in objs
                                                                 if o.get("kind") != "Node"]))
        for o in objs:
            if o.get("kind") == "ResourceClaim" and (o.get("status") or {}).get("allocation"):
                self.set_claim_status(o)

    def set_claim_status(self, claim: dict[str, Any]) -> None:
        meta = claim["metadata"]
        ns = meta.get("namespace", "default")
        patch = json.dumps({"status": claim["status"]})
        self.must("patch", "resourceclaim", meta["name"], "-n", ns, "--subresource=status", "--type=merge",
                  "-p", patch)

    def stop(self) -> None:
        if self.webhook is not None:
            self.webhook.stop()
        self.cluster.stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_manifests(path: Path) -> list[dict[str, Any]]:
    """Every object in a file or under a directory (*.yaml, *.yml, *.json; `kind: List` expanded)."""
    files = sorted(f for f in path.rglob("*") if f.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
    out: list[dict[str, Any]] = []
    for f in files:
        for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")):
            if isinstance(doc, dict):
                out.extend(doc.get("items") or [] if doc.get("kind") == "List" else [doc])
    return out


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make sandbox", description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", help="keep state here (default: a new temporary directory)")
    p.add_argument("--no-examples", action="store_true", help="do not load examples/cluster/")
    args = p.parse_args(argv)
    try:
        gates = parse_gates(os.environ.get("FEATURE_GATES"))
        webhook_gates = parse_gates(os.environ.get("WEBHOOK_FEATURE_GATES"))
    except ValueError as e:
        print(f"sandbox: FEATURE_GATES: {e}", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dra-sandbox-"))
    print(f"sandbox: starting in {workdir} (the first run builds upstream Kubernetes: minutes)", flush=True)
    try:
        sb = Sandbox(workdir, gates, webhook_gates=webhook_gates, load_examples=not args.no_examples,
                     control_plane=True)
    except (RigError, ProcError) as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 1
    stop = {"now": False}

    def on_signal(signum: int, _frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    kc = sb.api.kubeconfig()
    kubectl = REPO / ".cache" / "upstream" / "bin" / "kubectl"
    assert sb.webhook is not None
    print(f"""
sandbox: ready. kube-apiserver {sb.api.url} (gates {gate_spec(sb.gates)}),
         kube-scheduler and kube-controller-manager with the same gates (no kubelet: pods are
         bound, never run), dra-webhook {sb.webhook.url} (gates {gate_spec(sb.webhook.gates)})
         logs under {workdir}

  export KUBECONFIG={kc}
  alias kubectl={kubectl}
  kubectl apply --dry-run=server -f examples/seeds/seed-000-resourceslice-compatibility-groups.yaml
  kubectl apply --dry-run=server -f examples/feasibility/two-6gi.yaml     # feasibility warnings
  kubectl apply -f examples/pods/two-gpus.yaml && kubectl get pods -o wide  # a pod that schedules
  kubectl apply -f examples/pods/two-6gi.yaml && kubectl describe pod two-6gi  # one that stays Pending
  kubectl get resourceslices,resourceclaims

Ctrl-C stops everything.""", flush=True)
    try:
        while not stop["now"]:
            for proc in [*sb.cluster.procs(), sb.webhook.proc]:
                if proc is not None and not proc.alive():
                    print(f"sandbox: {proc.name} exited ({proc.popen.returncode}); see {proc.log}", file=sys.stderr)
                    stop["now"] = True
            time.sleep(0.5)
    finally:
        print("sandbox: stopping", flush=True)
        sb.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Sandbox", "Webhook", "load_manifests", "parse_gates", "render_chart"]
