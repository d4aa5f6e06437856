"""The Flask app in-process: routes, the two error channels, metrics and /configz."""

from __future__ import annotations

import json

import pytest
from werkzeug.exceptions import RequestEntityTooLarge

from tests.builders import PODGROUP, SLICE, review
from webhook import BadReview
from webhook.config import Settings
from webhook.server.admit import parse_go_duration
from webhook.server.app import create_app
from webhook.state.base import ClusterSnapshot, StaticState


@pytest.fixture(scope="module")
def client():
    app = create_app(Settings(), StaticState(ClusterSnapshot.from_objects([])))
    return app.test_client()


def post(client, path, body, ctype="application/json"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(path, data=data, headers={"Content-Type": ctype})


@pytest.mark.parametrize("path", ["/mutate", "/validate"])
@pytest.mark.parametrize("obj", [SLICE, PODGROUP], ids=["resourceslice", "podgroup"])
def test_reviews_echo_uid_and_envelope(client, path, obj):
    body = review(obj, uid="abc-123")
    r = post(client, path, body)
    assert r.status_code == 200
    out = r.get_json()
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == "abc-123"
    assert isinstance(out["response"]["allowed"], bool)
    if path == "/validate":
        assert "patch" not in out["response"] and "patchType" not in out["response"]


def test_unhandled_kind_passes_through(client):
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d"}}
    out = post(client, "/validate", review(o)).get_json()["response"]
    assert out["allowed"] is True and "patch" not in out and "warnings" not in out


def test_delete_is_allowed_without_work(client):
    out = post(client, "/validate", review(None, op="DELETE", old=SLICE)).get_json()["response"]
    assert out["allowed"] is True


@pytest.mark.parametrize(("body", "ctype", "code"), [
    pytest.param(b"not json", "application/json", 400, id="non-json"),
    pytest.param(b'{"hello": "world"}', "application/json", 400, id="not-an-admissionreview"),
    pytest.param(json.dumps({**review(SLICE), "request": {"kind": {"kind": "X"}, "operation": "CREATE"}}).encode(),
                 "application/json", 400, id="missing-uid"),
    pytest.param(b"\xff\xfe\xfd", "application/json", 400, id="non-utf8"),
    pytest.param(b"[" * 5000 + b"]" * 5000, "application/json", 400, id="deeply-nested"),
    pytest.param(b"{" + b" " * (4 * 1024 * 1024) + b"}", "application/json", 413, id="4mib-body"),
    pytest.param(json.dumps(review(SLICE)).encode(), "text/plain", 415, id="wrong-content-type"),
])
def test_bad_input_gets_a_json_error(client, body, ctype, code):
    r = post(client, "/validate", body, ctype)
    assert r.status_code == code
    assert r.is_json and r.get_json()["code"] == code and r.get_json()["error"]
    # and the server keeps serving
    assert post(client, "/validate", review(SLICE)).status_code == 200


def _with_value(raw: bytes) -> bytes:
    """A valid review whose slice carries ``raw`` (not JSON) as an annotation value."""
    return json.dumps(review(SLICE)).encode().replace(b'"dryRun": false', b'"dryRun": false, "x": ' + raw)


@pytest.mark.parametrize(("raw", "named"), [
    pytest.param(b"NaN", "NaN is not a JSON number", id="nan"),
    pytest.param(b"Infinity", "Infinity is not a JSON number", id="infinity"),
    pytest.param(b"[1, -Infinity]", "-Infinity is not a JSON number", id="minus-infinity-in-a-list"),
    pytest.param(b"1e999", "out of range for a double", id="number-too-large-for-a-double"),
])
def test_non_json_numbers_are_http_400_naming_the_problem(client, raw, named):
    r = post(client, "/validate", _with_value(raw))
    assert r.status_code == 400 and r.is_json, r.data[:200]
    assert r.get_json()["code"] == 400 and named in r.get_json()["error"]
    assert post(client, "/validate", _with_value(b"1.5e300")).status_code == 200  # a large finite number is fine


def test_health_endpoints(client):
    assert client.get("/healthz").get_json()["status"] == "ok"
    r = client.get("/readyz")
    assert r.status_code == 200 and r.get_json()["ready"] is True


class _StaleState(StaticState):
    """Synced once, then stale: as a live state reports an apiserver outage."""

    def __init__(self, ready: bool) -> None:
        super().__init__(ClusterSnapshot.from_objects([]))
        self._ready = ready

    def ready(self) -> bool:
        return self._ready

    def health(self) -> dict[str, object]:
        return {"ready": self._ready, "stale": True, "message": "state is stale (last sync 93 s ago)"}


@pytest.mark.parametrize(("synced", "code"), [pytest.param(True, 200, id="stale-stays-ready"),
                                              pytest.param(False, 503, id="never-synced-is-unready")])
def test_readyz_names_a_stale_state_without_failing_on_it(synced, code):
    r = create_app(Settings(), _StaleState(synced)).test_client().get("/readyz")
    body = r.get_json()
    assert r.status_code == code and body["checks"]["state"] is synced
    assert body["warnings"] == {"state": "state is stale (last sync 93 s ago)"}


def test_configz_reports_gates_and_settings(client):
    c = client.get("/configz").get_json()
    assert c["featureGates"]["DRADeviceCompatibilityGroups"] is False
    assert c["settings"]["max_body_bytes"] == 3 * 1024 * 1024
    assert c["state"]["ready"] is True


def test_metrics_count_reviews_and_gates(client):
    post(client, "/validate", review(SLICE))
    text = client.get("/metrics").get_data(as_text=True)
    assert 'dra_webhook_admission_requests_total{' in text
    assert 'kind="ResourceSlice"' in text
    assert 'dra_webhook_feature_enabled{name="DRADeviceCompatibilityGroups"} 0.0' in text
    assert "dra_webhook_admission_request_duration_seconds_bucket" in text


@pytest.mark.parametrize(("text", "seconds"), [
    ("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("", None), ("ten", None), ("0s", None),
])
def test_go_durations(text, seconds):
    assert parse_go_duration(text) == seconds


def test_internal_errors_are_json_500(monkeypatch):
    import webhook.server.admit as appmod

    def boom(*a, **k):
        raise RuntimeError("bug")

    app = create_app(Settings(), StaticState(ClusterSnapshot.from_objects([])))
    monkeypatch.setattr(appmod, "evaluate", boom)
    r = post(app.test_client(), "/validate", review(SLICE))
    assert r.status_code == 500 and r.get_json() == {"error": "internal error: RuntimeError", "code": 500}


@pytest.mark.parametrize(("exc", "code", "body"), [
    pytest.param(BadReview("no uid", 400), 400, {"error": "no uid", "code": 400}, id="bad-review"),
    pytest.param(RequestEntityTooLarge(), 413,
                 {"error": f"request body larger than {Settings().max_body_bytes} bytes", "code": 413},
                 id="http-error"),
    pytest.param(RuntimeError("bug"), 500, {"error": "internal error: RuntimeError", "code": 500}, id="internal-error"),
])
def test_flask_and_the_admission_endpoints_answer_each_error_channel_alike(monkeypatch, exc, code, body):
    import webhook.server.admit as admit

    def boom(*a, **k):
        raise exc

    app = create_app(Settings(), StaticState(ClusterSnapshot.from_objects([])))
    app.add_url_rule("/raise", "raise", boom)
    from_flask = app.test_client().get("/raise")
    monkeypatch.setattr(admit, "evaluate", boom)
    from_admit = post(app.test_client(), "/validate", review(SLICE))
    assert (from_flask.status_code, from_flask.get_json()) == (code, body)
    assert (from_admit.status_code, from_admit.data) == (from_flask.status_code, from_flask.data)
