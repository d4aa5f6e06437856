"""dra-webhook: admission webhook for Kubernetes DRA and gang-scheduling objects.

Importing the package has no side effects. Every exception class of the package, in one place
(``tests/test_exceptions.py`` fails when a class is missing here):

    WebhookError              base of every error we raise on purpose to a caller outside
    ├── BadReview             the HTTP body is not a usable AdmissionReview (HTTP 4xx)
    ├── BadInput              a local file given to the CLI is not a Kubernetes object (exit 2)
    └── ConfigError           bad flags, gates or config file (exit 2 at start, rejected on reload)

    Raised and caught inside one area, each turned into data (a field error, a reason, a
    warning, a BadInput) before it leaves:
    ValueError
    ├── QuantityError         quantity.py: the text is not a Kubernetes quantity
    ├── PatchError            patch.py: a JSON Patch does not apply (a bug on our side)
    ├── WorkloadError         workloads/kinds.py: the object cannot make pods
    ├── Untranslatable        versions/reporting.py: a v1 patch op with no v1beta1 counterpart
    └── CelCompileError       cel/compile.py: a selector does not compile (or is too costly)
    RuntimeError
    └── CelRuntimeError       cel/compile.py: evaluating a selector on a device failed
    Exception
    ├── CelDeadlineExceeded   cel/compile.py: the evaluation's deadline passed
    ├── CheckError            cel/check.py: a compile-time type-check problem
    │   └── ProgramError      cel/check.py: it checks, but no program can be built from it
    ├── NativeError           cel/native.py: a CEL runtime error on the native path
    ├── NativeFallback        cel/native.py: this device needs celpy (control flow)
    ├── AllocError            allocator/claims.py: a fatal outcome, the attempt aborts
    ├── BudgetExceeded        allocator/claims.py: the step budget or deadline ran out
    ├── CapacityError         allocator/capacity.py: a request that cannot be represented
    └── _OutOfTime            defaulting.py: the deadline passed while planning defaults

User objects that break a rule are never exceptions: rules return field errors. A value that
says why something failed without being raised (``admission.decode.DecodeFailure``) is not an
exception and is not listed.
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
