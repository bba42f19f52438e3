"""Unit tests of the time manager and match statistics."""

from __future__ import annotations

import math
import time

import pytest

from engine.timeman import GoParams, allocate
from hackmate_core.elo import MatchStats, score_to_elo
from tests.uci_inprocess import Driver


def test_movetime_is_exact_minus_overhead():
    assert allocate(GoParams(movetime=1000), True, 50) == (0.95, 0.95)


def test_movetime_is_spent():
    """`go movetime` is this move's time and no other's: a deepening search thinks until it is up (a new
    iteration whenever one ends), not until half of it as with a clock."""
    engine = Driver("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name Move Overhead value 50", "isready",
                "position fen r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")
    started = time.monotonic()
    engine.go("go movetime 1000", timeout=30.0)
    took = time.monotonic() - started
    control = engine.engine.control
    engine.close()
    assert control.soft_deadline - control.start == control.hard_deadline - control.start == pytest.approx(0.95)
    # a lower bound only: a loaded machine makes the search slower, never sooner, so this cannot flake
    assert took >= 0.8 * 0.95


def test_no_clock_means_no_limit():
    assert allocate(GoParams(depth=5), True, 50) is None


@pytest.mark.parametrize("clock_ms,inc_ms", [(60000, 0), (10000, 100), (1000, 0), (200, 0), (50, 10), (5, 0)])
def test_hard_limit_never_exceeds_the_clock(clock_ms, inc_ms):
    soft, hard = allocate(GoParams(wtime=clock_ms, btime=clock_ms, winc=inc_ms, binc=inc_ms), True, 50)
    assert 0 <= soft <= hard  # zero: low-clock mode, answer with the search's first step
    assert hard <= max(0.01, clock_ms / 1000.0 * 0.9)


def test_uses_own_clock_and_movestogo():
    soft_white, _ = allocate(GoParams(wtime=60000, btime=1000, movestogo=10), True, 0)
    soft_black, _ = allocate(GoParams(wtime=60000, btime=1000, movestogo=10), False, 0)
    assert soft_white == pytest.approx(6.0)
    assert soft_black < 0.2


def test_last_move_before_control_may_use_most_of_the_clock():
    _, hard = allocate(GoParams(wtime=10000, btime=10000, movestogo=1), True, 100)
    assert 5.0 < hard < 9.9


def _clock_after_each_move(clock_s: float, inc_s: float, moves: int, late_s: float = 0.01) -> list[float]:
    """Our clock after each of ``moves`` moves when every search spends its whole soft budget and answers
    ``late_s`` after it (the GUI's and Python's share, within the default Move Overhead of 50 ms)."""
    clocks = []
    for move in range(moves):
        clock_ms = round(clock_s * 1000)
        soft, _ = allocate(GoParams(wtime=clock_ms, btime=clock_ms, winc=round(inc_s * 1000),
                                    binc=round(inc_s * 1000)), True, 50, ply=2 * move)
        clock_s = clock_s - soft - late_s + inc_s
        clocks.append(clock_s)
    return clocks


@pytest.mark.parametrize("clock_s,inc_s,moves", [(10, 0.1, 300), (1, 0.01, 300), (60, 0.6, 300),
                                                  (180, 0, 120), (5, 0, 80)])
def test_a_long_game_never_runs_the_clock_out(clock_s, inc_s, moves):
    """With an increment, however long the game; in sudden death, where each move's fixed cost eats into the
    clock, for games far longer than most."""
    assert min(_clock_after_each_move(clock_s, inc_s, moves)) > 0.05


def test_the_clock_is_spent_in_the_first_forty_moves():
    """Less than a fifth of 10+0.1 is left at move 40: the schedule spends the clock where games are decided."""
    clocks = _clock_after_each_move(10, 0.1, 40)
    assert clocks[-1] < 2.0
    assert clocks[9] > 6.0  # and not all of it in the opening


def test_elo_of_even_score_is_zero():
    stats = MatchStats(5, 10, 5)
    assert stats.score == 0.5
    assert stats.elo() == pytest.approx(0.0)
    low, high = stats.elo_interval()
    assert low < 0 < high
    assert stats.los() == pytest.approx(0.5)


def test_elo_matches_the_logistic_formula():
    assert score_to_elo(0.75) == pytest.approx(190.85, abs=0.01)
    assert math.isinf(score_to_elo(1.0))
    stats = MatchStats(30, 10, 10)
    assert stats.elo() == pytest.approx(score_to_elo(0.7))
    assert stats.los() > 0.99
    low, high = stats.elo_interval()
    assert low < stats.elo() < high
