"""A kubelet stand-in for one pod of the chart's Deployment: the rendered container spec turned
into a `podman run`, so the tests run the image exactly as the chart asks a kubelet to.

Read from the rendered manifest, never restated: the image, `args`, `env` (with the downward-API
fields a kubelet fills in), every volume mount (Secret and ConfigMap volumes as read-only
directories of files with the kubelet's default mode 0644, emptyDirs as size-limited tmpfs), the
security context (user and group, supplementary fsGroup, read-only root filesystem, dropped
capabilities, no privilege escalation, the runtime's default seccomp profile), the memory limit,
the probes, the `preStop` sleep and `terminationGracePeriodSeconds`. A service account token is
mounted where a kubelet mounts it, with KUBERNETES_SERVICE_HOST/PORT pointing at the rig's
apiserver, so `--in-cluster` works as in a pod. The network is the host's (the chart's
containerPort is the host port). A field this stand-in does not know is an error, so a chart
change cannot pass unread.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PODMAN = ["podman", "--runtime", "runc"]
#: podman's default open-file and process limits exceed this machine's hard limits.
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SECRET_MODE = 0o644  # a Secret or ConfigMap volume's defaultMode (420)

KNOWN_CONTAINER = {"name", "image", "imagePullPolicy", "args", "ports", "env", "startupProbe", "livenessProbe",
                   "readinessProbe", "lifecycle", "securityContext", "resources", "volumeMounts"}
KNOWN_SECURITY = {"allowPrivilegeEscalation", "privileged", "readOnlyRootFilesystem", "runAsNonRoot",
                  "capabilities", "seccompProfile", "runAsUser", "runAsGroup", "fsGroup"}


class PodError(RuntimeError):
    """The spec holds something this stand-in cannot run, or podman failed."""


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise PodError(f"podman {' '.join(args[:3])}...: {r.stderr.strip()}")
    return r


def _mebibytes(quantity: str) -> str:
    m = re.fullmatch(r"(\d+)(Mi|Gi)", quantity)
    if not m:
        raise PodError(f"memory limit {quantity!r}: only Mi and Gi are understood here")
    return f"{int(m[1]) * (1024 if m[2] == 'Gi' else 1)}m"


def _write_files(d: Path, files: Mapping[str, bytes], mode: int) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    for name, data in files.items():
        (d / name).write_bytes(data)
        os.chmod(d / name, mode)
    return d


@dataclass
class Pod:
    """One pod of the Deployment in ``objects`` (a chart render), run by podman.

    ``secrets`` maps a Secret name to its files (a Secret the render holds is taken from it);
    ``service_account`` is the token, CA and namespace a kubelet would mount. Change ``args``,
    ``mounts_dropped`` or ``secret_mode`` before ``start()`` to break one thing on purpose."""

    objects: list[dict[str, Any]]
    workdir: Path
    name: str
    secrets: dict[str, dict[str, bytes]] = field(default_factory=dict)
    service_account: dict[str, bytes] | None = None
    apiserver: tuple[str, int] | None = None
    extra_volumes: dict[str, tuple[Path, str]] = field(default_factory=dict)
    """Host directory -> (path in the container), mounted read-only (fault tests)."""
    mounts_dropped: set[str] = field(default_factory=set)
    secret_mode: int = SECRET_MODE
    started: bool = False

    def __post_init__(self) -> None:
        (self.deployment,) = [o for o in self.objects if o["kind"] == "Deployment"]
        self.pod_spec: dict[str, Any] = self.deployment["spec"]["template"]["spec"]
        (self.container,) = self.pod_spec["containers"]
        unknown = set(self.container) - KNOWN_CONTAINER
        if unknown:
            raise PodError(f"the chart's container sets {sorted(unknown)}: teach tests/container/pod.py")
        self.args: list[str] = list(self.container["args"])
        self.namespace: str = self.deployment["metadata"]["namespace"]

    # -- the spec, read --------------------------------------------------------------------------

    @property
    def image(self) -> str:
        return str(self.container["image"])

    @property
    def port(self) -> int:
        (p,) = self.container["ports"]
        return int(p["containerPort"])

    def probe(self, kind: str) -> dict[str, Any]:
        """``startupProbe``, ``livenessProbe`` or ``readinessProbe`` (HTTPS GET on our port)."""
        p = dict(self.container[kind])
        get = p["httpGet"]
        assert get["scheme"] == "HTTPS" and get["port"] == self.container["ports"][0]["name"], p
        return p

    @property
    def pre_stop_seconds(self) -> int:
        return int(self.container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0))

    @property
    def grace_seconds(self) -> int:
        return int(self.pod_spec["terminationGracePeriodSeconds"])

    def _security(self) -> list[str]:
        pod_sc, sc = self.pod_spec.get("securityContext", {}), self.container.get("securityContext", {})
        unknown = (set(pod_sc) | set(sc)) - KNOWN_SECURITY
        if unknown:
            raise PodError(f"securityContext sets {sorted(unknown)}: teach tests/container/pod.py")
        merged = {**pod_sc, **sc}
        out = ["--user", f"{merged['runAsUser']}:{merged['runAsGroup']}"]
        if merged.get("runAsNonRoot") and int(merged["runAsUser"]) == 0:
            raise PodError("runAsNonRoot with runAsUser 0")
        if "fsGroup" in merged:
            out += ["--group-add", str(merged["fsGroup"])]
        if merged.get("readOnlyRootFilesystem"):
            out += ["--read-only", "--read-only-tmpfs=false"]  # nothing writable but the volumes
        if merged.get("privileged"):
            raise PodError("privileged containers are not run here")
        for cap in merged.get("capabilities", {}).get("drop", []):
            out += ["--cap-drop", cap]
        for cap in merged.get("capabilities", {}).get("add", []):
            out += ["--cap-add", cap]
        if merged.get("allowPrivilegeEscalation") is False:
            out += ["--security-opt", "no-new-privileges"]
        if merged.get("seccompProfile", {}).get("type") not in (None, "RuntimeDefault"):
            raise PodError(f"seccompProfile {merged['seccompProfile']}: only RuntimeDefault (podman's default)")
        return out

    def _env(self) -> list[str]:
        out = []
        fields = {"metadata.namespace": self.namespace, "metadata.name": self.name}
        for e in self.container.get("env", []):
            if "value" in e:
                value = str(e["value"])
            else:
                value = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
            out += ["--env", f"{e['name']}={value}"]
        if self.service_account is not None and self.apiserver is not None:
            out += ["--env", f"KUBERNETES_SERVICE_HOST={self.apiserver[0]}",
                    "--env", f"KUBERNETES_SERVICE_PORT={self.apiserver[1]}"]
        return out

    def _volumes(self) -> list[str]:
        vols = {v["name"]: v for v in self.pod_spec["volumes"]}
        out: list[str] = []
        for m in self.container["volumeMounts"]:
            if m["name"] in self.mounts_dropped:
                continue
            v = vols[m["name"]]
            ro = ",ro" if m.get("readOnly") else ""
            if "emptyDir" in v:
                size = v["emptyDir"].get("sizeLimit")
                opts = f",tmpfs-size={_mebibytes(size)}" if size else ""
                out += ["--mount", f"type=tmpfs,destination={m['mountPath']},tmpfs-mode=1777{opts}"]
            elif "secret" in v:
                files = self._secret(v["secret"]["secretName"])
                d = _write_files(self.workdir / "volumes" / m["name"], files, self.secret_mode)
                out += ["--mount", f"type=bind,source={d},destination={m['mountPath']}{ro}"]
            elif "configMap" in v:
                (cm,) = [o for o in self.objects if o["kind"] == "ConfigMap"
                         and o["metadata"]["name"] == v["configMap"]["name"]]
                files = {k: str(val).encode() for k, val in cm["data"].items()}
                d = _write_files(self.workdir / "volumes" / m["name"], files, SECRET_MODE)
                out += ["--mount", f"type=bind,source={d},destination={m['mountPath']}{ro}"]
            else:
                raise PodError(f"volume {v}: teach tests/container/pod.py")
        if self.pod_spec.get("automountServiceAccountToken", True) and self.service_account is not None:
            d = _write_files(self.workdir / "volumes" / "serviceaccount", self.service_account, SECRET_MODE)
            out += ["--mount", f"type=bind,source={d},destination={SA_DIR},ro"]
        for host, (path, _) in self.extra_volumes.items():
            out += ["--mount", f"type=bind,source={host},destination={path},ro"]
        return out

    def _secret(self, name: str) -> dict[str, bytes]:
        if name in self.secrets:
            return self.secrets[name]
        (s,) = [o for o in self.objects if o["kind"] == "Secret" and o["metadata"]["name"] == name]
        return {k: base64.b64decode(v) for k, v in s["data"].items()}

    def run_args(self) -> list[str]:
        limits = self.container.get("resources", {}).get("limits", {})
        memory = ["--memory", _mebibytes(limits["memory"])] if "memory" in limits else []
        return ["--name", self.name, "--network", "host", *ULIMITS, *self._security(), *memory,
                *self._env(), *self._volumes(), self.image, *self.args]

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        podman("rm", "--force", "--ignore", self.name)
        podman("run", "--detach", *self.run_args())
        self.started = True

    def run_to_exit(self, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run in the foreground until the process exits (fault tests)."""
        podman("rm", "--force", "--ignore", self.name)
        try:
            return podman("run", "--rm", *self.run_args(), timeout=timeout, check=False)
        finally:
            podman("rm", "--force", "--ignore", self.name, check=False)

    def state(self) -> dict[str, Any]:
        return dict(json.loads(podman("inspect", self.name, "--format", "{{json .State}}").stdout))

    def running(self) -> bool:
        return bool(self.state()["Running"])

    def logs(self) -> str:
        r = podman("logs", self.name, check=False)
        return r.stdout + r.stderr

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> float:
        """Poll ``ready`` until true; seconds it took. PodError (with the logs) on exit or timeout."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if not self.running():
                raise PodError(f"{self.name} exited ({self.state()['ExitCode']}) before {what}:\n{self.logs()[-4000:]}")
            try:
                if ready():
                    return time.monotonic() - start
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.2)
        raise PodError(f"{self.name}: no {what} within {timeout:.0f} s:\n{self.logs()[-4000:]}")

    def signal(self, sig: str) -> None:
        podman("kill", "--signal", sig, self.name)

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                return int(self.state()["ExitCode"])
            time.sleep(0.2)
        return None

    def remove(self) -> None:
        if self.started:
            podman("rm", "--force", "--ignore", "--time", "0", self.name, check=False)
            self.started = False
