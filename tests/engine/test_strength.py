"""Playing weaker on purpose: UCI_LimitStrength and UCI_Elo with a folder of rating networks, and NodeLimit."""

from __future__ import annotations

from pathlib import Path

import chess
import pytest

from engine.strength import rated_networks, strength
from evaluators.base import unwrap
from tests.conftest import ROOT

SHIPPED = ROOT / "weights" / "resnet.onnx"


def rating_folder(tmp_path: Path, ratings: list[int]) -> Path:
    """A folder of networks named as the Maia files are, each the shipped network (a link), and a file that is no
    rating network."""
    folder = tmp_path / "rated"
    folder.mkdir()
    for rating in ratings:
        (folder / f"maia-{rating}.onnx").symlink_to(SHIPPED)
    (folder / "notes-2024.txt").write_text("not a network")
    return folder


def last_nodes(lines: list[str]) -> int:
    infos = [line for line in lines if line.startswith("info depth")]
    return int(infos[-1].split(" nodes ")[1].split()[0])


def test_the_nearest_rating_is_chosen(tmp_path):
    folder = rating_folder(tmp_path, [1100, 1500, 1900])
    assert sorted(rated_networks(str(folder))) == [1100, 1500, 1900]
    assert strength(True, 1650, str(folder), 0).weights == folder / "maia-1500.onnx"
    assert strength(True, 1800, str(folder), 0).weights == folder / "maia-1900.onnx"
    assert strength(True, 1300, str(folder), 0).weights == folder / "maia-1100.onnx"  # a tie: the lower rating
    assert strength(True, 1300, str(folder), 0).nodes == 1
    assert strength(False, 1300, str(folder), 40) == strength(False, 1900, "", 40)  # off: the cap alone
    assert strength(False, 1300, "", 40).nodes == 40


def test_limit_strength_plays_the_nearest_rating_network_at_one_node(driver, tmp_path):
    folder = rating_folder(tmp_path, [1100, 1700])
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send(f"setoption name RatingNetworks value {folder}", "setoption name UCI_LimitStrength value true",
                "setoption name UCI_Elo value 1650", "setoption name TacticalPriors value 80", "isready")
    assert any("UCI_Elo 1650: playing maia-1700.onnx (rated 1700) at one node a move" in line
               for line in engine.strings())
    network = unwrap(engine.engine.evaluator)
    assert network.name == "resnet" and network.path == folder / "maia-1700.onnx"
    assert engine.engine.search.name == "puct"
    assert engine.engine.evaluator.inner.tactical_priors == 0  # the network's own policy, whatever was set
    engine.send("position startpos moves e2e4")
    start = len(engine.lines)
    move = engine.go("go wtime 60000 btime 60000").split()[1]
    assert last_nodes(engine.lines[start:]) == 1
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    engine.send("setoption name UCI_LimitStrength value false", "isready")
    assert unwrap(engine.engine.evaluator).name == "material"  # the chosen backend again


def test_without_a_folder_limit_strength_says_it_plays_at_full_strength(driver, lenient):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name UCI_LimitStrength value true", "isready")
    assert any("UCI_LimitStrength needs RatingNetworks" in line and "playing at full strength" in line
               for line in engine.strings())
    assert unwrap(engine.engine.evaluator).name == "material"


def test_without_a_folder_limit_strength_is_a_fallback(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    with pytest.raises(AssertionError, match="fell back under strict mode.*needs RatingNetworks"):
        engine.send("setoption name UCI_LimitStrength value true", "isready")
    engine.engine.strict_failures.clear()


@pytest.mark.parametrize("evaluator, search", [("material", "puct"), ("pst", "alphabeta")])
def test_node_limit_caps_every_move(driver, evaluator, search):
    engine = driver("--eval", evaluator, "--search", search)
    engine.send("setoption name NodeLimit value 300", "position startpos")
    engine.go("go movetime 60000", timeout=60)
    assert 0 < engine.engine.search.nodes <= 300
    engine.send("setoption name NodeLimit value 0")
    engine.go("go nodes 600")
    assert 300 < engine.engine.search.nodes <= 600
