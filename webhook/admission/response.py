"""Build AdmissionReview v1 responses the apiserver accepts, and keep warnings within its limits.

Pure: data in, dict out. Patches appear only in mutating responses (the apiserver rejects a
validating response that carries one).
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from webhook.admission.envelope import API_VERSION
from webhook.fielderrors import FieldError, aggregate_message

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_SPACES = re.compile(r"\s{2,}")
_JSON_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def sanitize_warnings(warnings: Iterable[str], *, max_count: int = 10, max_length: int = 120) -> list[str]:
    """One line each, no control characters, at most ``max_length`` characters, no duplicates,
    at most ``max_count`` items (the last one then says how many were suppressed).

    The apiserver silently drops a warning with control characters and truncates or drops
    warnings past its 4096-character budget, so we never send it anything it would mangle.
    """
    out: list[str] = []
    seen: set[str] = set()
    for w in warnings:
        if not isinstance(w, str):
            w = str(w)
        text = w if _already_clean(w, max_length) else _clean(w, max_length)
        if not text:
            continue
        if text in seen:
            continue
        seen.add(text)
        out.append(text)
    if len(out) > max_count:
        if max_count <= 1:  # room for one: the first warning, saying how many follow
            suffix = f" (and {len(out) - 1} more warnings suppressed)"
            first = out[0] if len(out[0]) + len(suffix) <= max_length else \
                out[0][: max(max_length - len(suffix) - 1, 0)].rstrip() + "…"
            return [first + suffix][:max_count]
        hidden = len(out) - (max_count - 1)
        out = out[: max_count - 1] + [f"{hidden} more warnings suppressed"]
    return out


def _already_clean(w: str, max_length: int) -> bool:
    """Whether ``_clean`` would return ``w`` unchanged, told without per-character work (nearly
    every warning we word ourselves): ``isprintable`` rules out control, format, private-use,
    unassigned and surrogate characters and every whitespace but the ASCII space, so only runs
    of spaces and spaces at the ends are left to look for."""
    return 0 < len(w) <= max_length and w.isprintable() and "  " not in w \
        and w[0] != " " and w[-1] != " "


def _clean(w: str, max_length: int) -> str:
    """One warning made one line of at most ``max_length`` characters ("" when nothing is left)."""
    text = _CONTROL.sub(" ", w)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cs", "Co", "Cn", "Cf"))
    text = _SPACES.sub(" ", text).strip()
    if len(text) > max_length:
        text = text[: max_length - 1].rstrip() + "…"
    return text


def status_message(kind: str, group: str, name: str, errors: Sequence[FieldError]) -> str:
    """``ResourceSlice.resource.k8s.io "x" is invalid: <errors>`` as the apiserver words it."""
    qualified = f"{kind}.{group}" if group else kind
    return f'{qualified} "{name}" is invalid: {aggregate_message(errors)}'


def build_bad_request(uid: str, message: str, api_version: str = API_VERSION,
                      warnings: Sequence[str] = ()) -> dict[str, Any]:
    """An AdmissionReview refusing what the apiserver cannot decode: HTTP 400, reason BadRequest,
    no causes (the apiserver gives none before validation); ``warnings`` (sanitised) carry what to
    write instead, so that every output format has it."""
    status = {"metadata": {}, "status": "Failure", "message": message, "reason": "BadRequest", "code": 400}
    response: dict[str, Any] = {"uid": uid, "allowed": False, "status": status}
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def build_response(uid: str, *, allowed: bool, errors: Sequence[FieldError] = (),
                   kind: str = "", group: str = "", name: str = "",
                   patch: list[dict[str, Any]] | None = None,
                   warnings: Sequence[str] = (), api_version: str = API_VERSION,
                   audit_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A full AdmissionReview with ``response`` filled in.

    Denials carry the apiserver's Invalid status (code 422, reason Invalid, one cause per error).
    ``warnings`` must already be sanitised.
    """
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {
            "metadata": {},
            "status": "Failure",
            "message": status_message(kind, group, name, errors),
            "reason": "Invalid",
            "details": {"name": name, "group": group, "kind": kind,
                        "causes": [e.cause() for e in errors]},
            "code": 422,
        }
    if patch:
        response["patchType"] = "JSONPatch"
        # ASCII JSON: a lone surrogate from the request (a stored object may carry one) is escaped
        # instead of failing to encode; the apiserver decodes it as Go does any such escape.
        response["patch"] = base64.b64encode(json.dumps(patch, separators=(",", ":")).encode()).decode()
    if warnings:
        response["warnings"] = list(warnings)
    if audit_annotations:
        response["auditAnnotations"] = audit_annotations
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def json_body(doc: Any) -> bytes:
    """``doc`` as the server sends it: as Flask's ``jsonify`` would (compact, keys sorted, a final
    newline), encoded by orjson; the standard encoder (ASCII escapes) takes what orjson refuses,
    such as a string with a lone surrogate copied from a request."""
    try:
        return orjson.dumps(doc, option=_JSON_OPTS)
    except (orjson.JSONEncodeError, TypeError):
        return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch inside a response (empty when none); used by the CLI and tests."""
    r = response.get("response", response)
    if not r.get("patch"):
        return []
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(r["patch"]))
    return ops
