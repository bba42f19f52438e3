"""Whole games through python-chess's UCI client: legal moves, no time losses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from hackmate_core.games import Mover, outcome, play_game as play_movers
from hackmate_core.epd import InputError
from hackmate_core.openings import load_openings
from hackmate_core.textfiles import COMPRESSED
from tests.conftest import ROOT, engine_command, needs_stockfish, stockfish_path
from tools.match import Player, TimeControl, play_game, run_match

COMBINATIONS = [("material", "alphabeta"), ("pst", "alphabeta"), ("material", "puct"), ("pst", "puct"),
                ("resnet", "puct"), ("resnet", "alphabeta"), ("comparator", "comparison")]


@pytest.mark.parametrize("evaluator,search", COMBINATIONS)
def test_every_combination_plays_legal_moves(evaluator, search):
    """A short self-play game of each backend, with the shipped weights, through the real UCI client."""
    with chess.engine.SimpleEngine.popen_uci(engine_command("--eval", evaluator, "--search", search),
                                             cwd=ROOT) as engine:
        assert engine.id["name"].startswith("Hackmate")
        board = chess.Board()
        for _ in range(16):
            if board.is_game_over():
                break
            result = engine.play(board, chess.engine.Limit(time=0.05))
            assert result.move in board.legal_moves
            board.push(result.move)


@needs_stockfish
def test_full_games_against_stockfish_without_time_loss(tmp_path):
    """Two games at a fast time control against Stockfish's weakest level."""
    ours = Player("hackmate", engine_command("--eval", "material", "--search", "alphabeta"))
    # Stockfish's own 10 ms overhead is not enough on a loaded 2-core machine; its forfeits are not ours
    stockfish = Player("stockfish", [stockfish_path()], {"Skill Level": "0", "Threads": "1", "Hash": "16",
                                                          "Move Overhead": "200"})
    pgn = tmp_path / "games.pgn"
    stats = run_match(ours, stockfish, [chess.Board()], 2, TimeControl(3.0, 0.05), 2, pgn, log=lambda _: None)
    assert stats.games == 2
    with open(pgn, encoding="utf-8") as handle:
        games = [chess.pgn.read_game(handle) for _ in range(2)]
    for game in games:  # no forfeit of ours: a flag of Stockfish's (on a loaded machine) is not one
        headers = game.headers
        ended, result = headers["Termination"], headers["Result"]
        forfeit = ended.startswith(("time forfeit", "rules infraction"))
        loser = {"1-0": headers["Black"], "0-1": headers["White"]}.get(result)
        assert not forfeit or (ended == "time forfeit" and loser == "stockfish"), str(game)


class Moves(Mover):
    """Plays the given moves in order."""

    def __init__(self, moves: str) -> None:
        self.moves = [chess.Move.from_uci(move) for move in moves.split()]

    def choose(self, board: chess.Board) -> chess.Move:
        return self.moves.pop(0)


def test_games_end_by_the_draws_an_arbiter_grants():
    """Threefold repetition ends a game when the position stands on the board for the third time, the
    fifty-move rule at the hundredth half-move (as match runners apply them); a checkmate comes first."""
    white, black = "g1f3 f3g1 g1f3 f3g1", "g8f6 f6g8 g8f6 f6g8"
    repeated = play_movers(Moves(white), Moves(black), chess.Board())  # f6g8 makes the third start position
    assert (repeated.result, repeated.termination, len(repeated.moves)) == ("1/2-1/2", "normal", 8)
    assert outcome(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 99 80")) is None
    assert outcome(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 100 80")).termination == chess.Termination.FIFTY_MOVES
    assert outcome(chess.Board("R6k/8/6K1/8/8/8/8/8 b - - 100 80")).termination == chess.Termination.CHECKMATE
    cap = play_movers(Moves(white), Moves(black), chess.Board(), max_plies=3)
    assert (cap.result, cap.termination, len(cap.moves)) == ("1/2-1/2", "adjudication (ply limit)", 3)


def test_openings_are_read_from_pgn_and_epd(tmp_path):
    epd = tmp_path / "o.epd"
    epd.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5; id \"x\";\n"
                   "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq -\n")
    assert len(load_openings(epd, 0, 1)) == 2
    pgn = tmp_path / "o.pgn"
    pgn.write_text('[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n[Result "*"]\n\n1. d4 d5 *\n')
    boards = load_openings(pgn, 0, 1, plies=2)
    assert sorted(b.fen().split()[0] for b in boards) == sorted(
        ["rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR", "rnbqkbnr/ppp1pppp/8/3p4/3P4/8/PPP1PPPP/RNBQKBNR"])
    for suffix, opener in COMPRESSED.items():  # the corpus's parts are .pgn.xz: any compression reads the same
        for plain in (pgn, epd):
            packed = tmp_path / f"{plain.name}{suffix}"
            with opener(packed, "wt") as handle:
                handle.write(plain.read_text())
            assert [b.fen() for b in load_openings(packed, 0, 1, plies=2)] == [
                b.fen() for b in load_openings(plain, 0, 1, plies=2)]
    packed.write_bytes(packed.read_bytes()[:20])  # a truncated download: named, not a traceback
    with pytest.raises(InputError, match=r"o.epd.xz: unreadable or truncated"):
        load_openings(packed, 0, 1)


def test_a_game_between_two_configurations_is_recorded():
    ours = Player("ab", engine_command("--eval", "material", "--search", "alphabeta"))
    theirs = Player("puct", engine_command("--eval", "pst", "--search", "puct"))
    game = play_game(ours, theirs, chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"), TimeControl(2.0, 0.0), "1")
    assert game.headers["Result"] == "1-0"
    assert game.headers["Termination"] == "normal"


@pytest.mark.parametrize("name", ["resnet.onnx", "comparator.onnx", "comparator.npz"])
def test_shipped_weights_are_in_the_repository(name):
    assert (ROOT / "weights" / name).stat().st_size > 10_000


def test_default_engine_loads_shipped_network_without_fallback():
    output = subprocess.run(engine_command(), cwd=ROOT, input="uci\nisready\ngo nodes 50\n", capture_output=True,
                            text=True, timeout=120).stdout
    assert "falling back" not in output  # the engine says so when the network does not load
    assert "readyok" in output
    move = output.split("bestmove ")[-1].split()[0]
    assert chess.Move.from_uci(move) in chess.Board().legal_moves


def test_a_shipped_network_is_found_by_its_name_wherever_the_engine_starts(tmp_path, monkeypatch):
    from engine.backends import WEIGHTS_DIR, build_evaluator, weights_path
    monkeypatch.chdir(tmp_path)  # as a GUI starts the engine: anywhere but the repository
    assert weights_path("resnet", "resnet-int8.onnx") == WEIGHTS_DIR / "resnet-int8.onnx"
    assert weights_path("resnet", "missing.onnx") == Path("missing.onnx")  # reported by the name given
    evaluator = build_evaluator("resnet", "resnet-int8.onnx")
    assert set(evaluator.evaluate(chess.Board()).priors) == set(chess.Board().legal_moves)
