"""Capture ordering and static exchange: piece values, MVV-LVA and SEE, shared by searches and evaluators."""

from __future__ import annotations

import chess


# ------------------------------------------------------- capture ordering

#: Piece values in centipawns (the material evaluator and the exchange evaluation).
PIECE_VALUES = {chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330,
                chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}
#: Most-valuable-victim weights for capture ordering.
MVV = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
#: A king "captured" in an exchange ends it: worth more than everything else.
_SEE_KING = 20_000


def mvv_lva(board: chess.Board, move: chess.Move) -> int:
    """Capture ordering key: most valuable victim first, then least valuable attacker (en passant: a pawn)."""
    victim = board.piece_type_at(move.to_square) or chess.PAWN
    return 10 * MVV[victim] - MVV[board.piece_type_at(move.from_square) or chess.PAWN]


def _see_value(piece_type: int) -> int:
    return _SEE_KING if piece_type == chess.KING else PIECE_VALUES[piece_type]


def see(board: chess.Board, move: chess.Move) -> int:
    """Static exchange evaluation: centipawns the side to move gains with ``move`` when both sides
    then keep recapturing on its square with their least valuable piece while it pays.

    Sliders behind the capturers join in (x-rays); pins are ignored, as usual.
    """
    to = move.to_square
    attacker = board.piece_type_at(move.from_square)
    if attacker is None:
        return 0
    occupied = board.occupied ^ chess.BB_SQUARES[move.from_square]
    if board.is_en_passant(move):
        captured = chess.PAWN
        occupied ^= chess.BB_SQUARES[to - 8 if board.turn == chess.WHITE else to + 8]
    else:
        captured = board.piece_type_at(to)
    gains = [PIECE_VALUES[captured] if captured else 0]
    on_square = attacker
    if move.promotion:
        gains[0] += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
        on_square = move.promotion
    occupied |= chess.BB_SQUARES[to]
    side = not board.turn
    by_type = ((chess.PAWN, board.pawns), (chess.KNIGHT, board.knights), (chess.BISHOP, board.bishops),
               (chess.ROOK, board.rooks), (chess.QUEEN, board.queens), (chess.KING, board.kings))
    while True:
        attackers = board.attackers_mask(side, to, occupied) & occupied
        if not attackers:
            break
        for piece_type, bb in by_type:
            found = attackers & bb
            if found:
                break
        if piece_type == chess.KING and board.attackers_mask(not side, to, occupied) & occupied:
            break  # the king may not capture into a defended square
        gains.append(_see_value(on_square) - gains[-1])
        on_square = piece_type
        occupied ^= found & -found  # the least significant such piece leaves its square
        side = not side
    while len(gains) > 1:
        last = gains.pop()
        gains[-1] = -max(-gains[-1], last)
    return gains[0]


def keeps_material(board: chess.Board, move: chess.Move) -> bool:
    """A capture that loses no material by static exchange (taking a piece worth as much as the taker never does)."""
    taker = PIECE_VALUES[board.piece_type_at(move.from_square) or chess.PAWN]
    return taker <= PIECE_VALUES[board.piece_type_at(move.to_square) or chess.PAWN] or see(board, move) >= 0
