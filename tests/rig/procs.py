"""Processes of the rig: each in its own process group, logged to a file, stopped by pid.

Every process started here is remembered until it is stopped, and an `atexit` hook stops the
rest, so an interrupted test run or sandbox leaves nothing behind holding a port.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_LIVE: dict[int, Proc] = {}
_LOCK = threading.Lock()


class ProcError(RuntimeError):
    """A rig process failed to start or exited early; the message ends with its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Proc:
    """One started process: its command, log file and pid."""

    def __init__(self, name: str, cmd: Sequence[str], log: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.name, self.cmd, self.log = name, list(cmd), log
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            self.popen = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)
        with _LOCK:
            _LIVE[self.popen.pid] = self

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``ready`` until it is true; raise ProcError (with the log tail) on exit or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcError(f"{self.name} exited with {self.popen.returncode} before {what}:\n{self.tail()}")
            try:
                if ready():
                    return
            except Exception:  # noqa: BLE001 - not up yet; keep polling until the deadline
                pass
            time.sleep(0.1)
        raise ProcError(f"{self.name}: no {what} within {timeout:.0f} s:\n{self.tail()}")

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM the process group, SIGKILL it after ``timeout``; the exit code."""
        if self.alive():
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.popen.wait(timeout=10)
        else:
            self._signal(signal.SIGKILL)  # children of an exited leader may still run
        with _LOCK:
            _LIVE.pop(self.popen.pid, None)
        return self.popen.returncode

    def _signal(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_all() -> None:
    """Stop every process this interpreter started and has not stopped yet (newest first)."""
    with _LOCK:
        procs = list(reversed(_LIVE.values()))
    for p in procs:
        p.stop(timeout=5)


atexit.register(stop_all)
