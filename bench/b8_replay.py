"""B8 replayed: is the apiserver's extra CPU with our webhooks the cost of our server, or of our answers?

``python -m bench.b8_replay [--quick]`` runs B8's rig (``bench/b8_apiserver.py``: the sandbox
with our webhooks, a bare apiserver, one calling the echo app) plus a fourth apiserver on the same
etcd whose webhook configurations (the chart's) call the echo app in replay mode
(``bench/echo_app.py --replay``): it answers every review with the answer our webhook gave to the
same object, patch and warnings included, as fast as the echo app answers ``allowed``. The answers
are recorded first by sending our webhook the object as the bare apiserver stores it (a dry-run
create), then the patched object to ``/validate``; a create through the apiserver with our
webhooks shows whether the live warnings are the recorded ones.

If the apiserver's extra CPU with the replayed answers is the extra with our webhooks, the
apiserver's side of target 2 comes from what we answer (applying the patch, carrying the
warnings), not from how our server answers. Rows are context (no target): ratios in one run.
Not part of ``python -m bench`` (B8 covers the targets); it prints its table.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.b8_apiserver import _echo_apiserver, _per_create, measure, objects
from bench.common import Row, fmt_time

NAME = "B8R"
CASES = ("seed-slice", "claim-cel", "pod-claim")
"""B8's cases that reach the webhooks (``pod-plain`` never does)."""


def record(sb: Any, bare: Any, cases: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """``{"/mutate": {kind: response}, "/validate": {kind: response}}``: our webhook's answers to the
    objects of ``cases`` as the apiserver sends them. Mutating admission comes before the create
    strategy: ``/mutate`` gets the object as written, with the decoding defaults (ours, as
    ``dra-webhook review`` applies them); ``/validate`` the stored form (a dry run on ``bare``)
    with our patch applied."""
    import requests

    from tests.builders import review
    from webhook.patch import PatchError, apply_patch
    from webhook.rules.registry import by_kind

    answers: dict[str, dict[str, Any]] = {"/mutate": {}, "/validate": {}}
    for case in CASES:
        _, obj = cases[case]
        done = bare.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(obj))
        if done.returncode != 0:
            raise RuntimeError(f"dry-run create of {case} on the bare apiserver: {done.stderr[-300:]}")
        rules = by_kind(obj["kind"])
        sent = {"/mutate": rules.apply_defaults(obj) if rules else obj, "/validate": json.loads(done.stdout)}
        for endpoint in ("/mutate", "/validate"):
            r = requests.post(sb.webhook.url + endpoint, json=review(sent[endpoint], dry_run=True), timeout=10,
                              verify=str(sb.webhook.certs / "ca.crt"))
            r.raise_for_status()
            response = {k: v for k, v in r.json()["response"].items() if k != "uid"}
            answers[endpoint][obj["kind"]] = response
            if endpoint == "/mutate" and response.get("patch"):
                try:
                    sent["/validate"] = apply_patch(sent["/validate"], json.loads(base64.b64decode(response["patch"])))
                except PatchError:  # a strip the strategy already made: the stored form has it
                    pass
    return answers


