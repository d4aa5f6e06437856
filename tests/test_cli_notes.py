"""Every output format of `review` carries every note: what text says, json/yaml (the
AdmissionReview's warnings) and junit (system-out, a skip or a failure) say too, and offline the
warnings are whole (no name shortened to fit the apiserver's 120 characters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.cli import main

LONG_CLASS = "no-such-class-with-a-rather-long-name-for-testing-xyz"
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "unknown-kind": ({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
                     "kind Widget (example.com/v1) is not one dra-webhook checks"),
    "unserved-version": ({"apiVersion": "resource.k8s.io/v1alpha9", "kind": "ResourceSlice",
                          "metadata": {"name": "s"}}, "ResourceSlice resource.k8s.io/v1alpha9 is not"),
    "earlier-spelling": ({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": "pg", "namespace": "default"},
                          "spec": {"podGroupTemplateRef": {"workloadName": "w", "templateName": "t"}}},
                         "scheduling.k8s.io/v1beta1 has spec.workloadRef {workloadName, templateName}"),
    "long-class-name": ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "c", "namespace": "default"},
                         "spec": {"devices": {"requests": [{"name": "r",
                                                            "exactly": {"deviceClassName": LONG_CLASS}}]}}},
                        f'deviceclass.resource.k8s.io "{LONG_CLASS}" not found'),
    "attribute-finding": ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                           "spec": {"driver": "gpu.example.com", "nodeName": "n",
                                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                                    "devices": [{"name": "d", "attributes": {
                                        "resource.kubernetes.io/pcieRoot": {"string": "nope"}}}]}},
                          'attributes[resource.kubernetes.io/pcieRoot]: "nope" is not in this format'),
}


@pytest.mark.parametrize("output", ["text", "json", "yaml", "junit"])
@pytest.mark.parametrize("case", list(CASES))
def test_every_format_carries_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
                                       output: str) -> None:
    obj, note = CASES[case]
    f = tmp_path / "obj.yaml"
    f.write_text(yaml.safe_dump(obj))
    code = main(["review", "-f", str(f), "-o", output])
    out = capsys.readouterr().out
    assert note in out.replace("\\n", "\n").replace('\\"', '"').replace("&quot;", '"')
    assert code == (1 if case == "earlier-spelling" else 0)


@pytest.mark.parametrize(("case", "strict_code"), [
    pytest.param("unknown-kind", 1, id="unknown-kind"),
    pytest.param("attribute-finding", 1, id="finding"),
    pytest.param("long-class-name", 0, id="feasibility-never-fails"),
])
def test_strict_fails_notes_and_findings_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         case: str, strict_code: int) -> None:
    f = tmp_path / "obj.yaml"
    f.write_text(yaml.safe_dump(CASES[case][0]))
    for output in ("text", "json", "yaml", "junit"):
        assert main(["review", "-f", str(f), "-o", output, "--strict"]) == strict_code
    capsys.readouterr()
