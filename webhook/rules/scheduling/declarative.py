"""How upstream's declarative validation judges a field, restated for the scheduling types. Pure.

The v1beta1 scheduling types are validated by tags (``+k8s:immutable``, ``+k8s:optional``,
``+k8s:maxItems``, ``+k8s:update=NoSet``, ...). Their behaviour, which every rule here follows:

1. **Ratcheting.** On UPDATE a field whose value equals its old value (the same field of the old
   object, or of the list item with the same key) is not validated at all.
2. **Short-circuits.** A field's checks come in two kinds. The *gatekeeping* ones (immutable,
   optional/required, forbidden while a gate is off, maxItems, the update constraints) all run,
   in order, and their errors are all reported; if any of them fired, the field's *content*
   (formats, nested fields, list items) is not looked at. An unset optional field fires without
   an error: nothing more to check. ``Immutable`` fires on every UPDATE that reaches it.
3. **Go zero values.** Values are compared as Go sees them after decoding: absent and null are
   the same pointer, "" an unset string, 0 an unset int32, an empty list the same as none; an
   empty object behind a pointer (``basic: {}``) is set. :class:`GoType` says which is which.
4. **Lists of items with a key** (listType=map): NoAddItem / NoRemoveItem compare keys with the
   old list; Duplicate marks every later repeat of a key; items are validated against the old
   item with the same key, and an item equal to it is skipped.

``NO_OLD`` (no old value to compare with), ratcheting and the merge are the core's,
``webhook.rules.declarative``; this module adds the Go shapes and the field engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, duplicate, forbidden, invalid, not_supported, required, too_many
from webhook.gates import Gate
from webhook.rules.context import RuleContext
from webhook.rules.declarative import NO_OLD, unchanged
from webhook.rules.shape import type_error


@dataclass(frozen=True)
class GoType:
    """The Go shape of a JSON value: what counts as unset and what equal means."""

    kind: str
    """``str`` / ``int`` (plain: "" and 0 are unset), ``pstr`` / ``pint`` (pointers: only null is
    unset), ``struct`` (plain), ``pstruct`` (pointer to a struct), ``list``."""
    fields: Mapping[str, GoType | str] = field(default_factory=dict)
    """Struct fields; a string names a type registered with :func:`named` (for recursion)."""
    item: GoType | str | None = None
    """List items."""


STR, INT, PSTR, PINT = GoType("str"), GoType("int"), GoType("pstr"), GoType("pint")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_JSON = {"str": "string", "pstr": "string", "int": "integer", "pint": "integer", "struct": "object",
         "pstruct": "object", "list": "array"}
_NAMED: dict[str, GoType] = {}


def named(name: str, t: GoType) -> GoType:
    _NAMED[name] = t
    return t


def _resolve(t: GoType | str) -> GoType:
    return _NAMED[t] if isinstance(t, str) else t


def canon(value: Any, t: GoType | str) -> Any:
    """``value`` as Go would hold it: unset members dropped, so equal values compare equal.
    Anything the type does not describe (wrong JSON types, unknown keys) is kept as it is."""
    t = _resolve(t)
    if t.kind in ("str", "int", "pstr", "pint"):
        plain_zero = t.kind in ("str", "int") and value in ("", 0) and not isinstance(value, bool)
        return None if value is None or plain_zero else value
    if t.kind == "list":
        if value is None or value == []:
            return None
        if not isinstance(value, list) or t.item is None:
            return value
        return [canon(v, t.item) for v in value]
    if value is None:
        return None if t.kind == "pstruct" else {}
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        sub = t.fields.get(k)
        c = canon(v, sub) if sub is not None else v
        if c is not None and not (c == {} and sub is not None and _resolve(sub).kind == "struct"):
            out[k] = c
    return out


def same(new: Any, old: Any, t: GoType | str) -> bool:
    return bool(canon(new, t) == canon(old, t))


def is_set(value: Any, t: GoType | str) -> bool:
    """``canon(value, t) is not None``, without building the canonical value."""
    kind = (t if isinstance(t, GoType) else _NAMED[t]).kind
    if value is None:
        return kind == "struct"
    if kind in ("str", "int"):
        return not (value in ("", 0) and not isinstance(value, bool))
    return not (kind == "list" and value == [])


class Field:
    """One field being judged: where it is, its new and old value, and the request.

    Immutable by convention. A child's path is built only when it is asked for (to report an
    error): most fields visited never need one.
    """

    __slots__ = ("_path", "_parent", "_step", "new", "old", "t", "ctx", "update")

    def __init__(self, path: FieldPath | None, new: Any, old: Any, t: GoType | str, ctx: RuleContext) -> None:
        self._path = path
        self._parent: Field | None = None
        self._step: str | int = ""
        self.new = new
        self.old = old
        self.t: GoType = _resolve(t)
        self.ctx = ctx
        self.update = ctx.is_update()

    @property
    def path(self) -> FieldPath:
        if self._path is None:
            assert self._parent is not None
            parent = self._parent.path
            self._path = parent.index(self._step) if isinstance(self._step, int) else parent.child(self._step)
        return self._path

    def unchanged(self) -> bool:
        """Ratcheting: nothing to do on an UPDATE that leaves the field as it was."""
        return self.update and unchanged(self.new, self.old, self._same)

    def _same(self, new: Any, old: Any) -> bool:
        return same(new, old, self.t)

    def set(self) -> bool:
        return is_set(self.new, self.t)

    def child(self, key: str, t: GoType | str) -> Field:
        new = self.new.get(key) if isinstance(self.new, dict) else None
        old = self.old
        f = _new_field(Field)  # as item(key, new, old_member(old, key), t), inlined: the hottest path
        f._path, f._parent, f._step, f.new = None, self, key, new
        f.old = old if old is NO_OLD else old.get(key) if isinstance(old, dict) else None  # old_member()
        f.t, f.ctx, f.update = t if isinstance(t, GoType) else _NAMED[t], self.ctx, self.update
        return f

    def item(self, step: str | int, new: Any, old: Any, t: GoType | str) -> Field:
        """The field one step below (a member name or a list index), its values given."""
        f = _new_field(Field)
        f._path, f._parent, f._step, f.new, f.old = None, self, step, new, old
        f.t, f.ctx, f.update = t if isinstance(t, GoType) else _NAMED[t], self.ctx, self.update
        return f


_new_field = object.__new__


_PY_TYPE: dict[str, Any] = {"string": str, "object": dict, "array": list, "integer": int}


def mistyped(f: Field) -> list[FieldError]:
    """A JSON value of the wrong type (or an int outside int32): the apiserver cannot decode it.
    ``review`` refuses such bodies before any rule runs; the rules still never trip over one."""
    v = f.new
    if v is None:
        return []
    want = _JSON[f.t.kind]
    if type(v) is _PY_TYPE[want] and want != "integer":  # the common case, decided at once
        return []
    if not isinstance(v, _PY_TYPE[want]) or (want == "integer" and isinstance(v, bool)):
        return [type_error(f.path, v, want)]  # type: ignore[arg-type]
    if want == "integer" and not INT32_MIN <= v <= INT32_MAX:
        return [invalid(f.path, v, "must be a 32-bit integer")]
    return []


def rule(fn: Callable[..., list[FieldError]]) -> Callable[..., list[FieldError]]:
    """A field rule: nothing to do when the field is unchanged (ratcheting), a type error alone
    when it is not of its JSON type, else ``fn``."""
    def run(f: Field, *args: Any, **kwargs: Any) -> list[FieldError]:
        if f.update and f.unchanged():
            return []
        return mistyped(f) or fn(f, *args, **kwargs)
    run.__doc__, run.__name__ = fn.__doc__, fn.__name__
    return run


def optional_rule(fn: Callable[..., list[FieldError]]) -> Callable[..., list[FieldError]]:
    """A ``rule`` whose gatekeeping checks are only optional, gated, immutable, maxItems and the
    update constraints (never required): a field that is null on CREATE fires ``optional`` (or
    ``gated``) without an error and none of the others, so there is nothing to look at."""
    def run(f: Field, *args: Any, **kwargs: Any) -> list[FieldError]:
        if not f.update:
            if f.new is None:
                return []
        elif f.unchanged():
            return []
        return mistyped(f) or fn(f, *args, **kwargs)
    run.__doc__, run.__name__ = fn.__doc__, fn.__name__
    return run


# --- gatekeeping checks: (errors, fired) ------------------------------------------------------

Check = tuple[list[FieldError], bool]


def immutable(f: Field) -> Check:
    """``+k8s:immutable``: fires on every UPDATE that gets here (the field changed)."""
    if not f.update:
        return [], False
    return [invalid(f.path, None, "field is immutable")], True


def optional(f: Field) -> Check:
    """``+k8s:optional``: an unset value fires without an error."""
    return [], not f.set()


def required_(f: Field) -> Check:
    """``+k8s:required``."""
    return ([], False) if f.set() else ([required(f.path)], True)


def gated(f: Field, gate: Gate) -> Check:
    """``+k8s:ifDisabled(gate)=+k8s:forbidden`` with ``ifEnabled=+k8s:optional``."""
    if f.ctx.gates.enabled(gate):
        return optional(f)
    return ([forbidden(f.path)], True) if f.set() else ([], True)


def max_items(f: Field, limit: int) -> Check:
    if isinstance(f.new, list) and len(f.new) > limit:
        return [too_many(f.path, len(f.new), limit)], True
    return [], False


def no_set_no_unset(f: Field) -> Check:
    """``+k8s:update=NoSet`` and ``NoUnset`` on a pointer."""
    if not f.update or f.old is NO_OLD:
        return [], False
    was, now = is_set(f.old, f.t), f.set()
    if now and not was:
        return [invalid(f.path, None, "field cannot be set once created")], True
    if was and not now:
        return [invalid(f.path, None, "field cannot be cleared once set")], True
    return [], False


def no_add_no_remove(f: Field, key: str) -> Check:
    """``+k8s:update=NoAddItem`` and ``NoRemoveItem`` on a list matched by ``key``."""
    if not f.update or f.old is NO_OLD:
        return [], False
    new_items = f.new if isinstance(f.new, list) else []
    old_items = f.old if isinstance(f.old, list) else []
    old_keys = [_key(o, key) for o in old_items]
    new_keys = [_key(n, key) for n in new_items]
    errs = [forbidden(f.path.index(i), "item may not be added") for i, k in enumerate(new_keys)
            if k not in old_keys]
    errs += [forbidden(f.path, "item may not be removed") for k in old_keys if k not in new_keys]
    return errs, bool(errs)


def gatekeep(*checks: Check) -> tuple[list[FieldError], bool]:
    """Every gatekeeping check's errors, and whether the content is to be skipped."""
    errs: list[FieldError] = []
    fired = False
    for e, f in checks:
        errs += e
        fired = fired or f
    return errs, fired


