"""Live settings: re-read the ``--config`` file when its content changes.

Each gunicorn worker runs its own watcher thread (threads do not survive a fork). It hashes the
file content, so a ConfigMap volume's symlink swap is seen like any edit. A bad new file is
logged and refused: the settings in force stay. SIGHUP makes gunicorn restart its workers,
which read the file anew.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from webhook import ConfigError
from webhook.config import Settings, parse_config
from webhook.gates import FeatureGates

log = logging.getLogger(__name__)


class SettingsHolder:
    """The settings in force; ``current`` is swapped atomically on a good reload."""

    def __init__(self, settings: Settings, *, config_path: str | None = None,
                 flag_gates: str | None = None, base: Settings | None = None,
                 on_change: Callable[[Settings], None] | None = None) -> None:
        self.current = settings
        self.config_path = config_path
        self.flag_gates = flag_gates
        self.base = base or Settings()
        self.on_change = on_change
        self._digest = self._read_digest()[0] if config_path else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    def _read_digest(self) -> tuple[str | None, str | None]:
        assert self.config_path
        try:
            text = Path(self.config_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            log.warning("config: cannot read %s: %s", self.config_path, e)
            return None, None
        return hashlib.sha256(text.encode()).hexdigest(), text

    def check(self) -> bool:
        """Reload when the file content changed. True when new settings took effect."""
        if not self.config_path:
            return False
        digest, text = self._read_digest()
        if digest is None or digest == self._digest or text is None:
            return False
        self._digest = digest
        try:
            s = parse_config(text, self.base, self.config_path)
            if self.flag_gates:
                s = replace(s, gates=FeatureGates.parse(self.flag_gates, s.gates))
            s = replace(s, config_file=self.config_path)
        except ConfigError as e:
            self.last_error = str(e)
            log.error("config: rejected new %s, keeping the settings in force: %s", self.config_path, e)
            _count("rejected")
            return False
        old = self.current
        self.current = s
        self.last_error = None
        changed = {n: v for n, v in s.gates.values.items() if old.gates.values.get(n) != v}
        log.info("config: reloaded %s", self.config_path,
                 extra={"config_hash": s.config_hash, "gates_changed": changed})
        _count("applied")
        if self.on_change:
            self.on_change(s)
        return True

    def start(self, interval: float = 1.0) -> None:
        if not self.config_path or self._thread:
            return

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.check()
                except Exception:  # never let the watcher die
                    log.exception("config: watcher error")

        self._thread = threading.Thread(target=loop, name="config-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


def _count(result: str) -> None:
    try:
        from webhook.server import metrics
        metrics.CONFIG_RELOADS.labels(result=result).inc()
    except Exception:  # pragma: no cover - metrics are best effort
        pass
