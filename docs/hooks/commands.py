"""The Commands page's reference, rendered from each command's own argparse parser when the site builds, so that
it cannot drift from the code. A line `<!-- options: python -m sweeps.run -->` in a page becomes that command's
usage and a table of its options. tests/test_docs.py reads COMMANDS too."""

from __future__ import annotations

import argparse
import importlib
import re

# Each documented command and the function that builds its parser.
COMMANDS = {
    "python -m sweeps.run": "sweeps.run",
    "python -m sweeps.report": "sweeps.report",
    "python -m sweeps.refit": "sweeps.refit",
    "python -m sweeps.forecast": "sweeps.forecast",
    "python -m forecaster.fit": "forecaster.fit",
}
MARKER = re.compile(r"^<!-- options: (?P<command>[^>]+?) -->$", re.MULTILINE)


def parser_of(command: str) -> argparse.ArgumentParser:
    return importlib.import_module(COMMANDS[command]).build_parser()


def flags_of(command: str) -> set[str]:
    """Every option string of the command's parser but --help."""
    return {
        flag for action in parser_of(command)._actions for flag in action.option_strings if flag.startswith("--")
    } - {"--help"}


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ").replace("%%", "%")


def resumable_flags(command: str) -> set[str]:
    """The options a `--resume` of sweeps.run may change (declared in sweeps/plan/options.py)."""
    if command != "python -m sweeps.run":
        return set()
    from sweeps.plan.options import declared, flag_of

    return {flag_of(field) for field in declared() if field.metadata["resumable"]}


def options_table(command: str) -> str:
    parser = parser_of(command)
    resumable = resumable_flags(command)
    usage = parser.format_usage().removeprefix("usage: ").strip()
    rows = ["| option | what it does | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        names = ", ".join(action.option_strings) or action.dest.upper()
        if action.metavar and action.option_strings:
            names += f" {action.metavar if isinstance(action.metavar, str) else ' '.join(action.metavar)}"
        elif action.choices and action.option_strings:
            names += " {" + ",".join(map(str, action.choices)) + "}"
        default = action.default
        shown = (
            ""
            if default in (None, False, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction)
            else default
        )
        help_text = (action.help or "") % {"default": default} if action.help and "%(" in action.help else action.help
        if resumable & set(action.option_strings):
            help_text = f"{help_text} (may change on `--resume`)"
        rows.append(f"| `{_cell(names)}` | {_cell(help_text)} | {_cell(str(shown)) if shown != '' else ''} |")
    return f"```text\n{usage}\n```\n\n" + "\n".join(rows)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return MARKER.sub(lambda match: options_table(match["command"]), markdown)
