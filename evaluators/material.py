"""Hand-written baselines: plain material, and material plus piece-square tables.

They need no weights, so the engine always has something to play with, and they
are the yardstick the learned evaluators are measured against.
"""

from __future__ import annotations

import math

import chess

from evaluators.base import Evaluation, Evaluator
from evaluators.score import cp_to_q

PIECE_VALUES = {chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330,
                chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}

#: Softmax temperature (in centipawns) of the heuristic move priors.
PRIOR_TEMPERATURE_CP = 150.0
#: Prior bonus for checking moves, so that PUCT looks at forcing lines first.
CHECK_BONUS_CP = 150.0


class MaterialEvaluator(Evaluator):
    """Sum of piece values; priors favour winning captures and promotions."""

    name = "material"

    def centipawns(self, board: chess.Board) -> int:
        score = 0
        white, black = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
        for piece_type, bb in ((chess.PAWN, board.pawns), (chess.KNIGHT, board.knights),
                               (chess.BISHOP, board.bishops), (chess.ROOK, board.rooks),
                               (chess.QUEEN, board.queens)):
            score += PIECE_VALUES[piece_type] * (chess.popcount(bb & white) - chess.popcount(bb & black))
        return score if board.turn == chess.WHITE else -score

    def move_gain(self, board: chess.Board, move: chess.Move) -> float:
        """A quick guess, in centipawns, of what a move gains (used for priors)."""
        gain = 0.0
        if board.is_capture(move):
            victim = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(move.to_square)
            attacker = board.piece_type_at(move.from_square)
            gain += PIECE_VALUES[victim] - PIECE_VALUES[attacker] / 10.0  # type: ignore[index]
        if move.promotion:
            gain += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
        if board.gives_check(move):
            gain += CHECK_BONUS_CP
        return gain

    def evaluate(self, board: chess.Board) -> Evaluation:
        moves = list(board.legal_moves)
        logits = [self.move_gain(board, move) / PRIOR_TEMPERATURE_CP for move in moves]
        top = max(logits, default=0.0)
        weights = [math.exp(logit - top) for logit in logits]
        total = sum(weights) or 1.0
        return Evaluation(value=cp_to_q(self.centipawns(board)),
                          priors={move: w / total for move, w in zip(moves, weights)})


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

    def move_gain(self, board: chess.Board, move: chess.Move) -> float:
        piece = board.piece_at(move.from_square)
        gain = super().move_gain(board, move)
        if piece is not None:
            table = PST[(piece.color, piece.piece_type)]
            gain += table[move.to_square] - table[move.from_square]
        return gain


def quiescence_cp(evaluator: MaterialEvaluator, board: chess.Board, budget: int = 40) -> int:
    """Material after the capture sequence (side to move's view), searching at most ``budget`` nodes.

    A cheap tactical correction for evaluators that do not see hanging pieces:
    stand pat or capture, most valuable victim first.
    """
    nodes = [0]

    def search(alpha: int, beta: int) -> int:
        nodes[0] += 1
        stand_pat = evaluator.centipawns(board)
        if stand_pat >= beta or nodes[0] >= budget:
            return stand_pat
        alpha = max(alpha, stand_pat)
        captures = sorted(board.generate_legal_captures(),
                          key=lambda m: PIECE_VALUES[board.piece_type_at(m.to_square) or chess.PAWN]
                          - PIECE_VALUES[board.piece_type_at(m.from_square)] / 10.0, reverse=True)  # type: ignore[index]
        for move in captures:
            board.push(move)
            score = -search(-beta, -alpha)
            board.pop()
            if score > alpha:
                alpha = score
                if score >= beta:
                    break
        return alpha

    return search(-100000, 100000)
