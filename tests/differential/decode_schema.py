"""Build `webhook/schemas/decode.json` from the real kube-apiserver's OpenAPI v3 documents.

The file is the field tree the apiserver decodes our kinds with (names, JSON types, quantities,
times, opaque values), compacted: `review` uses it to refuse what the apiserver refuses before
validation (unknown fields under kubectl's strict field validation, wrong JSON types, malformed
quantities). `tests/differential/test_decode_schema.py` checks the shipped file against a live
apiserver; regenerate it with

    PYTHONPATH=. .venv/bin/python -m tests.differential.decode_schema > webhook/schemas/decode.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import requests


def _kinds() -> set[tuple[str, str, str]]:
    """(group, version, kind) of every version of every kind we validate (the rules registry): not
    the core group's Pod (only its schedulingGroup is ours) nor the workload kinds (the apiserver
    validates them; we only add feasibility)."""
    from webhook.rules.registry import KINDS as REGISTRY
    from webhook.workloads.kinds import WORKLOAD_KINDS
    return {(r.group, v, r.kind) for r in REGISTRY.values() if r.group and r.kind not in WORKLOAD_KINDS
            for v in r.versions}


KINDS = _kinds()
GROUP_VERSIONS = tuple(sorted({f"apis/{g}/{v}" for g, v, _ in KINDS}))
#: Named schemas with a JSON form of their own (custom marshalling in Go).
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"t": "quantity"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"t": "time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"t": "time"},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"t": "any"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"t": "any"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"t": "int-or-string"},
}


def compact(schemas: dict[str, Any]) -> dict[str, Any]:
    """{"kinds": {"group/version/Kind": def}, "defs": {def: node}} for our kinds."""
    defs: dict[str, Any] = {}

    def short(name: str) -> str:
        return name.removeprefix("io.k8s.api.").removeprefix("io.k8s.apimachinery.pkg.apis.")

    def visit(name: str) -> str:
        s = short(name)
        if s not in defs:
            defs[s] = None  # placeholder: recursion stops here
            defs[s] = node(schemas[name])
        return s

    def node(sch: dict[str, Any]) -> Any:
        if "$ref" in sch:
            name = sch["$ref"].rsplit("/", 1)[1]
            return SPECIAL.get(name) or {"ref": visit(name)}
        if len(sch.get("allOf") or []) == 1:
            return node(sch["allOf"][0])
        if sch.get("x-kubernetes-int-or-string"):
            return {"t": "int-or-string"}
        t = sch.get("type")
        if t == "object" or "properties" in sch or "additionalProperties" in sch:
            if "properties" in sch:
                return {"t": "object", "f": {k: node(v) for k, v in sorted(sch["properties"].items())}}
            if isinstance(sch.get("additionalProperties"), dict):
                return {"t": "map", "v": node(sch["additionalProperties"])}
            if sch.get("x-kubernetes-preserve-unknown-fields"):
                return {"t": "any"}
            # A Go struct without fields (`basic: {}`): strict decoding refuses any key in it.
            return {"t": "object", "f": {}}
        if t == "array":
            return {"t": "array", "i": node(sch.get("items") or {})}
        if t in ("string", "integer", "number", "boolean"):
            return {"t": "time"} if sch.get("format") == "date-time" else {"t": t}
        return {"t": "any"}

    kinds: dict[str, str] = {}
    for name, sch in sorted(schemas.items()):
        for gvk in sch.get("x-kubernetes-group-version-kind") or []:
            key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
            if key in KINDS:
                kinds["/".join(key)] = visit(name)
    return {"kinds": dict(sorted(kinds.items())), "defs": dict(sorted(defs.items()))}


def fetch(api: Any) -> dict[str, Any]:
    """The merged component schemas of our group-versions, from a running `ApiServer`."""
    s = requests.Session()
    s.trust_env = False
    s.verify, s.cert = str(api.pki.ca), (str(api.pki.cert("admin")), str(api.pki.key("admin")))
    schemas: dict[str, Any] = {}
    for gv in GROUP_VERSIONS:
        r = s.get(f"{api.url}/openapi/v3/{gv}", timeout=30)
        r.raise_for_status()
        schemas.update(r.json()["components"]["schemas"])
    return schemas


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=False) + "\n"


def main() -> int:
    from tests.rig.cluster import Cluster

    with tempfile.TemporaryDirectory() as d, Cluster(Path(d), {"GenericWorkload": True}) as c:
        sys.stdout.write(render(compact(fetch(c.api))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
