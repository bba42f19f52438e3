"""The backends registry: entry points, plugins (working and broken), the option listing, and what the UCI engine
and the command line derive from it (issues 39 and 40)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint, entry_points

import chess
import click
import pytest
from click.testing import CliRunner

from engine import __version__
from engine.__main__ import cli
from engine.backends import (BUILT_IN, EVALUATOR_GROUP, FALLBACK_NOTICE, SEARCH_GROUP, discover,
                             evaluator_options, installed_entry_points, registry, search_options)
from engine.options import DEFAULT_THREADS, ENGINE_OPTIONS, TABLE_HEADER
from evaluators.base import LoadError, unwrap
from evaluators.comparator import ComparatorEvaluator
from search.base import SearchControl
from tests.conftest import ROOT, lines_until_bestmove

FIXTURES = "tests.fixtures.plugins"


def plugin(group: str, name: str, target: str) -> EntryPoint:
    return EntryPoint(name, target if ":" in target else f"{FIXTURES}:{target}", group)


# ------------------------------------------------------------------ declarations

def test_pyproject_declares_the_built_in_backends_as_entry_points():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in (EVALUATOR_GROUP, SEARCH_GROUP):
        assert declared[group] == BUILT_IN[group]
        installed = {point.name: point.value for point in entry_points(group=group)
                     if point.dist is not None and point.dist.name == "hackmate"}
        assert installed == BUILT_IN[group], "stale install: run bin/setup-env --training"


def test_declared_options_are_those_of_the_built_backends():
    backends = registry()
    assert not backends.problems
    material = backends.build_evaluator("material")
    comparator = backends.build_evaluator("comparator")
    for name, cls in backends.evaluators.items():
        built = backends.build_evaluator(name, lazy=True) if name != "comparator" else comparator
        assert evaluator_options(cls) == built.options(), name
    for name, cls in backends.searches.items():
        built = backends.build_search(name, comparator if name == "comparison" else material)
        assert search_options(cls) == built.options(), name
    assert [option.name for option in evaluator_options(backends.evaluators["resnet"])] == [
        "TacticalPriors", "MaterialBlend", "BlendQuiescence", "PolicyTemperature", "Precision", "MirrorRoot",
        "RootPolicyTemperature", "Backend"]


# ------------------------------------------------------------------ discovery

#: (group, entry point name, target in tests/fixtures/plugins.py or elsewhere, why it is skipped or None if it works)
PLUGINS = [
    (EVALUATOR_GROUP, "blended", "BlendedMaterial", None),
    (EVALUATOR_GROUP, "gone", "tests.fixtures.no_such_module:Thing",
     "ModuleNotFoundError: No module named 'tests.fixtures.no_such_module'"),
    (EVALUATOR_GROUP, "number", "NOT_A_CLASS", f"{FIXTURES}:NOT_A_CLASS is not a subclass of Evaluator or Comparator"),
    (EVALUATOR_GROUP, "material", "BlendedMaterial",
     "the name 'material' is taken by evaluators.material.MaterialEvaluator"),
    (EVALUATOR_GROUP, "misnamed", "Misnamed", f"{FIXTURES}:Misnamed is named 'something-else', not 'misnamed'"),
    (EVALUATOR_GROUP, "takes-hash", "TakesHash", "its option 'Hash' is one of the engine's"),
    (EVALUATOR_GROUP, "redeclares-cpuct", "RedeclaresCPuct",
     "its option 'CPuct' is declared otherwise by another backend ('option name CPuct type check default true' "
     "against 'option name CPuct type spin default 200 min 10 max 1000')"),
    (EVALUATOR_GROUP, "searches-nowhere", "SearchesNowhere",
     "its natural search 'nowhere' is not a search (alphabeta, puct, comparison, greedy)"),
    (SEARCH_GROUP, "greedy", "GreedySearch", None),
    (SEARCH_GROUP, "blended", "BlendedMaterial", f"{FIXTURES}:BlendedMaterial is not a subclass of Search"),
]


def test_plugins_join_and_broken_ones_are_skipped_with_a_reason():
    points = [(plugin(group, name, target), why) for group, name, target, why in PLUGINS]
    backends = discover(lambda group: [*installed_entry_points(group),
                                       *(point for point, _ in points if point.group == group)])
    assert list(backends.evaluators) == [*BUILT_IN[EVALUATOR_GROUP], "blended"]
    assert list(backends.searches) == [*BUILT_IN[SEARCH_GROUP], "greedy"]
    assert sorted(backends.problems) == sorted(f"plugin {point.name} = {point.value} ({point.group}) skipped: {why}"
                                               for point, why in points if why is not None)
    shared = {option.name: names for option, names in backends.tuning_options()}
    assert shared["TacticalPriors"] == ["resnet", "blended"]  # one option, two backends
    search = backends.build_search("greedy", backends.build_evaluator("blended"))
    assert search.search(chess.Board(), SearchControl(), print).best_move in chess.Board().legal_moves


def test_a_source_tree_never_installed_falls_back_to_the_built_in_declarations_and_says_so_once():
    backends = discover(lambda group: [plugin(group, "blended", "BlendedMaterial")]
                        if group == EVALUATOR_GROUP else [])
    assert list(backends.evaluators) == [*BUILT_IN[EVALUATOR_GROUP], "blended"]
    assert list(backends.searches) == list(BUILT_IN[SEARCH_GROUP])
    assert backends.problems == [FALLBACK_NOTICE]


# ------------------------------------------------------------------ the listing

def test_list_options_prints_every_option_of_every_backend_once():
    result = CliRunner().invoke(cli, ["--list-options"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert "\n".join(lines[:2]) == TABLE_HEADER
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]
    assert all(len(row) == 6 and row[5] for row in rows), "six cells a row, and every option has help"
    names = [row[0].strip("`") for row in rows]
    tuning = [option.name for option, _ in registry().tuning_options()]
    assert names == [option.name for option in ENGINE_OPTIONS] + ["Evaluator", "Search"] + tuning
    by_name = dict(zip(names, rows))
    assert by_name["CPuct"] == ["`CPuct`", "spin", "200", "10 to 1000", "puct",
                                "exploration constant x100: higher spreads visits over more moves"]
    assert by_name["Threads"][2] == "2 (1 on a one-core machine)"  # the same table on every machine
    assert by_name["Precision"][3] == "fp32, int8, mixed" and by_name["Precision"][4] == "resnet"


# ------------------------------------------------------------------ the UCI engine

def test_uci_lists_every_backends_options_whatever_the_backend(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("uci")
    names = [line.split(" type ")[0].removeprefix("option name ") for line in engine.lines
             if line.startswith("option name")]
    for name in ("CPuct", "TacticalPriors", "MaterialBlend", "Quiescence", "MoveOrdering", "Precision",
                 "PolicyTemperature", "IncrementalAccumulator", "QTemperature", "Overlap", "LateMoveReductions"):
        assert names.count(name) == 1, name
    assert len(names) == len(set(names)) == len(ENGINE_OPTIONS) + 2 + len(registry().tuning_options())
    assert engine.engine.search is None  # `uci` builds no backend: the declarations say it all


def test_evaluator_alone_brings_its_natural_search_and_keeps_values_set_meanwhile(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("uci", "isready", "setoption name CPuct value 300", "setoption name Quiescence value false",
                "setoption name Evaluator value resnet", "isready")
    assert engine.engine.search.name == "puct" and engine.engine.evaluator.name == "resnet"
    assert engine.engine.search.cpuct == 3.0  # set while alphabeta ran, applied when puct was built
    assert chess.Move.from_uci(engine.go("go nodes 30").split()[1]) in chess.Board().legal_moves
    engine.send("setoption name Evaluator value comparator", "isready")
    assert engine.engine.search.name == "comparison" and engine.engine.search.quiescence is False


def test_evaluator_keeps_a_search_the_gui_chose(driver):
    engine = driver("--eval", "material")
    engine.send("setoption name Search value alphabeta", "setoption name Evaluator value pst", "isready")
    assert (engine.engine.evaluator.name, engine.engine.search.name) == ("pst", "alphabeta")


def test_mistyped_weights_keep_the_network(driver, tmp_path, lenient):
    engine = driver("--eval", "resnet", "--weights", str(tmp_path / "missing.onnx"))
    engine.send("isready")
    assert any("cannot load Weights" in line and "keeping the shipped network" in line for line in engine.strings())
    network = unwrap(engine.engine.evaluator)
    assert network.name == "resnet" and network.path == registry().weights_path("resnet", None)
    engine.send("setoption name Weights value resnet-int8.onnx", "isready")
    (tmp_path / "garbage.onnx").write_text("not a network")
    engine.send(f"setoption name Weights value {tmp_path / 'garbage.onnx'}", "isready")
    assert any("garbage.onnx" in line and "keeping 'resnet-int8.onnx'" in line for line in engine.strings())
    assert unwrap(engine.engine.evaluator).path.name == "resnet-int8.onnx"
    assert engine.engine.options.get("Weights") == "resnet-int8.onnx"
    assert not any("material" in line for line in engine.strings())
    assert chess.Move.from_uci(engine.go("go nodes 20").split()[1]) in chess.Board().legal_moves


def test_an_evaluator_that_cannot_load_falls_back_to_material(driver, monkeypatch, lenient):
    def broken(*args):
        raise LoadError("no comparator today")

    monkeypatch.setattr(ComparatorEvaluator, "create", classmethod(broken))
    engine = driver("--eval", "comparator")
    engine.send("isready")
    assert any("no comparator today; falling back to material" in line for line in engine.strings())
    assert engine.engine.search.name == "alphabeta" and engine.go("go depth 2").split()[1] != "0000"


# ------------------------------------------------------------------ the command line

def node_count(bench_output: str) -> int:
    """The total of bench's summary."""
    return int(re.search(r"Nodes searched\s*: (\d+)", bench_output).group(1))


