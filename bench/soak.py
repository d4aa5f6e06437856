"""Soak: steady mixed admission traffic against a real ``dra-webhook serve`` on loopback.

    python -m bench.soak [--seconds 300] [--rate 100] [--clients 4] [--attack-slow 200] [--json]

Starts the server (fresh dev certificates, the shipped example cluster state, 2 workers), sends
a fixed mix at a steady total rate from keep-alive clients (valid and invalid objects of every
handled kind on both endpoints, dry-run claims with feasibility checks, malformed bodies, metric
scrapes), samples the resident memory of the master and its workers, and prints one report.
Meanwhile a connection attack runs in the background (``bench.attacks``: slow-header TLS
connections, idle TCP connections and a stream of new idle ones, re-opened as the server cuts
them at its request deadline); ``--attack-slow 0 --attack-idle 0 --attack-rate 0`` turns it off.
Exit 0 when there were no errors and memory grew by less than ``--max-growth`` (default 10 %)
between the end of warm-up and the end of the run; 1 otherwise.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench import servers

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "soak-slice"},
         "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                  "pool": {"name": "soak", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}},
                               "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}}
BAD_SLICE = copy.deepcopy(SLICE)
BAD_SLICE["spec"]["devices"][0]["capacity"]["memory"]["value"] = "80 GiB"
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "soak-claim", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}
BIG_CLAIM = copy.deepcopy(CLAIM)
BIG_CLAIM["spec"]["devices"]["requests"][0]["exactly"]["count"] = 16  # infeasible: a warning
TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "soak-template", "namespace": "default"},
            "spec": {"spec": CLAIM["spec"]}}
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "soak.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "soak.example.com"'}}]}}
PODGROUP = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "soak-pg", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"single": {}}}}


def _review(obj: dict[str, Any], uid: str, *, op: str = "CREATE", dry_run: bool = False) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": group, "version": version, "kind": obj["kind"]},
                        "name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", ""),
                        "operation": op, "userInfo": {"username": "soak"}, "object": obj,
                        "oldObject": obj if op == "UPDATE" else None, "dryRun": dry_run}}


# (name, path, object or raw body, expected HTTP status, expected allowed or None)
MIX: list[tuple[str, str, Any, int, bool | None]] = [
    ("slice-validate", "/validate", SLICE, 200, True),
    ("slice-mutate", "/mutate", SLICE, 200, True),
    ("slice-invalid", "/validate", BAD_SLICE, 200, False),
    ("slice-update", "/validate", ("UPDATE", SLICE), 200, True),
    ("claim-dry-run", "/validate", ("DRY", CLAIM), 200, True),
    ("claim-infeasible", "/validate", ("DRY", BIG_CLAIM), 200, True),
    ("claim-mutate", "/mutate", CLAIM, 200, True),
    ("template-validate", "/validate", TEMPLATE, 200, True),
    ("class-validate", "/validate", CLASS, 200, True),
    ("podgroup-validate", "/validate", PODGROUP, 200, True),
    ("podgroup-mutate", "/mutate", PODGROUP, 200, True),
    ("malformed", "/validate", b'{"apiVersion": "admission.k8s.io/v1"', 400, None),
]


@dataclass
class Stats:
    sent: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and its children (the gunicorn master and its workers)."""
    total = 0
    for p in [pid, *servers.children(pid)]:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def _start(tmp: Path, workers: int) -> tuple[subprocess.Popen[bytes], str, str, Path]:
    from webhook.certs import generate

    certs = generate("dra-webhook", "dra-webhook", tmp / "certs", dev=True)
    port = _free_port()
    log = tmp / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--bind", f"127.0.0.1:{port}",
                                 "--tls-cert", str(certs.cert), "--tls-key", str(certs.key),
                                 "--workers", str(workers), "--shutdown-delay", "0"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
        try:
            if requests.get(url + "/readyz", verify=str(certs.ca), timeout=2).status_code == 200:
                return proc, url, str(certs.ca), log
        except requests.RequestException:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not become ready within 30 s")


