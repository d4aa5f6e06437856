"""Request body bytes → a JSON value, or ``BadReview`` saying why not. Never imports Flask.

Two parsers, one meaning. orjson parses the common body (a valid AdmissionReview) about five
times faster than the standard library; wherever the two could differ, the standard parser
decides, so the value and every error message are what ``json.loads`` alone would give:

- orjson refuses: not UTF-8, not JSON, NaN or Infinity, a number out of range for a double,
  an escaped lone surrogate (which ``json`` keeps, as Go turns it into U+FFFD and accepts it),
  a byte-order mark. The standard path then runs and words the refusal (or accepts).
- orjson accepts but means something else: an integer outside 64 bits becomes a float. A run
  of ``_LONG_DIGITS`` digits anywhere in the body (in a number or in a string: the check is on
  bytes) sends the body down the standard path.

Nesting is bounded before either parser runs (``too_deep``), so rules that recurse over an
object never meet more than ``max_depth`` levels.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

import orjson

from webhook import BadReview

_LONG_DIGITS = 19
"""The shortest decimal run that can be an integer orjson turns into a float (-2**63 - 1 has 19
digits); shorter runs are integers orjson keeps exactly."""
_DIGITS_ONLY = bytes(ord("0") if ord("0") <= c <= ord("9") else ord(" ") for c in range(256))
_LONG_RUN = b"0" * _LONG_DIGITS


def decode_body(body: bytes, max_depth: int = 100) -> Any:
    """Bytes → JSON value; BadReview for non-UTF-8, non-JSON or too deeply nested input.

    ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (Python's parser accepts them), and
    neither is a number too large for a double (it would become infinity): both are BadReview.
    """
    if too_deep(body, max_depth):
        raise BadReview(f"request body is nested deeper than {max_depth} levels")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _decode_standard(body)
    if _LONG_RUN in body.translate(_DIGITS_ONLY):
        return _decode_standard(body)
    return value


def _decode_standard(body: bytes) -> Any:
    """The standard library's reading of ``body``, with JSON's own rules on numbers."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadReview("request body is not valid UTF-8") from None
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite_float)
    except RecursionError:
        raise BadReview("request body is nested too deeply") from None
    except ValueError as e:
        raise BadReview(f"request body is not valid JSON: {e}") from None


def _not_json(name: str) -> Any:
    raise BadReview(f"request body is not valid JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BadReview("request body is not valid JSON: a number is out of range for a double")
    return value


_ESCAPES = re.compile(rb"\\.", re.S)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_OPENING = bytes(c for c in range(256) if c not in b"[{")
"""Deleting these leaves the opening brackets: one pass, where two ``count`` calls took two."""


def too_deep(data: bytes, limit: int) -> bool:
    """Whether ``data`` nests brackets (outside strings) deeper than ``limit``, found with
    C-speed byte passes: keep only brackets and quotes, drop the strings, then peel one level
    per pass. UTF-8 continuation bytes are never ASCII brackets or quotes.

    Dropping the strings: once only brackets and quotes are left, a string without brackets is
    ``""``, and counting ``""`` left to right pairs every quote exactly when no string holds a
    bracket (the first string that does has a bracket after its opening quote, so that quote
    is never paired). Then deleting the quotes leaves the brackets outside strings; otherwise
    the strings are cut out one by one.
    """
    if len(data.translate(None, _NOT_OPENING)) <= limit:  # not even that many brackets, strings included
        return False
    if b"\\" in data:
        data = _ESCAPES.sub(b"", data)
    structure = data.translate(_SQUARE, _NOT_STRUCTURE)
    if len(structure) <= limit:  # fewer brackets and quotes than levels allowed
        return False
    if 2 * structure.count(b'""') == structure.count(b'"'):
        brackets = structure.translate(None, b'"')
    else:
        brackets = b"".join(structure.split(b'"')[0::2])
    rest, depth = brackets, 0
    while rest:
        depth += 1
        if depth > limit:
            return True
        shorter = rest.replace(b"[]", b"")
        if len(shorter) == len(rest):  # unbalanced, so not JSON: fall back to the running count
            return max(accumulate(1 if c == 91 else -1 for c in brackets), default=0) > limit
        rest = shorter
    return False