def test_command_line_conventions():
    runner = CliRunner()
    assert runner.invoke(cli, ["--version"]).output.strip().endswith(__version__)
    before = runner.invoke(cli, ["--eval", "pst", "--search", "puct", "bench", "--nodes", "8", "--threads", "1"])
    after = runner.invoke(cli, ["bench", "--eval", "pst", "--search", "puct", "--nodes", "8", "--threads", "1"])
    assert before.exit_code == after.exit_code == 0, before.output + after.output
    node_lines = [line for line in before.output.splitlines() if "bestmove" in line or "bench " in line]
    assert len(node_lines) == 13 and "pst+puct" in node_lines[-1]
    assert node_lines == [line for line in after.output.splitlines() if "bestmove" in line or "bench " in line]
    shallow, deeper = (runner.invoke(cli, ["bench", "--eval", "material", "--depth", str(depth), "--threads", "1"])
                       for depth in (1, 3))
    assert shallow.exit_code == deeper.exit_code == 0, shallow.output + deeper.output
    assert "material+alphabeta depth 3 threads 1" in deeper.output
    assert node_count(shallow.output) < node_count(deeper.output)
    bench = cli.commands["bench"]
    assert next(param for param in bench.params if param.name == "threads").default == DEFAULT_THREADS
    for command in (cli, bench):
        for param in command.params:
            assert isinstance(param, click.Option) and param.help, f"{command.name} {param.name} has no help"


