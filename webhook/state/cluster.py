"""One-shot reads of a live cluster, for the commands that ask once and exit (``explain``,
``capacity``, ``state export``): a synced snapshot, one pod, the scheduler's last event for it.

IO edge, like ``reflector``: the official ``kubernetes`` client with raw JSON (no model
objects), the kubeconfig loaded in one place (``live.kube_client``). Every failure to reach or
read the cluster becomes a ``ConfigError`` with one clear line.
"""

from __future__ import annotations

import json
from typing import Any

from webhook import ConfigError
from webhook.raw import as_dict
from webhook.state.base import ClusterSnapshot
from webhook.state.live import LiveState, kube_client

SYNC_SECONDS = 60.0
"""How long the first LIST of every kind may take before the command gives up."""
REQUEST_TIMEOUT = (5.0, 30.0)
"""(connect, read) seconds of a single read."""
SCHEDULER_REASON = "FailedScheduling"


def connect(kubeconfig: str | None) -> Any:
    """An API client for ``kubeconfig`` (None: as kubectl finds it). Raises ConfigError."""
    return kube_client(kubeconfig)


def _describe(e: Exception) -> str:
    status = getattr(e, "status", None)
    reason = getattr(e, "reason", None)
    if status:
        return f"HTTP {status} {reason or ''}".strip()
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _get(api: Any, what: str, call: Any) -> Any:
    """``call()``'s JSON body; None for a 404; ConfigError for anything else that went wrong."""
    from kubernetes.client.exceptions import ApiException
    try:
        resp = call()
        return json.loads(resp.data)
    except ApiException as e:
        if e.status == 404:
            return None
        raise ConfigError(f"{what}: the apiserver at {api.configuration.host} answered {_describe(e)}") from None
    except Exception as e:  # noqa: BLE001 - connection refused, TLS, DNS, timeouts: one line each
        raise ConfigError(f"{what}: cannot reach the apiserver at {api.configuration.host}: "
                          f"{type(e).__name__}: {_describe(e)}") from None


def read_pod(api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The Pod ``namespace/name`` as the apiserver stores it (None: not found)."""
    from kubernetes import client
    got = _get(api, f"pod {namespace}/{name}", lambda: client.CoreV1Api(api).read_namespaced_pod(
        name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
    if got is not None:
        got.setdefault("apiVersion", "v1")
        got.setdefault("kind", "Pod")
    return got if isinstance(got, dict) or got is None else None


def _when(event: dict[str, Any]) -> str:
    series = as_dict(event.get("series"))
    meta = as_dict(event.get("metadata"))
    for v in (series.get("lastObservedTime"), event.get("lastTimestamp"), event.get("eventTime"),
              meta.get("creationTimestamp")):
        if isinstance(v, str) and v:
            return v
    return ""


def scheduler_event(api: Any, namespace: str, name: str, uid: str = "") -> str | None:
    """The message of the scheduler's latest ``FailedScheduling`` event for the pod (None: none)."""
    from kubernetes import client
    selector = f"involvedObject.kind=Pod,involvedObject.name={name},reason={SCHEDULER_REASON}"
    got = _get(api, f"events of pod {namespace}/{name}", lambda: client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=selector, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
    items = [e for e in (got or {}).get("items") or [] if isinstance(e, dict)
             and (not uid or (e.get("involvedObject") or {}).get("uid") in (None, uid))]
    if not items:
        return None
    latest = max(items, key=_when)
    message = latest.get("message") or latest.get("note")
    return message.strip() if isinstance(message, str) else None


def synced_snapshot(kubeconfig: str | None, timeout: float = SYNC_SECONDS) -> ClusterSnapshot:
    """Every kind of the state listed once (``LiveState``, stopped afterwards). Raises ConfigError
    when the cluster cannot be reached or a kind is not listed within ``timeout`` seconds."""
    live = LiveState.from_kubeconfig(kubeconfig, request_timeout_seconds=REQUEST_TIMEOUT[1],
                                     connect_timeout_seconds=REQUEST_TIMEOUT[0], backoff_cap_seconds=2.0)
    live.start()
    try:
        if not live.wait_ready(timeout):
            raise ConfigError(f"cluster {live.describe().get('source', '')}: {live.unready_reason()} "
                              f"after {timeout:g}s")
        return live.snapshot()
    finally:
        live.stop(timeout=2.0)
