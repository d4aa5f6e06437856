"""Structured JSON logs: one object per line, every field capped, never whole objects by default.

Our own loggers and gunicorn's (master and workers, through ``GunicornJsonLogger``) write the
same format to stderr. A field is a string of at most ``MAX_FIELD`` characters (longer ones keep
their head and say how long they were); a traceback keeps its last ``MAX_TRACEBACK`` characters,
where the exception is. Socket errors of clients (timeouts, resets, bad TLS) are one line each,
without a traceback: they are the client's doing, and an attacker can cause thousands.
"""

from __future__ import annotations

import json
import logging
import ssl
import sys
import threading
import time
import warnings
from typing import Any, TextIO

from gunicorn import glogging

MAX_FIELD = 256
"""Characters per logged field (names, kinds, messages); the rest is cut."""
MAX_TRACEBACK = 2000
"""Characters kept of a traceback (its end)."""
MAX_ITEMS = 20
"""Items kept of a logged list (e.g. the field paths of a denial)."""

_STD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys()) | {"message", "asctime"}
_CLIENT_ERRORS = (TimeoutError, ConnectionError, ssl.SSLError, EOFError)
_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False, check_circular=False)
"""``json.dumps(..., default=str, ensure_ascii=False)``, made once (the line's format: keep it).
Without the circular-reference check: a line is a flat dict of capped values (only ``object``, with
logObjects, is a whole decoded JSON document, which cannot hold a cycle)."""
_PLAIN = (bool, int, float, type(None))


def cap(value: Any, limit: int = MAX_FIELD) -> Any:
    """``value`` made safe to log: strings cut to ``limit``, lists and dicts capped in size."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}...({len(value)} chars)"
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [cap(v, limit) for v in value[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {cap(str(k), 64): cap(v, limit) for k, v in list(value.items())[:MAX_ITEMS]}
    return cap(str(value), limit)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, the record's extras, exc."""

    _second: tuple[int, str] = (-1, "")
    """The last whole second formatted, and its text (one log line per review: most share it)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line, every field capped."""
        second = int(record.created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        out: dict[str, Any] = {
            "ts": f"{self._second[1]}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": cap(_message(record)),
        }
        for k, v in vars(record).items():
            if k not in _STD and k[:1] != "_":
                # ``object`` is only logged with the logObjects debugging switch, and then whole.
                # A short string or a number is kept as is without a call of ``cap`` (most fields).
                out[k] = v if k == "object" or (v.__class__ is str and len(v) <= MAX_FIELD) \
                    or v.__class__ in _PLAIN else cap(v)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if isinstance(exc, _CLIENT_ERRORS):
                out["error"] = cap(f"{type(exc).__name__}: {exc}")
            else:
                out["exc"] = self.formatException(record.exc_info)[-MAX_TRACEBACK:]
        return _ENCODER.encode(out)


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except (TypeError, ValueError):  # a bad format string must not lose the record
        return str(record.msg)


_WARNED: set[tuple[str, str, int]] = set()
_WARNED_LOCK = threading.Lock()


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` replacement: one log record per kind of warning (its category and
    the place that raised it), instead of a plain-text line on stderr at every occurrence.

    urllib3 asks for its security warnings every time (``InsecureRequestWarning`` on each request
    of a client that skips TLS verification): the first one is logged, the rest are not."""
    key = (category.__name__, filename, lineno)
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    logging.getLogger("py.warnings").warning(
        "%s: %s (logged once)", category.__name__, message,
        extra={"category": category.__name__, "where": f"{filename}:{lineno}"})


def setup_logging(level: str = "INFO", json_format: bool = True) -> None:
    """Route the root logger to stderr (JSON unless ``json_format`` is false), and Python
    warnings through it, once per kind (``_log_warning``); idempotent."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_dra_webhook", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler._dra_webhook = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonFormatter() if json_format else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level.upper())
    warnings.showwarning = _log_warning
    # Neither format shows where a record was made nor its thread or process: skip gathering
    # them (the logging HOWTO's "Optimization"), a sixth of the cost of a review's log line.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False


class GunicornJsonLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with our JSON format on every handler it sets up (``logger_class``)."""

    def setup(self, cfg: Any) -> None:
        """gunicorn's own setup, then our formatter on every handler it made."""
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                handler.setFormatter(JsonFormatter())
