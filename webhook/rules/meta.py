"""ObjectMeta: the metadata rules every kind we validate shares (apimachinery's ValidateObjectMeta
and ValidateObjectMetaUpdate, the core finalizer-name check, and what the apiserver's request
handlers do to metadata before validation), restated. Pure.

Every kind module calls :func:`check` first in its ``validate`` and ``validate_update``, with the
:class:`MetaRules` of its kind (upstream differs a little from kind to kind).

What the apiserver does before it validates (so a webhook in a cluster never sees otherwise, and
``review`` must judge as if it had happened):

- CREATE: a ``generateName`` without ``name`` becomes a name (the prefix cut to 58 characters plus
  5 random lower-case characters), and both are checked; ``uid``, ``creationTimestamp`` and the
  deletion fields are wiped; a cluster-scoped object loses its ``namespace``.
- Both: exact duplicates in ``ownerReferences`` (same uid, same fields) are dropped.
- UPDATE: ``generation`` and ``creationTimestamp`` come from the stored object, an unset ``uid``
  too; a stored deletion timestamp (and grace period) is kept. A different ``name`` or
  ``namespace`` is refused (400, "does not match the name on the URL"), as is a different
  ``uid`` (409): here they are immutability errors on the field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, forbidden, immutable, invalid, required, too_long
from webhook.rules.context import RuleContext
from webhook.rules.names import (
    byte_len,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label,
    is_label_value,
    is_path_segment_prefix,
    is_qualified_name,
)
from webhook.rules.shape import type_error

META = FieldPath.root("metadata")
AT = {name: META.child(name) for name in (
    "annotations", "deletionGracePeriodSeconds", "deletionTimestamp", "finalizers", "generateName",
    "generation", "labels", "name", "namespace", "ownerReferences", "resourceVersion", "uid")}
"""The paths of the metadata fields (built once: every review checks them)."""
ANNOTATIONS_MAX_BYTES = 256 * 1024
#: What the apiserver keeps of a generateName before it adds 5 random characters (63 - 5).
GENERATED_PREFIX_MAX = 58
#: Stands for the random suffix: lower-case alphanumerics, as the real one, so it never decides.
GENERATED_SUFFIX = "xxxxx"
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"

NameCheck = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class MetaRules:
    """How one kind's metadata is validated (upstream differs a little from kind to kind)."""

    validated: bool = True
    """False for kinds whose metadata we do not claim to check (Pods: only schedulingGroup)."""
    name_check: NameCheck = is_dns1123_subdomain
    generate_name_checked: bool = True
    """False where upstream checks only the generated name (ValidateObjectMetaWithOpts: DeviceClass)."""
    create_rules_on_update: bool = False
    """True where the kind's update validation runs the CREATE rules too (ResourceClaim,
    ResourceClaimTemplate), so a changed ``generateName`` is checked on UPDATE."""
    generation_set_on_create: bool = False
    """True where the strategy sets ``generation`` to 1 on CREATE (ResourceSlice, DeviceClass),
    so whatever the client sent is not checked."""
    unconditional_update: bool = False
    """True where an UPDATE without ``resourceVersion`` is allowed (AllowUnconditionalUpdate: the
    resource kinds); otherwise one is required."""


DEFAULT = MetaRules()


