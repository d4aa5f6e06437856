"""The connection board: open connections per gunicorn worker, shared by the workers of one server.

Why it exists is told in ``worker`` (balanced accepts); this module only keeps the counts.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.sharedctypes import RawArray

BOARD_SLOTS = 64
"""Workers one board can balance at once; a worker that finds no free slot accepts as gthread."""
BOARD_STALE_SECONDS = 3.0
"""A worker's loop posts at least every second (its poll timeout); one silent this long is
ignored by its siblings."""


class ConnectionBoard:
    """Open connections per worker, in memory the master shares with every worker it forks.

    Made in the master before the workers start (``runner``); a worker takes a slot when its
    loop first runs and gives it back when it stops accepting for good. Plain aligned 64-bit
    stores: a reader may see a count one turn old, which only makes a balance off by one.
    """

    def __init__(self, slots: int = BOARD_SLOTS) -> None:
        self.pids = RawArray("q", slots)
        self.conns = RawArray("q", slots)
        self.beats = RawArray("d", slots)
        self.lock = multiprocessing.Lock()

    def claim(self, pid: int, now: float) -> int | None:
        """A free (or stale) slot for ``pid``, or None when there is none."""
        if not self.lock.acquire(timeout=0.5):
            return None
        try:
            for i in range(len(self.pids)):
                if self.pids[i] == 0 or self.beats[i] < now - BOARD_STALE_SECONDS:
                    self.pids[i], self.conns[i], self.beats[i] = pid, 0, now
                    return i
            return None
        finally:
            self.lock.release()

    def post(self, slot: int, pid: int, conns: int, now: float) -> bool:
        """Record this worker's count; False when the slot was taken over (we were stale)."""
        if self.pids[slot] != pid:
            return False
        self.conns[slot], self.beats[slot] = conns, now
        return True

    def release(self, slot: int, pid: int) -> None:
        if self.pids[slot] == pid:
            self.pids[slot] = 0

    def release_pid(self, pid: int) -> None:
        """Free the slot of a worker that exited (the master calls it when it reaps one)."""
        for i in range(len(self.pids)):
            if self.pids[i] == pid:
                self.pids[i] = 0

    def fewest_elsewhere(self, slot: int, now: float) -> int | None:
        """The smallest count a live sibling posted, or None when no sibling is live."""
        best: int | None = None
        fresh = now - BOARD_STALE_SECONDS
        for i in range(len(self.pids)):
            if i != slot and self.pids[i] != 0 and self.beats[i] >= fresh:
                n = int(self.conns[i])
                best = n if best is None or n < best else best
        return best
