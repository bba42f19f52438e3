"""The training command line: its defaults are the config dataclasses', every option says what
it does, and the conventions every command shares (one --device choice and default, one --seed default, --version)
hold."""

from __future__ import annotations

import dataclasses
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Optional

import click
import pytest
from click.testing import CliRunner

from training.__main__ import cli
from training.config_cli import DEVICES, SEED, ConfigOption, field_default, options_from, setting
from training.readable import figures_text, record_line
from training.recipes.gpu import RECIPE_DEFAULTS

#: The commands that build a config dataclass from their options.
COMMANDS_WITH_CONFIG = {"train", "validate", "distil", "label", "deepchess", "deepchess-valset", "dqn", "ppo",
                        "reinforce"}


def test_config_commands_get_the_dataclass_defaults():
    derived = set()
    for name, command in cli.commands.items():
        given = command.make_context(name, [], resilient_parsing=True).params  # what the command would receive
        for option in command.params:
            if not isinstance(option, ConfigOption):
                continue
            derived.add(name)
            expected = field_default(option.field)
            if name == "gpu-recipe":  # its own defaults are named, the rest are the dataclasses'
                expected = RECIPE_DEFAULTS.get(option.name, expected)
            if expected is dataclasses.MISSING:
                assert option.required, (name, option.name)
            else:
                assert given[option.name] == expected, (name, option.name)
                assert type(given[option.name]) is type(expected), (name, option.name)  # 0 is not 0.0
    assert COMMANDS_WITH_CONFIG | {"gpu-recipe"} <= derived


def test_every_option_says_what_it_does_and_no_path_of_this_machine():
    runner = CliRunner()
    for name, command in cli.commands.items():
        for option in command.params:
            if isinstance(option, click.Option) and option.name != "help":
                assert option.help, f"{name} {option.opts[0]} has no help text"
        text = runner.invoke(command, ["--help"], terminal_width=1000).output
        for path in {sys.executable, os.getcwd(), str(Path.home())}:
            assert path not in text, f"{name} --help shows {path}"


def test_one_device_choice_and_one_seed_default_everywhere():
    devices = seeds = 0
    for name, command in cli.commands.items():
        for option in command.params:
            if option.name == "device":
                devices += 1
                assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == DEVICES, name
                assert option.default == "auto", name
            if option.name == "seed":
                seeds += 1
                assert option.default == SEED, name
    assert devices >= 6 and seeds >= 8


def test_version_is_the_distribution_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and metadata.version("hackmate") in result.output


@dataclasses.dataclass
class Toy:
    out: str = setting(help="Required.")
    teachers: list[str] = setting([], "Repeatable.")
    mirror: bool = setting(True, "On unless turned off.")
    quiet: bool = setting(False, "Off unless given.")
    mode: str = setting("a", "One of two.", choices=("a", "b"))
    ray: Optional[str] = setting(None, "Optional.")
    rate: float = setting(0.5, "A float.")


def test_options_from_makes_flags_choices_lists_and_renames():
    @click.command()
    @options_from(Toy, rename={"teachers": "--teacher", "mirror": "--mirror/--flat"}, skip=("rate",))
    def command(**settings) -> None:
        click.echo(repr(Toy(**settings)))

    runner = CliRunner()
    given = runner.invoke(command, ["--out", "o", "--teacher", "a", "--teacher", "b", "--flat", "--quiet",
                                    "--mode", "b", "--ray", "auto"])
    assert given.output.strip() == repr(Toy("o", ["a", "b"], False, True, "b", "auto"))
    assert runner.invoke(command, ["--out", "o"]).output.strip() == repr(Toy("o"))
    assert runner.invoke(command, []).exit_code == 2  # --out is required
    assert "--mode" in runner.invoke(command, ["--out", "o", "--mode", "c"]).output  # not a choice
    assert runner.invoke(command, ["--out", "o", "--rate", "1"]).exit_code == 2  # skipped
    with pytest.raises(ValueError, match="Toy has no field nope"):
        options_from(Toy, skip=("nope",))


def test_figures_print_as_tables_and_lines_not_dictionaries():
    nested = {"validation": {"full": {"won_lost": 0.61234, "preferred_child": None}, "random": {"won_lost": 0.5}}}
    assert figures_text(nested).splitlines() == ["validation:",
                                                 "          won_lost  preferred_child",
                                                 "  full      0.6123                -",
                                                 "  random       0.5                -"]
    rows = [{"network": "a.pt", "top1": 0.3478}, {"network": "bb.pt", "top1": 0.35}]
    assert figures_text(rows).splitlines() == ["network    top1", "a.pt     0.3478", "bb.pt      0.35"]
    line = record_line({"epoch": 3, "lr": 0.002, "seconds": 1234.5, "history": [1]})  # lists stay in the files
    assert line == "epoch 3: lr 0.002, seconds 1,234"
