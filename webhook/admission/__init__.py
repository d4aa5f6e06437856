"""AdmissionReview handling: wire format (envelope), responses, and the one pipeline.

``evaluate`` and ``respond`` are what both the HTTP server and ``dra-webhook review`` call; the
offline review (``offline``: the apiserver's decode step and defaults first) is how ``review``
reaches them.
"""

from __future__ import annotations

from webhook.admission.body import decode_body
from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.pipeline import Outcome, evaluate, respond, review
from webhook.admission.response import build_response, sanitize_warnings

__all__ = ["AdmissionRequest", "Outcome", "build_response", "decode_body", "evaluate", "parse_review",
           "respond", "review", "sanitize_warnings"]
