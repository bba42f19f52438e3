"""Perft against the published counts on both paths, and `go perft N` in the engine.

Counts: chessprogramming.org "Perft Results" (the start position, Kiwipete, positions 3 to 6, position 4
mirrored) and "Chess960 Perft Results" (its first four positions). The pure-Python path is checked to
small depths only (it is slow); the compiled path deeper. With HACKMATE_PURE_PYTHON=1 the compiled
cases are skipped; otherwise a missing extension fails them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import chess
import pytest

from hackmate_core import compiled, perft
from tests.uci_inprocess import Driver

FORCED_PURE = os.environ.get(compiled.PURE_PYTHON_VARIABLE, "") not in ("", "0")

# (FEN, chess960, counts at depth 1, 2, ...)
PUBLISHED = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", False, [20, 400, 8902, 197281, 4865609]),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", False, [48, 2039, 97862, 4085603]),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", False, [14, 191, 2812, 43238, 674624]),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", False, [6, 264, 9467, 422333]),
    ("r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1", False, [6, 264, 9467, 422333]),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", False, [44, 1486, 62379, 2103487]),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", False, [46, 2079, 89890, 3894594]),
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", True, [21, 528, 12189, 326672]),
    ("2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9", True, [21, 807, 18002, 667366]),
    ("b1q1rrkb/pppppppp/3nn3/8/P7/1PPP4/4PPPP/BQNNRKRB w GE - 1 9", True, [20, 479, 10471, 273318]),
    ("qbbnnrkr/2pp2pp/p7/1p2pp2/8/P3PP2/1PPP1KPP/QBBNNR1R w hf - 0 9", True, [22, 593, 13440, 382958]),
]
#: The pure-Python path's depth: about 20,000 leaves or fewer each.
PURE_DEPTH = 2


def ids(cases):
    return [fen.split()[0][:20] for fen, _, _ in cases]


@pytest.mark.parametrize("fen,chess960,counts", PUBLISHED, ids=ids(PUBLISHED))
def test_compiled_perft_matches_the_published_counts(fen, chess960, counts):
    if FORCED_PURE:
        pytest.skip(f"{compiled.PURE_PYTHON_VARIABLE} is set")
    board = chess.Board(fen, chess960=chess960)
    assert [perft.perft(board, depth, use_compiled=True) for depth in range(1, len(counts) + 1)] == counts


@pytest.mark.parametrize("fen,chess960,counts", PUBLISHED, ids=ids(PUBLISHED))
def test_pure_python_perft_matches_the_published_counts(fen, chess960, counts):
    board = chess.Board(fen, chess960=chess960)
    depth = PURE_DEPTH + (fen == PUBLISHED[0][0])  # the start position one deeper: 8,902
    assert [perft.perft(board, d, use_compiled=False) for d in range(depth + 1)] == [1] + counts[:depth]


@pytest.mark.parametrize("fen,chess960", [(fen, chess960) for fen, chess960, _ in PUBLISHED[1:9:3]])
def test_divide_is_the_same_on_both_paths(fen, chess960):
    if FORCED_PURE:
        pytest.skip(f"{compiled.PURE_PYTHON_VARIABLE} is set")
    board = chess.Board(fen, chess960=chess960)
    assert perft.divide(board, 2, use_compiled=True) == perft.divide(board, 2, use_compiled=False)
    assert [move for move, _ in perft.divide(board, 1)] == list(board.generate_legal_moves())


def test_bad_depths_are_refused():
    with pytest.raises(ValueError):
        perft.perft(chess.Board(), -1)
    with pytest.raises(ValueError):
        perft.divide(chess.Board(), 0)
    with pytest.raises(ValueError):
        perft.perft(chess.Board(), perft.MAX_DEPTH + 1)


def test_a_position_the_compiled_board_refuses_is_counted_in_python():
    board = chess.Board("4k3/8/8/8/8/8/8/3KK3 w - - 0 1")  # two white kings
    assert perft.compiled_board(board) is None
    assert perft.perft(board, 2) == perft.perft(board, 2, use_compiled=False)
    if not FORCED_PURE:
        with pytest.raises(ValueError, match="king"):
            perft.perft(board, 2, use_compiled=True)


def go_perft(driver: Driver, command: str) -> list[str]:
    start = len(driver.lines)
    driver.send(command)
    return driver.lines[start:]


@pytest.mark.parametrize("path", ["active", "pure"])
def test_go_perft_prints_stockfish_s_divide(path, monkeypatch):
    if path == "pure":
        monkeypatch.setattr(compiled, "cboard", None)
    driver = Driver("--eval", "material", "--search", "alphabeta")
    driver.send("position startpos moves e2e4")
    lines = go_perft(driver, "go perft 3")
    board = chess.Board()
    board.push_uci("e2e4")
    expected = perft.divide(board, 3, use_compiled=False)
    assert lines[:-2] == [f"{move.uci()}: {nodes}" for move, nodes in expected]
    assert lines[-2:] == ["", f"Nodes searched: {sum(nodes for _, nodes in expected)}"]
    assert lines[-1] == "Nodes searched: 13160"
    driver.close()


def test_go_perft_writes_chess960_castling_as_king_takes_rook():
    driver = Driver("--eval", "material", "--search", "alphabeta")
    driver.send("setoption name UCI_Chess960 value true", "position fen rk5r/8/8/8/8/8/8/RK5R w AHah - 0 1")
    lines = go_perft(driver, "go perft 2")
    assert {"b1h1: 23", "b1a1: 24"} <= set(lines[:-2]) and lines[-1] == "Nodes searched: 479"
    driver.close()


@pytest.mark.parametrize("args", ["", "x", "0", "-3", "1 2", str(perft.MAX_DEPTH + 1)])
def test_a_bad_perft_depth_gets_an_info_string(args):
    driver = Driver("--eval", "material", "--search", "alphabeta")
    lines = go_perft(driver, f"go perft {args}")
    assert len(lines) == 1 and lines[0].startswith("info string usage: go perft N")
    driver.close()


def test_the_engine_says_once_at_uci_that_the_pure_python_path_runs():
    env = {**os.environ, compiled.PURE_PYTHON_VARIABLE: "1"}
    out = subprocess.run([sys.executable, "-m", "engine"], input="uci\nquit\n", capture_output=True, text=True,
                         env=env, timeout=60).stdout
    assert out.count("info string HACKMATE_PURE_PYTHON is set: the pure-Python path runs") == 1
    assert out.rstrip().endswith("uciok")
