"""The UCI front-end driven through raw stdin/stdout transcripts."""

from __future__ import annotations

import time

import chess
import pytest


@pytest.mark.parametrize("args", [("--eval", "material", "--search", "alphabeta"),
                                  ("--eval", "pst", "--search", "puct")])
def test_handshake_and_search(engine_factory, args):
    engine = engine_factory(*args)
    engine.send("uci")
    engine.expect("uciok")
    assert any(line.startswith("option name Threads type spin default 1 min 1 max 1") for line in engine.lines)
    assert any("option name Evaluator type combo" in line for line in engine.lines)
    engine.send("isready")
    engine.expect("readyok")
    engine.send("setoption name UCI_ShowWDL value true")
    engine.send("position startpos moves e2e4 e7e5")
    engine.send("go movetime 300")
    best = engine.expect("bestmove", timeout=10)
    move = chess.Move.from_uci(best.split()[1])
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert move in board.legal_moves
    info = [line for line in engine.lines if line.startswith("info depth")]
    assert info, "no info lines"
    assert " wdl " in info[-1] and " nps " in info[-1] and " pv " in info[-1]


def test_stop_during_infinite_is_prompt(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("uci")
    engine.expect("uciok")
    engine.send("position startpos")
    engine.send("go infinite")
    time.sleep(0.5)
    engine.send("isready")
    engine.expect("readyok", timeout=1.0)  # answered while searching
    started = time.monotonic()
    engine.send("stop")
    engine.expect("bestmove", timeout=2.0)
    assert time.monotonic() - started < 1.0


def test_go_without_limits_waits_for_stop(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("position fen 7k/8/8/8/8/8/8/K6Q w - - 0 1")
    engine.send("go")
    time.sleep(0.5)
    assert any(line.startswith("info depth") for line in engine.drain())
    assert not any(line.startswith("bestmove") for line in engine.lines)
    engine.send("stop")
    engine.expect("bestmove", timeout=2.0)


def test_ponder_and_ponderhit(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name Ponder value true")
    engine.send("position startpos moves e2e4")
    engine.send("go ponder wtime 2000 btime 2000")
    time.sleep(0.3)
    assert any(line.startswith("info depth") for line in engine.drain())
    assert not any(line.startswith("bestmove") for line in engine.lines)
    engine.send("ponderhit")
    engine.expect("bestmove", timeout=2.0)


def test_quit_during_search_exits(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("go infinite")
    time.sleep(0.3)
    engine.send("quit")
    assert engine.proc.wait(timeout=3) == 0


@pytest.mark.parametrize("bad", [
    "position startpos moves e2e4 e2e4",
    "position fen rnbqkbnr/pppppppp/8/8 w KQkq - 0 1",
    "position fen not a fen at all",
    "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
    "position banana",
    "setoption name NoSuchOption value 3",
    "setoption name Hash value 999999",
    "setoption name Hash value lots",
    "setoption name MultiPV",
    "setoption name SyzygyPath value /no/such/dir",
    "setoption name BookFile value /no/such/book.bin",
    "setoption name Evaluator value quantum",
    "go wtime abc",
    "frobnicate",
    "     ",
])
def test_bad_input_is_reported_and_survived(engine_factory, bad):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send(bad)
    engine.send("isready")
    engine.expect("readyok")
    if bad.strip():
        assert any(line.startswith("info string") for line in engine.lines), engine.lines
    engine.send("go depth 2")
    best = engine.expect("bestmove")
    assert best.split()[1] != "0000"


def test_illegal_move_keeps_prefix(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("position startpos moves e2e4 e7e5 e1e3 g1f3")
    engine.send("d")
    fen = engine.expect("info string Fen:")
    assert "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w" in fen


def test_short_fen_accepted(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1")  # board only; mate in one Ra8#
    engine.send("go depth 3")
    assert engine.expect("bestmove").split()[1] == "a1a8"


def test_missing_weights_fall_back_to_material(engine_factory, tmp_path):
    engine = engine_factory("--eval", "resnet", "--weights", str(tmp_path / "missing.onnx"))
    engine.send("isready")
    engine.expect("readyok")
    assert any("falling back to material" in line for line in engine.lines)
    engine.send("go depth 2")
    engine.expect("bestmove")


def test_multipv_reports_several_lines(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name MultiPV value 3")
    engine.send("go depth 3")
    engine.expect("bestmove")
    assert {line.split(" multipv ")[1].split()[0] for line in engine.lines if " multipv " in line} == {"1", "2", "3"}


def test_bench_command_prints_totals(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("bench")
    line = engine.expect("Nodes searched", timeout=120)
    assert int(line.split(":")[1]) > 0
    engine.expect("Nodes/second")
