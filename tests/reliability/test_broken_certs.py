"""Broken certificate files on disk: running workers keep their last good context, a worker that
cannot build one exits (gunicorn starts another), and /readyz fails, naming why, until the
files are a loadable, matching pair again.

Before: a worker that had not built its context yet (a new worker, or one that had not served a
connection) accepted connections and failed every handshake, and /readyz said ``certs: true``
because it only checked that the files existed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.conftest import BIN
from tests.reliability.conftest import start_server

pytestmark = pytest.mark.integration


def _workers(srv: Any) -> set[int]:
    with open(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children") as f:
        return {int(x) for x in f.read().split()}


def _handshakes(srv: Any, n: int) -> list[str]:
    """``n`` fresh TLS connections; the failures."""
    ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
    bad = []
    for _ in range(n):
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname="localhost"):
                    pass
        except (OSError, ssl.SSLError) as e:
            bad.append(repr(e)[:120])
    return bad


def _readyz(srv: Any) -> tuple[int, dict[str, Any]]:
    r = requests.get(srv.url + "/readyz", verify=str(srv.certs / "ca.crt"), timeout=5,
                     headers={"Connection": "close"})
    return r.status_code, r.json()


def _ready_everywhere(srv: Any) -> bool | list[tuple[int, int, str]]:
    """True when every worker says ready; else (pid, status, reason) of the answers seen."""
    seen = []
    for _ in range(8):  # fresh connections: the kernel spreads them over the workers
        s = requests.Session()
        s.trust_env = False
        s.verify = str(srv.certs / "ca.crt")
        r = s.get(srv.url + "/readyz", timeout=5)
        pid = s.get(srv.url + "/configz", timeout=5).json()["pid"]  # the same connection, the same worker
        seen.append((pid, r.status_code, str(r.json().get("reasons", {}))[-120:]))
        s.close()
    return True if all(code == 200 for _, code, _ in seen) and len({p for p, _, _ in seen}) > 1 else seen


def _other_key_pair(tmp: Path) -> Path:
    out = tmp / "other"
    subprocess.run([*BIN, "certs", "--service", "x", "--namespace", "y", "--out", str(out), "--dev"],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("break_it", ["garbage-certificate", "key-of-another-pair", "missing-key"])
def test_broken_files_keep_serving_and_fail_readiness_with_the_reason(tmp_path, rel_certs, break_it):
    certs = tmp_path / "certs"
    shutil.copytree(rel_certs, certs)
    srv = start_server(certs, tmp_path)
    good_crt, good_key = (certs / "tls.crt").read_bytes(), (certs / "tls.key").read_bytes()
    try:
        assert _readyz(srv)[0] == 200
        if break_it == "garbage-certificate":
            (certs / "tls.crt").write_text("garbage\n")
            why = "tls.crt: not a PEM certificate"
        elif break_it == "key-of-another-pair":
            (certs / "tls.key").write_bytes((_other_key_pair(tmp_path) / "tls.key").read_bytes())
            why = "tls.key does not match the certificate"
        else:
            os.unlink(certs / "tls.key")
            why = "tls.key: cannot read"
        # The contexts look at the files at most once a second; under load, a worker may take
        # longer to get there, so poll (each answer comes from whichever worker took the connection).
        deadline = time.monotonic() + 15
        code, body = _readyz(srv)
        while code != 503 and time.monotonic() < deadline:
            time.sleep(0.3)
            code, body = _readyz(srv)
        assert code == 503 and body["checks"]["certs"] is False, body
        assert why in body["reasons"]["certs"], body

        victim = next(iter(_workers(srv)))
        os.kill(victim, signal.SIGKILL)
        time.sleep(3.0)  # its replacements start, fail to load the files and exit
        assert _handshakes(srv, 40) == []  # only a worker with a context accepts connections
        assert len(_workers(srv)) >= 1

        (certs / "tls.crt").write_bytes(good_crt)
        (certs / "tls.key").write_bytes(good_key)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (len(_workers(srv)) < 2 or _ready_everywhere(srv) is not True):
            time.sleep(0.3)
        assert len(_workers(srv)) == 2 and _ready_everywhere(srv) is True, _ready_everywhere(srv)
        assert _handshakes(srv, 10) == []
    finally:
        assert srv.stop() == 0
    log = Path(srv.log).read_text()
    assert "tls: cannot load the serving certificate, worker exits" in log
    assert "Traceback" not in log
