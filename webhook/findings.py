"""``Finding``: something the apiserver admits that will not work as meant (lint).

A finding is neither a denial nor a feasibility note: the object is valid, but a pool built from
it is one the scheduler skips, or a standard attribute says what no device is. The server sends
findings as warnings; ``review``/``test`` print them as warnings and fail on them with
``--strict``. Each domain words its own findings (``allocator/poollint.py``,
``rules/slices/standard.py``); this module only carries them. Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding, worded in full and, when that is long, within the apiserver's warning guidance."""

    topic: str
    """What it is about, also the first word of its line: ``pool`` or ``attribute``."""
    text: str
    """The whole line (``<topic>: ...``), as the CLI prints it."""
    short: str = ""
    """The same finding in fewer words (the server's form when ``text`` is too long); "" for none."""

    def line(self, limit: int) -> str:
        """The line to send where a warning may have at most ``limit`` characters (the response
        builder clips whatever still does not fit)."""
        return self.text if len(self.text) <= limit or not self.short else self.short