def live_warnings(api: Any, path: str, obj: dict[str, Any]) -> int:
    """How many warnings a dry-run create through ``api`` carries back (``Warning`` headers)."""
    import http.client
    import ssl

    ctx = ssl.create_default_context(cafile=str(api.pki.ca))
    ctx.load_cert_chain(str(api.pki.cert("admin")), str(api.pki.key("admin")))
    conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=30)
    try:
        conn.request("POST", path, json.dumps(obj), {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        return len(r.headers.get_all("Warning") or [])
    finally:
        conn.close()


def run(quick: bool) -> list[Row]:
    from tests.rig.sandbox import Sandbox

    rounds, per_client = (1, 5) if quick else (3, 40)
    cases = objects()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dra-bench-b8r-") as tmp:
        sb = Sandbox(Path(tmp))
        servers: list[Any] = []
        try:
            bare = sb.cluster.add_apiserver(sb.gates, name="bare")
            bare.kubectl("create", "serviceaccount", "default", "-n", "default")  # a pod needs one
            echo, echo_api = _echo_apiserver(sb, Path(tmp))
            servers.append(echo)
            answers = record(sb, bare, cases)
            replay_file = Path(tmp) / "answers.json"
            replay_file.write_text(json.dumps(answers))
            replay, replay_api = _echo_apiserver(sb, Path(tmp), "replay", ["--replay", str(replay_file)])
            servers.append(replay)
            apis = {"with": sb.api, "without": bare, "echo": echo_api, "replay": replay_api}
            for api in (echo_api, replay_api):
                api.kubectl("create", "serviceaccount", "default", "-n", "default")
            assert sb.webhook is not None and sb.webhook.proc is not None, "the sandbox runs our webhook"
            hooks = {"echo": echo.proc.pid, "replay": replay.proc.pid, "with": sb.webhook.proc.pid}
            for case in CASES:
                path, obj = cases[case]
                recorded = sum(len(answers[e].get(obj["kind"], {}).get("warnings", [])) for e in answers)
                live = live_warnings(sb.api, path, obj)
                lat, _, _, _, cpu, why = measure(sb, apis, hooks, path, json.dumps(obj).encode(), rounds, per_client)
                rows += _rows(case, cpu, lat, f"warnings: {live} live, {recorded} recorded"
                              + (f"; last error: {why[:100]}" if why else ""))
        finally:
            for s in servers:
                s.stop()
            sb.stop()
    return rows


def _rows(case: str, cpu: dict[str, dict[str, float]], lat: dict[str, list[float]], note: str) -> list[Row]:
    api = {arm: _per_create(cpu, lat, arm, "apiserver") for arm in ("with", "without", "echo", "replay")}
    hook = {arm: _per_create(cpu, lat, arm, "webhook") for arm in ("with", "echo", "replay")}
    if any(v is None for v in (*api.values(), *hook.values())):
        return [Row.na(NAME, case, f"no CPU figure for one of the arms ({note})")]
    base = api["without"] or 0.0
    extra = {arm: (api[arm] or 0.0) - base for arm in ("with", "echo", "replay")}

    def ratio(a: float, b: float) -> float | None:
        return a / b if b >= 1e-6 else None

    ctx = (f"apiserver CPU per create: ours {fmt_time(api['with'] or 0.0)}, replayed {fmt_time(api['replay'] or 0.0)}, "
           f"echo {fmt_time(api['echo'] or 0.0)}, without {fmt_time(base)}; {note}")
    return [
        Row(NAME, f"{case}: apiserver's extra CPU per create, our webhooks vs our answers replayed",
            fmt_time(extra["with"]), fmt_time(extra["replay"]), ratio(extra["with"], extra["replay"]),
            "(context)", None, ctx),
        Row(NAME, f"{case}: apiserver's extra CPU per create, our answers replayed vs the echo app",
            fmt_time(extra["replay"]), fmt_time(extra["echo"]), ratio(extra["replay"], extra["echo"]),
            "(context)", None, ctx),
        Row(NAME, f"{case}: webhook server CPU per create, ours vs the echo app replaying our answers",
            fmt_time(hook["with"] or 0.0), fmt_time(hook["replay"] or 0.0),
            ratio(hook["with"] or 0.0, hook["replay"] or 0.0), "(context)", None,
            f"the plain echo app: {fmt_time(hook['echo'] or 0.0)}"),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.b8_replay", description=__doc__)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    try:
        rows = run(a.quick)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"b8_replay: {e}")
        return 1
    print("| bench | case | value | floor | ratio | context |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.bench} | {r.case} | {r.value} | {r.floor} | "
              f"{'–' if r.ratio is None else f'{r.ratio:.2f}×'} | {r.context} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
