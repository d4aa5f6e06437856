"""HTTP shell: Flask app factory, gunicorn runner and worker, TLS, metrics, JSON logs, live config.

Thin by design: routes read the body, call ``webhook.admission`` and return JSON.
"""

from __future__ import annotations

from webhook.server.app import create_app

__all__ = ["create_app"]
