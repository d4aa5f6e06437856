"""Live settings: re-read the ``--config`` file when its content (or its driver schema set) changes.

Each gunicorn worker runs its own watcher thread (threads do not survive a fork). It hashes the
file content, so a ConfigMap volume's symlink swap is seen like any edit. A bad new file is
logged and refused: the settings in force stay. SIGHUP makes gunicorn restart its workers,
which read the file anew.

Workers born later (a respawn, SIGHUP) must agree with the ones already running: each applied
file is also saved to ``last_good_path`` (shared by the workers of one server), a new worker
starts from that file rather than from what the master read at start-up, and then checks the
file on disk like every other worker, so all of them show the same settings and ``configError``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from webhook import ConfigError
from webhook.config import Settings, parse_config
from webhook.driverschemas import fingerprint
from webhook.gates import FeatureGates

log = logging.getLogger(__name__)


class SettingsHolder:
    """The settings in force; ``current`` is swapped atomically on a good reload."""

    def __init__(self, settings: Settings, *, config_path: str | None = None,
                 flag_gates: str | None = None, base: Settings | None = None,
                 on_change: Callable[[Settings], None] | None = None,
                 last_good_path: str | None = None) -> None:
        self.current = settings
        self.config_path = config_path
        self.flag_gates = flag_gates
        self.base = base or Settings()
        self.on_change = on_change
        self.last_good_path = last_good_path
        """Where applied config files are saved for workers started later (None: not saved)."""
        self._digest: tuple[str, str] | None = None
        """(sha256 of the config file, fingerprint of its driver schema set) last seen."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    def _read(self, path: str) -> tuple[str | None, str | None]:
        """(sha256, text) of a file; (None, None) when it cannot be read."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            if path == self.config_path:
                log.warning("config: cannot read %s: %s", path, e)
            return None, None
        return hashlib.sha256(text.encode()).hexdigest(), text

    def _parse(self, text: str) -> Settings:
        """Settings from a config file's text; ConfigError when it is bad."""
        assert self.config_path
        s = parse_config(text, self.base, self.config_path)
        if self.flag_gates:
            s = replace(s, gates=FeatureGates.parse(self.flag_gates, s.gates))
        return replace(s, config_file=self.config_path)

    def adopt_last_good(self) -> bool:
        """Start from the last file another worker applied, if any. True when it was adopted."""
        if not self.config_path or not self.last_good_path:
            return False
        digest, text = self._read(self.last_good_path)
        if digest is None or text is None or digest[:16] == self.current.config_hash:
            return False
        try:
            self.current = self._parse(text)
        except ConfigError:  # pragma: no cover - only files that parsed are saved
            return False
        log.info("config: started from the settings the other workers apply",
                 extra={"config_hash": self.current.config_hash})
        return True

    def check(self) -> bool:
        """Reload when the file content, or the driver schema set it names, changed. True when new
        settings took effect."""
        if not self.config_path:
            return False
        digest, text = self._read(self.config_path)
        if digest is None or text is None:
            return False
        schemas = self.current.driver_schemas
        seen = fingerprint(schemas.source) if schemas is not None else ""
        if (digest, seen) == self._digest:
            return False
        schemas_changed = self._digest is not None and seen != self._digest[1]
        self._digest = (digest, seen)
        if digest[:16] == self.current.config_hash and not schemas_changed:  # the content in force already
            self.last_error = None
            return False
        try:
            s = self._parse(text)
        except ConfigError as e:
            self.last_error = str(e)
            log.error("config: rejected new %s, keeping the settings in force: %s", self.config_path, e)
            _count("rejected")
            return False
        self._apply(s, text)
        return True

    def _apply(self, s: Settings, text: str) -> None:
        old = self.current
        self.current = s
        self.last_error = None
        self._save(text)
        changed = {n: v for n, v in s.gates.values.items() if old.gates.values.get(n) != v}
        log.info("config: reloaded %s", self.config_path,
                 extra={"config_hash": s.config_hash, "gates_changed": changed})
        _count("applied")
        if self.on_change:
            self.on_change(s)

    def _save(self, text: str) -> None:
        """Write the applied file for workers started later (atomically: rename)."""
        if not self.last_good_path:
            return
        tmp = f"{self.last_good_path}.{os.getpid()}.tmp"
        try:
            Path(tmp).write_text(text, encoding="utf-8")
            os.replace(tmp, self.last_good_path)
        except OSError as e:
            log.warning("config: cannot save the applied file for new workers: %s", e)

    def start(self, interval: float = 1.0) -> None:
        """Check the file every ``interval`` seconds in a daemon thread (once per process)."""
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
        """End the watcher thread (at its next wake-up)."""
        self._stop.set()


def _count(result: str) -> None:
    try:
        from webhook.server import metrics
        metrics.CONFIG_RELOADS.labels(result=result).inc()
    except Exception:  # pragma: no cover - metrics are best effort
        pass
