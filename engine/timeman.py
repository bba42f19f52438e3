"""Time allocation from the UCI clock parameters.

The goal is never to lose on time: the hard limit always leaves the move
overhead plus a safety fraction of the remaining clock untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class GoParams:
    """The parameters of a UCI `go` command (times in milliseconds)."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: int = 0
    binc: int = 0
    movestogo: Optional[int] = None
    movetime: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: Optional[list[str]] = None


#: Moves assumed to remain when the GUI gives no movestogo, as (at the first move, the fewest): one fewer every
#: two moves. With an increment the schedule is short: the increment pays for the moves of a long game, and PUCT,
#: which stops early on moves it has decided, ended its 10+0.1 games with a median 3-3.7 s of its 10 unused under
#: the sudden-death schedule. Without one every move's fixed cost comes out of the clock, which must last.
INCREMENT_MOVES_TO_GO = (25, 15)
SUDDEN_DEATH_MOVES_TO_GO = (40, 20)
#: The hard limit never exceeds this fraction of the clock left after the overhead.
MAX_FRACTION_OF_CLOCK = 0.25
#: Smallest budget in normal play, so that at least a shallow search completes.
MIN_BUDGET_S = 0.01
#: Below this much clock (after the overhead) the engine is in low-clock mode: a move gets no more than half
#: the increment, so that the clock hovers about here. The reserve is for stalls, not for thinking: a move's
#: fixed cost is 5-10 ms, but on a 2-core machine loaded three times over an answer now and then came
#: 100-150 ms late (the process waiting for a core), which a reserve of 100 ms did not survive at 1+0.01.
LOW_CLOCK_S = 0.25


def allocate(params: GoParams, white_to_move: bool, move_overhead_ms: int, ply: int = 0
             ) -> Optional[tuple[float, float]]:
    """(soft, hard) seconds for this move, or None when the search has no time limit.

    ``soft`` is the target (no new iteration after it), ``hard`` the latest
    moment to answer. `movetime` is honoured exactly minus the overhead. In
    low-clock mode (less than ``LOW_CLOCK_S`` left) the budget is tiny or zero,
    where the searches answer with what their first step gives (PUCT: the
    policy's move; alpha-beta: depth 1), so that the per-move cost stays below
    the increment and the clock cannot run out.
    """
    overhead = move_overhead_ms / 1000.0
    if params.movetime is not None:
        budget = max(0.0, params.movetime / 1000.0 - overhead)
        return budget, budget
    clock = params.wtime if white_to_move else params.btime
    if clock is None:
        return None
    increment = (params.winc if white_to_move else params.binc) / 1000.0
    left = max(0.0, clock / 1000.0 - overhead)
    first, least = INCREMENT_MOVES_TO_GO if increment > 0 else SUDDEN_DEATH_MOVES_TO_GO
    moves_to_go = params.movestogo if params.movestogo else max(least, first - ply // 4)
    moves_to_go = max(1, min(moves_to_go, 50))
    if left < LOW_CLOCK_S:
        budget = min(left / moves_to_go, increment / 2)
        return budget, budget
    soft = left / moves_to_go + 0.75 * increment
    cap = left * (0.9 if moves_to_go == 1 else MAX_FRACTION_OF_CLOCK)
    hard = max(MIN_BUDGET_S, min(soft * 3.0, cap))
    return min(max(MIN_BUDGET_S, soft), hard), hard
