"""Driver config schemas: JSON Schemas a DRA driver ships for the objects inside opaque ``parameters``.

The apiserver checks only that ``opaque.parameters`` is a JSON object under 10 KiB; what is in it
is the driver's business, and a driver that gets parameters it cannot use fails the pod at
``NodePrepareResources`` on the node, long after admission. A driver may declare them instead: a
directory per driver with one JSON Schema per kind of parameters object,

    DIR/<driver name>/<any name>.json      (or .yaml / .yml; a ConfigMap mounted there works)

each saying which objects it is for the way such a schema does anyway, with a constant
``apiVersion`` and ``kind`` (``properties.apiVersion.const``, ``properties.kind.const``; a
one-value ``enum`` works too). The webhook checks the parameters of claims, claim templates and
DeviceClasses against the schema of (driver, apiVersion, kind) and **denies** a violation with
field causes inside ``parameters`` (``spec.devices.config[0].opaque.parameters.sharing.strategy``),
as the driver's own admission webhook would (``docs/driver-ci.md`` says why it denies). Parameters
of a driver that ships schemas, but none for that apiVersion/kind, get a ``driver config:``
warning (the set may simply be older than the driver); drivers without schemas are not checked.
Loading is the only I/O (``load_driver_schemas``, at start and on config reload): a schema that
is not valid JSON Schema, or does not say what it is for, is a ``ConfigError`` naming the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from webhook import ConfigError
from webhook.fielderrors import FieldError, FieldPath, invalid, not_supported, required, type_invalid
from webhook.rules.kind import OpaqueParameters

SUFFIXES = (".json", ".yaml", ".yml")
FILES_MAX = 1000
"""Schemas in one set; more is refused at load (a wrong directory, not a driver's set)."""
ERRORS_MAX = 20
"""Causes per parameters object (a denial with more says how many were left out)."""
PREFIX = "driver config: "

Key = tuple[str, str, str]
"""(driver, apiVersion, kind)."""


@dataclass(frozen=True)
class DriverSchemas:
    """A loaded schema set: one checked validator per (driver, apiVersion, kind)."""

    source: str = ""
    validators: Mapping[Key, Validator] = field(default_factory=dict)
    digest: str = ""
    """sha256 of the files' names and contents (``/configz``: which set is in force)."""

    @property
    def drivers(self) -> frozenset[str]:
        return frozenset(k[0] for k in self.validators)

    def public(self) -> dict[str, Any]:
        """What ``/configz`` shows: the directory, the digest and the keys."""
        return {"directory": self.source, "digest": self.digest,
                "schemas": sorted("/".join(k) for k in self.validators)}


def _hidden(rel: Path) -> bool:
    """A ConfigMap volume's bookkeeping (``..data``, ``..2026_01_01_00_00_00.1``) or a dot-file."""
    return any(part.startswith(".") for part in rel.parts)


def load_driver_schemas(directory: str) -> DriverSchemas:
    """Load and check every schema under ``directory``. ConfigError (one line, naming the file)
    for an unreadable directory or file, a schema outside a driver's directory, one that is not a
    valid JSON Schema of the draft it declares (2020-12 when it declares none), one that does
    not say its apiVersion and kind, and two for the same (driver, apiVersion, kind)."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"driver schemas: {directory}: not a directory")
    files = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and not _hidden(p.relative_to(root))
                   and p.is_file())
    if len(files) > FILES_MAX:
        raise ConfigError(f"driver schemas: {directory}: {len(files)} files, more than {FILES_MAX}")
    digest = hashlib.sha256()
    validators: dict[Key, Validator] = {}
    where: dict[Key, Path] = {}
    for path in files:
        rel = path.relative_to(root)
        if len(rel.parts) < 2:
            raise ConfigError(f"driver schemas: {path}: a schema belongs in the directory of its driver "
                              f"({directory}/<driver name>/{rel})")
        try:
            text = path.read_text(encoding="utf-8")
            schema = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as e:
            raise ConfigError(f"driver schemas: {path}: not readable JSON/YAML: {e}".splitlines()[0]) from None
        validator = _validator(schema, path)
        key = (rel.parts[0], *_subject(schema, path))
        if key in where:
            raise ConfigError(f"driver schemas: {path}: a second schema for {'/'.join(key)} (the first: {where[key]})")
        validators[key], where[key] = validator, path
        digest.update(str(rel).encode() + b"\0" + text.encode() + b"\0")
    return DriverSchemas(str(root), validators, digest.hexdigest()[:16])


def fingerprint(directory: str) -> str:
    """A cheap hash of the set's files (names, sizes, modification times): it changes when a
    ConfigMap update or an edit changes the set, so the config watcher reloads it."""
    root = Path(directory)
    h = hashlib.sha256()
    try:
        for p in sorted(root.rglob("*")):
            if p.suffix in SUFFIXES and not _hidden(p.relative_to(root)) and p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except OSError:
        return ""
    return h.hexdigest()[:16]


def _validator(schema: Any, path: Path) -> Validator:
    if not isinstance(schema, dict):
        raise ConfigError(f"driver schemas: {path}: not a JSON Schema (a schema is an object)")
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as e:
        at = "/".join(map(str, e.absolute_path)) or "the root"
        raise ConfigError(f"driver schemas: {path}: not a valid JSON Schema at {at}: "
                          f"{e.message}".splitlines()[0][:300]) from None
    validator: Validator = cls(schema)
    return validator


def _subject(schema: dict[str, Any], path: Path) -> tuple[str, str]:
    """(apiVersion, kind) a schema is for: the constants it requires of them."""
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    got = []
    for member in ("apiVersion", "kind"):
        spec: dict[str, Any] = props[member] if isinstance(props.get(member), dict) else {}
        enum = spec.get("enum")
        value = spec.get("const", enum[0] if isinstance(enum, list) and len(enum) == 1 else None)
        if not isinstance(value, str):
            raise ConfigError(f"driver schemas: {path}: say which objects it is for: properties.{member}.const "
                              f"(e.g. {{\"properties\": {{\"{member}\": {{\"const\": \"...\"}}}}}})")
        got.append(value)
    return got[0], got[1]


# ---------------------------------------------------------------- checking


def check(schemas: DriverSchemas, entries: Sequence[OpaqueParameters],
          unchanged: Sequence[OpaqueParameters] = ()) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) for the opaque parameters of one object.

    ``unchanged``: the stored object's entries on an UPDATE; an entry with the same path, driver
    and parameters as a stored one is not judged again (ratcheting: a new schema set never denies
    an edit that leaves those parameters alone). Never raises on user input.
    """
    stored = {(e.path, e.driver, json.dumps(e.parameters, sort_keys=True)) for e in unchanged}
    errors: list[FieldError] = []
    notes: list[str] = []
    for entry in entries:
        if entry.driver not in schemas.drivers:
            continue
        if (entry.path, entry.driver, json.dumps(entry.parameters, sort_keys=True)) in stored:
            continue
        params = entry.parameters
        api_version = params.get("apiVersion") if isinstance(params, dict) else None
        kind = params.get("kind") if isinstance(params, dict) else None
        validator = schemas.validators.get((entry.driver, str(api_version), str(kind)))
        if validator is None:
            known = sorted(f"{v}/{k}" for d, v, k in schemas.validators if d == entry.driver)
            notes.append(f"{PREFIX}{entry.path}: {entry.driver} has no schema for apiVersion {api_version!s} "
                         f"kind {kind!s} (it has {', '.join(known)}); not checked")
            continue
        errors.extend(_errors(validator, params, entry.path))
    return errors, notes


def _errors(validator: Validator, params: Any, base: FieldPath) -> list[FieldError]:
    found = sorted(validator.iter_errors(params), key=lambda e: [str(p) for p in e.absolute_path])
    out: list[FieldError] = []
    for e in found:
        out.extend(_field_errors(e, base))
    if len(out) > ERRORS_MAX:
        return out[:ERRORS_MAX - 1] + [invalid(base, "<value omitted>",
                                               f"and {len(out) - ERRORS_MAX + 1} more schema violations")]
    return out


def _path(base: FieldPath, parts: Sequence[str | int]) -> FieldPath:
    p = base
    for part in parts:
        p = p.index(part) if isinstance(part, int) else p.child(part)
    return p


def _field_errors(e: ValidationError, base: FieldPath) -> list[FieldError]:
    """One jsonschema error as the apiserver's kinds of field error, at its path inside ``base``."""
    at = _path(base, list(e.absolute_path))
    if e.validator == "required" and isinstance(e.instance, dict) and isinstance(e.validator_value, list):
        return [required(at.child(str(name))) for name in e.validator_value if name not in e.instance]
    if e.validator == "enum" and isinstance(e.validator_value, list):
        return [not_supported(at, e.instance, [str(v) for v in e.validator_value])]
    if e.validator == "type":
        return [type_invalid(at, e.instance, f"must be of type {e.validator_value}")]
    shown = "<value omitted>" if isinstance(e.instance, dict | list) else e.instance
    return [invalid(at, shown, f"{e.message} (the driver's config schema)"[:500])]
