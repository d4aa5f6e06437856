"""JSON Patch (RFC 6902) building and applying for the few operations we emit.

We build operations by hand (``add``/``remove``/``replace`` on explicit paths, never ``move``
or ``copy``), because diff-based generators produce invalid patches for reordered lists.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldPath, escape_pointer


def pointer(*tokens: str | int) -> str:
    return "".join("/" + escape_pointer(str(t)) for t in tokens)


def op_remove(path: str | FieldPath) -> dict[str, Any]:
    return {"op": "remove", "path": path.pointer() if isinstance(path, FieldPath) else path}


def op_add(path: str | FieldPath, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path.pointer() if isinstance(path, FieldPath) else path, "value": value}


def op_replace(path: str | FieldPath, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path.pointer() if isinstance(path, FieldPath) else path,
            "value": value}


class PatchError(ValueError):
    """A patch does not apply to the document (a bug on our side)."""


def _tokens(ptr: str) -> list[str]:
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError(f"bad pointer {ptr!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """Apply ``ops`` to a deep copy of ``doc`` and return the copy. Raises PatchError."""
    out = copy.deepcopy(doc)
    for op in ops:
        toks = _tokens(op["path"])
        if not toks:
            if op["op"] in ("add", "replace"):
                out = copy.deepcopy(op["value"])
                continue
            raise PatchError("cannot remove the root")
        parent = out
        for t in toks[:-1]:
            parent = _step(parent, t)
        last = toks[-1]
        kind = op["op"]
        if isinstance(parent, dict):
            if kind == "add":
                parent[last] = copy.deepcopy(op["value"])
            elif last not in parent:
                raise PatchError(f"{kind}: no member {op['path']}")
            elif kind == "remove":
                del parent[last]
            elif kind == "replace":
                parent[last] = copy.deepcopy(op["value"])
            else:
                raise PatchError(f"unsupported op {kind}")
        elif isinstance(parent, list):
            if kind == "add" and last == "-":
                parent.append(copy.deepcopy(op["value"]))
                continue
            i = _index(last, len(parent) + (1 if kind == "add" else 0))
            if kind == "add":
                parent.insert(i, copy.deepcopy(op["value"]))
            elif kind == "remove":
                del parent[i]
            elif kind == "replace":
                parent[i] = copy.deepcopy(op["value"])
            else:
                raise PatchError(f"unsupported op {kind}")
        else:
            raise PatchError(f"{op['path']}: parent is not a container")
    return out


def _step(node: Any, tok: str) -> Any:
    if isinstance(node, dict):
        if tok not in node:
            raise PatchError(f"missing member {tok!r}")
        return node[tok]
    if isinstance(node, list):
        return node[_index(tok, len(node))]
    raise PatchError(f"cannot descend into {type(node).__name__}")


def _index(tok: str, size: int) -> int:
    if not tok.isdigit() or (len(tok) > 1 and tok[0] == "0"):
        raise PatchError(f"bad array index {tok!r}")
    i = int(tok)
    if i >= size:
        raise PatchError(f"array index {i} out of range")
    return i
