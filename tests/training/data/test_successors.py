"""training.data.successors: a position's piece planes from its predecessor's and the move played, as python-chess
plays it."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from evaluators.encoding import get_encoding
from evaluators.moves import move_to_index
from training.data import successors

ENCODING = get_encoding("planes18")


def planes_of(board: chess.Board) -> np.ndarray:
    """The row a corpus stores for ``board`` (training.data.corpus's packing)."""
    return np.packbits(ENCODING.binary(board).reshape(-1), bitorder="little")


def random_positions(seed: int, games: int, plies: int = 160) -> tuple[list[chess.Board], list[chess.Move]]:
    """Consecutive positions of random games (captures, promotions and en passant preferred, so that every kind
    of move occurs) and the move played in each, the last of a game with none."""
    rng = random.Random(seed)
    boards, moves = [], []
    for _ in range(games):
        board = chess.Board()
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal:
                break
            special = [m for m in legal if m.promotion or board.is_en_passant(m) or board.is_castling(m)
                       or board.is_capture(m)]
            en_passant = [m for m in legal if board.is_en_passant(m)]
            move = en_passant[0] if en_passant else rng.choice(special if special and rng.random() < 0.5 else legal)
            boards.append(board.copy(stack=False))
            moves.append(move)
            board.push(move)
    return boards, moves


def test_successor_pieces_are_the_next_positions_pieces_for_every_kind_of_move():
    boards, moves = random_positions(seed=3, games=40)
    kinds = {"castling": 0, "en passant": 0, "underpromotion": 0, "queen promotion": 0, "capture": 0}
    for board, move in zip(boards, moves):
        kinds["castling"] += board.is_castling(move)
        kinds["en passant"] += board.is_en_passant(move)
        kinds["underpromotion"] += move.promotion not in (None, chess.QUEEN)
        kinds["queen promotion"] += move.promotion == chess.QUEEN
        kinds["capture"] += board.is_capture(move)
    assert all(count >= 3 for count in kinds.values()), kinds
    before = np.stack([planes_of(board) for board in boards])
    index = np.array([move_to_index(move, board.turn) for board, move in zip(boards, moves)])
    after = []
    for board, move in zip(boards, moves):
        board.push(move)
        after.append(planes_of(board))
    got = successors.successor_pieces(successors.pieces_of(before), index)
    np.testing.assert_array_equal(got, successors.pieces_of(np.stack(after)))


def test_replay_rebuilds_the_rows_that_replayable_leaves_out():
    boards, moves = random_positions(seed=5, games=6, plies=60)
    rows = [planes_of(board) for board in boards]
    single = [[move_to_index(move, board.turn)] for board, move in zip(boards, moves)]
    single[10] = [1, 2, 3]  # a MultiPV row: the row after it cannot be replayed
    single[20] = [int(np.flatnonzero(successors.MOVES[:, 0] < 0)[0])]  # a slot that encodes no move
    rows[31] = rows[31].copy()
    rows[31][0] ^= 1  # a row that is not the previous one's successor
    planes = np.stack(rows)
    offsets = np.concatenate([[0], np.cumsum([len(entries) for entries in single])])
    index = np.concatenate(single).astype(np.int16)
    replayed = successors.replayable(planes, offsets, index)
    assert not replayed[0] and not replayed[11] and not replayed[21] and not replayed[31] and not replayed[32]
    assert replayed.mean() > 0.9  # within a game every row but the first follows from its predecessor
    stored = planes[~replayed, :successors.PIECE_BYTES]
    again = successors.replay(stored, planes[:, successors.PIECE_BYTES:], replayed, offsets, index)
    np.testing.assert_array_equal(again, planes)


def test_replay_refuses_a_first_row_marked_replayed():
    planes = np.zeros((2, successors.ROW_BYTES), dtype=np.uint8)
    with pytest.raises(ValueError, match="first row"):
        successors.replay(planes[:0, :successors.PIECE_BYTES], planes[:, successors.PIECE_BYTES:],
                          np.array([True, True]), np.array([0, 1, 2]), np.array([0, 0], dtype=np.int16))
