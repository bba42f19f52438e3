"""Heuristic help for a small network: tactical priors and a static-exchange material value.

A 6x64 network searched for a few hundred playouts a move still overlooks
hanging pieces. :class:`BlendedEvaluator` mixes, into what the wrapped
evaluator says, the material evaluator's move priors (winning captures,
promotions, checks: ``TacticalPriors``) and the material balance after the
best capture by static exchange evaluation (``MaterialBlend``). At 0 and 0 it
passes the network through. With the network of 23 November 2026 the material
value only hurts (``MaterialBlend`` 0 against 60: +64 Elo in 120 games at 10+0.1),
so it is off by default; the tactical priors still pay (0 and 75 both lose to 50).

Both are taken from the board while the search stands on it (the ``prepare``
stage) in one pass over the legal moves (:func:`evaluators.material.tactical_gains`:
bitboard tests pick out the few captures, promotions and checks), and only
captures that could beat the best exchange found so far get a static exchange
evaluation (:func:`hackmate_core.exchange.see`), so a quiet position costs little
more than the move loop.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Optional, Sequence

import chess
import numpy as np

from evaluators.base import (Evaluation, Evaluator, EvaluatorWrapper, MoveLists, Request, evaluate_in_stages,
                             value_centipawns)
from evaluators.material import (PRIOR_TEMPERATURE_CP, MaterialEvaluator, gain_softmax, normalised, quiescence_cp,
                                 tactical_gains)
from hackmate_core.options import Option
from hackmate_core.exchange import see
from hackmate_core.rules import checking_moves
from hackmate_core.score import cp_to_q


def best_exchange_cp(board: chess.Board, moves: Sequence[chess.Move]) -> int:
    """What the side to move wins with its best capture by static exchange (0 when none wins anything)."""
    return _best_exchange(board, moves, tactical_gains(board, moves, [False] * len(moves))[1])


def _best_exchange(board: chess.Board, moves: Sequence[chess.Move], captures: list[tuple[int, int]]) -> int:
    best = 0
    for ceiling, index in sorted(captures, reverse=True):
        if ceiling <= best:
            break  # an exchange never wins more than what the first capture takes
        best = max(best, see(board, moves[index]))
    return best


class BlendedEvaluator(EvaluatorWrapper):
    OPTIONS = (
        Option("TacticalPriors", "spin", 50, 0, 100, scale=100, attribute="tactical_priors",
               help="percent of heuristic capture/promotion/check priors mixed into the policy"),
        Option("MaterialBlend", "spin", 0, 0, 100, scale=100, attribute="material_blend",
               help="percent of the material balance after the best static exchange mixed into the value"),
        Option("BlendQuiescence", "check", False, attribute="blend_quiescence",
               help="MaterialBlend takes the material after a capture search of up to 40 nodes instead of one "
                    "static exchange: slower, but it sees exchanges on several squares"),
    )

    def __init__(self, inner: Evaluator) -> None:
        super().__init__(inner)
        self.material = MaterialEvaluator()

    def centipawns(self, board: chess.Board) -> int:
        return value_centipawns(self, board)

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        return evaluate_in_stages(self, boards, moves)

    def prepare(self, board: chess.Board, moves: Sequence[chess.Move]) -> Request:
        """The inner request, with the heuristics of the moment's option values."""
        request = self.inner.prepare(board, moves)
        request.blend = self._heuristics(board, moves)  # type: ignore[attr-defined]
        return request

    def prepare_leaf(self, leaf: Any) -> Request:
        """:meth:`prepare` of a compiled PUCT leaf: the tactical gains come from C; the material blend, off by
        default, takes a python-chess board of the leaf."""
        request = self.inner.prepare_leaf(leaf)
        if self.material_blend:
            board = leaf.board()
            request.blend = self._heuristics(board, list(board.legal_moves))  # type: ignore[attr-defined]
        else:
            tactical = self.tactical_priors
            heuristic = (normalised(leaf.gain_weights(PRIOR_TEMPERATURE_CP)) if tactical and request.moves
                         else None)  # gain_softmax of leaf.gains, the exponentials made in C
            request.blend = tactical, 0.0, heuristic, 0.0  # type: ignore[attr-defined]
        return request

    def root_evaluation(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[Evaluation]:
        """The inner evaluator's root evaluation, if it has one, with the heuristics mixed in as everywhere."""
        evaluation = self.inner.root_evaluation(board, moves)
        if evaluation is None:
            return None
        request = Request(moves)
        request.blend = self._heuristics(board, moves)  # type: ignore[attr-defined]
        return self.blend(request, evaluation)

    def _heuristics(self, board: chess.Board, moves: Sequence[chess.Move]) -> tuple[float, float, Any, float]:
        """(tactical, material, heuristic priors, material value) for :meth:`blend`."""
        tactical, material = self.tactical_priors, self.material_blend
        heuristic, material_q = None, 0.0
        if (tactical or material) and moves:
            gains, captures = tactical_gains(board, moves,
                                             checking_moves(board, moves) if tactical else [False] * len(moves))
            if tactical:
                heuristic = gain_softmax(gains)
            if material and self.blend_quiescence:
                material_q = cp_to_q(quiescence_cp(self.material, board))
            elif material:
                material_q = cp_to_q(self.material.centipawns(board) + _best_exchange(board, moves, captures))
        elif material:
            material_q = cp_to_q(self.material.centipawns(board))
        return tactical, material, heuristic, material_q

    def finish(self, requests: Sequence[Request]) -> list[Evaluation]:
        finish_priors = getattr(self.inner, "finish_priors", None)
        if finish_priors is not None and self._forwards_stages:
            evaluations = self._blend_run(requests, finish_priors)
            if evaluations is not None:
                return evaluations
        return [self.blend(request, evaluation) for request, evaluation in zip(requests, self.inner.finish(requests))]

    @staticmethod
    def _blend_run(requests: Sequence[Request], finish_priors: Any) -> Optional[list[Evaluation]]:
        """:meth:`blend` of a whole network run at once, when its requests share the tactical weight: the
        priors mixed in one numpy pass, with the same double operations as :meth:`blend` (``keep * prior +
        tactical * extra`` element by element, float32 priors made doubles); None when it does not apply."""
        if not requests:
            return None
        tactical = requests[0].blend[0]  # type: ignore[attr-defined]
        heuristics = []
        for request in requests:
            request_tactical, _, heuristic, _ = request.blend  # type: ignore[attr-defined]
            if request_tactical != tactical or (request.moves and (heuristic is None) != (not tactical)):
                return None
            heuristics.append(heuristic or ())
        run = finish_priors(requests)
        if run is None:
            return None
        values, draws, priors, bounds = run
        if tactical:
            extras = np.fromiter(chain.from_iterable(heuristics), dtype=np.float64, count=len(priors))
            flat = ((1 - tactical) * priors.astype(np.float64) + tactical * extras).tolist()
        else:
            flat = priors.tolist()
        evaluations = []
        for i, (request, value, draw) in enumerate(zip(requests, values, draws)):
            _, material, _, material_q = request.blend  # type: ignore[attr-defined]
            if material:
                value = (1 - material) * value + material * material_q
                draw *= 1 - abs(value)
            evaluations.append(Evaluation(value, draw, moves=request.moves, policy=flat[bounds[i]:bounds[i + 1]]))
        return evaluations

    @staticmethod
    def blend(request: Request, evaluation: Evaluation) -> Evaluation:
        """``evaluation`` with the heuristics taken at ``prepare`` mixed in."""
        tactical, material, heuristic, material_q = request.blend  # type: ignore[attr-defined]
        moves = request.moves
        policy = evaluation.policy_of(moves)
        if heuristic is not None and policy is not None:
            keep = 1 - tactical
            policy = [keep * prior + tactical * extra for prior, extra in zip(policy, heuristic)]
        value, draw = evaluation.value, evaluation.draw
        if material:
            value = (1 - material) * value + material * material_q
            if draw is not None:
                draw *= 1 - abs(value)
        return Evaluation(value, draw, moves=moves if policy is not None else None, policy=policy)