def _client(idx: int, url: str, ca: str, interval: float, stop: threading.Event, stats: Stats) -> None:
    sess = requests.Session()  # keep-alive, as the apiserver does
    mix = itertools.cycle(MIX[idx % len(MIX):] + MIX[:idx % len(MIX)])
    next_at = time.monotonic()
    n = 0
    while not stop.is_set():
        name, path, obj, want_code, want_allowed = next(mix)
        n += 1
        uid = f"soak-{idx}-{n}"
        if isinstance(obj, bytes):
            body = obj
        elif isinstance(obj, tuple):
            mode, o = obj
            body = json.dumps(_review(o, uid, op="UPDATE" if mode == "UPDATE" else "CREATE",
                                      dry_run=mode == "DRY")).encode()
        else:
            body = json.dumps(_review(obj, uid)).encode()
        t = time.monotonic()
        problem = None
        try:
            r = sess.post(url + path + "?timeout=5s", data=body, timeout=10, verify=ca,
                          headers={"Content-Type": "application/json"})
            if r.status_code != want_code:
                problem = f"{name}: HTTP {r.status_code}: {r.text[:200]}"
            elif want_allowed is not None:
                resp = r.json()["response"]
                if resp["uid"] != uid or resp["allowed"] is not want_allowed:
                    problem = f"{name}: unexpected response {json.dumps(resp)[:200]}"
            else:
                r.json()
        except Exception as e:  # noqa: BLE001 - every failure is counted
            problem = f"{name}: {e!r}"[:300]
        elapsed = time.monotonic() - t
        with stats.lock:
            stats.sent += 1
            stats.latencies.append(elapsed)
            if problem:
                stats.errors.append(problem)
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_at = time.monotonic()  # behind schedule: do not burst to catch up
    sess.close()


def _scraper(url: str, ca: str, stop: threading.Event, stats: Stats) -> None:
    while not stop.wait(5):
        try:
            for path in ("/metrics", "/readyz", "/configz"):
                r = requests.get(url + path, verify=ca, timeout=5)
                if r.status_code != 200:
                    with stats.lock:
                        stats.errors.append(f"GET {path}: HTTP {r.status_code}")
        except requests.RequestException as e:
            with stats.lock:
                stats.errors.append(f"scrape: {e!r}"[:300])


