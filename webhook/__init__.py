"""dra-webhook: admission webhook for Kubernetes DRA and gang-scheduling objects.

Importing the package has no side effects. The exception tree, in one place:

    WebhookError              base of every error we raise on purpose
    ├── BadReview             the HTTP body is not a usable AdmissionReview (HTTP 4xx)
    ├── BadInput              a local file given to the CLI is not a Kubernetes object (exit 2)
    └── ConfigError           bad flags, gates or config file (exit 2 at start, rejected on reload)

User objects that break a rule are never exceptions: rules return field errors.
"""

from __future__ import annotations

__version__ = "0.1.0"


class WebhookError(Exception):
    """Base class of the errors this package raises on purpose."""


class BadReview(WebhookError):
    """The request body is not an AdmissionReview we can answer; carries an HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class BadInput(WebhookError):
    """A file given on the command line is not YAML/JSON or not a Kubernetes object."""


class ConfigError(WebhookError):
    """Invalid settings: unknown feature gate, bad value, unreadable config file."""
