"""Helpers for the Helm chart tests: render `charts/dra-webhook` with the real Helm engine.

Each values file in `charts/dra-webhook/ci/` is rendered at most once per session (release `dra`,
namespace `dra-system`); tests look objects up by kind and name.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "charts" / "dra-webhook"
CI_DIR = CHART_DIR / "ci"
CI_FILES = sorted(p.name for p in CI_DIR.glob("*-values.yaml"))
RELEASE = "dra"
NAMESPACE = "dra-system"
SERVICE = "dra-dra-webhook"  # fullname of release "dra"


def load_values(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CI_DIR / name).read_text(encoding="utf-8"))
    return data or {}


@dataclass
class Rendered:
    """One rendering of the chart: the objects, the NOTES text and the merged values."""

    values: dict[str, Any]
    objects: list[dict[str, Any]]
    notes: str
    sources: dict[str, str] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [o for o in self.of_kind(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    def maybe(self, kind: str) -> dict[str, Any] | None:
        found = self.of_kind(kind)
        assert len(found) <= 1
        return found[0] if found else None

    def container(self) -> dict[str, Any]:
        (c,) = self.one("Deployment")["spec"]["template"]["spec"]["containers"]
        return c

    def webhook_configs(self) -> list[dict[str, Any]]:
        return self.of_kind("MutatingWebhookConfiguration") + self.of_kind("ValidatingWebhookConfiguration")

    def secret_data(self, name: str, key: str) -> bytes:
        return base64.b64decode(self.one("Secret", name)["data"][key])


def render(values: dict[str, Any] | None = None, *, name: str = RELEASE,
           namespace: str = NAMESPACE) -> Rendered:
    chart = helm_python.Chart.load(str(CHART_DIR))
    try:
        out = chart.render(values or {}, name=name, namespace=namespace, is_install=True)
        merged = chart.merge_values(values or {})
    finally:
        chart.close()
    objects: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc is not None:
                objects.append(doc)
    return Rendered(merged, objects, notes, out)


_CACHE: dict[str, Rendered] = {}


def rendered_ci(name: str) -> Rendered:
    """The rendering of one ci values file, computed once per session."""
    if name not in _CACHE:
        _CACHE[name] = render(load_values(name))
    return _CACHE[name]
