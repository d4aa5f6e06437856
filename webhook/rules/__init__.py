"""Pure rules per kind. Each kind module defines:

    GROUP, VERSIONS, KIND, NAMESPACED
    apply_defaults(obj) -> obj          the defaults the apiserver applies before admission (CLI only)
    mutate(obj, ctx) -> Mutation        gate strips and normalisation (JSON Patch ops + warnings)
    validate(obj, ctx) -> [FieldError]  CREATE (and the base of UPDATE)
    validate_update(obj, old, ctx)      UPDATE: immutability + ratcheting
    warnings(obj, ctx) -> [str]         non-fatal notes (e.g. upper-case driver names)

Rules never import Flask or kubernetes, never touch the network and never raise on user input.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# (group, kind) -> module under webhook.rules
_MODULES: dict[tuple[str, str], str] = {
    ("resource.k8s.io", "ResourceSlice"): "resourceslice",
    ("resource.k8s.io", "ResourceClaim"): "resourceclaim",
    ("resource.k8s.io", "ResourceClaimTemplate"): "resourceclaimtemplate",
    ("resource.k8s.io", "DeviceClass"): "deviceclass",
    ("scheduling.k8s.io", "PodGroup"): "podgroup",
    ("scheduling.k8s.io", "Workload"): "workload",
    ("", "Pod"): "pod",
}

SERVED_VERSIONS = {"resource.k8s.io": ("v1",), "scheduling.k8s.io": ("v1beta1",), "": ("v1",)}


def rules_for(group: str, kind: str) -> ModuleType | None:
    """The rules module for a kind, or None when we have no rules for it."""
    name = _MODULES.get((group, kind))
    if name is None:
        return None
    try:
        return importlib.import_module(f"webhook.rules.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"webhook.rules.{name}":
            return None
        raise

