"""The older versions Kubernetes 1.37 can serve: resource.k8s.io v1beta1 and v1beta2.

Both are off by default and served with ``--runtime-config`` (deprecated since 1.35 and 1.36,
gone in 1.38 and 1.39). The apiserver converts either to v1 before it validates; we do the
same (``OlderVersion.to_v1``), judge the v1 object, and answer in the version that came in:
errors where the apiserver reports them for that version, a patch that applies to the object
as it was sent, warnings with that version's field paths. v1beta2 has v1's shape, so only
v1beta1 needs more than a new ``apiVersion`` (``v1beta1``, ``reporting``). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from webhook.fielderrors import FieldError
from webhook.versions import reporting, v1beta1

GROUP = "resource.k8s.io"
PREFERRED = "v1"
RELEASE = (1, 37)
"""The Kubernetes release whose apiserver we follow."""
Obj = dict[str, Any]


def _relabelled(obj: Obj) -> Obj:
    """v1beta2 -> v1: the same JSON under a new ``apiVersion`` (a new top level, the rest shared)."""
    return {**obj, "apiVersion": f"{GROUP}/{PREFERRED}"}


@dataclass(frozen=True, slots=True)
class OlderVersion:
    """One (kind, older version) the 1.37 apiserver converts to v1; every function is pure."""

    kind: str
    version: str
    deprecated: str
    """The release that deprecated it (the apiserver's warning names it)."""
    removed: str
    """The first release that no longer serves it."""
    to_v1: Callable[[Obj], Obj] = _relabelled
    """The v1 object the apiserver converts it to (new containers where the shape differs, the
    input untouched)."""
    defaults: Callable[[Obj], Obj] | None = None
    """The version's own defaults, applied on decode before conversion; None: v1's (the same shape)."""
    report: Callable[[str, list[FieldError]], list[FieldError]] = field(default=lambda kind, errs: errs)
    """(kind, errors found on the v1 object) -> the errors as reported for a request in this version."""
    patch: Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]] = field(default=lambda kind, ops: ops)
    """(kind, a v1 JSON Patch) -> the patch for the object in this version; may raise
    ``reporting.Untranslatable``."""
    warning_paths: Callable[[str, str], str] = field(default=lambda kind, text: text)
    """(kind, a warning of ours) -> the warning with this version's field paths."""

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    def deprecation(self) -> str:
        """The warning the apiserver sends with every request in this version ("" before the
        release that deprecates it)."""
        if tuple(int(x) for x in self.deprecated.split(".")) > RELEASE:
            return ""
        return (f"{self.api_version} {self.kind} is deprecated in v{self.deprecated}+, "
                f"unavailable in v{self.removed}+")


def _v1beta1(kind: str) -> OlderVersion:
    return OlderVersion(kind, "v1beta1", "1.35", "1.38", to_v1=v1beta1.to_v1, defaults=v1beta1.apply_defaults,
                        report=reporting.report, patch=reporting.patch, warning_paths=reporting.warning)


def _v1beta2(kind: str) -> OlderVersion:
    return OlderVersion(kind, "v1beta2", "1.36", "1.39")


#: (kind, version) -> how 1.37 serves it (releases from upstream's prerelease-lifecycle tags).
OLDER: Mapping[tuple[str, str], OlderVersion] = MappingProxyType({
    (o.kind, o.version): o for o in (
        *(_v1beta1(k) for k in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass")),
        *(_v1beta2(k) for k in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass")),
        OlderVersion("DeviceTaintRule", "v1beta2", "1.39", "1.42"),
    )})


def older(group: str, kind: str, version: str) -> OlderVersion | None:
    """How 1.37 serves ``group/version`` ``kind`` when that is an older version it converts to v1."""
    return OLDER.get((kind, version)) if group == GROUP else None


def as_stored(obj: Obj) -> Obj:
    """The v1 object the apiserver stores for ``obj`` when it is in an older version (its
    version's defaults, then the conversion); any other object as it is."""
    api_version = obj.get("apiVersion")
    group, _, version = api_version.rpartition("/") if isinstance(api_version, str) else ("", "", "")
    conv = older(group, str(obj.get("kind", "")), version)
    if conv is None:
        return obj
    return conv.to_v1(conv.defaults(obj) if conv.defaults is not None else obj)


def versions_of(kind: str) -> tuple[str, ...]:
    """The older versions of ``kind`` (newest first), as ``KindRules.versions`` lists them after v1."""
    return tuple(sorted((v for k, v in OLDER if k == kind), reverse=True))