def run(seconds: float, rate: float, clients: int, workers: int, warmup: float | None,
        max_growth: float, attack: tuple[int, int, float] = (0, 0, 0.0)) -> dict[str, Any]:
    from bench.attacks import ConnectionAttack

    warm = warmup if warmup is not None else min(60.0, seconds / 5)
    with tempfile.TemporaryDirectory(prefix="dra-webhook-soak-") as d:
        proc, url, ca, log = _start(Path(d), workers)
        slow, idle, new_rate = attack
        attacker = ConnectionAttack(int(url.rsplit(":", 1)[1]), ca, slow=slow, idle=idle,
                                    new_idle_per_second=new_rate).start() if any(attack) else None
        stats = Stats()
        stop = threading.Event()
        threads = [threading.Thread(target=_client, args=(i, url, ca, clients / rate, stop, stats), daemon=True)
                   for i in range(clients)]
        threads.append(threading.Thread(target=_scraper, args=(url, ca, stop, stats), daemon=True))
        started = time.monotonic()
        for t in threads:
            t.start()
        samples: list[tuple[float, int]] = []
        try:
            while (now := time.monotonic() - started) < seconds:
                samples.append((now, _rss_kib(proc.pid)))
                time.sleep(min(2.0, max(0.1, seconds - now)))
            samples.append((time.monotonic() - started, _rss_kib(proc.pid)))
        finally:
            stop.set()
            counts = attacker.stop() if attacker is not None else None
            for t in threads:
                t.join(timeout=15)
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = -9
        text = log.read_text(errors="replace")
    after_warm = [kib for t, kib in samples if t >= warm]
    base = statistics.mean(after_warm[:3]) if after_warm else 0
    end = statistics.mean(after_warm[-3:]) if after_warm else 0
    growth = (end - base) / base if base else 0.0
    lat = sorted(stats.latencies)

    def pct(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2) if lat else 0.0

    tracebacks = text.count("Traceback")
    errors = list(stats.errors) + ([f"{tracebacks} tracebacks in the server log"] if tracebacks else []) + \
        ([f"server exit code {code}"] if code != 0 else [])
    return {
        "seconds": round(seconds, 1), "warmupSeconds": round(warm, 1), "targetRate": rate,
        "clients": clients, "workers": workers, "requests": stats.sent,
        "achievedRate": round(stats.sent / seconds, 1) if seconds else 0.0,
        "errors": len(errors), "firstErrors": errors[:10],
        "latencyMs": {"p50": pct(0.50), "p99": pct(0.99), "max": pct(1.0)},
        "rssKiB": {"afterWarmup": int(base), "end": int(end), "peak": max((k for _, k in samples), default=0)},
        "rssGrowthPercent": round(growth * 100, 2), "maxGrowthPercent": max_growth * 100,
        "attack": None if counts is None else {
            "slowHeaders": slow, "idle": idle, "newIdlePerSecond": new_rate,
            "opened": counts.opened, "closedByServer": counts.closed_by_server, "failedToConnect": counts.failed},
        "ok": not errors and growth < max_growth,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=300.0, help="run length (default %(default)s)")
    p.add_argument("--rate", type=float, default=100.0, help="total requests per second (default %(default)s)")
    p.add_argument("--clients", type=int, default=4, help="keep-alive client threads (default %(default)s)")
    p.add_argument("--workers", type=int, default=2, help="server worker processes (default %(default)s)")
    p.add_argument("--warmup", type=float, default=None, help="seconds before the memory baseline "
                   "(default: a fifth of the run, at most 60)")
    p.add_argument("--max-growth", type=float, default=0.10, help="allowed RSS growth after warm-up (0.10 = 10%%)")
    p.add_argument("--attack-slow", type=int, default=200,
                   help="background slow-header TLS connections held open (default %(default)s)")
    p.add_argument("--attack-idle", type=int, default=200,
                   help="background idle TCP connections held open (default %(default)s)")
    p.add_argument("--attack-rate", type=float, default=10.0,
                   help="new idle connections opened per second in the background (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON only")
    a = p.parse_args(argv)
    report = run(a.seconds, a.rate, a.clients, a.workers, a.warmup, a.max_growth,
                 (a.attack_slow, a.attack_idle, a.attack_rate))
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        lat, rss = report["latencyMs"], report["rssKiB"]
        print(f"soak: {report['requests']} requests in {report['seconds']} s "
              f"({report['achievedRate']}/s of {report['targetRate']}/s target, {report['clients']} clients, "
              f"{report['workers']} workers)")
        print(f"  errors: {report['errors']}" + "".join(f"\n    {e}" for e in report["firstErrors"]))
        print(f"  latency ms: p50 {lat['p50']}  p99 {lat['p99']}  max {lat['max']}")
        print(f"  RSS KiB (master + workers): after warm-up ({report['warmupSeconds']} s) {rss['afterWarmup']}, "
              f"end {rss['end']}, peak {rss['peak']}; growth {report['rssGrowthPercent']} % "
              f"(limit {report['maxGrowthPercent']:.0f} %)")
        if report["attack"]:
            att = report["attack"]
            print(f"  background attack: {att['slowHeaders']} slow-header + {att['idle']} idle connections held, "
                  f"{att['newIdlePerSecond']} new idle/s; opened {att['opened']}, cut by the server "
                  f"{att['closedByServer']}")
        print(f"  result: {'PASS' if report['ok'] else 'FAIL'}")
        print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
