"""Command-line options declared once: each a field of a frozen dataclass, with its flag, help, group and argparse
settings in the field's metadata (`option`). Every command of the project builds its parser from such a class
(`add_options`) and reads what was parsed back into it (`read_options`), and its help shows each default from the
field itself (`shown_help`), so that no help text repeats a value set elsewhere.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any


def option(
    default: Any,
    help: str,
    *,
    group: str | None = None,
    flag: str | None = None,
    positional: bool = False,
    parse: Callable[[Any], Any] | None = None,
    factory: Callable[[], Any] | None = None,
    more: Mapping[str, Any] | None = None,
    **argparse_options: Any,
) -> Any:
    """A field of an options dataclass: `flag` defaults to the field's name with dashes (`positional`: an argument
    without one); `parse` turns what argparse gives into the field's value; `factory` makes a mutable default; `more`,
    what a command keeps of its own about the option; the rest goes to argparse's add_argument."""
    metadata = {
        "help": help,
        "group": group,
        "flag": flag,
        "positional": positional,
        "parse": parse,
        "argparse": argparse_options,
        **(more or {}),
    }
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def levels_option(help: str, absent: tuple[float, ...] | None = None, **settings: Any) -> Any:
    """--levels, as every command takes it: levels in percent, in order and once each; the flag alone asks for
    none; without it, `absent` (None: the levels of what the command reads)."""
    return _numbers_option(help, absent, "LEVEL", **settings)


def quantiles_option(help: str, absent: tuple[float, ...] | None = None, **settings: Any) -> Any:
    """--quantiles, as every command takes it: quantiles in (0, 1), in order and once each; the flag alone asks for
    none; without it, `absent`."""
    return _numbers_option(help, absent, "Q", **settings)


def _numbers_option(help: str, absent: tuple[float, ...] | None, metavar: str, **settings: Any) -> Any:
    return option(
        absent,
        help,
        parse=lambda values: absent if values is None else tuple(sorted(set(values))),
        type=float,
        nargs="*",
        metavar=metavar,
        **settings,
    )


def flag_of(field: dataclasses.Field[Any]) -> str | None:
    """The option's flag (None for a positional argument)."""
    if field.metadata["positional"]:
        return None
    return field.metadata["flag"] or "--" + field.name.replace("_", "-")


def default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is dataclasses.MISSING:
        return field.default_factory()  # type: ignore[operator]  # a field has one or the other
    return field.default


def shown_help(field: dataclasses.Field[Any]) -> str:
    """The field's help text with its default where it has one to show."""
    return with_default(field.metadata["help"], default_of(field))


def with_default(text: str, default: Any, always: bool = False) -> str:
    """`text` and '(default: X)', unless the default is None, False or empty and not `always` shown."""
    if not always and (
        default is None or default is False or (isinstance(default, (tuple, list, dict)) and not default)
    ):
        return text
    shown = (" ".join(map(str, default)) or "none") if isinstance(default, (tuple, list)) else default
    return f"{text} (default: {shown})"


def add_options(
    parser: argparse.ArgumentParser, options: type, groups: Mapping[str, str] | None = None
) -> argparse.ArgumentParser:
    """One argument per field of the dataclass `options`, in the section of its group (`groups`: each group's title,
    in the order --help shows them)."""
    sections = {name: parser.add_argument_group(title) for name, title in (groups or {}).items()}
    for field in dataclasses.fields(options):
        settings = dict(field.metadata["argparse"])
        flag = flag_of(field)
        if flag is None:  # positional arguments come first in --help, in a section of their own
            parser.add_argument(field.name, help=shown_help(field), **settings)
            continue
        default = None if field.metadata["parse"] else default_of(field)
        where = sections.get(field.metadata["group"], parser)
        where.add_argument(flag, dest=field.name, default=default, help=shown_help(field), **settings)
    return parser


def read_options(options: type, namespace: argparse.Namespace) -> Any:
    """The instance of the dataclass `options` that a parsed command line gives, each field through its `parse`."""
    values = {}
    for field in dataclasses.fields(options):
        value = getattr(namespace, field.name)
        parse = field.metadata["parse"]
        values[field.name] = parse(value) if parse else value
    return options(**values)
