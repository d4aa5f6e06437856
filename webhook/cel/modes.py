"""What an expression is compiled for, and the result type each purpose allows. Pure.

A selector must evaluate to a bool (or dyn, decided per device). A derived attribute
(DRADerivedAttributes) must evaluate to a primitive scalar (string, int, bool, semver) or, with
list-valued attributes (DRAListTypeAttributes), a list of them; all of a claim's derived
attributes share one cost budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import lark

from webhook.cel.check import Checker
from webhook.cel.signatures import TYPE_NAMES

DERIVED_TOTAL_MAX_COST = 1_000_000
"""Upstream ``DeviceClaimDerivedAttributeCELMaxCost``: all derived attributes of one claim together."""

#: Result types a derived attribute may have (cel-go names); lists of them with DRAListTypeAttributes.
DERIVED_SCALARS = ("bool", "int", "string", "dyn", "Semver")


@dataclass(frozen=True)
class Mode:
    """What an expression is compiled for: a selector or a derived attribute, under the gates
    that change the environment (list-valued attributes, the consumable-capacity field)."""

    derived: bool = False
    list_types: bool = False
    consumable_capacity: bool = True


def result_type_error(tree: lark.ParseTree, result_type: str, mode: Mode) -> str | None:
    """Why the result type does not fit the mode: a selector is a bool (or dyn); a derived
    attribute a scalar, or with list-valued attributes a list of scalars."""
    if not mode.derived:
        if result_type in ("bool", "dyn"):
            return None
        return f"must evaluate to bool or the unknown type, not {TYPE_NAMES.get(result_type, result_type)}"
    if result_type in DERIVED_SCALARS:
        return None
    if mode.list_types and result_type == "list" and _scalar_list(tree):
        return None
    wanted = "a primitive scalar (string, integer, boolean, semver)" + \
        (" or a list of these scalars" if mode.list_types else "")
    return f"must evaluate to {wanted}, not {TYPE_NAMES.get(result_type, result_type)}"


def _scalar_list(tree: lark.ParseTree) -> bool:
    """A list result whose elements are scalars: a literal list of scalar literals, or any other
    list expression (its element type is only known at run time)."""
    node = tree
    while isinstance(node, lark.Tree) and node.data != "list_lit" and len(node.children) == 1 and \
            isinstance(node.children[0], lark.Tree):
        node = node.children[0]
    if not (isinstance(node, lark.Tree) and node.data == "list_lit"):
        return True
    items = [c for c in node.children if isinstance(c, lark.Tree)]
    exprs = [e for c in items for e in c.children if isinstance(e, lark.Tree)] if items else []
    return all(Checker(e).run() in DERIVED_SCALARS for e in exprs)
