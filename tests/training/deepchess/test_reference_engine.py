"""`deepchess-eval --engine`: a reference UCI engine ranks the won-vs-lost pairs by its scores, from positions
decoded out of the packed 773 bits."""

from __future__ import annotations

import json
import shlex
import sys

import chess
import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import needs_stockfish  # noqa: E402
from training.__main__ import cli  # noqa: E402
from training.deepchess.accuracy import ordering_accuracy  # noqa: E402
from training.deepchess.pairs import board_of, pack, split_siblings  # noqa: E402
from training.deepchess.valset import ValidationSet  # noqa: E402

ROUND_TRIP = ["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
              "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b Kq - 0 1",
              "r3k3/8/8/8/8/8/8/4K2R w Kq - 0 1",
              "8/2P5/8/8/8/8/5k2/K7 b - - 0 1"]

#: Won for White (a queen or a rook up, or mate in one to play) ...
WON = ["4k3/8/8/8/8/8/3P4/3QK3 w - - 0 1", "4k3/pppppppp/8/8/8/8/PPPPPPPP/3QK3 b - - 0 1",
       "r3k3/pppppppp/8/8/8/8/PPPPPPPP/R2QK2R w KQq - 0 1", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"]
#: ... and lost for White, some two queens down: the mate in one still ranks above them from Black's side.
LOST = ["3qk3/3p4/8/8/8/8/8/4K3 w - - 0 1", "3qk3/pppppppp/8/8/8/8/PPPPPPPP/4K3 b - - 0 1",
        "r2qk2r/pppppppp/8/8/8/8/PPPPPPPP/R3K3 b Qkq - 0 1", "qq2k3/8/8/8/8/8/8/4K3 w - - 0 1"]


def test_board_of_inverts_pack():
    for fen in ROUND_TRIP:
        board = chess.Board(fen)
        decoded = board_of(pack(board))
        assert decoded.epd() == board.epd()  # pieces, side to move, castling rights
        assert (pack(decoded) == pack(board)).all()


def test_ordering_accuracy_counts_ties_half():
    label = np.array([0, 0, 1, 1])  # 0: the first is better
    assert ordering_accuracy(np.array([3, 2, 1, 5]), np.array([1, 2, 4, 0]), label) == pytest.approx(2.5 / 4)
    assert ordering_accuracy(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)) is None


def material_set(path, reversed_labels: bool = False):
    """Each won position against each lost one, in both orders; ``reversed_labels``: every label wrong."""
    won, lost = (np.array([pack(chess.Board(fen)) for fen in fens]) for fens in (WON, LOST))
    i, j = np.meshgrid(np.arange(len(won)), np.arange(len(lost)), indexing="ij")
    won, lost = won[i.ravel()], lost[j.ravel()]
    swap = np.arange(len(won)) % 2 == 1
    label = swap.astype(np.int64) ^ reversed_labels
    siblings = split_siblings(iter(()), lambda key: False)[1]
    validation = ValidationSet(path.stem, np.where(swap[:, None], lost, won), np.where(swap[:, None], won, lost),
                               label, siblings, np.zeros(0, dtype=np.uint64), 0.0, {"baselines": {}})
    return validation.save(path)


@needs_stockfish
def test_stockfish_ranks_material_obvious_pairs(tmp_path):
    sets = [material_set(tmp_path / "right.npz"), material_set(tmp_path / "wrong.npz", reversed_labels=True)]
    out = tmp_path / "figures.json"
    result = CliRunner().invoke(cli, ["deepchess-eval", "--engine", "stockfish", "--engine-nodes", "1,1000",
                                      "--eval-set", str(sets[0]), "--eval-set", str(sets[1]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())
    for name, expected in (("right", 1.0), ("wrong", 0.0)):
        engines = {key: value for key, value in figures[name].items() if key.startswith("Stockfish")}
        assert engines[next(key for key in engines if key.endswith(" go nodes 1000"))] == {"won_lost": expected}
        assert len(engines) == 2
    assert "go nodes 1000" in result.output


#: A UCI engine scoring material from the side to move's view (or, with ``die``, quitting at its first search).
FAKE_ENGINE = """
import sys
import chess
VALUES = {"p": 100, "n": 300, "b": 300, "r": 500, "q": 900, "k": 0}
board = chess.Board()
for line in sys.stdin:
    words = line.split()
    if words[:1] == ["uci"]:
        print("id name Material")
        print("option name Threads type spin default 1 min 1 max 8")
        print("option name Hash type spin default 16 min 1 max 64")
        print("uciok")
    elif words[:1] == ["isready"]:
        print("readyok")
    elif words[:2] == ["position", "fen"]:
        board = chess.Board(" ".join(words[2:8]))
    elif words[:1] == ["go"]:
        if sys.argv[1:] == ["die"]:
            sys.exit(1)
        white = sum((1 if piece.color else -1) * VALUES[piece.symbol().lower()] for piece in board.piece_map().values())
        print(f"info depth 1 nodes 1 score cp {white if board.turn else -white}")
        print("bestmove 0000")
    elif words[:1] == ["quit"]:
        break
    sys.stdout.flush()
"""


def fake_engine(tmp_path, *arguments: str) -> str:
    script = tmp_path / "material_engine.py"
    script.write_text(FAKE_ENGINE)
    return shlex.join([sys.executable, str(script), *arguments])


def test_an_engine_ranks_pairs_by_its_scores_from_whites_side(tmp_path):
    """Material alone tells these pairs apart: all right as labelled, all wrong with every label reversed, whichever
    side is to move (the fake engine answers from the side to move's view, as UCI engines do)."""
    sets = [material_set(tmp_path / "right.npz"), material_set(tmp_path / "wrong.npz", reversed_labels=True)]
    out = tmp_path / "figures.json"
    result = CliRunner().invoke(cli, ["deepchess-eval", "--engine", fake_engine(tmp_path), "--eval-set", str(sets[0]),
                                      "--eval-set", str(sets[1]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())
    assert figures["right"]["Material go nodes 1"] == {"won_lost": 1.0}
    assert figures["wrong"]["Material go nodes 1"] == {"won_lost": 0.0}


def test_an_engine_that_fails_or_is_missing_is_named(tmp_path):
    path = material_set(tmp_path / "set.npz")
    runner = CliRunner()
    missing = runner.invoke(cli, ["deepchess-eval", "--engine", str(tmp_path / "nofish"), "--eval-set", str(path)])
    assert missing.exit_code == 1 and "nofish" in missing.output and "Traceback" not in missing.output
    silent = f"{shlex.quote(sys.executable)} -c 'import sys; sys.stdin.readline()'"  # quits on `uci`
    failed = runner.invoke(cli, ["deepchess-eval", "--engine", silent, "--eval-set", str(path)])
    assert failed.exit_code == 1 and "cannot start the engine" in failed.output
    died = runner.invoke(cli, ["deepchess-eval", "--engine", fake_engine(tmp_path, "die"), "--eval-set", str(path)])
    assert died.exit_code == 1 and "material_engine.py" in died.output and "failed" in died.output
    nothing = runner.invoke(cli, ["deepchess-eval", "--eval-set", str(path)])
    assert nothing.exit_code == 2 and "--engine" in nothing.output
    bad_nodes = runner.invoke(cli, ["deepchess-eval", "--engine", "stockfish", "--engine-nodes", "0",
                                    "--eval-set", str(path)])
    assert bad_nodes.exit_code == 2 and "--engine-nodes" in bad_nodes.output
