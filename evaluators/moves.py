"""AlphaZero's 8x8x73 = 4672 move encoding, from the side to move's point of view.

Index = plane * 64 + from_square, with squares flipped vertically for Black so
that the side to move always plays "up the board". Planes 0-55 are queen-like
moves (8 directions x distances 1-7, queen promotions included), 56-63 knight
moves, 64-72 underpromotions to knight, bishop or rook (capture left, push,
capture right).

A network says in its metadata how its policy encodes castling and queen
promotions; :class:`PolicySlots` gives a position's moves their slots by it.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import chess
import numpy as np

POLICY_SIZE = 8 * 8 * 73
#: The name of this layout in a network's metadata (``policy_layout``): every policy and Q-value head here has it.
POLICY_LAYOUT = "az-8x8x73"

QUEEN_DIRECTIONS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]  # (rank, file)
KNIGHT_DELTAS = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]
UNDERPROMOTIONS = [chess.KNIGHT, chess.BISHOP, chess.ROOK]


def _plane(from_sq: int, to_sq: int, promotion: Optional[int]) -> int:
    dr = chess.square_rank(to_sq) - chess.square_rank(from_sq)
    df = chess.square_file(to_sq) - chess.square_file(from_sq)
    if promotion in UNDERPROMOTIONS:
        return 64 + 3 * UNDERPROMOTIONS.index(promotion) + (df + 1)
    if (dr, df) in KNIGHT_DELTAS:
        return 56 + KNIGHT_DELTAS.index((dr, df))
    distance = max(abs(dr), abs(df))
    direction = QUEEN_DIRECTIONS.index((dr // distance, df // distance))
    return direction * 7 + distance - 1


def _build_tables() -> tuple[dict[tuple[int, int, Optional[int]], int], list[Optional[tuple[int, int, Optional[int]]]]]:
    """All encodable (from, to, promotion) triples in side-to-move coordinates, both ways."""
    forward: dict[tuple[int, int, Optional[int]], int] = {}
    for from_sq in chess.SQUARES:
        r, f = chess.square_rank(from_sq), chess.square_file(from_sq)
        targets = [(r + dr * d, f + df * d) for dr, df in QUEEN_DIRECTIONS for d in range(1, 8)]
        targets += [(r + dr, f + df) for dr, df in KNIGHT_DELTAS]
        for tr, tf in targets:
            if 0 <= tr < 8 and 0 <= tf < 8:
                to_sq = chess.square(tf, tr)
                forward[(from_sq, to_sq, None)] = _plane(from_sq, to_sq, None) * 64 + from_sq
                if r == 6 and tr == 7 and abs(tf - f) <= 1:
                    forward[(from_sq, to_sq, chess.QUEEN)] = forward[(from_sq, to_sq, None)]
                    for piece in UNDERPROMOTIONS:
                        forward[(from_sq, to_sq, piece)] = _plane(from_sq, to_sq, piece) * 64 + from_sq
    backward: list[Optional[tuple[int, int, Optional[int]]]] = [None] * POLICY_SIZE
    for key, index in forward.items():
        if backward[index] is None or key[2] is None:
            backward[index] = key
    return forward, backward


_FORWARD, _BACKWARD = _build_tables()


def _mirror_files_table() -> np.ndarray:
    """Each slot's move reflected left-right (a-file <-> h-file); slots that encode no move stay put."""
    table = np.arange(POLICY_SIZE, dtype=np.int64)
    for (from_sq, to_sq, promotion), index in _FORWARD.items():
        table[index] = _FORWARD[(from_sq ^ 7, to_sq ^ 7, promotion)]
    return table


MIRROR_FILES = _mirror_files_table()
"""``MIRROR_FILES[i]``: the policy slot of slot ``i``'s move on the board mirrored a-file <-> h-file.

Chess without castling rights is symmetric under that mirror, so training can show a position and
its mirror image with the same targets (``train --mirror``)."""


def move_to_index(move: chess.Move, turn: chess.Color) -> int:
    """Policy index of ``move`` played by ``turn``. A queen promotion shares its push's slot."""
    from_sq, to_sq = move.from_square, move.to_square
    if turn == chess.BLACK:
        from_sq, to_sq = chess.square_mirror(from_sq), chess.square_mirror(to_sq)
    return _FORWARD[(from_sq, to_sq, move.promotion)]


def slot_move(index: int) -> Optional[tuple[int, int, Optional[int]]]:
    """(from square, to square, promotion) of slot ``index`` in the side to move's coordinates (Black's flipped
    vertically), the promotion None for a queen-like move (a pawn's reaching the last rank promotes to a queen);
    None for a slot that encodes no move."""
    return _BACKWARD[index]


def index_to_move(index: int, board: chess.Board) -> chess.Move:
    """The move of ``board``'s side to move encoded by ``index`` (a pawn reaching the last rank promotes to a queen)."""
    key = slot_move(index)
    if key is None:
        raise ValueError(f"policy index {index} encodes no move")
    from_sq, to_sq, promotion = key
    if board.turn == chess.BLACK:
        from_sq, to_sq = chess.square_mirror(from_sq), chess.square_mirror(to_sq)
    if promotion is None and board.piece_type_at(from_sq) == chess.PAWN and chess.square_rank(to_sq) in (0, 7):
        promotion = chess.QUEEN
    return chess.Move(from_sq, to_sq, promotion)


def legal_move_indices(board: chess.Board) -> tuple[list[chess.Move], np.ndarray]:
    """Legal moves and their policy indices, in the same order."""
    moves = list(board.legal_moves)
    turn = board.turn
    return moves, np.fromiter((move_to_index(m, turn) for m in moves), dtype=np.int64, count=len(moves))


