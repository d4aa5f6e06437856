"""etcd and kube-apiserver 1.37 on loopback, with chosen feature gates; kubeconfigs and kubectl.

One etcd can back several apiservers (one per gate profile), each under its own `--etcd-prefix`.
An apiserver restarted with other gates over the same prefix sees the objects stored before,
which is how ratcheting is tested end to end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import yaml

from tests.rig.pki import Pki, make_pki
from tests.rig.procs import Proc, ProcError, free_port, port_open

if TYPE_CHECKING:
    from tests.rig.control import ControlPlane

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("UPSTREAM_BIN", REPO / ".cache" / "upstream" / "bin"))
BUILD_TIMEOUT = 3600
#: Every API group/version the webhook handles must be served, beta ones included; resource.k8s.io
#: v1beta1 and v1beta2 too (off by default in 1.37), so their conversion can be compared.
RUNTIME_CONFIG = ("resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,"
                  "scheduling.k8s.io/v1beta1=true")
#: Alpha API versions that kube-scheduler or kube-controller-manager watch once a gate is on: an
#: apiserver with a control plane serves them with the gate (the components never sync otherwise).
ALPHA_APIS = {"CompositePodGroup": "scheduling.k8s.io/v1alpha3", "DRAResourcePoolStatus": "resource.k8s.io/v1alpha3"}


def control_plane_runtime_config(gates: Mapping[str, bool]) -> str:
    """RUNTIME_CONFIG plus the alpha versions the control plane needs under ``gates``."""
    extra = sorted({api for gate, api in ALPHA_APIS.items() if gates.get(gate)})
    return ",".join([RUNTIME_CONFIG, *(f"{api}=true" for api in extra)])


class RigError(RuntimeError):
    """The rig could not be built or started; the message says what and shows the output."""


def ensure_binaries() -> Path:
    """Build the upstream binaries if `upstream/` changed (a no-op otherwise); their directory."""
    try:
        done = subprocess.run([str(REPO / "upstream" / "build.sh")], capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT, env={**os.environ, "UPSTREAM_BIN": str(BIN)})
    except subprocess.TimeoutExpired as e:
        raise RigError(f"upstream build did not finish in {BUILD_TIMEOUT} s") from e
    if done.returncode != 0:
        raise RigError(f"upstream build failed ({done.returncode}):\n{done.stderr[-6000:]}")
    return BIN


def gate_spec(gates: Mapping[str, bool]) -> str:
    """`{"A": True}` -> `"A=true"` (sorted, Kubernetes --feature-gates syntax)."""
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))


class Etcd:
    """A single-member etcd on loopback (plain HTTP; only this machine reaches it)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "etcd"
        self.port, peer = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = Proc("etcd", [
            str(BIN / "etcd"), "--name", "rig", "--data-dir", str(self.dir / "data"),
            "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"rig=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync", "--log-level", "warn"], self.dir / "etcd.log")
        self.proc.wait_until(lambda: requests.get(self.url + "/health", timeout=1).ok, 60, "health")

    def stop(self) -> None:
        self.proc.stop()


class ApiServer:
    """kube-apiserver with RBAC, client-certificate and service-account authentication."""

    def __init__(self, etcd: Etcd, pki: Pki, workdir: Path, gates: Mapping[str, bool], *,
                 name: str = "apiserver", extra_args: tuple[str, ...] = (),
                 runtime_config: str = RUNTIME_CONFIG) -> None:
        self.etcd, self.pki, self.name = etcd, pki, name
        self.runtime_config = runtime_config
        self.dir = workdir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.prefix = f"/registry-{name}"
        self.extra_args = extra_args
        self.gates: dict[str, bool] = dict(gates)
        self.port = 0
        self.proc: Proc | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start (a restart keeps the port, so kubeconfigs stay valid); wait for /readyz to say ok."""
        for attempt in range(3):
            if not self.port or attempt:
                self.port = free_port()
            p = self.pki
            self.proc = Proc(self.name, [
                str(BIN / "kube-apiserver"),
                "--etcd-servers", self.etcd.url, "--etcd-prefix", self.prefix,
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                "--secure-port", str(self.port),
                "--tls-cert-file", str(p.cert("apiserver")), "--tls-private-key-file", str(p.key("apiserver")),
                "--client-ca-file", str(p.ca), "--authorization-mode", "RBAC",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", str(p.sa_pub),
                "--service-account-signing-key-file", str(p.sa_key),
                "--service-cluster-ip-range", "10.96.0.0/16",
                "--runtime-config", self.runtime_config,
                "--feature-gates", gate_spec(self.gates),
                "--endpoint-reconciler-type", "none",  # no Service endpoints for a loopback address
                "--enable-priority-and-fairness=false", "--profiling=false",
                "--cert-dir", str(self.dir / "certs"), *self.extra_args], self.dir / "apiserver.log")
            try:
                self.proc.wait_until(self._ready, 90, "readyz")
                return
            except ProcError as e:
                self.proc.stop()
                if "address already in use" not in str(e):
                    raise
        raise RigError(f"{self.name}: could not bind a free port")

    def _ready(self) -> bool:
        r = requests.get(self.url + "/readyz", timeout=2, verify=str(self.pki.ca),
                         cert=(str(self.pki.cert("admin")), str(self.pki.key("admin"))))
        return r.status_code == 200

    def stop(self) -> None:
        # A graceful stop waits for the webhook's open watches (15 s and more); etcd holds all the
        # state, so the rig gives the apiserver 2 s and then kills it.
        if self.proc is not None:
            self.proc.stop(timeout=2)
            self.proc = None

    def restart(self, gates: Mapping[str, bool] | None = None) -> None:
        """Stop and start again over the same etcd prefix, with new gates when given."""
        self.stop()
        if gates is not None:
            self.gates = dict(gates)
        self.start()

    # -- clients -------------------------------------------------------------------------------

    def kubeconfig(self, user: str = "admin", token: str | None = None) -> Path:
        """A kubeconfig for a bearer token, or for the client certificate the PKI made for ``user``
        (`admin`, `kube-scheduler`, `kube-controller-manager`)."""
        auth: dict[str, Any] = ({"token": token} if token is not None else
                                {"client-certificate": str(self.pki.cert(user)),
                                 "client-key": str(self.pki.key(user))})
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "rig",
               "clusters": [{"name": "rig", "cluster": {"server": self.url,
                                                        "certificate-authority": str(self.pki.ca)}}],
               "users": [{"name": user, "user": auth}],
               "contexts": [{"name": "rig", "context": {"cluster": "rig", "user": user}}]}
        path = self.dir / f"{user}.kubeconfig"
        path.write_text(yaml.safe_dump(cfg))
        return path

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this apiserver, in the repository (relative paths work);
        never raises on a non-zero exit."""
        cmd = [str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig or self.kubeconfig()), *args]
        try:
            return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, cwd=REPO)
        except subprocess.TimeoutExpired as e:
            raise RigError(f"kubectl {' '.join(args)} did not finish in {timeout} s") from e

    def client(self) -> Any:
        """An admin `kubernetes.client.ApiClient`."""
        from kubernetes import config
        return config.new_client_from_config(config_file=str(self.kubeconfig()))


