"""Settings: one frozen snapshot built from flags, environment and an optional YAML config file.

``Settings.from_env(env)`` takes the environment as an argument so tests pass a dict. A bad
value raises ``ConfigError``. ``load_config_file`` reads the ``--config`` YAML (feature gates,
limits, switches, the driver config schemas' directory); ``ConfigWatcher`` re-reads it when its
content (or the schema set's) changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from webhook import ConfigError
from webhook.driverschemas import DriverSchemas, load_driver_schemas
from webhook.gates import FeatureGates, parse_spec

MiB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """Everything the pipeline and the server need to know; defaults are the single source of truth."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    """Feature gates (1.37 defaults unless overridden)."""
    max_body_bytes: int = 3 * MiB
    """Largest request body accepted; larger bodies get HTTP 413 (the apiserver's own limit)."""
    max_json_depth: int = 100
    """Deepest JSON nesting accepted in a request body; deeper bodies get HTTP 400."""
    default_timeout_seconds: float = 10.0
    """Request deadline when the apiserver does not send ``?timeout=`` (its default is 10 s)."""
    deadline_margin_seconds: float = 0.5
    """Feasibility work stops this long before the request deadline."""
    max_warnings: int = 10
    """Warnings per response; the rest are summarised in one line."""
    max_warning_length: int = 120
    """Characters per warning (the apiserver's guidance)."""
    feasibility: bool = True
    """Add ``feasibility:`` warnings for claims, claim templates and PodGroups."""
    capacity_defaulting: bool = True
    """Write default and rounded capacity requests into claims on ``/mutate``."""
    feasibility_timeout_seconds: float = 2.0
    """At most this long per feasibility check, however long the request deadline is."""
    allocator_max_steps: int = 200_000
    """Search-step budget of one feasibility check (the deadline applies as well)."""
    state_stale_after_seconds: float = 60.0
    """Staleness bound of a live cluster state: a kind not known current for longer is stale
    (``dra_webhook_state_stale``, a note in feasibility warnings). Must exceed the watch timeout."""
    state_watch_timeout_seconds: int = 30
    """``timeoutSeconds`` of each WATCH of the live state: the apiserver ends a quiet stream then
    (after a bookmark), which proves the connection alive well within the staleness bound."""
    log_objects: bool = False
    """Log whole objects (debugging only: objects may hold sensitive data)."""
    driver_schemas: DriverSchemas | None = None
    """Drivers' JSON Schemas for opaque config parameters (``driverschemas.py``); None: none."""
    config_file: str | None = None
    """The ``--config`` file these settings were read from, if any."""
    config_hash: str = ""
    """sha256 of the config file content (shown by /configz)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, base: Settings | None = None) -> Settings:
        """Apply ``DRA_WEBHOOK_*`` variables on top of ``base`` (or the defaults)."""
        env = os.environ if env is None else env
        s = base or cls()
        if "DRA_WEBHOOK_FEATURE_GATES" in env:
            s = replace(s, gates=FeatureGates.parse(env["DRA_WEBHOOK_FEATURE_GATES"], s.gates))
        if "DRA_WEBHOOK_CONFIG" in env and env["DRA_WEBHOOK_CONFIG"]:
            s = load_config_file(env["DRA_WEBHOOK_CONFIG"], s)
        return s

    def with_options(self, options: Mapping[str, Any]) -> Settings:
        """Settings with the given fields replaced, type-checked; ConfigError on a bad one."""
        known = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for key, value in options.items():
            f = known.get(key)
            if f is None or key in ("gates", "config_file", "config_hash", "driver_schemas"):
                raise ConfigError(f"unknown setting {key!r}")
            default = getattr(Settings(), key)
            changes[key] = _coerce(key, value, type(default))
        out = replace(self, **changes)
        if out.state_stale_after_seconds <= out.state_watch_timeout_seconds:
            raise ConfigError(f"stateStaleAfterSeconds ({out.state_stale_after_seconds:g}) must be greater than "
                              f"stateWatchTimeoutSeconds ({out.state_watch_timeout_seconds}): a quiet, healthy "
                              "watch proves itself alive once per watch timeout")
        return out

    def public(self) -> dict[str, Any]:
        """The effective settings as JSON-ready data (for /configz and ``gates``)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name not in ("gates", "driver_schemas")}
        d["featureGates"] = self.gates.as_dict()
        d["driverSchemas"] = self.driver_schemas.public() if self.driver_schemas is not None else None
        return d

    def with_driver_schemas(self, directory: str | None) -> Settings:
        """These settings with the schema set loaded from ``directory`` (None: no schemas).
        ConfigError (one line) when the set cannot be loaded."""
        return replace(self, driver_schemas=load_driver_schemas(directory) if directory else None)


def _coerce(key: str, value: Any, typ: type) -> Any:
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: must be true or false, got {value!r}")
    if typ in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: must be a number, got {value!r}")
        if value <= 0 and key not in ("deadline_margin_seconds",):
            raise ConfigError(f"{key}: must be greater than zero, got {value!r}")
        if value < 0:
            raise ConfigError(f"{key}: must not be negative, got {value!r}")
        return typ(value)
    if typ is str or value is None:
        return value
    raise ConfigError(f"{key}: unsupported value {value!r}")  # pragma: no cover


# Config-file keys are camelCase, like the chart values they come from.
_FILE_KEYS = {
    "maxBodyBytes": "max_body_bytes",
    "maxJsonDepth": "max_json_depth",
    "defaultTimeoutSeconds": "default_timeout_seconds",
    "deadlineMarginSeconds": "deadline_margin_seconds",
    "maxWarnings": "max_warnings",
    "maxWarningLength": "max_warning_length",
    "feasibility": "feasibility",
    "capacityDefaulting": "capacity_defaulting",
    "allocatorMaxSteps": "allocator_max_steps",
    "feasibilityTimeoutSeconds": "feasibility_timeout_seconds",
    "logObjects": "log_objects",
    "stateStaleAfterSeconds": "state_stale_after_seconds",
    "stateWatchTimeoutSeconds": "state_watch_timeout_seconds",
}


def parse_config(text: str, base: Settings, origin: str = "config") -> Settings:
    """Settings from the YAML text of a config file, over ``base``. ConfigError when bad."""
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{origin}: not valid YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: must be a mapping")
    gates_spec = data.pop("featureGates", None) or {}
    schemas = data.pop("driverSchemas", None)
    if schemas is not None and not isinstance(schemas, str):
        raise ConfigError(f"{origin}: driverSchemas must be a directory path")
    if not isinstance(gates_spec, (dict, str)):
        raise ConfigError(f"{origin}: featureGates must be a mapping of name: true|false")
    options: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _FILE_KEYS:
            raise ConfigError(f"{origin}: unknown key {key!r} (known: driverSchemas, featureGates, "
                              + ", ".join(sorted(_FILE_KEYS)) + ")")
        options[_FILE_KEYS[key]] = value
    gates = base.gates.with_overrides(parse_spec(gates_spec))
    s = replace(base, gates=gates).with_options(options)
    if schemas is not None:
        s = s.with_driver_schemas(schemas)
    return replace(s, config_hash=hashlib.sha256(text.encode()).hexdigest()[:16])


def load_config_file(path: str, base: Settings) -> Settings:
    """Read ``path`` and apply it over ``base``. ConfigError when unreadable or bad."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from None
    return replace(parse_config(text, base, path), config_file=path)


def settings_fingerprint(s: Settings) -> str:
    """A short hash of the effective settings (changes when anything relevant changes)."""
    blob = json.dumps(s.public(), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
