"""Shard directories read in another encoding than they were written in (a network measured on the test set)."""

from __future__ import annotations

import io
import lzma
import shutil
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest

from evaluators.encoding import get_encoding
from training.data import shards
from training.data.pgn import DataError, game_id, game_index

TESTSET = Path(__file__).resolve().parents[3] / "testset"
GAMES = "testset-games.pgn.xz"


def played_out(row: int, stored: dict) -> chess.Board:
    """The test set's position ``row`` played out from its game, read straight from the shipped PGN."""
    with lzma.open(TESTSET / GAMES, "rt") as handle:
        for _ in range(game_index(int(stored["game"][row]))):
            chess.pgn.skip_game(handle)
        game = chess.pgn.read_game(handle)
    board = game.board()
    for move in list(game.mainline_moves())[:int(stored["ply"][row])]:
        board.push(move)
    return board


def test_the_test_set_is_encoded_anew_with_the_moves_of_its_games():
    stored, meta = shards.load_dir(TESTSET)
    same, same_meta = shards.load_dir_encoded(TESTSET, get_encoding(meta["encoding"]))
    assert same_meta == meta and all(np.array_equal(same[name], stored[name]) for name in stored)
    features36 = get_encoding("features36")
    recoded, recoded_meta = shards.load_dir_encoded(TESTSET, features36)
    assert recoded["planes"].shape == (len(stored["key"]), features36.binary_planes * 8)
    assert recoded_meta["planes"] == f"features36 from the games of {GAMES} (stored: planes18)"
    # features36 begins with planes18's 17 binary planes, in the same order
    assert np.array_equal(recoded["planes"][:, :17 * 8], stored["planes"][:, :17 * 8])
    for row in (0, len(stored["key"]) // 2, len(stored["key"]) - 1):
        board = played_out(row, stored)
        assert board.fen() == stored["fen"][row].decode() and board.move_stack
        expected = np.packbits(features36.binary(board).reshape(-1), bitorder="little")
        assert np.array_equal(recoded["planes"][row], expected)
        # the last moves' planes are the game's, not empty
        assert not np.array_equal(expected, features36.packed(chess.Board(board.fen())))
    assert all(np.array_equal(recoded[name], stored[name]) for name in stored if name != "planes")


def copy_of_the_test_set(tmp_path: Path) -> Path:
    copy = tmp_path / "testset"
    copy.mkdir()
    for path in TESTSET.glob("*"):
        if path.name != GAMES:
            shutil.copy(path, copy / path.name)
    return copy


def test_without_its_games_a_test_set_is_encoded_from_the_fens(tmp_path):
    copy = copy_of_the_test_set(tmp_path)
    stored, _ = shards.load_dir(copy)
    features36 = get_encoding("features36")
    recoded, meta = shards.load_dir_encoded(copy, features36)
    assert meta["planes"] == "features36 from the FENs, no game before them (stored: planes18)"
    row = len(stored["key"]) // 3
    assert np.array_equal(recoded["planes"][row], features36.packed(chess.Board(stored["fen"][row].decode())))


def test_kept_games_that_are_not_the_positions_games_are_an_error(tmp_path):
    copy = copy_of_the_test_set(tmp_path)
    with lzma.open(TESTSET / GAMES, "rt") as handle:
        text = handle.read()
    first, second, rest = text.split("\n\n[Event", 2)
    # the first two games in each other's place: the first game's positions are no longer the stored ones
    (copy / "testset-games.pgn").write_text("[Event" + second + "\n\n" + first + "\n\n[Event" + rest)
    with pytest.raises(DataError, match=r"position \d+ is .*, but ply \d+ of game 1 of testset-games.pgn is"):
        shards.load_dir_encoded(copy, get_encoding("features36"))


def test_a_kept_game_that_starts_from_a_fen_is_played_out_from_its_own_first_ply(tmp_path):
    start = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 10"
    game = chess.pgn.read_game(io.StringIO(f'[FEN "{start}"]\n[SetUp "1"]\n\n10. Bb5 a6 11. Ba4 *\n'))
    after_one, after_all = game.next().board(), game.end().board()
    gid = game_id("games.pgn", 0)
    arrays = {"game": np.array([gid, gid]), "ply": np.array([after_all.ply(), after_one.ply()]),
              "fen": np.array([after_all.fen().encode(), after_one.fen().encode()])}
    boards = shards.replayed_positions(arrays, {gid: ("games.pgn", game)}, tmp_path)
    assert [board.fen() for board in boards] == [after_all.fen(), after_one.fen()]
    assert [move.uci() for move in boards[0].move_stack] == ["f1b5", "a7a6", "b5a4"]
