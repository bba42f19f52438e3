"""Hand-written baselines: plain material, and material plus piece-square tables.

They need no weights, so the engine always has something to play with, and they
are the yardstick the learned evaluators are measured against.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import chess

from evaluators.base import Evaluation, Evaluator
from hackmate_core.exchange import PIECE_VALUES, mvv_lva
from hackmate_core.rules import checking_moves
from hackmate_core.score import cp_to_q

#: Softmax temperature (in centipawns) of the heuristic move priors.
PRIOR_TEMPERATURE_CP = 150.0
#: Prior bonus for checking moves, so that PUCT looks at forcing lines first.
CHECK_BONUS_CP = 150.0


def tactical_gains(board: chess.Board, moves: Sequence[chess.Move], checks: Sequence[bool]
                   ) -> tuple[list[float], list[tuple[int, int]]]:
    """What each move gains at a glance, in centipawns, and (value taken, index) of the captures among them.

    A capture gains the piece taken less a tenth of the capturing piece, a
    promotion the new piece less the pawn, a check (``checks``: which moves
    give check, see :func:`hackmate_core.rules.checking_moves`) ``CHECK_BONUS_CP``.
    Only captures and promotions, picked out by a bitboard test, are looked at
    move by move.
    """
    squares = chess.BB_SQUARES
    theirs = board.occupied_co[not board.turn]
    ep_square = board.ep_square
    targets = theirs | (squares[ep_square] if ep_square is not None else 0)
    gains = [CHECK_BONUS_CP if check else 0.0 for check in checks]
    captures = []
    piece_type_at = board.piece_type_at
    for index in [i for i, move in enumerate(moves) if squares[move.to_square] & targets or move.promotion]:
        move = moves[index]
        to_square = move.to_square
        taken = 0
        if squares[to_square] & theirs:
            taken = PIECE_VALUES[piece_type_at(to_square)]  # type: ignore[index]
            gains[index] += taken - PIECE_VALUES[piece_type_at(move.from_square)] / 10.0  # type: ignore[index]
        elif to_square == ep_square and board.is_en_passant(move):
            taken = PIECE_VALUES[chess.PAWN]
            gains[index] += taken * 0.9
        if move.promotion:
            promoted = PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
            gains[index] += promoted
            taken += promoted if taken else 0
        if taken:
            captures.append((taken, index))
    return gains, captures


def gain_softmax(gains: Sequence[float]) -> list[float]:
    """Heuristic priors: a softmax of the gains at ``PRIOR_TEMPERATURE_CP``."""
    top = max(gains, default=0.0)
    return normalised([math.exp((gain - top) / PRIOR_TEMPERATURE_CP) for gain in gains])


def normalised(weights: Sequence[float]) -> list[float]:
    """:func:`gain_softmax`'s last step, also taken by weights a compiled leaf computes (``Leaf.gain_weights``): the
    weights over their sum (Python's ``sum``, whose rounding may change between Python versions, stays here)."""
    total = sum(weights) or 1.0
    return [weight / total for weight in weights]


class MaterialEvaluator(Evaluator):
    """Sum of piece values; priors favour winning captures and promotions."""

    name = "material"
    HELP = "piece values"

    def centipawns(self, board: chess.Board) -> int:
        score = 0
        white, black = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
        for piece_type, bb in ((chess.PAWN, board.pawns), (chess.KNIGHT, board.knights),
                               (chess.BISHOP, board.bishops), (chess.ROOK, board.rooks),
                               (chess.QUEEN, board.queens)):
            score += PIECE_VALUES[piece_type] * (chess.popcount(bb & white) - chess.popcount(bb & black))
        return score if board.turn == chess.WHITE else -score

    def move_gains(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[float]:
        """A quick guess, in centipawns, of what each move gains (used for priors): :func:`tactical_gains`."""
        return tactical_gains(board, moves, checking_moves(board, moves))[0]

    def priors(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> dict[chess.Move, float]:
        """Softmax of :meth:`move_gains` over the legal moves (``moves``, if already generated)."""
        moves = list(board.legal_moves) if moves is None else moves
        return dict(zip(moves, gain_softmax(self.move_gains(board, moves))))

    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        return Evaluation(value=cp_to_q(self.centipawns(board)), priors=self.priors(board, moves))


# Piece-square tables from White's point of view, a1 = index 0 (Michniewski's
# "simplified evaluation function", a well-known small improvement on material).
_PST_RAW = {
    chess.PAWN: [0, 0, 0, 0, 0, 0, 0, 0, 5, 10, 10, -20, -20, 10, 10, 5, 5, -5, -10, 0, 0, -10, -5, 5,
                 0, 0, 0, 20, 20, 0, 0, 0, 5, 5, 10, 25, 25, 10, 5, 5, 10, 10, 20, 30, 30, 20, 10, 10,
                 50, 50, 50, 50, 50, 50, 50, 50, 0, 0, 0, 0, 0, 0, 0, 0],
    chess.KNIGHT: [-50, -40, -30, -30, -30, -30, -40, -50, -40, -20, 0, 5, 5, 0, -20, -40,
                   -30, 5, 10, 15, 15, 10, 5, -30, -30, 0, 15, 20, 20, 15, 0, -30,
                   -30, 5, 15, 20, 20, 15, 5, -30, -30, 0, 10, 15, 15, 10, 0, -30,
                   -40, -20, 0, 0, 0, 0, -20, -40, -50, -40, -30, -30, -30, -30, -40, -50],
    chess.BISHOP: [-20, -10, -10, -10, -10, -10, -10, -20, -10, 5, 0, 0, 0, 0, 5, -10,
                   -10, 10, 10, 10, 10, 10, 10, -10, -10, 0, 10, 10, 10, 10, 0, -10,
                   -10, 5, 5, 10, 10, 5, 5, -10, -10, 0, 5, 10, 10, 5, 0, -10,
                   -10, 0, 0, 0, 0, 0, 0, -10, -20, -10, -10, -10, -10, -10, -10, -20],
    chess.ROOK: [0, 0, 0, 5, 5, 0, 0, 0, -5, 0, 0, 0, 0, 0, 0, -5, -5, 0, 0, 0, 0, 0, 0, -5,
                 -5, 0, 0, 0, 0, 0, 0, -5, -5, 0, 0, 0, 0, 0, 0, -5, -5, 0, 0, 0, 0, 0, 0, -5,
                 5, 10, 10, 10, 10, 10, 10, 5, 0, 0, 0, 0, 0, 0, 0, 0],
    chess.QUEEN: [-20, -10, -10, -5, -5, -10, -10, -20, -10, 0, 5, 0, 0, 0, 0, -10,
                  -10, 5, 5, 5, 5, 5, 0, -10, 0, 0, 5, 5, 5, 5, 0, -5,
                  -5, 0, 5, 5, 5, 5, 0, -5, -10, 0, 5, 5, 5, 5, 0, -10,
                  -10, 0, 0, 0, 0, 0, 0, -10, -20, -10, -10, -5, -5, -10, -10, -20],
    chess.KING: [20, 30, 10, 0, 0, 10, 30, 20, 20, 20, 0, 0, 0, 0, 20, 20,
                 -10, -20, -20, -20, -20, -20, -20, -10, -20, -30, -30, -40, -40, -30, -30, -20,
                 -30, -40, -40, -50, -50, -40, -40, -30, -30, -40, -40, -50, -50, -40, -40, -30,
                 -30, -40, -40, -50, -50, -40, -40, -30, -30, -40, -40, -50, -50, -40, -40, -30],
}
#: (colour, piece type) -> 64 values including the piece's material value.
PST = {(color, pt): [PIECE_VALUES[pt] + table[sq if color == chess.WHITE else chess.square_mirror(sq)]
                     for sq in range(64)]
       for pt, table in _PST_RAW.items() for color in chess.COLORS}


class PstEvaluator(MaterialEvaluator):
    """Material plus piece-square tables: knows about development and king safety."""

    name = "pst"
    HELP = "material + piece-square tables"

    def centipawns(self, board: chess.Board) -> int:
        score = 0
        for color, sign in ((chess.WHITE, 1), (chess.BLACK, -1)):
            occupied = board.occupied_co[color]
            for pt, bb in ((chess.PAWN, board.pawns), (chess.KNIGHT, board.knights),
                           (chess.BISHOP, board.bishops), (chess.ROOK, board.rooks),
                           (chess.QUEEN, board.queens), (chess.KING, board.kings)):
                table = PST[(color, pt)]
                for sq in chess.scan_forward(bb & occupied):
                    score += sign * table[sq]
        return score if board.turn == chess.WHITE else -score

    def move_gains(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[float]:
        """The material gains plus what the piece-square table says about each move."""
        piece_type_at, turn = board.piece_type_at, board.turn
        gains = super().move_gains(board, moves)
        for index, move in enumerate(moves):
            table = PST[(turn, piece_type_at(move.from_square))]  # type: ignore[index]
            gains[index] += table[move.to_square] - table[move.from_square]
        return gains


def quiescence_cp(evaluator: MaterialEvaluator, board: chess.Board, budget: int = 40) -> int:
    """Material after the capture sequence (side to move's view), searching at most ``budget`` nodes.

    A cheap tactical correction for evaluators that do not see hanging pieces:
    stand pat or capture, in :func:`hackmate_core.exchange.mvv_lva` order.
    """
    return quiescence_line(evaluator, board, budget)[0]


def quiescence_line(evaluator: MaterialEvaluator, board: chess.Board, budget: int = 40
                    ) -> tuple[int, list[chess.Move]]:
    """:func:`quiescence_cp` and its principal variation: the captures both sides make before standing pat."""
    nodes = [0]

    def search(alpha: int, beta: int) -> tuple[int, list[chess.Move]]:
        nodes[0] += 1
        stand_pat = evaluator.centipawns(board)
        if stand_pat >= beta or nodes[0] >= budget:
            return stand_pat, []
        alpha, line = max(alpha, stand_pat), []
        captures = sorted(board.generate_legal_captures(), key=lambda m: mvv_lva(board, m), reverse=True)
        for move in captures:
            board.push(move)
            score, rest = search(-beta, -alpha)
            board.pop()
            if -score > alpha:
                alpha, line = -score, [move, *rest]
                if alpha >= beta:
                    break
        return alpha, line

    return search(-100000, 100000)
