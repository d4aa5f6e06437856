"""Import boundaries: rules, the allocator and the pipeline never pull in Flask, kubernetes or gunicorn."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

PURE = ["webhook.fielderrors", "webhook.quantity", "webhook.gates", "webhook.patch",
        "webhook.rules", "webhook.rules.names", "webhook.rules.registry", "webhook.rules.slices.resourceslice",
        "webhook.rules.claims.resourceclaim", "webhook.rules.claims.resourceclaimtemplate",
        "webhook.rules.scheduling.podgroup", "webhook.rules.scheduling.workload",
        "webhook.rules.scheduling.pod", "webhook.admission", "webhook.admission.pipeline", "webhook.allocator",
        "webhook.allocator.feasibility", "webhook.cel", "webhook.defaulting"]
FORBIDDEN = ("flask", "kubernetes", "gunicorn", "werkzeug")


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_do_not_import_io_frameworks(module):
    assert importlib.util.find_spec(module) is not None, f"{module} is missing"
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
