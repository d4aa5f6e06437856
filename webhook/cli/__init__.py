"""``dra-webhook`` (also ``kubectl-dra``): serve, review, test, simulate, explain, capacity, state
export, certs, gates, completion.

One module per command, one ``render``.

Each command module has ``register(subparsers)`` (its flags) and ``run(args) -> exit code``;
commands decide by calling the pipeline or the allocator and print through ``render``. Exit
codes: 0 success (allowed / feasible / served and shut down cleanly), 1 denied or infeasible,
2 bad input or usage (one-line reason on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from webhook import BadInput, ConfigError, __version__
from webhook.cli import capacity, certs, completion, explain, gates, review, serve, simulate, state, testsuite
from webhook.cli.common import EXIT_OK, EXIT_USAGE

COMMANDS = (serve, review, testsuite, simulate, explain, capacity, state, certs, gates, completion)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (also checked against the Helm chart's container args)."""
    p = argparse.ArgumentParser(
        prog="kubectl dra" if Path(sys.argv[0]).name == "kubectl-dra" else "dra-webhook",
        description="Validating and mutating admission webhook for Kubernetes DRA and "
                    "gang-scheduling objects (resource.k8s.io/v1, scheduling.k8s.io/v1beta1).")
    p.add_argument("--version", action="version", version=f"dra-webhook {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    p.set_defaults(parser=p)  # ``completion`` describes the parser it belongs to
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run one command, and turn our own errors into one line on stderr and exit 2."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except (BadInput, ConfigError) as e:
        print(f"dra-webhook {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - `| head`
        return EXIT_OK
