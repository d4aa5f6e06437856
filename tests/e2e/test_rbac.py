"""The chart's RBAC is enough for the webhook's live state, and no more.

The sandbox runs `dra-webhook serve --kubeconfig` with a token of the chart's ServiceAccount, bound
only to the chart's ClusterRole. Enough: the webhook became ready (every kind listed and watched)
and follows new objects (test_feasibility.py). No more: the real apiserver's authorizer says no
to every write and to every other resource.
"""

from __future__ import annotations

import pytest

from tests.rig.sandbox import Sandbox
from webhook.state.base import KINDS
from webhook.state.reflector import KIND_APIS

pytestmark = pytest.mark.e2e

#: Every kind the live state watches (state.base.KINDS), as `kubectl auth can-i` names it.
WATCHED = sorted(api.path.rpartition("/")[2] + "".join(f".{g}" for g in api.api_version.split("/")[:-1])
                 for api in (KIND_APIS[k] for k in KINDS))
READS = [(verb, res) for res in WATCHED for verb in ("get", "list", "watch")]
DENIED = [("create", "resourceslices.resource.k8s.io"), ("update", "resourceclaims.resource.k8s.io"),
          ("patch", "resourceclaims.resource.k8s.io/status"), ("delete", "podgroups.scheduling.k8s.io"),
          ("list", "secrets"), ("get", "configmaps"), ("create", "pods"), ("delete", "pods"),
          ("create", "tokenreviews.authentication.k8s.io"), ("create", "devicetaintrules.resource.k8s.io"),
          ("update", "validatingwebhookconfigurations.admissionregistration.k8s.io"), ("*", "*")]


def _can(sb: Sandbox, verb: str, resource: str) -> bool:
    assert sb.webhook is not None and sb.webhook.kubeconfig is not None
    r = sb.api.kubectl("auth", "can-i", verb, resource, "--all-namespaces", kubeconfig=sb.webhook.kubeconfig)
    assert r.stdout.strip() in ("yes", "no"), r.stderr
    return r.stdout.strip() == "yes"


def test_the_webhook_identity_is_the_charts_service_account(sandbox: Sandbox):
    assert sandbox.webhook is not None and sandbox.webhook.kubeconfig is not None
    r = sandbox.api.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}",
                            kubeconfig=sandbox.webhook.kubeconfig)
    assert r.stdout == f"system:serviceaccount:dra-webhook:{sandbox.service_account}", r.stderr


@pytest.mark.parametrize(("verb", "resource"), READS, ids=[f"{v}-{r.split('.')[0]}" for v, r in READS])
def test_the_chart_role_allows_what_the_live_state_reads(sandbox: Sandbox, verb: str, resource: str):
    assert _can(sandbox, verb, resource)


@pytest.mark.parametrize(("verb", "resource"), DENIED, ids=[f"{v}-{r.split('.')[0]}" for v, r in DENIED])
def test_the_chart_role_allows_nothing_else(sandbox: Sandbox, verb: str, resource: str):
    assert not _can(sandbox, verb, resource)
