"""Reading raw API objects (the dicts the apiserver stores or a user wrote) without raising.

Pure, stdlib only. A value of the wrong JSON type reads as the empty one, so code that walks an
object (``as_dict(obj.get("spec")).get("devices")``) never fails on odd input; what is wrong with
the object is the rules' business, not the reader's.
"""

from __future__ import annotations

from typing import Any


def as_dict(v: Any) -> dict[str, Any]:
    """``v`` when it is a JSON object, else ``{}``."""
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    """``v`` when it is a JSON array, else ``[]``."""
    return v if isinstance(v, list) else []


def as_str(v: Any) -> str:
    """``v`` when it is a string, else ``""``."""
    return v if isinstance(v, str) else ""


def claim_allocation(claim: Any) -> dict[str, Any]:
    """A ResourceClaim's ``status.allocation`` (``{}``: not allocated)."""
    return as_dict(as_dict(as_dict(claim).get("status")).get("allocation"))


def allocation_results(claim: Any) -> list[Any]:
    """A ResourceClaim's ``status.allocation.devices.results`` (``[]``: none)."""
    return as_list(as_dict(claim_allocation(claim).get("devices")).get("results"))
