"""Command-line options made from a config dataclass, so that each training default and its help are written once.

A config field declares its default and help with :func:`setting` (a plain
``dataclasses.field(default=..., metadata={"help": ...})`` works the same), and
:func:`options_from` turns the fields of a config class into click options:

- ``--name-with-dashes``, passed to the command as the field's name;
- the type from the annotation (``Optional[X]`` as ``X``, ``Path`` as a click
  path giving a ``Path``), else from the default;
- ``--flag`` for a boolean that defaults to false, ``--flag/--no-flag`` for one
  that defaults to true;
- a ``click.Choice`` where the field's metadata lists ``choices``, a click path
  (a file, a folder, existing or not) where it says ``path``, a range where it
  says ``bounds``;
- a repeatable option for a list field, given to the command as a list, and for
  a tuple field, given as a tuple;
- required where the field has no default.

``python -m training`` then builds its configs from what the options give, and
tests/training/test_training_cli.py checks that every default is the dataclass's.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar

import click

DEVICES = ("auto", "cpu", "cuda")
SEED = 1
ALL_CORES = os.cpu_count() or 1

Command = TypeVar("Command", bound=Callable[..., Any])


#: What a ``path`` setting names, as click checks it.
PATH_KINDS = {"file": {"dir_okay": False}, "folder": {"file_okay": False}, "any": {}}


def setting(default: Any = dataclasses.MISSING, help: str = "", *, choices: Sequence[str] = (), path: str = "",
            exists: bool = False, bounds: tuple = (), metavar: str = "") -> Any:
    """A dataclass field with its command-line help and what its values may be: one of ``choices``; a file-system
    path (``path``: "file", "folder" or "any"), ``exists`` already where it must; a number within ``bounds``
    (lowest, highest; None: no bound; a third item True: the lowest itself excluded); ``metavar`` names its value
    in the help. A list default is copied per instance."""
    if path and path not in PATH_KINDS:
        raise ValueError(f"path is one of {', '.join(PATH_KINDS)}, not {path!r}")
    given = {"choices": tuple(choices), "path": path, "exists": exists, "bounds": tuple(bounds), "metavar": metavar}
    metadata = {"help": help, **{key: value for key, value in given.items() if value}}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def device_setting(help: str = "Where PyTorch runs: auto (CUDA where PyTorch sees a device, else the CPU), cpu "
                               "or cuda.") -> Any:
    """The ``--device`` of every training command: one set of choices, one default."""
    return setting("auto", help, choices=DEVICES)


def seed_setting(help: str) -> Any:
    """The ``--seed`` of every training command: one default; ``help`` says what it seeds there."""
    return setting(SEED, help)


class ConfigOption(click.Option):
    """A click option made from a config field; ``config`` and ``field`` say which (the tests compare defaults)."""

    def __init__(self, *args: Any, config: type, field: dataclasses.Field, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        self.field = field


def field_default(item: dataclasses.Field) -> Any:
    """The value a config gets for a field it is not given (``MISSING`` for a required field)."""
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return item.default


def options_from(config: type, *, only: Iterable[str] = (), skip: Iterable[str] = (),
                 rename: Optional[Mapping[str, str]] = None,
                 overrides: Optional[Mapping[str, Mapping[str, Any]]] = None) -> Callable[[Command], Command]:
    """A decorator adding a click option for each field of the dataclass ``config``, in the order of the fields.

    ``only``: just these fields (else all but ``skip``, the fields a command takes as arguments or sets itself).
    ``rename``: a field's declaration when it is not its name, e.g. ``{"teachers": "--teacher"}`` or
    ``{"value_trains_trunk": "--value-trains-trunk/--value-head-only"}``. ``overrides``: click.option keywords
    added or replaced for a field, e.g. ``{"out": {"type": click.Path(file_okay=False)}}``.
    """
    rename, overrides, only, skip = dict(rename or {}), dict(overrides or {}), tuple(only), tuple(skip)
    fields = {item.name: item for item in dataclasses.fields(config)}
    unknown = sorted((set(only) | set(skip) | set(rename) | set(overrides)) - set(fields))
    if unknown:
        raise ValueError(f"{config.__name__} has no field {', '.join(unknown)}")
    chosen = [fields[name] for name in only] if only else [item for item in fields.values() if item.name not in skip]
    hints = typing.get_type_hints(config)

    def decorate(command: Command) -> Command:
        for item in reversed(chosen):  # click lists options in the order their decorators run, last first
            declaration, keywords = _option(item, hints[item.name], rename.get(item.name))
            keywords.update(overrides.get(item.name, {}))
            command = click.option(declaration, item.name, cls=ConfigOption, config=config, field=item,
                                   **keywords)(command)
        return command

    return decorate


def _option(item: dataclasses.Field, hint: Any, declaration: Optional[str]) -> tuple[str, dict[str, Any]]:
    """The declaration and click.option keywords of one field."""
    default = field_default(item)
    metadata = item.metadata
    keywords: dict[str, Any] = {"help": metadata.get("help", "")}
    value_type = _unwrap_optional(hint)
    container = typing.get_origin(value_type)
    if container in (list, tuple):
        value_type = typing.get_args(value_type)[0]
    if default is dataclasses.MISSING:
        keywords["required"] = True
    else:
        keywords["default"] = default
        keywords["show_default"] = default not in (None, "", [], ()) and not (value_type is bool and not default)
    name = "--" + item.name.replace("_", "-")
    if value_type is bool:
        keywords["is_flag"] = True
        return declaration or (f"{name}/--no-{name[2:]}" if default is True else name), keywords
    if "choices" in metadata:
        keywords["type"] = click.Choice(metadata["choices"])
    elif "path" in metadata or value_type is Path:
        keywords["type"] = click.Path(exists=metadata.get("exists", False), path_type=Path if value_type is Path
                                      else None, **PATH_KINDS[metadata.get("path", "any")])
    elif "bounds" in metadata:
        low, high, *low_open = metadata["bounds"]
        kind = click.IntRange if value_type is int else click.FloatRange
        keywords["type"] = kind(low, high, min_open=True) if any(low_open) else kind(low, high)
    elif value_type in (int, float, str):
        keywords["type"] = value_type
    if "metavar" in metadata:
        keywords["metavar"] = metadata["metavar"]
    if container is list:
        keywords["multiple"] = True
        keywords["callback"] = _as_list
    elif container is tuple:
        keywords["multiple"] = True
    return declaration or name, keywords


def _unwrap_optional(hint: Any) -> Any:
    """``Optional[X]`` -> ``X``; anything else as it is."""
    arguments = [argument for argument in typing.get_args(hint) if argument is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(arguments) == 1:
        return arguments[0]
    return hint


def _as_list(context: click.Context, parameter: click.Parameter, value: Iterable[Any]) -> list[Any]:
    """A repeatable option's values as the list the config field holds."""
    return list(value)