# --- content checks -------------------------------------------------------------------------


def text_format(f: Field, check: Callable[[str], list[str]]) -> list[FieldError]:
    """A string format (``+k8s:format``): one Invalid per message."""
    if not isinstance(f.new, str):
        return [invalid(f.path, f.new, "must be a string")] if f.new is not None else []
    return [invalid(f.path, f.new, m) for m in check(f.new)]


def int_bound(f: Field, *, minimum: int | None = None, maximum: int | None = None) -> list[FieldError]:
    v = f.new
    if isinstance(v, bool) or not isinstance(v, int):
        return [invalid(f.path, v, "must be an integer")] if v is not None else []
    if minimum is not None and v < minimum:
        return [invalid(f.path, v, f"must be greater than or equal to {minimum}")]
    if maximum is not None and v > maximum:
        return [invalid(f.path, v, f"must be less than or equal to {maximum}")]
    return []


def enum(f: Field, allowed: tuple[str, ...]) -> list[FieldError]:
    return [] if f.new in allowed else [not_supported(f.path, f.new, sorted(allowed))]


def union(f: Field, members: tuple[str, ...], types: Mapping[str, GoType | str]) -> list[FieldError]:
    """``+k8s:unionMember``: exactly one member set; an UPDATE that keeps which members are set
    is not re-checked."""
    new = f.new if isinstance(f.new, dict) else {}
    present = [m for m in members if is_set(new.get(m), types[m])]
    # A plain struct always has an old value to compare with; a pointer only when it was set.
    has_old = f.old is not NO_OLD and (f.old is not None or _resolve(f.t).kind == "struct")
    if f.update and has_old:
        old = f.old if isinstance(f.old, dict) else {}
        if present == [m for m in members if is_set(old.get(m), types[m])]:
            return []
    if len(present) == 1:
        return []
    names = ", ".join(f"`{m}`" for m in members)
    if not present:
        return [invalid(f.path, "", f"must specify one of: {names}")]
    if len(present) > 1:
        return [invalid(f.path, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}")]
    return []


def unique(f: Field, key: str) -> list[FieldError]:
    """listType=map: a Duplicate at every later item whose key was seen before."""
    items = f.new if isinstance(f.new, list) else []
    seen: list[Any] = []
    errs = []
    for i, item in enumerate(items):
        k = _key(item, key)
        if k in seen:
            errs.append(duplicate(f.path.index(i), item))
        seen.append(k)
    return errs


def each(f: Field, key: str | None, validate: Callable[[Field], list[FieldError]]) -> list[FieldError]:
    """Every item, against the old item with the same key (none for atomic lists); on UPDATE an
    item equal to its old one is skipped."""
    items = f.new if isinstance(f.new, list) else []
    old_items = f.old if isinstance(f.old, list) else []
    item_t = _resolve(f.t).item or GoType("struct")
    equal_item = partial(same, t=item_t)
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        old = NO_OLD
        if key is not None:
            old = next((o for o in old_items if _key(o, key) == _key(item, key)), NO_OLD)
        g = f.item(i, item, old, item_t)
        if f.update and unchanged(item, old, equal_item):
            continue
        errs += mistyped(g) or validate(g)
    return errs


def _key(item: Any, key: str) -> Any:
    v = item.get(key) if isinstance(item, dict) else None
    return "" if v is None else v if isinstance(v, str | int | float | bool) else repr(v)
