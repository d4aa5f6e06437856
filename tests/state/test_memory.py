"""``state.memory.trim``: glibc's ``malloc_trim`` where the C library has it, a no-op elsewhere."""

from __future__ import annotations

import pytest

from webhook.state import memory


@pytest.mark.parametrize("available", [True, False], ids=["glibc", "no-malloc-trim"])
def test_trim_returns_memory_where_it_can_and_never_fails(available: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def malloc_trim(pad: int) -> int:
        calls.append(pad)
        return 1

    monkeypatch.setattr(memory, "_malloc_trim", lambda: malloc_trim if available else None)
    assert memory.trim() is available
    assert calls == ([0] if available else [])


def test_the_real_lookup_answers_a_function_or_none() -> None:
    fn = memory._malloc_trim()
    assert fn is None or callable(fn)
    assert memory._malloc_trim() is fn  # looked up once
    assert memory.trim() in (True, False)
