"""Handing the heap a LIST left behind back to the system.

A LIST of a large state is decoded page by page; each page is compacted and freed, but glibc's
allocator keeps the freed memory in its arenas (large buffers too, once its mmap threshold has
grown), so the process's resident size stays at the peak. ``trim()`` asks glibc to return what
it can (``malloc_trim(0)``: free pages of every arena). It is a no-op where the C library has no
``malloc_trim`` (musl, macOS): the memory is only held, never wrong.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Any

_LIBC: list[Any] = []
_LOCK = threading.Lock()


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where there is none (looked up once)."""
    with _LOCK:
        if not _LIBC:
            fn = None
            try:
                fn = getattr(ctypes.CDLL(ctypes.util.find_library("c") or None), "malloc_trim", None)
            except OSError:
                fn = None
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
            _LIBC.append(fn)
        return _LIBC[0]


def trim() -> bool:
    """Return freed heap memory to the system; True when some was (False where unsupported)."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