def check(obj: Any, old: Any, ctx: RuleContext, *, namespaced: bool, rules: MetaRules = DEFAULT) -> list[FieldError]:
    """The ObjectMeta rules of ``obj``: CREATE when ``old`` is None, else UPDATE from ``old``."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not rules.validated:
        return []
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [type_error(META, meta, "object")]
    if old is None:
        return _create(meta, rules, namespaced)
    old_meta = old.get("metadata") if isinstance(old, dict) else None
    return _update(meta, old_meta if isinstance(old_meta, dict) else {}, rules, namespaced, ctx.subresource)


def preconditions(obj: Any, old: Any, *, namespaced: bool, rules: MetaRules = DEFAULT) -> list[FieldError]:
    """What the apiserver refuses an UPDATE for before it validates anything (400 for another name
    or namespace, 409 for another uid or a stale resourceVersion, 422 for a missing one): when this
    is not empty, it is the whole answer."""
    meta, old_meta = (o.get("metadata") if isinstance(o, dict) else None for o in (obj, old))
    if not rules.validated or not isinstance(meta, dict):
        return []
    return _identity_update(meta, old_meta if isinstance(old_meta, dict) else {}, namespaced, rules)


def _create(meta: dict[str, Any], rules: MetaRules, namespaced: bool) -> list[FieldError]:
    """ValidateObjectMeta on the object as the apiserver would have prepared it."""
    return _names(meta, rules, namespaced) + _common(meta, check_generation=not rules.generation_set_on_create)


def _update(meta: dict[str, Any], old: dict[str, Any], rules: MetaRules, namespaced: bool,
            subresource: str) -> list[FieldError]:
    """ValidateObjectMetaUpdate and the generic UPDATE checks (the CREATE rules on labels,
    annotations, owners and finalizers again), plus the kind's CREATE name rules where it runs
    them on UPDATE. ``generation`` is not checked: the apiserver puts the stored one back."""
    errs = _identity_update(meta, old, namespaced, rules)
    if errs or subresource:
        # Refused before validation (see preconditions); on /status the apiserver puts the stored
        # metadata back (ResetObjectMetaForStatus).
        return errs
    # The generic UPDATE checks hold a generateName only to path-segment rules ...
    gen = meta.get("generateName")
    if isinstance(gen, str):
        errs += [invalid(AT["generateName"], gen, m) for m in is_path_segment_prefix(gen)]
    # ... a kind that runs its CREATE rules again holds it to its own name rule.
    if rules.create_rules_on_update:
        errs += _names(meta, rules, namespaced)
    errs += _deletion_update(meta, old)
    return errs + _common(meta, check_generation=False)


# --- names ---------------------------------------------------------------------------------


def _names(meta: dict[str, Any], rules: MetaRules, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    gen = _text(meta.get("generateName"), AT["generateName"], errs)
    name = _text(meta.get("name"), AT["name"], errs)
    if gen and rules.generate_name_checked:
        errs += [invalid(AT["generateName"], gen, m) for m in rules.name_check(_mask_trailing_dash(gen))]
    if not name and gen:
        name = gen[:GENERATED_PREFIX_MAX] + GENERATED_SUFFIX
    if not name:
        errs.append(required(AT["name"], "name or generateName is required"))
    else:
        errs += [invalid(AT["name"], name, m) for m in rules.name_check(name)]
    ns = _text(meta.get("namespace"), AT["namespace"], errs)
    if namespaced and ns and not is_label(ns):
        errs += [invalid(AT["namespace"], ns, m) for m in is_dns1123_label(ns)]
    return errs


def _mask_trailing_dash(name: str) -> str:
    """As apimachinery does before checking a generateName: a trailing '-' (and the character
    before it) becomes one 'a', so "ab-" is checked as "aa" and "A-" as "a"."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def _text(value: Any, path: FieldPath, errs: list[FieldError]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errs.append(type_error(path, value, "string"))
        return ""
    return value


# --- what CREATE and UPDATE share ---------------------------------------------------------

_COMMON_KEYS = frozenset({"generation", "labels", "annotations", "ownerReferences", "finalizers"})


def _common(meta: dict[str, Any], *, check_generation: bool = True) -> list[FieldError]:
    if _COMMON_KEYS.isdisjoint(meta):
        return []  # the usual object: none of these set, nothing to check
    errs: list[FieldError] = []
    gen = meta.get("generation")
    if check_generation and isinstance(gen, int) and not isinstance(gen, bool) and gen < 0:
        errs.append(invalid(AT["generation"], gen, "must be greater than or equal to 0"))
    errs += validate_labels(meta.get("labels"), AT["labels"])
    errs += validate_annotations(meta.get("annotations"), AT["annotations"])
    errs += validate_owner_references(meta.get("ownerReferences"), AT["ownerReferences"])
    errs += validate_finalizers(meta.get("finalizers"), AT["finalizers"])
    return errs


def validate_labels(labels: Any, path: FieldPath) -> list[FieldError]:
    """Keys are qualified names, values label values (one Invalid per message, at ``path``)."""
    errs: list[FieldError] = []
    for key, text in _string_map(labels, path, errs):
        errs += [invalid(path, key, m) for m in is_qualified_name(key)]
        errs += [invalid(path, text, m) for m in is_label_value(text)]
    return errs


