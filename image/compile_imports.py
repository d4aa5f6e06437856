"""Bytecode for exactly what the server imports (run in the Dockerfile's build stage).

The image runs with a read-only root filesystem, so Python cannot cache bytecode at run time:
modules without a ``.pyc`` are compiled again by every worker at every start. Compiling the whole
virtualenv would ship bytecode for the ~30 MB of generated Kubernetes API and model classes the
server never loads (the client loads them lazily). So: import what ``dra-webhook serve`` and the
CLI import, then compile those files (hash-checked, so the copy into the final stage cannot make
them stale). Prints how many modules it compiled.
"""

from __future__ import annotations

import importlib
import py_compile
import sys
import sysconfig

ENTRY_POINTS = ("webhook.cli", "webhook.server.runner", "webhook.server.app", "webhook.server.metrics",
                "webhook.state.live", "kubernetes.config")


def main() -> int:
    for name in ENTRY_POINTS:
        importlib.import_module(name)
    import kubernetes.client

    from webhook.state.reflector import KIND_APIS
    for api in KIND_APIS.values():  # the API classes the live state lists and watches with
        getattr(kubernetes.client, api.api_class)
    site = sysconfig.get_paths()["purelib"]
    files = sorted({m.__file__ for m in list(sys.modules.values())
                    if (getattr(m, "__file__", None) or "").startswith(site) and m.__file__.endswith(".py")})
    for f in files:
        py_compile.compile(f, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    print(f"compiled {len(files)} modules under {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
