"""Lc0's policy, in the terms of the project's az-8x8x73 layout.

A Leela network's policy head gives one logit for each of 1858 moves (from the side to move's point of view, as
every move here): every queen-like and knight move from every square, by from square then to square, then the
pawn's promotions from the seventh rank to q, r and b. A knight promotion is the plain move (a7a8), which a
rook's a7a8 shares. The convolutional head computes 80 planes of 8x8 instead, the first 73 of which carry those
moves: 56 queen-like planes and 8 knight planes as in AlphaZero, then 9 promotion planes. Both are generated here
from those rules; they equal Lc0's ``kMoveStrs`` (src/neural/encoder.cc) and ``kConvPolicyMap``
(src/neural/tables/policy_map.h).

:func:`az_sources` says, for each slot of the az-8x8x73 layout a converted network outputs, which of Lc0's
outputs holds its logit. The layout's queen promotions take their own slots there
(:data:`evaluators.moves.OWN_SLOT`), since Lc0 tells a7a8=Q from a rook's a7a8.
"""

from __future__ import annotations

import functools
from typing import Optional

import chess
import numpy as np

from evaluators.moves import KNIGHT_DELTAS, POLICY_SIZE, QUEEN_DIRECTIONS, queen_promotion_own_slot, slot_move

#: Lc0's move count.
LC0_MOVES = 1858
#: Channels of Lc0's convolutional policy head, and how many of them carry moves.
CONV_CHANNELS, CONV_MOVE_PLANES = 80, 73
#: The promotion pieces Lc0 names (a knight promotion is the plain move), in the order of its promotion planes.
LC0_PROMOTIONS = (chess.ROOK, chess.BISHOP, chess.QUEEN)

Move = tuple[int, int, Optional[int]]  # from, to, promotion (None: a plain move, or Lc0's knight promotion)


def _on_board(rank: int, file: int) -> bool:
    return 0 <= rank < 8 and 0 <= file < 8


@functools.lru_cache(maxsize=None)
def lc0_moves() -> tuple[Move, ...]:
    """Lc0's 1858 moves in the order of its policy."""
    moves: list[Move] = []
    for from_square in chess.SQUARES:
        rank, file = chess.square_rank(from_square), chess.square_file(from_square)
        targets = {(rank + dr * distance, file + df * distance)
                   for dr, df in QUEEN_DIRECTIONS for distance in range(1, 8)}
        targets |= {(rank + dr, file + df) for dr, df in KNIGHT_DELTAS}
        moves += [(from_square, chess.square(f, r), None) for r, f in sorted(targets) if _on_board(r, f)]
    for from_square in chess.SquareSet(chess.BB_RANK_7):
        file = chess.square_file(from_square)
        for to_file in (file - 1, file, file + 1):
            if 0 <= to_file < 8:
                moves += [(from_square, chess.square(to_file, 7), piece) for piece in (chess.QUEEN, chess.ROOK,
                                                                                        chess.BISHOP)]
    assert len(moves) == LC0_MOVES
    return tuple(moves)


@functools.lru_cache(maxsize=None)
def lc0_index() -> dict[Move, int]:
    """Lc0's policy index of each of its moves."""
    return {move: index for index, move in enumerate(lc0_moves())}


def _conv_plane_move(plane: int, from_square: int) -> Optional[Move]:
    """The move of a convolutional policy plane from ``from_square`` (None: off the board, or no pawn move)."""
    rank, file = chess.square_rank(from_square), chess.square_file(from_square)
    if plane < 56:
        (dr, df), distance = QUEEN_DIRECTIONS[plane // 7], plane % 7 + 1
        to = (rank + dr * distance, file + df * distance)
    elif plane < 64:
        dr, df = KNIGHT_DELTAS[plane - 56]
        to = (rank + dr, file + df)
    else:
        if rank != 6:
            return None
        df, piece = (plane - 64) // 3 - 1, LC0_PROMOTIONS[(plane - 64) % 3]
        return (from_square, chess.square(file + df, 7), piece) if 0 <= file + df < 8 else None
    return (from_square, chess.square(to[1], to[0]), None) if _on_board(*to) else None


@functools.lru_cache(maxsize=None)
def conv_policy_map() -> np.ndarray:
    """Lc0's policy index of each output of the convolutional head, flattened plane by plane (-1: no move)."""
    table = np.full(CONV_CHANNELS * 64, -1, dtype=np.int64)
    index = lc0_index()
    for plane in range(CONV_MOVE_PLANES):
        for from_square in chess.SQUARES:
            move = _conv_plane_move(plane, from_square)
            if move is not None:
                table[plane * 64 + from_square] = index[move]
    return table


def _lc0_move_of_slot(slot: int) -> Optional[Move]:
    """The Lc0 move whose logit the az-8x8x73 ``slot`` takes (None: no move has the slot)."""
    move = slot_move(slot)
    if move is None:
        return None
    from_square, to_square, promotion = move
    if promotion == chess.KNIGHT:
        return from_square, to_square, None
    return move


@functools.lru_cache(maxsize=None)
def az_sources() -> np.ndarray:
    """For each az-8x8x73 slot, Lc0's policy index whose logit it takes (-1: no move has the slot).

    A plain move's slot takes the plain move's logit (for a piece other than a pawn on the seventh rank the
    move it is; for a pawn, Lc0's knight promotion, which the layout gives its own slot too), an
    underpromotion's slot its promotion's, and a queen promotion's own slot (:func:`queen_promotion_own_slot`)
    Lc0's queen promotion.
    """
    index = lc0_index()
    sources = np.full(POLICY_SIZE, -1, dtype=np.int64)
    for slot in range(POLICY_SIZE):
        move = _lc0_move_of_slot(slot)
        if move is not None:
            sources[slot] = index[move]
    for from_square in chess.SquareSet(chess.BB_RANK_7):
        for to_square in chess.SquareSet(chess.BB_RANK_8):
            if abs(chess.square_file(to_square) - chess.square_file(from_square)) <= 1:
                slot = queen_promotion_own_slot(from_square, to_square)
                assert sources[slot] == -1  # a slot no move has
                sources[slot] = index[(from_square, to_square, chess.QUEEN)]
    return sources


@functools.lru_cache(maxsize=None)
def az_conv_sources() -> np.ndarray:
    """:func:`az_sources` as positions in the convolutional head's flattened output (-1: no move)."""
    position_of = np.full(LC0_MOVES, -1, dtype=np.int64)
    table = conv_policy_map()
    mapped = np.flatnonzero(table >= 0)
    position_of[table[mapped]] = mapped
    sources = az_sources()
    return np.where(sources >= 0, position_of[np.maximum(sources, 0)], -1)
