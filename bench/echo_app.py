"""The B2 floor: a minimal WSGI app served by *the same* gunicorn/TLS setup as ``dra-webhook serve``.

It reuses ``webhook.server.runner.WebhookServer`` and only replaces the app it loads, so worker
class, threads, keep-alive, TLS context and timeouts are identical. The app reads the body,
decodes the JSON (any webhook must) and answers ``allowed: true`` for the request's uid.

    python -m bench.echo_app --bind 127.0.0.1:PORT --tls-cert F --tls-key F --workers N --threads N
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import Any


def echo_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ.get("REQUEST_METHOD") != "POST":
        out = b'{"status":"ok"}'
    else:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            uid = (json.loads(raw).get("request") or {}).get("uid", "")
        except (ValueError, AttributeError):
            uid = ""
        out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": {"uid": uid, "allowed": True}}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.echo_app")
    p.add_argument("--bind", required=True)
    p.add_argument("--tls-cert", required=True)
    p.add_argument("--tls-key", required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--threads", type=int, default=4)
    a = p.parse_args()

    from webhook.config import Settings
    from webhook.server import runner

    class EchoServer(runner.WebhookServer):  # type: ignore[misc]
        def load(self) -> Any:
            return echo_app

    opts = runner.ServeOptions(bind=a.bind, tls_cert=a.tls_cert, tls_key=a.tls_key, workers=a.workers,
                               threads=a.threads, shutdown_delay=0.0, log_level="warning")
    EchoServer(opts, Settings()).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
