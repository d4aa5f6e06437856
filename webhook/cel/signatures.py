"""Function signatures for the static checker (``check.py``, ``extensions.py``). Pure."""

from __future__ import annotations

from dataclasses import dataclass

DYN = "dyn"
#: cel-go's names of the checker's internal types, for messages.
TYPE_NAMES = {"attrmap": "map(string, dyn)", "capmap": "map(string, kubernetes.Quantity)",
              "Quantity": "kubernetes.Quantity", "Semver": "kubernetes.Semver"}


@dataclass(frozen=True)
class Sig:
    """The signature of a function or method: receiver types (None for a global function),
    argument count bounds, result type and argument types."""
    receivers: frozenset[str] | None
    min_args: int
    max_args: int
    result: str
    arg_types: tuple[str, ...] = ()


def m(recv: set[str], lo: int, hi: int, result: str, args: tuple[str, ...] = ()) -> Sig:
    """A method on one of ``recv``."""
    return Sig(frozenset(recv), lo, hi, result, args)


def g(lo: int, hi: int, result: str, args: tuple[str, ...] = ()) -> Sig:
    """A global function."""
    return Sig(None, lo, hi, result, args)