def queen_promotion_own_slot(from_square: chess.Square, to_square: chess.Square) -> int:
    """The slot of a queen promotion (side-to-move squares) in a policy that gives it one apart from the other
    pieces' same step: the two-square step of its direction from the pawn's square, which no move has (it would
    leave the board)."""
    direction = QUEEN_DIRECTIONS.index((1, chess.square_file(to_square) - chess.square_file(from_square)))
    return (direction * 7 + 1) * 64 + from_square


def mirror_move(move: chess.Move) -> chess.Move:
    """``move`` in the a-file <-> h-file mirror image of its position (where no castling rights remain, the rules
    are the same there: a position and its mirror image have the same value and mirrored best moves)."""
    return chess.Move(move.from_square ^ 7, move.to_square ^ 7, move.promotion)


#: How a network's policy encodes castling (its metadata's "castling"): the king's two-square step, in Chess960 too
#: (the project's networks, trained on standard chess), or the king taking its own rook, in standard chess too
#: (Lc0's networks).
KING_TWO_SQUARES, KING_TAKES_ROOK = "king-two-squares", "king-takes-rook"
#: Where a queen promotion's logit is (its metadata's "queen_promotion"): in the slot of the pawn's step, which the
#: same step of another piece shares (the project's networks), or in a slot of its own (Lc0's networks, whose policy
#: tells a7a8=Q from a rook's a7a8: :func:`queen_promotion_own_slot`).
PUSH_SLOT, OWN_SLOT = "push", "own"


@functools.lru_cache(maxsize=None)
def _slot_tables() -> tuple[list[int], list[int]]:
    """Policy slot of every (from, to) move by colour (index 0: Black, 1: White; -1: no such move), queen
    promotions in the push's slot: ``_slot_tables()[turn][from << 6 | to]``. Built when a network loads (20 ms),
    not at `uci`."""
    tables = []
    for turn in (chess.BLACK, chess.WHITE):
        table = [-1] * 4096
        for from_square in chess.SQUARES:
            for to_square in chess.SQUARES:
                try:
                    table[from_square << 6 | to_square] = move_to_index(chess.Move(from_square, to_square), turn)
                except KeyError:
                    pass
        tables.append(table)
    return tables[0], tables[1]


class PolicySlots:
    """The policy slots of a position's moves under one network's conventions for castling and queen
    promotions (its metadata's "castling" and "queen_promotion"; ValueError for one this engine does not know)."""

    def __init__(self, castling: str = KING_TWO_SQUARES, queen_promotion: str = PUSH_SLOT) -> None:
        if castling not in (KING_TWO_SQUARES, KING_TAKES_ROOK):
            raise ValueError(f"unknown castling encoding {castling!r} (known: {KING_TWO_SQUARES}, {KING_TAKES_ROOK})")
        if queen_promotion not in (PUSH_SLOT, OWN_SLOT):
            raise ValueError(f"unknown queen promotion slot {queen_promotion!r} (known: {PUSH_SLOT}, {OWN_SLOT})")
        self.king_takes_rook = castling == KING_TAKES_ROOK
        self.own_queen_slot = queen_promotion == OWN_SLOT

    def slots(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[int]:
        """The slots of ``moves``, legal moves of ``board``."""
        turn = board.turn
        if board.chess960 and not self.king_takes_rook:
            return [self.slot(board, move) for move in moves]
        table = _slot_tables()[turn]
        if not self.king_takes_rook and not self.own_queen_slot:
            return [table[m.from_square << 6 | m.to_square] if m.promotion is None or m.promotion == chess.QUEEN
                    else move_to_index(m, turn) for m in moves]
        king = board.king(turn) if self.king_takes_rook and not board.chess960 else None
        slots = []
        for move in moves:
            if move.promotion is not None:
                slots.append(self.slot(board, move))
            elif move.from_square == king and abs(move.to_square - move.from_square) == 2:  # castling: to the rook
                rook = move.to_square + 1 if move.to_square > move.from_square else move.to_square - 2
                slots.append(table[move.from_square << 6 | rook])
            else:
                slots.append(table[move.from_square << 6 | move.to_square])
        return slots

    def slot(self, board: chess.Board, move: chess.Move) -> int:
        """The slot of one legal move of ``board``."""
        turn = board.turn
        if board.is_castling(move):
            if self.king_takes_rook and not board.chess960:
                rank = chess.square_rank(move.from_square)
                move = chess.Move(move.from_square, chess.square(7 if move.to_square > move.from_square else 0, rank))
            elif not self.king_takes_rook:
                move = _two_square_castling(board, move)
        if move.promotion == chess.QUEEN and self.own_queen_slot:
            from_square, to_square = move.from_square, move.to_square
            if turn == chess.BLACK:
                from_square, to_square = chess.square_mirror(from_square), chess.square_mirror(to_square)
            return queen_promotion_own_slot(from_square, to_square)
        return move_to_index(move, turn)


def _two_square_castling(board: chess.Board, move: chess.Move) -> chess.Move:
    """The move with Chess960 castling (king takes rook) as the king's two-square step, the way the project's
    networks saw castling in training, unless the king would not move at all."""
    if not board.chess960 or not board.is_castling(move):
        return move
    rank = chess.square_rank(move.from_square)
    king_to = chess.square(6 if move.to_square > move.from_square else 2, rank)
    return move if king_to == move.from_square else chess.Move(move.from_square, king_to)