def validate_annotations(annotations: Any, path: FieldPath) -> list[FieldError]:
    """Keys are qualified names once lower-cased; keys and values together at most 256 KiB (bytes)."""
    errs: list[FieldError] = []
    size = 0
    for key, text in _string_map(annotations, path, errs):
        errs += [invalid(path, key, m) for m in is_qualified_name(key.lower())]
        size += byte_len(key) + byte_len(text)
    if size > ANNOTATIONS_MAX_BYTES:
        errs.append(too_long(path, ANNOTATIONS_MAX_BYTES))
    return errs


def _string_map(value: Any, path: FieldPath, errs: list[FieldError]) -> list[tuple[str, str]]:
    """The entries of a Go ``map[string]string`` (a null value is ""); wrong JSON types into ``errs``."""
    if value is None:
        return []
    if not isinstance(value, dict):
        errs.append(type_error(path, value, "object"))
        return []
    out = []
    for key, v in value.items():
        text = "" if v is None else v
        if isinstance(text, str):
            out.append((str(key), text))
        else:
            errs.append(type_error(path.key(str(key)), v, "string"))
    return out


def validate_finalizers(finalizers: Any, path: FieldPath) -> list[FieldError]:
    """Qualified names (Invalid at ``path``); a name without '/' must be a standard one (Invalid at
    ``path[i]``); orphan and foregroundDeletion exclude each other."""
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [type_error(path, finalizers, "array")]
    errs: list[FieldError] = []
    for i, f in enumerate(finalizers):
        text = "" if f is None else f
        if not isinstance(text, str):
            errs.append(type_error(path.index(i), f, "string"))
            continue
        errs += [invalid(path, text, m) for m in is_qualified_name(text)]
        if "/" not in text and text not in STANDARD_FINALIZERS:
            errs.append(invalid(path.index(i), text, "name is neither a standard finalizer name nor is it "
                                                     "fully qualified"))
    if ORPHAN in finalizers and FOREGROUND in finalizers:
        errs.append(invalid(path, finalizers, f"finalizer {ORPHAN} and {FOREGROUND} cannot be both set"))
    return errs


def without_duplicate_owners(refs: list[Any]) -> list[Any]:
    """The list the apiserver validates: an exact repeat of an earlier reference is dropped."""
    out: list[Any] = []
    for ref in refs:
        if _canonical_ref(ref) not in (_canonical_ref(r) for r in out):
            out.append(ref)
    return out


def _canonical_ref(ref: Any) -> Any:
    return {k: v for k, v in ref.items() if v is not None} if isinstance(ref, dict) else ref


def validate_owner_references(refs: Any, path: FieldPath) -> list[FieldError]:
    """apiVersion, kind, name and uid required; apiVersion ``[group/]version``; no core Event
    owner; at most one controller."""
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [type_error(path, refs, "array")]
    errs: list[FieldError] = []
    controller = ""
    for i, ref in enumerate(without_duplicate_owners(refs)):
        rpath = path.index(i)
        if not isinstance(ref, dict):
            errs.append(type_error(rpath, ref, "object"))
            continue
        errs += _owner_reference(ref, rpath)
        if ref.get("controller") is True:
            this = f"{ref.get('kind') or ''}/{ref.get('name') or ''}"
            if controller:
                errs.append(invalid(path, refs, 'Only one reference can have Controller set to true. '
                                                f'Found "true" in references for {controller} and {this}'))
            else:
                controller = this
    return errs


