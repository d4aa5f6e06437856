"""Claim specs that certainly pass both validation passes, told apart cheaply (a sound shortcut).

Most claims the apiserver sends are short and valid: a few requests naming a class, a count,
CEL selectors that compile, maybe a capacity request and a matchAttribute constraint. The full
rules (``spec.py`` by hand, ``declarative.py`` from the tags, then ``merge``) build a path for
every field they visit and walk the spec twice; :func:`is_plain_claim_spec` answers the one
question the common case needs on CREATE, "would both of them report nothing?", in one walk that
builds nothing. It is conservative: a spec with anything it does not model (``firstAvailable``,
tolerations, derived attributes, ``adminAccess``, opaque config, any key it does not know, a
value of an unexpected Python type) or any value it would have to look at closely is left to the
full rules, which then report exactly what they always did. So it can only skip work whose answer
is "no errors". UPDATE never takes it (the rules ratchet against the old spec there).

What it accepts, with the rule of each pass that makes it valid:
- ``spec`` with only ``devices``; ``devices`` with only ``requests`` (1-32, RC-REQ-1) and
  ``constraints`` (at most 32, RC-CON-1);
- a request with only ``name`` (a DNS label, unique: RC-REQ-3, the tags' listMapKey) and
  ``exactly``, an object with only ``deviceClassName`` (a DNS subdomain, RC-EX-1), ``count``
  and ``allocationMode`` as RC-EX-2..4 and the tags' enum want them, ``selectors`` (at most 32,
  each a ``cel`` expression that compiles and is short enough: RC-EX-5/6) and ``capacity`` with
  only ``requests``, a map of quantity strings that parse (RC-EX-8);
- a constraint with only ``requests`` (names of requests of the claim, unique, at most 32:
  RC-CON-2) and exactly one of ``matchAttribute`` / ``distinctAttribute``, a name both the
  handwritten and the declarative fully-qualified-name formats accept (RC-CON-3..6).

``tests/rules/test_claims_plain.py`` checks that every spec it lets through gets no error from
the full rules, over the bench claim with each field replaced by bad values and the
differential generator's claims.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from webhook.fielderrors import FieldPath
from webhook.gates import FeatureGates, Gate
from webhook.quantity import try_parse
from webhook.rules.claims import names
from webhook.rules.claims.common import (
    CONSTRAINTS_MAX,
    REQUESTS_MAX,
    SELECTORS_MAX,
    compiles,
)
from webhook.rules.names import is_label, is_subdomain

SPEC_KEYS = frozenset({"devices"})
DEVICES_KEYS = frozenset({"requests", "constraints"})
REQUEST_KEYS = frozenset({"name", "exactly"})
EXACTLY_KEYS = frozenset({"deviceClassName", "allocationMode", "count", "selectors", "capacity"})
CONSTRAINT_KEYS = frozenset({"requests", "matchAttribute", "distinctAttribute"})
_NOWHERE = FieldPath()


def is_plain_claim_spec(spec: Any, gates: FeatureGates) -> bool:
    """Whether a ResourceClaimSpec (CREATE) certainly gets no error from either pass."""
    if type(spec) is not dict or not SPEC_KEYS.issuperset(spec):
        return False
    devices = spec.get("devices")
    if type(devices) is not dict or not DEVICES_KEYS.issuperset(devices):
        return False
    requests = devices.get("requests")
    if type(requests) is not list or not 0 < len(requests) <= REQUESTS_MAX:
        return False
    flags = (gates.enabled(Gate.DRA_LIST_TYPE_ATTRIBUTES), gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY))
    seen: set[str] = set()
    for r in requests:
        if type(r) is not dict or not REQUEST_KEYS.issuperset(r):
            return False
        name = r.get("name")
        if not is_label(name) or name in seen or not _plain_exactly(r.get("exactly"), flags):
            return False
        seen.add(name)
    constraints = devices.get("constraints")
    if constraints is None:
        return True
    if type(constraints) is not list or len(constraints) > CONSTRAINTS_MAX:
        return False
    for c in constraints:
        if not _plain_constraint(c, seen):
            return False
    return True


def _plain_exactly(ex: Any, flags: tuple[bool, bool]) -> bool:
    if type(ex) is not dict or not EXACTLY_KEYS.issuperset(ex):
        return False
    if not is_subdomain(ex.get("deviceClassName")):
        return False
    mode, count = ex.get("allocationMode"), ex.get("count")
    if count is not None and type(count) is not int:
        return False
    if mode is None or mode == "ExactCount":
        if count is not None and count < 1:
            return False
    elif mode != "All" or count not in (None, 0):
        return False
    selectors = ex.get("selectors")
    if selectors is not None:
        if type(selectors) is not list or len(selectors) > SELECTORS_MAX:
            return False
        for s in selectors:
            if not compiles(s, *flags):
                return False
    capacity = ex.get("capacity")
    return capacity is None or _plain_capacity(capacity)


def _plain_capacity(capacity: Any) -> bool:
    if type(capacity) is not dict or not {"requests"}.issuperset(capacity):
        return False
    requests = capacity.get("requests")
    if requests is None:
        return True
    if type(requests) is not dict:
        return False
    for v in requests.values():
        if type(v) is not str or try_parse(v) is None:
            return False
    return True


def _plain_constraint(con: Any, names_: set[str]) -> bool:
    if type(con) is not dict or not CONSTRAINT_KEYS.issuperset(con):
        return False
    refs = con.get("requests")
    if refs is not None and not (type(refs) is list and all(type(ref) is str and ref in names_ for ref in refs)
                                 and len(set(refs)) == len(refs)):
        return False
    match, distinct = con.get("matchAttribute"), con.get("distinctAttribute")
    if (match is None) == (distinct is None):
        return False
    attr = match if match is not None else distinct
    return type(attr) is str and _plain_attribute_name(attr)


@lru_cache(maxsize=1024)
def _plain_attribute_name(name: str) -> bool:
    """Both fully-qualified-name formats accept ``name`` (a pure function of the text; claims
    repeat the same few attribute names)."""
    return not names.fully_qualified_name_by_hand(name, _NOWHERE) and not names.fully_qualified_name(name, _NOWHERE)
