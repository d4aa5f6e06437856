"""``dra-webhook gates``: every known gate, its 1.37 default, the value in effect, its effect here."""

from __future__ import annotations

import argparse

from webhook.cli import render
from webhook.cli.common import EXIT_OK, GATES_HELP, build_settings
from webhook.cli.results import GateRow
from webhook.gates import KNOWN


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    g = sub.add_parser("gates", help="list the known feature gates",
                       description="Every known gate: stage, Kubernetes 1.37 default, the value in "
                                   "effect here and what it changes in this tool.")
    g.add_argument("--feature-gates", metavar="SPEC", help=GATES_HELP)
    g.add_argument("--config", metavar="FILE")
    g.add_argument("-o", "--output", choices=["text", "json"], default="text")
    g.set_defaults(run=run)


def gate_rows(feature_gates: str | None, config: str | None) -> list[GateRow]:
    """One row per known gate with the value the flags and config file put in effect."""
    s = build_settings(feature_gates, config)
    return [{"name": g.name.value, "stage": g.stage, "default": g.default, "locked": g.locked,
             "enabled": s.gates.enabled(g.name), "effect": g.effect} for g in KNOWN.values()]


def run(args: argparse.Namespace) -> int:
    rows = gate_rows(args.feature_gates, args.config)
    print(render.gates_json(rows) if args.output == "json" else render.gates_text(rows))
    return EXIT_OK
