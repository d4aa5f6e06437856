"""B8: the latency our webhooks add to a real kube-apiserver, which is what an operator feels.

The test rig's sandbox (``tests/rig/sandbox.py``: etcd, kube-apiserver 1.37 and ``dra-webhook
serve`` registered through our chart, ``examples/cluster/`` loaded) gets a second, bare
kube-apiserver on the same etcd under its own prefix, so it has no webhook configurations at
all: same binary, flags, machine and run. Eight client processes, one keep-alive HTTPS
connection each (the admin's client certificate, as kubectl would), send server-side dry-run
creates (``?dryRun=All``) of the seed slice (``examples/seeds``, the devices of the
compatibility-groups document) and of a ResourceClaim with a CEL selector (which also runs the
feasibility check) in a closed loop, alternating between the two apiservers over several
rounds so drift on the shared machine hits both alike. Reported: p50 and p99 with the webhooks
vs without, target p99 <= 1.5x. Without the upstream binaries (``make upstream``) it is n/a.

A third apiserver on the same etcd has the chart's webhook configurations pointing at the echo
app (``bench/echo_app.py``: the same gunicorn/TLS server, answering ``allowed`` at once), so a
second row per case shows what *any* webhook costs on this machine: the apiserver's own side of
two webhook calls and a minimal server, with nothing of our review in it.

Each arm also reads the CPU its processes spent (``/proc`` utime + stime of the apiserver, of
the webhook server with its workers, and of etcd) and reports it per request: where the added
latency goes on a machine whose cores all of them share. p99 on two shared cores cannot decide
much (the echo app itself lands on either side of 1.5x), CPU can: per case, two rows compare our
webhook server's CPU per create with the echo app's (target <= 1.25x) and the apiserver's extra
CPU with our webhooks with its extra with the echo app (target <= 1.1x).

Two pod cases check what the chart's pods webhooks cost: a pod without claims or a scheduling
group never reaches us (the configurations' matchConditions filter it in the apiserver), so the
apiserver spends the same CPU on it with and without our webhooks (target <= 1.1x, and zero
reviews answered); a pod with a claim does reach /validate for its feasibility warning.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing as mp
import ssl
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Row, fmt_time, percentile
from bench.servers import cpu_seconds, descendants

NAME = "B8"
CLIENTS = 8
TARGET = 1.5
CPU_TARGET = 1.25
"""Our webhook server's CPU per create over the echo app's."""
APISERVER_TARGET = 1.1
"""The apiserver's extra CPU per create with our webhooks over its extra with the echo app, and its
CPU for a pod that never reaches us with over without our webhooks."""
ROOT = Path(__file__).resolve().parent.parent


def objects() -> dict[str, tuple[str, dict[str, Any]]]:
    """Case name -> (collection path, object) for the dry-run creates."""
    import yaml

    seed = ROOT / "examples" / "seeds" / "seed-000-resourceslice-compatibility-groups.yaml"
    (slice_,) = [d for d in yaml.safe_load_all(seed.read_text(encoding="utf-8"))
                 if d and d["kind"] == "ResourceSlice" and d["spec"].get("devices")]
    claim = yaml.safe_load((ROOT / "examples" / "claims" / "gpu-memory-selector.yaml").read_text(encoding="utf-8"))
    slice_["metadata"]["name"] = "b8-seed-slice"  # never an existing object: every create is new
    claim["metadata"]["name"] = "b8-claim"
    pods = "/api/v1/namespaces/default/pods?dryRun=All"
    return {"seed-slice": ("/apis/resource.k8s.io/v1/resourceslices?dryRun=All", slice_),
            "claim-cel": ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?dryRun=All", claim),
            "pod-plain": (pods, _pod("b8-plain", None)),
            "pod-claim": (pods, _pod("b8-claim-pod", "b8-claim"))}


def _pod(name: str, claim: str | None) -> dict[str, Any]:
    """A one-container pod; with ``claim``, it uses that ResourceClaim (the feasibility check then
    says the claim is missing: a dry run stores nothing, and the review runs all the same)."""
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    spec: dict[str, Any] = {"containers": [container]}
    if claim is not None:
        container["resources"] = {"claims": [{"name": "dev"}]}
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimName": claim}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _client(args: tuple[int, str, str, str, str, bytes, int, float]) -> tuple[list[float], int, str]:
    port, ca, cert, key, path, body, n, start_at = args
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    lat: list[float] = []
    errors, last_error = 0, ""
    conn: http.client.HTTPSConnection | None = None
    while time.time() < start_at:  # all clients start together
        time.sleep(0.001)
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
            conn.request("POST", path, body, headers)
            r = conn.getresponse()
            text = r.read()
            ok = r.status == 201
            if not ok:
                last_error = f"{r.status} {text[:200]!r}"
        except (OSError, http.client.HTTPException) as e:
            ok, last_error = False, f"{type(e).__name__}: {e}"
            if conn is not None:
                conn.close()
            conn = None
        if ok:
            lat.append(time.perf_counter() - t0)
        else:
            errors += 1
    if conn is not None:
        conn.close()
    return lat, errors, last_error


def load(api: Any, path: str, body: bytes, per_client: int) -> tuple[list[float], int, float, str]:
    """(latencies, errors, seconds, last error) of ``CLIENTS`` closed-loop clients."""
    pki = api.pki
    start_at = time.time() + 0.3
    args = (api.port, str(pki.ca), str(pki.cert("admin")), str(pki.key("admin")), path, body, per_client, start_at)
    with mp.get_context("fork").Pool(CLIENTS) as pool:
        parts = pool.map(_client, [args] * CLIENTS)
    seconds = time.time() - start_at
    lat = [x for p in parts for x in p[0]]
    return lat, sum(p[1] for p in parts), seconds, next((p[2] for p in parts if p[2]), "")


def run(quick: bool) -> list[Row]:
    try:
        from tests.rig.cluster import BIN
        from tests.rig.procs import ProcError
        from tests.rig.sandbox import Sandbox
    except ImportError as e:
        return [Row.na(NAME, "apiserver", f"the test rig cannot be imported: {e}")]
    missing = [b for b in ("etcd", "kube-apiserver", "kubectl") if not (BIN / b).exists()]
    if missing:
        return [Row.na(NAME, "apiserver", f"upstream binaries missing in {BIN} ({', '.join(missing)}): "
                                          "run `make upstream`")]
    rounds, per_client = (1, 5) if quick else (3, 40)
    cases = objects()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dra-bench-b8-") as tmp:
        try:
            sb = Sandbox(Path(tmp))
        except (RuntimeError, ProcError, OSError, ImportError, subprocess.SubprocessError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            return [Row.na(NAME, "apiserver", f"sandbox did not start: {first[:140]}")]
        echo = None
        try:
            bare = sb.cluster.add_apiserver(sb.gates, name="bare")
            echo, echo_api = _echo_apiserver(sb, Path(tmp))
            apis = {"with": sb.api, "without": bare, "echo": echo_api}
            for api in (bare, echo_api):  # the sandbox made its own; a pod needs one to be admitted
                api.kubectl("create", "serviceaccount", "default", "-n", "default")
            hooks = {"echo": echo.proc.pid}  # the webhook server each arm calls
            if sb.webhook is not None and sb.webhook.proc is not None:
                hooks["with"] = sb.webhook.proc.pid
            for case, (path, obj) in cases.items():
                lat, errors, secs, reviews, cpu, why = measure(sb, apis, hooks, path, json.dumps(obj).encode(),
                                                               rounds, per_client)
                per = {k: _per_request(cpu[k], len(lat[k])) for k in apis}
                rows.append(_row(case, lat, errors, secs, reviews, why, per))
                if case == "pod-plain":
                    rows.append(_never_reaches_us(case, cpu, lat, reviews))
                    continue
                rows.append(_echo_row(case, lat, errors, why, per))
                rows += _cpu_rows(case, cpu, lat, reviews["with"][0])
        finally:
            if echo is not None:
                echo.stop()
            sb.stop()
    return rows


Measured = tuple[dict[str, list[float]], dict[str, int], dict[str, float], dict[str, list[float]],
                 dict[str, dict[str, float]], str]


def measure(sb: Any, apis: dict[str, Any], hooks: dict[str, int], path: str, body: bytes, rounds: int,
            per_client: int) -> Measured:
    """Closed-loop creates of ``body`` through every apiserver of ``apis`` in turn, ``rounds``
    times after a warm-up: per arm the latencies, errors, seconds, reviews our webhook answered
    (count, seconds) and the CPU seconds of the apiserver, etcd and the arm's webhook server
    (``hooks``), and the last error seen."""
    lat: dict[str, list[float]] = {k: [] for k in apis}
    errors = dict.fromkeys(apis, 0)
    secs = dict.fromkeys(apis, 0.0)
    reviews: dict[str, list[float]] = {k: [0.0, 0.0] for k in apis}
    cpu: dict[str, dict[str, float]] = {k: {} for k in apis}
    why = ""
    for api in apis.values():  # warm: connections, CEL caches, the allocator model
        load(api, path, body, 2)
    for _ in range(rounds):
        for key, api in apis.items():
            roots = {"apiserver": api.proc.pid, "etcd": sb.cluster.etcd.proc.pid,
                     **({"webhook": hooks[key]} if key in hooks else {})}
            before, cpu0 = _reviews(sb), _cpu(roots)
            got, err, s, last = load(api, path, body, per_client)
            cpu1 = _cpu(roots)  # before the /metrics scrape: its CPU is not a create's
            after = _reviews(sb)
            for part, spent in cpu1.items():
                cpu[key][part] = cpu[key].get(part, 0.0) + spent - cpu0[part]
            reviews[key][0] += after[0] - before[0]
            reviews[key][1] += after[1] - before[1]
            lat[key] += got
            errors[key] += err
            secs[key] += s
            why = why or last
    return lat, errors, secs, reviews, cpu, why


def _echo_apiserver(sb: Any, tmp: Path, name: str = "echo", extra: list[str] | None = None) -> tuple[Any, Any]:
    """(the echo server, a third apiserver whose webhook configurations, the chart's, call it);
    ``extra``: more arguments of the echo app (``--replay FILE``)."""
    import yaml

    from bench import servers
    from tests.rig.sandbox import render_chart
    certs = servers.make_certs(tmp / f"{name}-certs")
    echo = servers.start(name, servers.ECHO, certs, tmp, workers=2, threads=4, extra=extra)
    api = sb.cluster.add_apiserver(sb.gates, name=name)
    values = sb.chart_values({"webhooks": {"url": f"https://127.0.0.1:{echo.port}"},
                              "certs": {"existingSecret": {"caBundle": (certs / "ca.crt").read_text()}}})
    configs = [o for o in render_chart(values)
               if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
    done = api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(configs))
    if done.returncode != 0:
        raise RuntimeError(f"cannot register the echo webhooks: {done.stderr[-300:]}")
    time.sleep(2)  # the apiserver's webhook informer picks the configurations up within a second
    return echo, api


def _echo_row(case: str, lat: dict[str, list[float]], errors: dict[str, int], why: str,
              per: dict[str, str]) -> Row:
    label = f"{case} via kube-apiserver, {CLIENTS} clients: p99 with the echo app as both webhooks vs without"
    q = _quantiles(lat, ("echo", "without", "with"))
    if q is None:
        return Row.na(NAME, label, f"no successful request (errors {errors}; last: {why})"[:200])
    p50, p99 = q
    ratio = p99["echo"] / p99["without"] if p99["without"] > 0 else None
    ctx = (f"what any webhook costs here (context for the row above); echo: p50 {fmt_time(p50['echo'])} "
           f"p99 {fmt_time(p99['echo'])} (n={len(lat['echo'])}, errors {errors['echo']}); p50 ratio "
           f"{p50['echo'] / p50['without']:.2f}×; ours vs echo: p99 {p99['with'] / p99['echo']:.2f}×; "
           f"CPU per request with the echo app: {per['echo']}")
    return Row(NAME, label, fmt_time(p99["echo"]), fmt_time(p99["without"]), ratio, "(context)", None, ctx)


def _quantiles(lat: dict[str, list[float]],
               arms: tuple[str, ...]) -> tuple[dict[str, float], dict[str, float]] | None:
    """(p50, p99) per arm, or None when one of ``arms`` has no successful request."""
    if not all(lat.get(a) for a in arms):
        return None
    return ({k: percentile(v, 50) for k, v in lat.items() if v},
            {k: percentile(v, 99) for k, v in lat.items() if v})


def _cpu(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process and its descendants."""
    return {part: cpu_seconds(descendants(pid)) for part, pid in roots.items()}


def _per_request(spent: dict[str, float], n: int) -> str:
    """"apiserver 2.81 ms, webhook 2.40 ms, etcd 0.38 ms": CPU per successful request."""
    return ", ".join(f"{part} {fmt_time(s / n)}" for part, s in spent.items()) if n else "–"


def _reviews(sb: Any) -> tuple[float, float]:
    """Admission reviews our webhook has answered so far and the seconds they took in the webhook
    (its /metrics: the duration histogram's count and sum, both webhooks summed)."""
    count = total = 0.0
    for line in sb.webhook.get("/metrics").text.splitlines():
        if line.startswith("dra_webhook_admission_request_duration_seconds_count{"):
            count += float(line.rsplit(" ", 1)[1])
        elif line.startswith("dra_webhook_admission_request_duration_seconds_sum{"):
            total += float(line.rsplit(" ", 1)[1])
    return count, total


def _row(case: str, lat: dict[str, list[float]], errors: dict[str, int], secs: dict[str, float],
         reviews: dict[str, list[float]], why: str, per: dict[str, str]) -> Row:
    label = f"{case} dry-run create via kube-apiserver, {CLIENTS} clients: p99 with webhooks vs without"
    q = _quantiles(lat, ("with", "without"))
    if q is None:
        return Row.na(NAME, label, f"no successful request (errors {errors}; last: {why})"[:200])
    p50, p99 = q
    ratio = p99["with"] / p99["without"] if p99["without"] > 0 else None
    tput = {k: len(v) / secs[k] if secs[k] else 0.0 for k, v in lat.items()}
    ctx = (f"with: p50 {fmt_time(p50['with'])} p99 {fmt_time(p99['with'])} (n={len(lat['with'])}, "
           f"errors {errors['with']}, {tput['with']:.0f} req/s); without: p50 {fmt_time(p50['without'])} "
           f"p99 {fmt_time(p99['without'])} (n={len(lat['without'])}, errors {errors['without']}, "
           f"{tput['without']:.0f} req/s); p50 ratio {p50['with'] / p50['without']:.2f}×; "
           f"reviews our webhook answered: {reviews['with'][0]:.0f} with (mean "
           f"{fmt_time(reviews['with'][1] / reviews['with'][0]) if reviews['with'][0] else '–'} each, "
           f"timed in the webhook), {reviews['without'][0]:.0f} without; CPU per request with: {per['with']}; "
           f"without: {per['without']}")
    if why and (errors["with"] or errors["without"]):
        ctx += f"; last error: {why[:120]}"
    return Row(NAME, label, fmt_time(p99["with"]), fmt_time(p99["without"]), ratio, f"p99 ≤ {TARGET:g}×",
               None if ratio is None else ratio <= TARGET, ctx)


def _per_create(cpu: dict[str, dict[str, float]], lat: dict[str, list[float]], arm: str, part: str) -> float | None:
    """CPU seconds ``part`` spent per successful create of ``arm``, or None without either."""
    n = len(lat.get(arm) or ())
    spent = cpu.get(arm, {}).get(part)
    return spent / n if n and spent is not None else None


def _cpu_rows(case: str, cpu: dict[str, dict[str, float]], lat: dict[str, list[float]],
              answered: float) -> list[Row]:
    """Targets 2 of issue 30: our server's CPU vs the echo app's; the apiserver's extra CPU with
    our webhooks vs its extra with the echo app (extra: over the bare apiserver's)."""
    ours, echo = _per_create(cpu, lat, "with", "webhook"), _per_create(cpu, lat, "echo", "webhook")
    label = f"{case} via kube-apiserver: webhook server CPU per create, ours vs the echo app"
    if ours is None or not echo:
        server = Row.na(NAME, label, "no CPU figure for one of the servers")
    else:
        ratio = ours / echo
        server = Row(NAME, label, fmt_time(ours), fmt_time(echo), ratio, f"≤ {CPU_TARGET:g}×",
                     ratio <= CPU_TARGET, f"/proc utime+stime of the server and its workers over the "
                     f"loaded rounds, per successful create ({answered / len(lat['with']):.1f} reviews each)")
    api = {arm: _per_create(cpu, lat, arm, "apiserver") for arm in ("with", "echo", "without")}
    label = f"{case} via kube-apiserver: apiserver's extra CPU per create, our webhooks vs the echo app"
    if any(v is None for v in api.values()):
        return [server, Row.na(NAME, label, "no CPU figure for one of the apiservers")]
    base = api["without"] or 0.0
    extra_ours, extra_echo = (api["with"] or 0.0) - base, (api["echo"] or 0.0) - base
    ratio = extra_ours / extra_echo if extra_echo >= 1e-6 else None  # below that: clock-tick noise
    ctx = (f"apiserver CPU per create: with ours {fmt_time(api['with'] or 0.0)}, with the echo app "
           f"{fmt_time(api['echo'] or 0.0)}, without webhooks {fmt_time(base)}")
    if ratio is None:
        ctx += "; no measurable extra with the echo app, so no ratio"

    return [server, Row(NAME, label, fmt_time(extra_ours), fmt_time(extra_echo), ratio,
                        f"≤ {APISERVER_TARGET:g}×", None if ratio is None else ratio <= APISERVER_TARGET, ctx)]


def _never_reaches_us(case: str, cpu: dict[str, dict[str, float]], lat: dict[str, list[float]],
                      reviews: dict[str, list[float]]) -> Row:
    """Target 3 of issue 30: a pod without claims or a scheduling group costs the apiserver the
    same with and without our webhooks, and our webhook answers none of them."""
    label = f"{case} via kube-apiserver: apiserver CPU per create with the chart's pods webhooks vs without"
    with_, without = _per_create(cpu, lat, "with", "apiserver"), _per_create(cpu, lat, "without", "apiserver")
    if with_ is None or not without:
        return Row.na(NAME, label, "no CPU figure for one of the apiservers")
    ratio, answered = with_ / without, reviews["with"][0]
    return Row(NAME, label, fmt_time(with_), fmt_time(without), ratio, f"≤ {APISERVER_TARGET:g}×, 0 reviews",
               ratio <= APISERVER_TARGET and answered == 0,
               f"reviews our webhook answered during these creates: {answered:.0f} (the matchConditions "
               f"keep such pods in the apiserver)")
