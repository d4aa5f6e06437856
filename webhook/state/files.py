"""Load cluster state and CLI inputs from YAML/JSON files (multi-document, ``kind: List``)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from webhook import BadInput
from webhook.state.base import KINDS, ClusterSnapshot
from webhook.state.compact import COMPACT_KINDS, Compactor, trimmed
from webhook.versions import as_stored

log = logging.getLogger(__name__)

_SUFFIXES = (".yaml", ".yml", ".json")
FILE_BYTES_MAX = 32 * 1024 * 1024


def _loader() -> type[yaml.SafeLoader]:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_documents(text: str, origin: str, *, empty_lists: bool = False) -> list[dict[str, Any]]:
    """Every Kubernetes object in a YAML/JSON text; ``kind: List`` is flattened.

    Raises BadInput with a one-line reason when the text is not YAML/JSON, holds a document
    that is not a Kubernetes object, or holds no object at all; with ``empty_lists`` a text
    whose documents are only empty Lists (what listing an empty cluster gives) is no object,
    not an error. JSON is tried first when the text looks like
    JSON: the C JSON parser is many times faster than YAML on large state files.
    """
    docs: list[Any] | None = None
    if text.lstrip()[:1] in ("{", "["):
        try:
            docs = [json.loads(text)]
        except ValueError:
            docs = None
        except RecursionError:
            raise BadInput(f"{origin}: document nested too deeply") from None
    try:
        if docs is None:
            docs = list(yaml.load_all(text, Loader=_loader()))
            if "&" in text and "*" in text:  # anchors and aliases: a document may contain itself
                for i, doc in enumerate(docs):
                    if _cyclic(doc):
                        raise BadInput(f"{origin}: document {i + 1} contains itself (a YAML alias inside "
                                       "its own anchor)")
    except yaml.YAMLError as e:
        try:  # a JSON file with something YAML dislikes (tabs) still gets a fair try
            docs = [json.loads(text)]
        except ValueError:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise BadInput(f"{origin}: not valid YAML or JSON{where}: "
                           f"{getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise BadInput(f"{origin}: document nested too deeply") from None
    out: list[dict[str, Any]] = []
    lists = 0
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        out.extend(_flatten(doc, f"{origin}: document {i + 1}"))
        lists += _is_list(doc)
    if not out and not (empty_lists and lists):
        raise BadInput(f"{origin}: no Kubernetes object found")
    return out


def _cyclic(doc: Any) -> bool:
    """Whether ``doc`` contains itself (only YAML aliases can make that: JSON cannot)."""
    if not isinstance(doc, (dict, list)):
        return False
    on_path: set[int] = set()
    stack: list[tuple[Any, Any]] = [(doc, None)]
    while stack:
        node, it = stack[-1]
        if it is None:
            if id(node) in on_path:
                return True
            on_path.add(id(node))
            it = iter(node.values() if isinstance(node, dict) else node)
            stack[-1] = (node, it)
        child = next(it, _END)
        if child is _END:
            on_path.discard(id(node))
            stack.pop()
        elif isinstance(child, (dict, list)):
            stack.append((child, None))
    return False


_END = object()


def read_documents(text: str, origin: str) -> list[tuple[str, dict[str, Any] | None, str]]:
    """Like ``parse_documents``, but a document that is not a Kubernetes object is returned as
    ``(where, None, why)`` instead of failing the whole text: ``(where, object, "")`` otherwise.
    Raises BadInput only when the text is not YAML/JSON at all."""
    try:
        return [(origin, o, "") for o in parse_documents(text, origin)]
    except BadInput as e:
        if "not a Kubernetes object" not in str(e) and "no Kubernetes object" not in str(e):
            raise
    out: list[tuple[str, dict[str, Any] | None, str]] = []
    docs = [json.loads(text)] if text.lstrip()[:1] in ("{", "[") else list(yaml.load_all(text, Loader=_loader()))
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        where = f"{origin}: document {i + 1}"
        try:
            out.extend((origin, o, "") for o in _flatten(doc, where))
        except BadInput as e:
            out.append((origin, None, str(e)))
    if not out:
        out.append((origin, None, f"{origin}: no Kubernetes object found"))
    return out


def read_text(path: str | Path) -> str:
    """The text of one file ("-": standard input); BadInput with a one-line reason otherwise."""
    p = Path(path)
    try:
        if str(path) == "-":
            import sys
            return sys.stdin.read()
        if p.stat().st_size > FILE_BYTES_MAX:
            raise BadInput(f"{path}: file larger than {FILE_BYTES_MAX} bytes")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None


def files_under(path: str | Path) -> list[Path]:
    """Every ``*.yaml``/``*.yml``/``*.json`` file under a directory, recursively, sorted."""
    return [f for f in sorted(Path(path).rglob("*")) if f.suffix in _SUFFIXES and f.is_file()]


def _is_list(doc: dict[str, Any]) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list)


def _flatten(doc: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        raise BadInput(f"{where}: not a Kubernetes object (expected a mapping, got {type(doc).__name__})")
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind or not isinstance(doc.get("apiVersion"), str):
        raise BadInput(f"{where}: not a Kubernetes object (apiVersion and kind are required)")
    if _is_list(doc):
        out: list[dict[str, Any]] = []
        for j, item in enumerate(doc["items"]):
            out.extend(_flatten(item, f"{where} item {j + 1}"))
        return out
    return [doc]


def load_objects_from_file(path: str | Path, *, empty_lists: bool = False) -> list[dict[str, Any]]:
    """Objects in one file ("-" reads standard input); ``empty_lists``: see ``parse_documents``."""
    return parse_documents(read_text(path), str(path), empty_lists=empty_lists)


def from_dir(path: str | Path, version: int = 1) -> ClusterSnapshot:
    """Every object in every ``*.yaml``/``*.yml``/``*.json`` under ``path`` (recursively).

    Kinds the state does not use are ignored with a log line; pods are trimmed (terminal ones
    left out) and slices, nodes and pods stored compacted (``compact.py``); an empty List is an
    empty state. An object in an older resource.k8s.io version (v1beta1, v1beta2) is stored as the
    apiserver stores it, in v1. Raises BadInput for an unreadable directory or file.
    """
    root = Path(path)
    if not root.is_dir():
        raise BadInput(f"{path}: not a directory")
    try:
        os.listdir(root)  # globbing would skip a directory it cannot read, silently
    except OSError as e:
        raise BadInput(f"{path}: cannot read the directory: {e.strerror or e}") from None
    objs: list[dict[str, Any]] = []
    compactor = Compactor(max_entries=sys.maxsize)  # one state: shared across its files, then dropped
    for f in files_under(root):
        for o in map(as_stored, load_objects_from_file(f, empty_lists=True)):
            kind = o.get("kind")
            if isinstance(kind, str) and kind in KINDS:
                kept = trimmed(kind, o)
                if kept is not None:  # None: a terminal pod, which the scheduler does not count
                    objs.append(compactor.object(kept) if kind in COMPACT_KINDS else kept)
            else:
                log.info("cluster state: ignoring %s %s in %s", o.get("kind"),
                         (o.get("metadata") or {}).get("name"), f)
    return ClusterSnapshot.from_objects(objs, source=f"dir:{root}", version=version)
