"""`webhook/schemas/decode.json` is what the real 1.37 apiserver decodes our kinds with: rebuilt
from its OpenAPI v3 documents, it must equal the shipped file (regenerate with the command in
`tests/differential/decode_schema.py`)."""

from __future__ import annotations

import json

import pytest

from tests.differential.decode_schema import KINDS, compact, fetch, render
from tests.differential.oracle import ApiOracle
from webhook.admission.decode import decodable_kinds

pytestmark = pytest.mark.differential

SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[2] / "webhook" / "schemas" / "decode.json"


def test_shipped_decode_schema_is_the_apiservers(api_oracle: ApiOracle):
    live = render(compact(fetch(api_oracle.apis["all-on"])))
    assert json.loads(SHIPPED.read_text()) == json.loads(live), (
        "webhook/schemas/decode.json is stale: regenerate it (see tests/differential/decode_schema.py)")


def test_every_kind_we_validate_can_be_decoded():
    """Every version of every kind in the registry (the core group's Pod aside: we only check the
    pod's schedulingGroup)."""
    assert decodable_kinds() == {f"{g}/{v}/{k}" for g, v, k in KINDS}
    assert "resource.k8s.io/v1beta1/ResourceSlice" in decodable_kinds()
    assert "scheduling.k8s.io/v1beta1/Workload" in decodable_kinds()
    assert "resource.k8s.io/v1/DeviceTaintRule" in decodable_kinds()
