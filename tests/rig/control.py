"""kube-scheduler and kube-controller-manager 1.37 against one rig apiserver, and kubelet-less Nodes.

Each component runs with the apiserver's feature gates and its own identity: a client
certificate for `system:kube-scheduler` or `system:kube-controller-manager` from the rig's CA, so
the apiserver's bootstrap RBAC decides what it may do, as in a real cluster (the controller
manager also runs each controller under its own service account,
`--use-service-account-credentials`). Both serve `/healthz` over TLS on a free loopback port, with
the rig's loopback serving certificate. `RIG_VERBOSITY=N` raises their log level (`-v=N`) to
debug the rig.

There is no kubelet: pods are bound (`spec.nodeName`), never run. So:

- the controller manager runs without its node-lifecycle controller
  (`--controllers=*,-node-lifecycle-controller`), which would otherwise find no kubelet heartbeat,
  mark every node NotReady and taint it;
- a Node is written with its status (capacity, allocatable, a Ready condition) in the create
  itself, as a kubelet registers its node (the apiserver keeps a Node's status on create; later
  status changes would go through the status subresource), and the `node.kubernetes.io/not-ready`
  taint that the apiserver's TaintNodesByCondition admission plugin puts on every new Node is
  removed right after, by the rig (`register_node`): nothing else would remove it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import requests
import yaml

from tests.rig.cluster import BIN, ApiServer, RigError, gate_spec
from tests.rig.procs import Proc, ProcError, free_port
from tests.rig.rest import Rest

READY_TIMEOUT = 120
#: What a kubelet would report for a node when the object does not say: room for many pods.
DEFAULT_ALLOCATABLE = {"cpu": "64", "memory": "256Gi", "pods": "110"}
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class Component:
    """One control-plane binary of one apiserver, on a free loopback port; /healthz polled."""

    binary = ""

    def __init__(self, api: ApiServer, args: Sequence[str]) -> None:
        self.api = api
        self.name = f"{self.binary}-{api.name}"
        self.dir = api.dir.parent / self.name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.port = 0
        self.proc: Proc | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        p = self.api.pki
        for attempt in range(3):
            self.port = free_port()
            kubeconfig = str(self.api.kubeconfig(self.binary))
            self.proc = Proc(self.name, [
                str(BIN / self.binary), *self.args,
                "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
                # The client CA from a flag, not looked up in kube-system: the rig's apiserver has
                # no front-proxy CA, and the lookup would log its absence every second.
                "--authentication-skip-lookup", "--client-ca-file", str(p.ca),
                "--bind-address", "127.0.0.1", "--secure-port", str(self.port),
                "--tls-cert-file", str(p.cert("apiserver")), "--tls-private-key-file", str(p.key("apiserver")),
                "--feature-gates", gate_spec(self.api.gates), "--profiling=false",
                f"-v={os.environ.get('RIG_VERBOSITY', '0')}"], self.dir / f"{self.binary}.log")
            try:
                self.proc.wait_until(self.healthy, READY_TIMEOUT, "/healthz")
                return
            except ProcError as e:
                self.proc.stop()
                if "address already in use" not in str(e) or attempt == 2:
                    raise
        raise RigError(f"{self.name}: could not bind a free port")

    def healthy(self) -> bool:
        r = requests.get(self.url + "/healthz", timeout=2, verify=str(self.api.pki.ca))
        return r.status_code == 200 and r.text == "ok"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(timeout=5)
            self.proc = None


class Scheduler(Component):
    """kube-scheduler with the default profile, and more profiles when given (each a
    `KubeSchedulerConfiguration` profile: `schedulerName`, `plugins`, `pluginConfig`)."""

    binary = "kube-scheduler"

    def __init__(self, api: ApiServer, profiles: Sequence[Mapping[str, Any]] = ()) -> None:
        config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                  "clientConnection": {"kubeconfig": str(api.kubeconfig(self.binary)), "qps": 200, "burst": 400},
                  "leaderElection": {"leaderElect": False},
                  "profiles": [{"schedulerName": "default-scheduler"}, *(dict(p) for p in profiles)]}
        path = api.dir.parent / f"{self.binary}-{api.name}" / "config.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config))
        super().__init__(api, ["--config", str(path)])


class ControllerManager(Component):
    """kube-controller-manager: every default controller but the node-lifecycle one (see above)
    and those named in ``disabled``."""

    binary = "kube-controller-manager"

    def __init__(self, api: ApiServer, disabled: Sequence[str] = ()) -> None:
        p = api.pki
        off = ",".join(f"-{c}" for c in ("node-lifecycle-controller", *disabled))
        super().__init__(api, [
            "--kubeconfig", str(api.kubeconfig(self.binary)), "--leader-elect=false",
            f"--controllers=*,{off}", "--use-service-account-credentials=true",
            "--service-account-private-key-file", str(p.sa_key), "--root-ca-file", str(p.ca),
            "--kube-api-qps", "200", "--kube-api-burst", "400",
            "--flex-volume-plugin-dir", str(api.dir.parent / f"{self.binary}-{api.name}" / "flexvolume"),
            # Controllers act at once (the defaults batch their work over seconds).
            "--concurrent-deployment-syncs", "10", "--concurrent-replicaset-syncs", "10",
            "--concurrent-job-syncs", "10", "--concurrent-statefulset-syncs", "10"])


class ControlPlane:
    """The scheduler and the controller manager of one apiserver (which must serve what they watch:
    `Cluster.add_apiserver(..., control_plane=True)`)."""

    def __init__(self, api: ApiServer, profiles: Sequence[Mapping[str, Any]] = (),
                 disabled_controllers: Sequence[str] = ()) -> None:
        self.api = api
        self.scheduler: Scheduler | None = None
        self.controller_manager: ControllerManager | None = None
        try:
            self.controller_manager = ControllerManager(api, disabled_controllers)
            self.scheduler = Scheduler(api, profiles)
        except BaseException:
            self.stop()
            raise

    @property
    def procs(self) -> list[Proc]:
        return [c.proc for c in (self.scheduler, self.controller_manager) if c is not None and c.proc is not None]

    def stop(self) -> None:
        for c in (self.scheduler, self.controller_manager):
            if c is not None:
                c.stop()


# -- nodes -------------------------------------------------------------------------------------


def node_object(node: Mapping[str, Any]) -> dict[str, Any]:
    """``node`` as a kubelet would have registered it: allocatable and capacity (DEFAULT_ALLOCATABLE
    where the object does not say) and a Ready condition (unless it has one)."""
    out = copy.deepcopy(dict(node))
    status = out.setdefault("status", {})
    alloc = {**DEFAULT_ALLOCATABLE, **(status.get("allocatable") or {})}
    status["allocatable"] = alloc
    status["capacity"] = {**alloc, **(status.get("capacity") or {})}
    conditions = list(status.get("conditions") or [])
    if not any(c.get("type") == "Ready" for c in conditions):
        conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "no kubelet: the test rig registered this node"})
    status["conditions"] = conditions
    return out


def register_node(rest: Rest, node: Mapping[str, Any]) -> dict[str, Any]:
    """Create ``node`` (made ready by `node_object`), then put back its own taints: the apiserver
    added `node.kubernetes.io/not-ready` on create. The Node as stored."""
    stored = rest.create(node_object(node))
    have = stored.get("spec", {}).get("taints") or []
    want = [t for t in have if t.get("key") != NOT_READY_TAINT]
    if want != have:
        stored = rest.patch(stored, {"spec": {"taints": want or None}})
    return stored


def register_nodes(api: ApiServer, nodes: Iterable[Mapping[str, Any]]) -> None:
    rest = Rest(api)
    with rest.session:
        for n in nodes:
            register_node(rest, n)


__all__ = ["ControlPlane", "ControllerManager", "Scheduler", "node_object", "register_node", "register_nodes"]
