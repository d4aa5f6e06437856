"""Fuzzing: mutated objects and envelopes through the pipeline and through the real HTTPS server.

``FUZZ_EXAMPLES`` (default 150) examples per endpoint in-process (shared out over three gate
sets) and per whole-envelope property, ``FUZZ_HTTP_EXAMPLES`` (default 50) per HTTPS property
through ``dra-webhook serve``; ``make fuzz`` raises both. The property: no exception
escapes, every answer is a well-formed AdmissionReview for the apiserver (``check_response``).

The examples are derandomized (a fixed seed per test) so that a red ``make test`` always means a
change; ``FUZZ_RANDOM=1`` (set by ``make fuzz``) draws new examples on every run to find new bugs.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import env_int, make_certs, post, start_server
from tests.strategies import admission_reviews, check_response, json_values, mutate_doc
from webhook import BadReview
from webhook.admission.body import decode_body
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import KNOWN, FeatureGates

FUZZ_EXAMPLES = env_int("FUZZ_EXAMPLES", 150)
FUZZ_HTTP_EXAMPLES = env_int("FUZZ_HTTP_EXAMPLES", 50)
FUZZ_RANDOM = os.environ.get("FUZZ_RANDOM", "") not in ("", "0")

_ALL_ON = FeatureGates().with_overrides({n: True for n, g in KNOWN.items() if not g.locked})
_ALL_OFF = FeatureGates().with_overrides({n: False for n, g in KNOWN.items() if not g.locked})
GATE_SETS = {"defaults": FeatureGates(), "all-on": _ALL_ON, "all-off": _ALL_OFF}

_FUZZ_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not FUZZ_RANDOM,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.large_base_example])


def _through_the_wire(doc: object, s: Settings) -> object:
    """What the server does before the pipeline: serialise, size and depth checks, decode."""
    body = json.dumps(doc).encode()
    if len(body) > s.max_body_bytes:
        raise BadReview("too large", 413)
    return decode_body(body, s.max_json_depth)


@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
@pytest.mark.parametrize("gates", list(GATE_SETS), ids=list(GATE_SETS))
def test_pipeline_never_raises_and_answers_well_formed(endpoint, gates, example_state):
    s = Settings(gates=GATE_SETS[gates])

    # FUZZ_EXAMPLES per endpoint, shared out over the gate sets.
    @settings(_FUZZ_SETTINGS, max_examples=max(1, FUZZ_EXAMPLES // len(GATE_SETS)))
    @given(doc=admission_reviews())
    def run(doc):
        try:
            wire = _through_the_wire(doc, s)
            out, _ = review(wire, s, example_state, endpoint=endpoint,
                            deadline=time.monotonic() + 2.0)
        except BadReview:
            return  # HTTP 4xx: a malformed envelope, not an object we must answer
        check_response(wire, out, endpoint)

    run()


@_FUZZ_SETTINGS
@given(doc=admission_reviews(broken_envelopes=False))
def test_well_formed_envelopes_are_always_answered(doc, example_state):
    """With an intact envelope every object, however broken, gets an answer, never a 4xx."""
    s = Settings()
    wire = json.loads(json.dumps(doc))
    req = doc["request"]
    if req["operation"] in ("CREATE", "UPDATE") and req["object"] is None:
        return
    if not all(isinstance(req[k], (dict, type(None))) for k in ("object", "oldObject")):
        return  # the apiserver only ever sends objects here; the envelope schema refuses the rest
    if len(json.dumps(doc).encode()) > s.max_body_bytes:
        return
    try:
        wire = decode_body(json.dumps(doc).encode(), s.max_json_depth)
    except BadReview as e:
        assert "nested deeper" in str(e)
        return
    out, _ = review(wire, s, example_state, endpoint="validate", deadline=time.monotonic() + 2.0)
    check_response(wire, out, "validate")


@_FUZZ_SETTINGS
@given(value=json_values(30))
def test_any_json_body_is_answered_or_refused_cleanly(value, example_state):
    """Arbitrary JSON where an AdmissionReview is expected: an answer or BadReview, nothing else."""
    try:
        review(value, Settings(), example_state, endpoint="validate")
    except BadReview as e:
        assert 400 <= e.status < 500


# ---------------------------------------------------------------------------------------------
# Through the real HTTPS server
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    certs = make_certs(tmp_path_factory.mktemp("fuzzcerts"))
    srv = start_server(certs, tmp_path_factory.mktemp("fuzzsrv"))
    yield srv
    assert srv.stop() == 0


_HTTP_SETTINGS = settings(max_examples=FUZZ_HTTP_EXAMPLES, deadline=None, derandomize=not FUZZ_RANDOM,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture,
                                                 HealthCheck.large_base_example])

_RAW_BODIES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"", b"{}", b"[]", b"null", b'{"apiVersion":', b'"\\ud800"', b"\xef\xbb\xbf{}",
                     b"[" * 200 + b"]" * 200, b'{"a":' * 150 + b"1" + b"}" * 150, b"1e999999"]),
    admission_reviews().flatmap(lambda d: mutate_doc(d, 2)).map(lambda d: json.dumps(d).encode()),
)


@pytest.mark.integration
@_HTTP_SETTINGS
@given(doc=admission_reviews(), endpoint=st.sampled_from(["mutate", "validate"]),
       timeout=st.sampled_from(["", "?timeout=2s", "?timeout=10s", "?timeout=0s", "?timeout=bogus"]))
def test_https_server_answers_reviews_with_json_and_no_5xx(fuzz_server, doc, endpoint, timeout):
    r = post(fuzz_server, f"/{endpoint}{timeout}", doc, timeout=20)
    assert r.status_code < 500, r.text[:500]
    body = r.json()  # raises on a non-JSON answer
    if r.status_code == 200:
        check_response(json.loads(json.dumps(doc)), body, endpoint)
    else:
        assert r.status_code in (400, 413) and body["code"] == r.status_code, body


@pytest.mark.integration
@_HTTP_SETTINGS
@given(body=_RAW_BODIES, path=st.sampled_from(["/mutate", "/validate"]))
def test_https_server_answers_raw_garbage_with_json_4xx(fuzz_server, body, path):
    try:
        r = post(fuzz_server, path, body, timeout=20)
    except requests.ConnectionError:
        # By design a body far over the cap is not read: the connection is closed instead.
        assert len(body) > 4 * Settings().max_body_bytes
        return
    assert r.status_code < 500, r.text[:500]
    out = r.json()
    if r.status_code != 200:
        assert out["code"] == r.status_code


@pytest.mark.integration
def test_https_server_still_healthy_after_fuzzing(fuzz_server):
    r = requests.get(fuzz_server.url + "/metrics", verify=str(Path(fuzz_server.certs) / "ca.crt"), timeout=5)
    assert r.status_code == 200
    errors = [ln for ln in r.text.splitlines() if ln.startswith("dra_webhook_internal_errors_total ")]
    assert all(float(ln.split()[-1]) == 0 for ln in errors), errors
    log = Path(fuzz_server.log).read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
