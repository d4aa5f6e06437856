"""The webhook served by stock gunicorn ``gthread`` workers: the "before" of B7.

Everything but the worker class is ``dra-webhook serve``'s (``WebhookServer``: TLS context,
threads, keep-alive, the app), so B7 compares only the serving design.

    python -m bench.stock_server --bind 127.0.0.1:PORT --tls-cert F --tls-key F --workers N --threads N
        [--cluster-state DIR] [--feature-gates SPEC] [--shutdown-delay S]
"""

from __future__ import annotations

import argparse
from typing import Any


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.stock_server")
    for flag in ("--bind", "--tls-cert", "--tls-key"):
        p.add_argument(flag, required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--cluster-state")
    p.add_argument("--feature-gates")
    p.add_argument("--shutdown-delay", type=float, default=0.0)
    a = p.parse_args()

    from webhook.cli import build_settings
    from webhook.server import runner

    class StockServer(runner.WebhookServer):  # type: ignore[misc]
        worker_class: Any = "gthread"

    opts = runner.ServeOptions(bind=a.bind, tls_cert=a.tls_cert, tls_key=a.tls_key, workers=a.workers,
                               threads=a.threads, cluster_state=a.cluster_state, flag_gates=a.feature_gates,
                               shutdown_delay=a.shutdown_delay, log_level="info")  # as `serve`
    return runner.run(opts, build_settings(a.feature_gates, None), server=StockServer)


if __name__ == "__main__":
    raise SystemExit(main())
