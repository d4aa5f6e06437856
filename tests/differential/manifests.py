"""Every manifest the project has, as differential cases: the corpus, the seeds, `examples/`, the
YAML in `docs/`, and every object in the rule test tables (`tests/rules/`, `tests/builders.py`,
the fuzzing seeds), plus realistic UPDATE edits of each.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from webhook.rules.registry import KINDS as KINDS_BY_KEY

REPO = Path(__file__).resolve().parents[2]



def _corpus() -> Path:
    """``shared/corpus/corpus.json`` beside the repository, or beside a directory above it (a git
    worktree sits one level further down)."""
    for d in REPO.parents:
        if (d / "shared" / "corpus" / "corpus.json").exists():
            return d / "shared" / "corpus" / "corpus.json"
    return REPO.parent / "shared" / "corpus" / "corpus.json"


CORPUS = _corpus()
#: Every version of every kind we validate (resource.k8s.io v1, v1beta2, v1beta1; scheduling v1beta1).
SERVED = frozenset(r.api_version(v) for r in KINDS_BY_KEY.values() for v in r.versions if r.group)
#: The version of each kind the rules judge; the others are converted to it (`test_versions_diff`).
PREFERRED = frozenset(r.api_version() for r in KINDS_BY_KEY.values() if r.group)
#: Kinds whose validation we claim to match upstream's whole (Pods: only spec.schedulingGroup).
KINDS = {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "DeviceTaintRule", "PodGroup",
         "Workload"}
TABLES = ["tests.rules." + p.stem for p in sorted((REPO / "tests" / "rules").glob("test_*.py"))]


def _is_case(o: Any) -> bool:
    return (isinstance(o, dict) and o.get("apiVersion") in SERVED and o.get("kind") in KINDS
            and isinstance(o.get("metadata"), dict))


def _walk_objects(value: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 6:
        return
    if _is_case(value):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk_objects(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk_objects(v, depth + 1)


def _table_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for name in TABLES:
        mod = importlib.import_module(name)
        for attr, fn in sorted(vars(mod).items()):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                for i, row in enumerate(mark.args[1]):
                    values = getattr(row, "values", row)
                    rid = getattr(row, "id", None) or str(i)
                    for j, o in enumerate(_walk_objects(values)):
                        yield f"table:{name.rsplit('.', 1)[1]}:{attr}:{rid}:{j}", o


def _yaml_docs(text: str) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return []


def manifest_cases(versions: frozenset[str] = PREFERRED) -> list[tuple[str, dict[str, Any]]]:
    """(case id, object) for every object of a kind we validate in one of ``versions``,
    deduplicated by content."""
    found: list[tuple[str, dict[str, Any]]] = []
    for e in json.loads(CORPUS.read_text()):
        found.append((f"corpus:{e['id']}", e["object"]))
    for p in sorted([*(REPO / "examples").rglob("*.y*ml"), *(REPO / "webhook" / "examples").rglob("*.y*ml")]):
        for i, d in enumerate(_yaml_docs(p.read_text())):
            found.append((f"example:{p.relative_to(REPO)}:{i}", d))
    for p in sorted((REPO / "docs").glob("*.md")):
        for k, block in enumerate(re.findall(r"^```yaml\n(.*?)^```", p.read_text(), flags=re.S | re.M)):
            for i, d in enumerate(_yaml_docs(block)):
                found.append((f"doc:{p.name}:{k}:{i}", d))
    found += list(_table_objects())
    from tests import builders, strategies
    for i, o in enumerate(_walk_objects([vars(builders), strategies._INLINE])):
        found.append((f"builders:{i}", o))
    seen: set[str] = set()
    out = []
    for cid, o in found:
        if not _is_case(o) or o["apiVersion"] not in versions:
            continue
        key = json.dumps(o, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((cid, o))
    return out


# -- UPDATE edits -------------------------------------------------------------------------------

def _label(o: dict[str, Any]) -> dict[str, Any]:
    n = copy.deepcopy(o)
    labels = n["metadata"].get("labels")
    n["metadata"]["labels"] = {**(labels if isinstance(labels, dict) else {}), "example.com/edited": "yes"}
    return n


def _rename(o: dict[str, Any]) -> dict[str, Any]:
    n = copy.deepcopy(o)
    n["metadata"]["name"] = "renamed"
    return n


def _spec_edit(o: dict[str, Any]) -> dict[str, Any] | None:
    """A change a user or controller makes to the spec of a stored object of this kind."""
    n = copy.deepcopy(o)
    spec = n.get("spec")
    if not isinstance(spec, dict):
        return None
    kind = n["kind"]
    if kind == "ResourceSlice" and isinstance(spec.get("devices"), list) and spec["devices"] \
            and isinstance(spec["devices"][0], dict):
        spec["devices"][0].setdefault("attributes", {})
        if isinstance(spec["devices"][0]["attributes"], dict):
            spec["devices"][0]["attributes"]["example.com/edited"] = {"bool": True}
            return n
    if kind == "ResourceSlice" and isinstance(spec.get("pool"), dict):
        gen = spec["pool"].get("generation")
        spec["pool"]["generation"] = (gen if isinstance(gen, int) else 0) + 1
        return n
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        body = spec.get("spec", spec) if kind == "ResourceClaimTemplate" else spec
        reqs = (body.get("devices") or {}).get("requests") if isinstance(body.get("devices"), dict) else None
        if isinstance(reqs, list) and reqs and isinstance(reqs[0], dict) and isinstance(reqs[0].get("exactly"), dict):
            reqs[0]["exactly"]["count"] = 3  # the spec is immutable: upstream refuses
            return n
    if kind == "PodGroup" and isinstance(spec.get("schedulingPolicy"), dict):
        gang = spec["schedulingPolicy"].get("gang")
        if isinstance(gang, dict):
            gang["minCount"] = (gang.get("minCount") if isinstance(gang.get("minCount"), int) else 1) + 1
        else:
            spec["priority"] = 7
        return n
    if kind == "Workload" and isinstance(spec.get("podGroupTemplates"), list) and spec["podGroupTemplates"]:
        t = spec["podGroupTemplates"][0]
        if isinstance(t, dict):
            t["name"] = "changed"
            return n
    if kind == "DeviceClass":
        spec["selectors"] = [{"cel": {"expression": "true"}}]
        return n
    if kind == "DeviceTaintRule" and isinstance(spec.get("taint"), dict):
        spec["taint"]["effect"] = "NoExecute" if spec["taint"].get("effect") != "NoExecute" else "None"
        return n
    return None


Edit = Callable[[dict[str, Any]], dict[str, Any]]


def update_edits(o: dict[str, Any]) -> list[tuple[str, Edit]]:
    """(edit id, edit) pairs to apply to the stored ``o``: a label, a spec edit, a rename."""
    out: list[tuple[str, Edit]] = [("label", _label), ("rename", _rename)]
    if _spec_edit(o) is not None:
        out.insert(1, ("spec", lambda stored: _spec_edit(stored) or stored))
    return out
