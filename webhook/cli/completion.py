"""``dra-webhook completion bash|zsh``: a shell completion script, generated from the parser.

Completes command names, each command's flags, the values of flags with fixed choices, and
file names elsewhere. zsh uses the same script through ``bashcompinit``.
"""

from __future__ import annotations

import argparse

from webhook.cli.common import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("completion", help="print a bash or zsh completion script",
                       description="Print a completion script for dra-webhook and kubectl-dra. Use: "
                                   "source <(dra-webhook completion bash), or for zsh put "
                                   "dra-webhook completion zsh > ~/.zfunc/_dra-webhook (or source it).")
    c.add_argument("shell", choices=["bash", "zsh"])
    c.set_defaults(run=run)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion function for ``parser`` (a ``complete -F`` for both program names)."""
    commands = _commands(parser)
    opts, values = [], []
    for name, sp in commands.items():
        flags = [s for a in sp._actions for s in a.option_strings]
        opts.append(f'    {name}) opts="{" ".join(flags)}" ;;')
        for a in sp._actions:
            if a.choices and a.option_strings:
                pattern = "|".join(f"{name}:{s}" for s in a.option_strings)
                values.append(f'    {pattern}) COMPREPLY=($(compgen -W "{" ".join(map(str, a.choices))}" -- "$cur")); '
                              "return ;;")
            elif a.choices and not a.option_strings:
                values.append(f'    {name}:{name}) COMPREPLY=($(compgen -W "{" ".join(map(str, a.choices))}" '
                              '-- "$cur")); return ;;')
    return "\n".join([
        "# dra-webhook completion (generated from the command line parser)",
        "_dra_webhook() {",
        '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="${COMP_WORDS[1]}" opts=""',
        '  if [ "$COMP_CWORD" -eq 1 ]; then',
        f'    COMPREPLY=($(compgen -W "{" ".join(commands)} --help --version" -- "$cur")); return',
        "  fi",
        '  case "$cmd:$prev" in', *values, "  esac",
        '  case "$cmd" in', *opts, "  esac",
        '  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur"));',
        '  else COMPREPLY=($(compgen -f -- "$cur")); fi',
        "}",
        "complete -o filenames -F _dra_webhook dra-webhook kubectl-dra",
    ]) + "\n"


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """The same completion for zsh, through its bash compatibility layer."""
    return "#compdef dra-webhook kubectl-dra\nautoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser)


def run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    print(bash_script(parser) if args.shell == "bash" else zsh_script(parser), end="")
    return EXIT_OK
