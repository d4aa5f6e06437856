"""AdmissionReview v1 wire format: parse a request body, checked with jsonschema.

Raises ``BadReview`` (HTTP 4xx) for anything that is not an AdmissionReview we can answer.
Never imports Flask.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from webhook import BadReview

API_VERSION = "admission.k8s.io/v1"

_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["apiVersion", "kind", "request"],
    "properties": {
        "apiVersion": {"const": API_VERSION},
        "kind": {"const": "AdmissionReview"},
        "request": {
            "type": "object",
            "required": ["uid", "kind", "operation"],
            "properties": {
                "uid": {"type": "string", "minLength": 1, "maxLength": 256},
                "kind": {
                    "type": "object",
                    "required": ["kind"],
                    "properties": {
                        "group": {"type": "string"},
                        "version": {"type": "string"},
                        "kind": {"type": "string", "minLength": 1},
                    },
                },
                "resource": {"type": "object"},
                "subResource": {"type": "string"},
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "operation": {"enum": ["CREATE", "UPDATE", "DELETE", "CONNECT"]},
                "userInfo": {"type": "object"},
                "object": {"type": ["object", "null"]},
                "oldObject": {"type": ["object", "null"]},
                "dryRun": {"type": ["boolean", "null"]},
                "options": {"type": ["object", "null"]},
            },
        },
    },
}


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(_SCHEMA)
    return Draft202012Validator(_SCHEMA)


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The parts of ``request`` the pipeline uses."""

    uid: str
    group: str
    version: str
    kind: str
    operation: str
    name: str
    namespace: str
    subresource: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool

    @property
    def display_name(self) -> str:
        if self.name:
            return self.name
        meta = (self.obj or self.old or {}).get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "")


def decode_body(body: bytes, max_depth: int = 100) -> Any:
    """Bytes → JSON value; BadReview for non-UTF-8, non-JSON or too deeply nested input."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadReview("request body is not valid UTF-8") from None
    if _too_deep(text, max_depth):
        raise BadReview(f"request body is nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:
        raise BadReview("request body is nested too deeply") from None
    except ValueError as e:
        raise BadReview(f"request body is not valid JSON: {e}") from None


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _too_deep(text: str, limit: int) -> bool:
    """Cheap pre-parse bound on nesting: brackets outside strings, counted in C-speed passes."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0) > limit


def parse_review(doc: Any) -> AdmissionRequest:
    """A decoded AdmissionReview → AdmissionRequest. Raises BadReview with the first problem."""
    if not isinstance(doc, dict):
        raise BadReview("request body is not an AdmissionReview object")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise BadReview(f"not an {API_VERSION} AdmissionReview: {where}: {e.message[:200]}")
    req = doc["request"]
    kind = req["kind"]
    obj = req.get("object")
    old = req.get("oldObject")
    op = req["operation"]
    if op in ("CREATE", "UPDATE") and obj is None:
        raise BadReview(f"request.object is required for {op}")
    return AdmissionRequest(
        uid=req["uid"],
        group=kind.get("group", ""),
        version=kind.get("version", ""),
        kind=kind["kind"],
        operation=op,
        name=req.get("name") or "",
        namespace=req.get("namespace") or "",
        subresource=req.get("subResource") or "",
        obj=obj,
        old=old,
        dry_run=bool(req.get("dryRun")),
    )
