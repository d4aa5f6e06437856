"""What the image `make image` builds holds: the webhook and its runtime dependencies, as a
non-root user, under the size target; no compiler, no pip, no test package.
"""

from __future__ import annotations

import json

import pytest

from tests.container.pod import ULIMITS, podman

pytestmark = pytest.mark.e2e

SIZE_LIMIT = 200_000_000
"""Bytes, uncompressed, as podman counts them (docs/install.md#image gives the measured size)."""
TEST_ONLY = ("pytest", "hypothesis", "jsonpatch", "helm_python", "kubernetes_validate", "ruff", "mypy", "pip",
             "setuptools")
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "make", "ld", "as", "rustc", "go")


def _python(image: str, code: str) -> str:
    r = podman("run", "--rm", *ULIMITS, "--network", "none", "--read-only", "--mount", "type=tmpfs,destination=/tmp",
               "--env", "PROMETHEUS_MULTIPROC_DIR=/tmp",
               "--entrypoint", "python", image, "-c", code, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_image_runs_the_cli_as_the_nonroot_user(image: str) -> None:
    config = json.loads(podman("image", "inspect", image, "--format", "{{json .Config}}").stdout)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["dra-webhook"]
    r = podman("run", "--rm", *ULIMITS, "--network", "none", "--read-only", image, "--version", check=False)
    assert (r.returncode, r.stdout.strip()) == (0, "dra-webhook 0.1.0"), r.stderr


def test_the_image_is_under_the_size_target(image: str) -> None:
    size = int(podman("image", "inspect", image, "--format", "{{.Size}}").stdout)
    assert size < SIZE_LIMIT, f"{size / 1e6:.0f} MB"


def test_no_compiler_no_pip_no_test_package(image: str) -> None:
    out = _python(image, "import importlib.util, shutil\n"
                         f"print([t for t in {COMPILERS!r} if shutil.which(t)])\n"
                         f"print([m for m in {TEST_ONLY!r} if importlib.util.find_spec(m)])")
    assert out.splitlines() == ["[]", "[]"], out


def test_every_webhook_module_imports_in_the_image(image: str) -> None:
    """What the build removed (kubernetes.aio and the aiohttp stack) is never imported."""
    out = _python(image, "import importlib, pkgutil, sys, webhook\n"
                         "names = [m.name for m in pkgutil.walk_packages(webhook.__path__, 'webhook.')"
                         " if not m.name.endswith('__main__')]\n"
                         "[importlib.import_module(n) for n in names]\n"
                         "import kubernetes.client, kubernetes.config\n"
                         "print(len(names), 'kubernetes.aio' in sys.modules, 'aiohttp' in sys.modules)")
    count, aio, aiohttp = out.split()
    assert int(count) > 50 and (aio, aiohttp) == ("False", "False"), out