def test_a_plugin_package_installed_beside_hackmate_plays_and_a_broken_one_is_reported(tmp_path):
    """The worked example of docs/plugins.md, installed as a distribution (a *.dist-info with entry_points.txt on
    PYTHONPATH), with a broken distribution beside it."""
    example = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "plugins.md").read_text(), re.S).group(1)
    (tmp_path / "hackmate_mobility.py").write_text(example)
    for dist, entry_points_txt in (
            ("hackmate_mobility", "[hackmate.evaluators]\nmobility = hackmate_mobility:MobilityEvaluator\n"),
            ("broken_plugin", "[hackmate.evaluators]\nbroken = no_such_plugin_module:Evaluator\n")):
        info = tmp_path / f"{dist}-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text(entry_points_txt)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    commands = "uci\nsetoption name MobilityWeight value 8\nisready\nposition startpos moves e2e4\ngo depth 2\n"
    process = subprocess.Popen([sys.executable, "-m", "engine", "--eval", "mobility"], cwd=tmp_path, text=True,
                               env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = lines_until_bestmove(process, commands)
        process.stdin.write("quit\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        assert process.wait(timeout=30) == 0
        errors = process.stderr.read()
    finally:
        process.kill()
    output = "\n".join(lines)
    assert "option name Evaluator type combo default mobility var material" in output and "var mobility" in output
    assert "option name MobilityWeight type spin default 5 min 0 max 50" in output
    assert "option name Search type combo default alphabeta" in output
    broken = "plugin broken = no_such_plugin_module:Evaluator (hackmate.evaluators) skipped: ModuleNotFoundError"
    assert f"info string {broken}" in output and f"warning: {broken}" in errors
    board = chess.Board()
    board.push_uci("e2e4")
    assert lines[-1].startswith("bestmove") and chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
