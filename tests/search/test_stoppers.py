"""The stop rules, one stopper each, and the chain a SearchControl composes from the `go` limits."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import chess

from evaluators.material import MaterialEvaluator
from search.alphabeta import AlphaBetaSearch
from search.base import SearchControl
from search.stoppers import (BestMoveSettled, DepthLimit, ForcedMove, HardDeadline, MateTarget, NodeLimit, Progress,
                             ProvenResult, SoftDeadline, compose)


@dataclass
class Clock:
    """Deadlines relative to now, in seconds."""

    soft_in: Optional[float] = None
    hard_in: Optional[float] = None
    spent: float = 0.0
    now: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.budget_start = self.now - self.spent
        self.soft_deadline = None if self.soft_in is None else self.now + self.soft_in
        self.hard_deadline = None if self.hard_in is None else self.now + self.hard_in


def iteration(depth: int = 3, root_moves: int = 20, **facts: object) -> Progress:
    return Progress(nodes=1000, depth=depth, root_moves=root_moves, deepening=True, **facts)  # type: ignore[arg-type]


def minibatch(**facts: object) -> Progress:
    return Progress(nodes=1000, depth=4.5, root_moves=20, deepening=False, **facts)  # type: ignore[arg-type]


def test_node_limit_and_hard_deadline_interrupt():
    assert not NodeLimit(500).interrupts(499, Clock()) and NodeLimit(500).interrupts(500, Clock())
    assert HardDeadline().interrupts(0, Clock(hard_in=-0.001))
    assert not HardDeadline().interrupts(0, Clock(hard_in=10)) and not HardDeadline().interrupts(0, Clock())


def test_depth_limit_counts_completed_iterations_and_average_depth():
    assert not DepthLimit(4).ends(iteration(3), Clock(), 0) and DepthLimit(4).ends(iteration(4), Clock(), 0)
    assert DepthLimit(4).ends(minibatch(), Clock(), 0)  # average depth 4.5
    assert not DepthLimit(0).ends(Progress(0, 0.0, 20, deepening=False), Clock(), 0)  # nothing searched yet


def test_mate_target_stops_on_a_win_or_at_the_depth_that_sees_every_mate_in_n():
    assert MateTarget(3).ends(iteration(2, won=True), Clock(), 0)
    assert not MateTarget(3).ends(iteration(4), Clock(), 0) and MateTarget(3).ends(iteration(5), Clock(), 0)
    assert not MateTarget(1).ends(minibatch(), Clock(), 0)  # PUCT's average depth is no full-width depth


def test_forced_move_stops_only_with_a_clock_running():
    assert ForcedMove().ends(iteration(1, root_moves=1), Clock(soft_in=5, hard_in=10), 0)
    assert not ForcedMove().ends(iteration(1, root_moves=1), Clock(), 0)  # pondering, infinite, depth N
    assert not ForcedMove().ends(iteration(1, root_moves=2), Clock(soft_in=5, hard_in=10), 0)


def test_a_proven_result_ends_the_search_except_under_go_infinite():
    assert ProvenResult().ends(iteration(proven=True), Clock(), 0)
    assert compose().ends(iteration(proven=True), Clock())
    assert not compose(infinite=True).ends(iteration(proven=True), Clock())


def test_a_deepening_search_starts_no_iteration_after_half_its_soft_time():
    clock = Clock(soft_in=0.5, hard_in=2.0, spent=0.4)  # 0.4 s of 0.9 spent: the next may take as long
    assert not SoftDeadline().ends(iteration(), clock, clock.now)
    clock = Clock(soft_in=0.4, hard_in=2.0, spent=0.5)
    assert SoftDeadline().ends(iteration(), clock, clock.now)
    assert not SoftDeadline().ends(minibatch(), clock, clock.now)  # small steps go on to the deadline itself


def test_with_movetime_a_deepening_search_spends_all_its_time():
    clock = Clock(soft_in=0.05, hard_in=0.05, spent=0.9)
    assert not SoftDeadline(spend_all=True).ends(iteration(), clock, clock.now)
    past = Clock(soft_in=-0.001, hard_in=-0.001, spent=1.0)
    assert compose(spend_all=True).ends(iteration(), past)  # the hard deadline ends it


def test_an_unclear_best_move_extends_the_soft_deadline_once():
    clock = Clock(soft_in=-0.001, hard_in=1.0, spent=1.0)
    stopper = SoftDeadline()
    assert not stopper.ends(minibatch(unclear=lambda: True), clock, clock.now)
    assert clock.soft_deadline == clock.now + 0.5  # half of what remains before the hard deadline
    assert stopper.ends(minibatch(unclear=lambda: True), clock, clock.now + 0.6)
    assert SoftDeadline().ends(minibatch(unclear=lambda: False), Clock(soft_in=-0.001, hard_in=1.0), time.monotonic())


def test_a_settled_best_move_ends_the_search_before_the_soft_deadline():
    asked = []

    def cannot_change(seconds: float) -> bool:
        asked.append(seconds)
        return True

    clock = Clock(soft_in=0.3, hard_in=1.0)
    assert BestMoveSettled().ends(minibatch(cannot_change=cannot_change), clock, clock.now)
    assert len(asked) == 1 and abs(asked[0] - 0.3) < 1e-9  # the seconds left before the soft deadline
    assert not BestMoveSettled().ends(minibatch(cannot_change=cannot_change), Clock(), time.monotonic())
    assert not BestMoveSettled().ends(iteration(), clock, clock.now)  # a deepening search has no visit counts


def test_the_control_composes_its_limits_and_answers_stop():
    control = SearchControl(max_nodes=5000, max_depth=3)
    assert not control.stopped(4999) and control.stopped(5000)
    assert not control.should_stop(iteration(2)) and control.should_stop(iteration(3))
    control.stop()
    assert control.stopped(0) and control.should_stop(iteration(1))


def test_alpha_beta_plays_a_forced_move_at_once_with_a_clock():
    board = chess.Board("k7/8/8/8/8/8/1q6/K7 w - - 0 1")  # Ka1 in check by the queen on b2: Kxb2 only
    assert board.legal_moves.count() == 1
    start = time.monotonic()
    control = SearchControl(soft_deadline=start + 20, hard_deadline=start + 40, start=start)
    infos = []
    result = AlphaBetaSearch(MaterialEvaluator()).search(board, control, infos.append)
    assert result.best_move == chess.Move.from_uci("a1b2") and infos[-1].depth == 1