def _owner_reference(ref: dict[str, Any], path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = str(ref.get("apiVersion") or "")
    group, version, ok = _group_version(api_version)
    if not api_version:
        errs.append(required(path.child("apiVersion"), "must not be empty"))
    elif not ok or not version:
        errs.append(invalid(path.child("apiVersion"), api_version, "must be <group>/<version> or <version>"))
    for key in ("kind", "name", "uid"):
        if not ref.get(key):
            errs.append(required(path.child(key), "must not be empty"))
    if ok and group == "" and version == "v1" and ref.get("kind") == "Event":
        errs.append(invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
    return errs


def _group_version(text: str) -> tuple[str, str, bool]:
    """(group, version, parsed) as schema.ParseGroupVersion reads ``text``."""
    if text in ("", "/"):
        return "", "", True
    parts = text.split("/")
    if len(parts) == 1:
        return "", parts[0], True
    if len(parts) == 2:
        return parts[0], parts[1], True
    return "", "", False


# --- metadata of an object template (ResourceClaimTemplate.spec.metadata) -------------------

#: The Go name of each ObjectMeta field by its JSON name: a set field other than labels and
#: annotations is Forbidden under its Go name with the first letter lowered ("uID").
_TEMPLATE_FORBIDDEN = {"name": "name", "generateName": "generateName", "namespace": "namespace",
                       "selfLink": "selfLink", "uid": "uID", "resourceVersion": "resourceVersion",
                       "generation": "generation", "creationTimestamp": "creationTimestamp",
                       "deletionTimestamp": "deletionTimestamp",
                       "deletionGracePeriodSeconds": "deletionGracePeriodSeconds",
                       "ownerReferences": "ownerReferences", "finalizers": "finalizers",
                       "managedFields": "managedFields"}


def validate_template_meta(meta: Any, path: FieldPath) -> list[FieldError]:
    """ValidateTemplateObjectMeta: labels and annotations as an object's; every other field, when
    set (not its zero value), "cannot be set"."""
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [type_error(path, meta, "object")]
    errs = validate_annotations(meta.get("annotations"), path.child("annotations"))
    errs += validate_labels(meta.get("labels"), path.child("labels"))
    for key, go_name in _TEMPLATE_FORBIDDEN.items():
        if not _go_zero(key, meta.get(key)):
            errs.append(forbidden(path.child(go_name), "cannot be set"))
    return errs


#: ObjectMeta members that are pointers or slices in Go: decoded from any JSON value but null,
#: they are set (``0`` and ``[]`` included).
_GO_NILLABLE = frozenset({"deletionGracePeriodSeconds", "ownerReferences", "finalizers", "managedFields"})


def _go_zero(key: str, value: Any) -> bool:
    """Whether a template metadata member decodes to Go's zero value (absent or null; ``""`` for a
    string, ``0`` for ``generation``)."""
    if value is None:
        return True
    if key in _GO_NILLABLE:
        return False
    if key == "generation":
        return value == 0 and not isinstance(value, bool)
    return bool(value == "")


# --- UPDATE only ------------------------------------------------------------------------------


def _identity_update(meta: dict[str, Any], old: dict[str, Any], namespaced: bool, rules: MetaRules
                     ) -> list[FieldError]:
    """name, namespace and uid stay; the resourceVersion is the stored object's (a stale one is a
    409 Conflict upstream), or absent where the kind allows unconditional updates."""
    errs: list[FieldError] = []
    if (meta.get("name") or "") != (old.get("name") or ""):
        errs.append(immutable(AT["name"], meta.get("name")))
    if namespaced and meta.get("namespace") and meta.get("namespace") != old.get("namespace"):
        errs.append(immutable(AT["namespace"], meta.get("namespace")))
    if meta.get("uid") and meta.get("uid") != old.get("uid"):
        errs.append(immutable(AT["uid"], meta.get("uid")))
    # Only a stored object has a resourceVersion: two hand-written files for `review --old-file`
    # usually have none, and then there is nothing to compare.
    rv, old_rv = meta.get("resourceVersion"), old.get("resourceVersion")
    if old_rv and rv and rv != old_rv:
        errs.append(invalid(AT["resourceVersion"], rv, "the object has been modified (the stored "
                                                               f"resourceVersion is {old_rv})"))
    elif old_rv and not rv and not rules.unconditional_update:
        errs.append(invalid(AT["resourceVersion"], rv or "", "must be specified for an update"))
    return errs


def _deletion_update(meta: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """A deletion timestamp or grace period cannot be set by an UPDATE (the stored ones are kept);
    an object being deleted takes no new finalizers."""
    errs: list[FieldError] = []
    old_ts = old.get("deletionTimestamp")
    if not old_ts and meta.get("deletionTimestamp"):
        errs.append(immutable(AT["deletionTimestamp"], meta.get("deletionTimestamp")))
    grace, old_grace = meta.get("deletionGracePeriodSeconds"), old.get("deletionGracePeriodSeconds")
    if grace is not None and grace != old_grace:
        errs.append(immutable(AT["deletionGracePeriodSeconds"], grace))
    if old_ts:
        new = {f for f in meta.get("finalizers") or [] if isinstance(f, str)}
        added = sorted(new - {f for f in old.get("finalizers") or [] if isinstance(f, str)})
        if added:
            errs.append(forbidden(AT["finalizers"], "no new finalizers can be added if the object is being "
                                                            f"deleted, found new finalizers {added}"))
    return errs
