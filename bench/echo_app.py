"""The B2 floor: a minimal WSGI app served by *the same* gunicorn/TLS setup as ``dra-webhook serve``.

It reuses ``webhook.server.runner.WebhookServer`` and only replaces the app it loads, so worker
class, threads, keep-alive, TLS context and timeouts are identical. The app reads the body,
decodes the JSON (any webhook must) and answers ``allowed: true`` for the request's uid.

With ``--replay FILE`` it answers instead with the answers our webhook gave, recorded in FILE
(``{"/mutate": {"ResourceClaim": response, ...}, "/validate": {...}}``: per path and the request's
kind, the ``response`` of an AdmissionReview, patch and warnings included), only the uid changed.
``bench/b8_replay.py`` uses it to tell the apiserver's cost of our answers from our server's.

    python -m bench.echo_app --bind 127.0.0.1:PORT --tls-cert F --tls-key F --workers N --threads N \
        [--replay FILE]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def make_app(replay: dict[str, dict[str, dict[str, Any]]] | None = None) -> Callable[..., Iterable[bytes]]:
    """The echo WSGI app; with ``replay``, answering each review with the recorded response for its
    path and kind (``allowed: true`` alone for one not recorded)."""

    def echo_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            out = b'{"status":"ok"}'
        else:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b""
            try:
                req = json.loads(raw).get("request") or {}
            except (ValueError, AttributeError):
                req = {}
            uid = req.get("uid", "") if isinstance(req, dict) else ""
            response: dict[str, Any] = {"allowed": True}
            if replay is not None and isinstance(req, dict):
                kind = (req.get("kind") or {}).get("kind", "")
                response = replay.get(environ.get("PATH_INFO", ""), {}).get(kind, response)
            out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {**response, "uid": uid}}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
        return [out]

    return echo_app


echo_app = make_app()


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.echo_app")
    p.add_argument("--bind", required=True)
    p.add_argument("--tls-cert", required=True)
    p.add_argument("--tls-key", required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--replay", help="answer with the recorded answers in this JSON file")
    a = p.parse_args()
    app = make_app(json.loads(Path(a.replay).read_text()) if a.replay else None)

    from webhook.config import Settings
    from webhook.server import runner

    class EchoServer(runner.WebhookServer):  # type: ignore[misc]
        def load(self) -> Any:
            return app

    opts = runner.ServeOptions(bind=a.bind, tls_cert=a.tls_cert, tls_key=a.tls_key, workers=a.workers,
                               threads=a.threads, shutdown_delay=0.0, log_level="warning")
    EchoServer(opts, Settings()).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