class Cluster:
    """etcd plus one apiserver (more with `add_apiserver`), under one work directory.

    ``control_plane=True`` also starts kube-scheduler and kube-controller-manager against it
    (`tests/rig/control.py`); tests that need only an apiserver leave it off and do not pay for
    them. `add_control_plane` gives another apiserver its own pair.
    """

    def __init__(self, workdir: Path, gates: Mapping[str, bool] | None = None, *, control_plane: bool = False,
                 scheduler_profiles: Sequence[Mapping[str, Any]] = (),
                 disabled_controllers: Sequence[str] = (), apiserver_args: tuple[str, ...] = ()) -> None:
        ensure_binaries()
        self.dir = workdir
        self.pki = make_pki(workdir / "pki")
        self.etcd = Etcd(workdir)
        self.apiservers: list[ApiServer] = []
        self.control_planes: dict[str, ControlPlane] = {}
        try:
            self.api = self.add_apiserver(gates or {}, name="apiserver", control_plane=control_plane,
                                          extra_args=apiserver_args)
            if control_plane:
                self.add_control_plane(self.api, scheduler_profiles, disabled_controllers)
        except BaseException:
            self.stop()
            raise

    def add_apiserver(self, gates: Mapping[str, bool], name: str, control_plane: bool = False,
                      extra_args: tuple[str, ...] = ()) -> ApiServer:
        """Another apiserver on the same etcd (its own prefix); ``control_plane``: one that will get
        a scheduler and a controller manager, so it also serves the alpha APIs they watch."""
        config = control_plane_runtime_config(gates) if control_plane else RUNTIME_CONFIG
        api = ApiServer(self.etcd, self.pki, self.dir, gates, name=name, runtime_config=config,
                        extra_args=extra_args)
        self.apiservers.append(api)
        return api

    def add_control_plane(self, api: ApiServer, scheduler_profiles: Sequence[Mapping[str, Any]] = (),
                          disabled_controllers: Sequence[str] = ()) -> ControlPlane:
        """A kube-scheduler and a kube-controller-manager for ``api``, with its gates."""
        from tests.rig.control import ControlPlane

        cp = ControlPlane(api, scheduler_profiles, disabled_controllers)
        self.control_planes[api.name] = cp
        return cp

    def procs(self) -> list[Proc]:
        """Every process of the cluster that should be running."""
        out = [self.etcd.proc, *(a.proc for a in self.apiservers if a.proc is not None)]
        return out + [p for cp in self.control_planes.values() for p in cp.procs]

    def stop(self) -> None:
        for cp in self.control_planes.values():
            cp.stop()
        for api in reversed(self.apiservers):
            api.stop()
        self.etcd.stop()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def have_go() -> bool:
    return shutil.which("go") is not None


__all__ = ["ApiServer", "Cluster", "Etcd", "RigError", "ensure_binaries", "gate_spec", "have_go", "port_open"]
