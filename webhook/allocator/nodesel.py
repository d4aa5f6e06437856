"""Kubernetes NodeSelector matching (terms ORed; expressions and fields ANDed inside a term).

Pure. A malformed selector parses to one that matches nothing, as upstream treats a selector it
cannot convert. ``matchFields`` supports ``metadata.name`` only (the one field upstream knows).
"""

from __future__ import annotations

from typing import Any, Protocol


class _Node(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...


_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class NodeSelector:
    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[tuple[str, str, str, tuple[str, ...]], ...], ...]) -> None:
        # term = ((source "label"|"field", key, operator, values), ...)
        self.terms = terms

    def matches(self, node: _Node) -> bool:
        return any(_term_matches(t, node) for t in self.terms)


def _term_matches(term: tuple[tuple[str, str, str, tuple[str, ...]], ...], node: _Node) -> bool:
    if not term:  # an empty term matches no node
        return False
    for source, key, op, values in term:
        if source == "field":
            if key != "metadata.name":
                return False
            present, value = True, node.name
        else:
            present, value = key in node.labels, node.labels.get(key, "")
        if not _expr_matches(op, present, value, values):
            return False
    return True


def _expr_matches(op: str, present: bool, value: str, values: tuple[str, ...]) -> bool:
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def parse_node_selector(raw: Any) -> NodeSelector | None:
    """None when ``raw`` is absent; a never-matching selector when it is malformed."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("nodeSelectorTerms"), list):
        return NodeSelector(())
    terms: list[tuple[tuple[str, str, str, tuple[str, ...]], ...]] = []
    for t in raw["nodeSelectorTerms"]:
        if not isinstance(t, dict):
            terms.append((("label", "", "?", ()),))
            continue
        exprs: list[tuple[str, str, str, tuple[str, ...]]] = []
        for source, field in (("label", "matchExpressions"), ("field", "matchFields")):
            items = t.get(field)
            if items is None:
                continue
            if not isinstance(items, list):
                exprs.append(("label", "", "?", ()))
                continue
            for e in items:
                if not isinstance(e, dict):
                    exprs.append(("label", "", "?", ()))
                    continue
                key, op = e.get("key"), e.get("operator")
                vals = e.get("values") or []
                if (not isinstance(key, str) or op not in _OPS or not isinstance(vals, list)
                        or not all(isinstance(v, str) for v in vals)):
                    exprs.append(("label", "", "?", ()))
                    continue
                if source == "field" and op not in ("In", "NotIn"):
                    exprs.append(("label", "", "?", ()))
                    continue
                exprs.append((source, key, op, tuple(vals)))
        terms.append(tuple(exprs))
    return NodeSelector(tuple(terms))
