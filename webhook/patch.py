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


def plan_restore(member: str, obj: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    """Ops that make the top-level ``obj[member]`` equal to the stored ``old[member]`` (what a
    strategy does when it keeps the stored status on a main-resource UPDATE, or the stored spec
    on a ``/status`` one)."""
    if obj.get(member) == old.get(member):
        return []
    if member not in old:
        return [op_remove("/" + member)]
    return [(op_replace if member in obj else op_add)("/" + member, copy.deepcopy(old[member]))]


class PatchError(ValueError):
    """A patch does not apply to the document (a bug on our side)."""


def _tokens(ptr: str) -> list[str]:
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError(f"bad pointer {ptr!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """Apply ``ops`` and return the new document; ``doc`` itself is never modified.

    Copy-on-write: only the containers on the path of each operation are copied (shallow),
    everything else is shared with ``doc``, so patching a large object costs O(ops × depth),
    not a deep copy. Values added by ops are deep-copied. Raises PatchError.
    """
    out = doc
    copied: set[int] = set()  # ids of containers this call already owns

    def own(node: Any) -> Any:
        if id(node) in copied:
            return node
        new = dict(node) if isinstance(node, dict) else list(node)
        copied.add(id(new))
        return new

    for op in ops:
        toks = _tokens(op["path"])
        kind = op["op"]
        if kind not in ("add", "remove", "replace"):
            raise PatchError(f"unsupported op {kind}")
        if not toks:
            if kind in ("add", "replace"):
                out = copy.deepcopy(op["value"])
                continue
            raise PatchError("cannot remove the root")
        if not isinstance(out, (dict, list)):
            raise PatchError(f"{op['path']}: parent is not a container")
        out = own(out)
        parent = out
        for t in toks[:-1]:
            child = _step(parent, t)
            if not isinstance(child, (dict, list)):
                raise PatchError(f"{op['path']}: parent is not a container")
            child = own(child)
            if isinstance(parent, dict):
                parent[t] = child
            else:
                parent[_index(t, len(parent))] = child
            parent = child
        _apply_last(parent, toks[-1], kind, op)
    return out


def _apply_last(parent: Any, last: str, kind: str, op: dict[str, Any]) -> None:
    """The operation itself, on the (already owned) parent container of its last token."""
    if isinstance(parent, dict):
        if kind == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif last not in parent:
            raise PatchError(f"{kind}: no member {op['path']}")
        elif kind == "remove":
            del parent[last]
        else:
            parent[last] = copy.deepcopy(op["value"])
        return
    if kind == "add" and last == "-":
        parent.append(copy.deepcopy(op["value"]))
        return
    i = _index(last, len(parent) + (1 if kind == "add" else 0))
    if kind == "add":
        parent.insert(i, copy.deepcopy(op["value"]))
    elif kind == "remove":
        del parent[i]
    else:
        parent[i] = copy.deepcopy(op["value"])


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
