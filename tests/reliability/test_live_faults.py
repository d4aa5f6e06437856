"""The live state through real control-plane faults, under churn, against our server as deployed.

One rig for the module: etcd, kube-apiserver 1.37 and `dra-webhook serve` (gunicorn over TLS,
2 workers, registered from the chart, following the apiserver with the chart's ServiceAccount
through a kubeconfig that skips TLS verification). Short timings from its config file: watch
timeout 4 s, staleness bound 8 s. 20,000 ResourceClaims are in the cluster; ResourceClaims are
served without the apiserver's watch cache (``--watch-cache-sizes=resourceclaims...#0``), so one
kind is watched straight from etcd (no bookmarks; compaction reaches it) and the others through
the watch cache.

While a churn generator writes (slices, claims, classes, nodes, 10 per second) an observer
scrapes /readyz and /metrics and posts a claim review to /validate twice a second. Each fault:
inject it, heal it, stop the churn, and wait until every worker's state equals a fresh LIST of
every kind (count and digest of uid:resourceVersion, /configz). Checked each time: /readyz
stayed 200 and ``dra_webhook_state_ready`` 1 (a stale state stays ready: docs/operations.md);
from the staleness bound on (plus 2 s of scrape slack) ``dra_webhook_state_stale`` was 1 for
every served kind and every feasibility answer carried the staleness note; while healthy, no
kind was ever stale and no answer carried the note. Recovery times are printed (`-s`) and
quoted in docs/operations.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.builders import review
from tests.reliability.controlplane import (
    STALE_NOTE,
    Churn,
    Observer,
    admin_session,
    wait_converged,
    wait_until,
    webhook_views,
)
from tests.rig.faults import (
    compact_etcd,
    kill9_apiserver,
    pause,
    restart_etcd,
    resume,
    seed_through_etcd,
)
from tests.rig.sandbox import Sandbox, render_chart

# A killed apiserver leaves the test's own client connections (churn, observer) to be collected
# unclosed: that is the test client's noise, not the webhook's, so it is not an error here.
pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

WATCH_TIMEOUT = 4
STALE_AFTER = 8
SLACK = 2.0
"""Seconds past the bound before a scrape must show it: the gauge is published every second."""
BULK = 20_000
PAGE = 500
CONVERGE_TIMEOUT = 90
APISERVER_ARGS = ("--watch-cache-sizes=resourceclaims.resource.k8s.io#0",)

PROBE = review({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "probe", "namespace": "default"},
                "spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})


class Rig:
    def __init__(self, sb: Sandbox) -> None:
        self.sb = sb
        self.api = sb.api
        assert sb.webhook is not None
        self.webhook = sb.webhook
        self.admin = admin_session(self.api)
        self.churn = Churn(self.api)
        self.observer = Observer(self.webhook, PROBE)
        self.healthy: list[tuple[float, float]] = []
        """Windows in which the control plane was healthy (no stale kind allowed)."""
        self.recovery: dict[str, float] = {}
        self.starts = 1

    def served_kinds(self) -> list[str]:
        c = requests.get(self.webhook.url + "/configz", verify=str(self.webhook.certs / "ca.crt"), timeout=10).json()
        return sorted(k for k, v in c["state"]["kinds"].items() if v["served"])

    def converge(self, name: str) -> float:
        """Stop the churn, measure the time to equal views, start the churn again."""
        self.churn.pause()
        try:
            took = wait_converged(self.admin, self.api, self.webhook, CONVERGE_TIMEOUT)
        finally:
            self.churn.resume()
        return took

    def quiet_period(self, seconds: float) -> None:
        """Let the healthy rig run: a window in which no kind may be stale."""
        start = time.monotonic()
        time.sleep(seconds)
        self.healthy.append((start, time.monotonic()))


def _write_config(path: Path) -> Path:
    path.write_text(f"stateWatchTimeoutSeconds: {WATCH_TIMEOUT}\nstateStaleAfterSeconds: {STALE_AFTER}\n")
    return path


def _insecure_kubeconfig(secure: Path) -> Path:
    """The webhook's kubeconfig (the chart's ServiceAccount token), with TLS verification off:
    urllib3 then warns on every request, and the log must stay JSON."""
    cfg = yaml.safe_load(secure.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    cluster.pop("certificate-authority", None)
    cluster["insecure-skip-tls-verify"] = True
    out = secure.with_name("insecure.kubeconfig")
    out.write_text(yaml.safe_dump(cfg))
    return out


def _bulk_claims() -> Iterator[dict[str, Any]]:
    for i in range(BULK):
        yield {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": f"bulk-{i:05d}", "namespace": "bulk"},
               "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                   "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    workdir = tmp_path_factory.mktemp("live-faults")
    config = _write_config(workdir / "webhook-config.yaml")
    sb = Sandbox(workdir, webhook_args=("--config", str(config)))
    try:
        sb.api.extra_args = APISERVER_ARGS
        sb.api.restart()
        sb.must("create", "namespace", "bulk")
        seed_through_etcd(sb.cluster.etcd, sb.api, _bulk_claims())
        admin = admin_session(sb.api)
        wait_until(lambda: len(admin.get(sb.api.url + "/apis/resource.k8s.io/v1/namespaces/bulk/resourceclaims",
                                         timeout=60).json()["items"]) == BULK, 60, "the seeded claims")
        assert sb.webhook is not None and sb.webhook.kubeconfig is not None
        sb.webhook.kubeconfig = _insecure_kubeconfig(sb.webhook.kubeconfig)
        r = Rig(sb)
        yield r
    finally:
        sb.stop()


def _apiserver_lists(rig: Rig, resource: str) -> float:
    """LIST requests the apiserver answered for ``resource`` (its own metrics)."""
    text = rig.admin.get(rig.api.url + "/metrics", timeout=30).text
    total = 0.0
    for line in text.splitlines():
        if (line.startswith("apiserver_request_total{") and 'verb="LIST"' in line
                and f'resource="{resource}"' in line and 'code="200"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_twenty_thousand_objects_are_listed_in_pages_at_start(rig: Rig):
    before = _apiserver_lists(rig, "resourceclaims")
    started = time.monotonic()
    rig.webhook.restart()  # waits for /readyz 200: every worker's first LIST of every kind done
    rig.starts += 1
    ready = time.monotonic() - started
    took = wait_converged(rig.admin, rig.api, rig.webhook, CONVERGE_TIMEOUT)
    pages = _apiserver_lists(rig, "resourceclaims") - before
    claims = requests.get(rig.webhook.url + "/configz", verify=str(rig.webhook.certs / "ca.crt"),
                          timeout=10).json()["state"]["kinds"]["ResourceClaim"]["objects"]
    print(f"\n{BULK} claims: ready {ready:.1f} s after start, equal to a LIST {took:.1f} s later; "
          f"{pages:.0f} LIST pages of claims")
    assert claims >= BULK
    assert pages >= 2 * (BULK // PAGE), "each of the 2 workers lists the claims in pages of 500"
    rig.recovery["start-20000"] = ready + took
    rig.churn.start()
    rig.observer.start()
    rig.quiet_period(WATCH_TIMEOUT * 3)  # quiet kinds (Workloads, PodGroups) live on watch timeouts


def _outage(rig: Rig, name: str, inject: Any, heal: Any, *, expect_stale: bool,
            streams_live_on: bool = False) -> None:
    """Inject, wait for the gauge to say stale (when expected), heal, converge; check what the
    webhook said in between. ``streams_live_on``: watch streams open at the fault go on
    delivering until their timeout (RBAC is checked when a request starts), so the state is
    current up to ``WATCH_TIMEOUT`` later."""
    current_until = WATCH_TIMEOUT if streams_live_on else 0
    served = rig.served_kinds()
    t0 = time.monotonic()
    inject()
    try:
        if expect_stale:
            wait_until(lambda: all(rig.observer.scrapes[-1].stale.get(k) == 1 for k in served),
                       STALE_AFTER + 30, f"{name}: every served kind stale")
            # a little longer, so the checked window holds several scrapes and probes
            time.sleep(max(0.0, t0 + current_until + STALE_AFTER + SLACK + 3 - time.monotonic()))
    finally:  # healed even when the wait failed, so the next test starts from a healthy rig
        t1 = time.monotonic()
        heal()
        t2 = time.monotonic()
    took = rig.converge(name)
    rig.recovery[name] = took
    # Converged views prove the objects; freshness is the gauge's (an empty kind converges at
    # once, and may still wait out its backoff).
    t3 = time.monotonic()
    wait_until(lambda: (s := rig.observer.scrapes[-1]).t > t3 and not any(s.stale.values()), 90,
               f"{name}: no kind stale")
    fresh = time.monotonic() - t2
    print(f"\n{name}: fault {t1 - t0:.1f} s, healing {t2 - t1:.1f} s, state equal to a LIST {took:.1f} s "
          f"and no kind stale {fresh:.1f} s after")
    rig.quiet_period(WATCH_TIMEOUT + 1)  # a whole watch timeout cycle of every kind

    scrapes, probes = rig.observer.window(t0, time.monotonic())
    assert scrapes and probes, rig.observer.errors[-5:]
    assert all(s.readyz == 200 and s.ready == 1 for s in scrapes), \
        [(round(s.t - t0, 1), s.readyz, s.ready) for s in scrapes if s.readyz != 200 or s.ready != 1]
    if expect_stale:
        stale_scrapes, stale_probes = rig.observer.window(t0 + current_until + STALE_AFTER + SLACK, t1)
        assert stale_scrapes and stale_probes
        not_stale = [(round(s.t - t0, 1), k) for s in stale_scrapes for k in served if s.stale.get(k) != 1]
        assert not_stale == [], f"kinds not reported stale past the bound: {not_stale}"
        assert all(s.age.get(k, 0) > STALE_AFTER for s in stale_scrapes for k in served)
        unmarked = [(round(p.sent - t0, 1), p.warnings) for p in stale_probes
                    if not (p.warnings and p.warnings[0].startswith(STALE_NOTE))]
        assert unmarked == [], f"feasibility answers from a stale state without the note: {unmarked}"


def test_apiserver_kill_9_and_restart(rig: Rig):
    _outage(rig, "apiserver-kill-9", lambda: kill9_apiserver(rig.api), rig.api.start, expect_stale=True)


def test_apiserver_hung_longer_than_the_watch_timeout(rig: Rig):
    assert rig.api.proc is not None
    proc = rig.api.proc
    _outage(rig, "apiserver-sigstop", lambda: pause(proc), lambda: resume(proc), expect_stale=True)


def test_etcd_compaction_makes_the_uncached_kind_relist(rig: Rig):
    def relists() -> int:
        views = {}
        for _ in range(20):
            c = requests.get(rig.webhook.url + "/configz", verify=str(rig.webhook.certs / "ca.crt"), timeout=10).json()
            views[c["pid"]] = c["state"]["kinds"]["ResourceClaim"]["relists"]
        return sum(views.values())

    before = relists()

    def inject() -> None:
        # No claim may be written until the claims' watch has restarted: a new event would move
        # their resourceVersion past the compaction, and the restart would not need a relist.
        rig.churn.pause()
        try:
            # Writes of another kind move etcd's revision past the claims' last event; a watch
            # from revision R resumes at R+1, which must be compacted away too: two writes.
            for i in range(2):
                rig.sb.must("label", "node", "worker-1", f"compaction={i}", "--overwrite")
            compact_etcd(rig.sb.cluster.etcd)
            wait_until(lambda: relists() > before, 30, "a relist of ResourceClaims after 410 Gone")
        finally:
            rig.churn.resume()

    _outage(rig, "etcd-compaction", inject, lambda: None, expect_stale=False)


def test_etcd_restart(rig: Rig):
    _outage(rig, "etcd-restart", lambda: restart_etcd(rig.sb.cluster.etcd, down_seconds=3), lambda: None,
            expect_stale=False)


def test_rbac_removed_and_restored(rig: Rig):
    objs = render_chart(rig.sb.chart_values({}))
    (binding,) = [o for o in objs if o["kind"] == "ClusterRoleBinding"]
    name = binding["metadata"]["name"]
    log = rig.webhook.dir / "webhook.log"
    _outage(rig, "rbac-removed",
            lambda: rig.sb.must("delete", "clusterrolebinding", name),
            lambda: rig.sb.must("apply", "-f", "-", input=json.dumps(binding)), expect_stale=True,
            streams_live_on=True)
    assert "check RBAC" in log.read_text(errors="replace")


def test_an_api_group_no_longer_served_is_synced_empty_and_never_stale(rig: Rig):
    """The apiserver restarted without scheduling.k8s.io/v1beta1: Workloads and PodGroups answer
    404, and the webhook keeps them as served-empty (no backoff loop, no staleness)."""
    rig.api.extra_args = (*APISERVER_ARGS, "--runtime-config=scheduling.k8s.io/v1beta1=false")
    rig.api.restart()
    assert rig.admin.get(rig.api.url + "/apis/scheduling.k8s.io/v1beta1/workloads", timeout=10).status_code == 404

    def unserved() -> bool:
        views = webhook_views(rig.webhook)
        return len(views) == 2 and all(
            (v["Workload"]["served"], v["PodGroup"]["served"], v["Workload"]["objects"]) == (False, False, 0)
            for v in views.values())

    wait_until(unserved, 60, "Workloads and PodGroups not served, in both workers")
    took = rig.converge("api-group-removed")  # the kinds still served
    t = time.monotonic()
    wait_until(lambda: (s := rig.observer.scrapes[-1]).t > t and not any(s.stale.values()), 60, "no kind stale")
    print(f"\napi-group-removed: state equal to a LIST {took:.1f} s after the restart")
    scrapes, _ = rig.observer.window(t, time.monotonic())
    assert all(s.readyz == 200 and s.ready == 1 for s in scrapes)


def test_quiet_kinds_were_never_stale_while_healthy_and_every_log_line_is_json(rig: Rig):
    rig.churn.stop()
    rig.observer.stop()
    flagged = []
    for start, end in rig.healthy:
        scrapes, probes = rig.observer.window(start, end)
        assert scrapes and probes
        flagged += [(s.t, k) for s in scrapes for k, v in s.stale.items() if v]
        flagged += [(p.sent, "probe") for p in probes if any(w.startswith(STALE_NOTE) for w in p.warnings)]
    assert flagged == [], flagged
    assert rig.churn.ok > 100, (rig.churn.ok, rig.churn.failed)
    lines = (rig.webhook.dir / "webhook.log").read_text(errors="replace").splitlines()
    records = [json.loads(line) for line in lines]  # every line, the master's and the workers'
    insecure = [r for r in records if r.get("category") == "InsecureRequestWarning"]
    assert 1 <= len(insecure) <= 2 * rig.starts, len(insecure)
    print("\nrecovery (s): " + ", ".join(f"{k} {v:.1f}" for k, v in rig.recovery.items()))
