"""The one score scale: centipawns, expected score, win/draw/loss, mates and tablebase wins.

One formula is used everywhere (search output, training targets) so that a
"+1.00" means the same thing to the network, the search and the GUI. It is the
winning-chance curve lichess uses: an advantage of ~300 cp is ~0.5 expected
score on the [-1, 1] scale.

The searches' integer scale (:data:`MATE`, :data:`TB_WIN`) puts centipawns,
mates (``MATE - plies``) and tablebase results (``TB_WIN - plies``) on one
line, and :func:`uci_score` turns any of them into UCI's `cp N` / `mate N`.
"""

from __future__ import annotations

import math
from typing import Optional

#: Slope of the logistic curve mapping centipawns to winning chances.
CP_SLOPE = 0.00368208
#: Largest centipawn magnitude reported for a non-mate score.
MAX_CP = 10000


def cp_to_q(cp: float) -> float:
    """Centipawns -> expected score in [-1, 1] (W - L) from the same side's view."""
    return 2.0 / (1.0 + math.exp(-CP_SLOPE * max(-MAX_CP, min(MAX_CP, cp)))) - 1.0


def q_to_cp(q: float) -> int:
    """Expected score in [-1, 1] -> centipawns, clamped to +-MAX_CP."""
    q = max(-0.999999, min(0.999999, q))
    cp = math.log((1.0 + q) / (1.0 - q)) / CP_SLOPE
    return int(round(max(-MAX_CP, min(MAX_CP, cp))))


def q_to_wdl(q: float, draw: float | None = None) -> tuple[int, int, int]:
    """Expected score (and draw probability if known) -> permille W/D/L as UCI reports it.

    Without a draw estimate the draw share shrinks as the position gets clearer,
    which is how Stockfish's model behaves: ``d = 1 - |q|`` split evenly.
    """
    q = max(-1.0, min(1.0, q))
    if draw is None:
        draw = 1.0 - abs(q)
    draw = max(0.0, min(1.0 - abs(q), draw))
    win = (1.0 - draw + q) / 2.0
    w, d = round(win * 1000), round(draw * 1000)
    return w, d, max(0, 1000 - w - d)


# ------------------------------------------------------------------ scores

#: Score of a side to move that mates now; a mate in n plies scores MATE - n.
MATE = 100_000
#: Scores beyond this (in absolute value) are mates.
MATE_BOUND = MATE - 1000
#: Score of a tablebase win at the root; a tablebase win n plies away scores TB_WIN - n.
TB_WIN = MATE_BOUND - 1000
#: Scores beyond this (and within MATE_BOUND) are tablebase wins.
TB_BOUND = TB_WIN - 1000
#: A tablebase win is reported as `cp TB_WIN_CP - plies`: above any evaluation, below a mate.
TB_WIN_CP = 20_000


def mating_score(plies: int) -> int:
    """Score of a side to move that mates in ``plies`` plies."""
    return MATE - plies


def mated_score(plies: int) -> int:
    """Score of a side to move that is checkmated ``plies`` plies from now."""
    return -MATE + plies


def tablebase_score(result: int, plies: int) -> int:
    """Score of a tablebase result (+1 win, 0 draw, -1 loss for the side to move) ``plies`` plies away."""
    return 0 if result == 0 else (TB_WIN - plies if result > 0 else -TB_WIN + plies)


def mate_in_moves(score: int) -> Optional[int]:
    """UCI's `mate N` (positive: the side to move mates) for a mate score, else None."""
    if score >= MATE_BOUND:
        return (MATE - score + 1) // 2
    if score <= -MATE_BOUND:
        return -((MATE + score) // 2)
    return None


def uci_score(score: int) -> tuple[str, int]:
    """("mate", N) or ("cp", N) as UCI's `score` shows ``score``."""
    mate = mate_in_moves(score)
    if mate is not None:
        return "mate", mate
    if score >= TB_BOUND:
        return "cp", TB_WIN_CP - (TB_WIN - score)
    if score <= -TB_BOUND:
        return "cp", -TB_WIN_CP + (TB_WIN + score)
    return "cp", score


def score_wdl(score: int, draw: Optional[float] = None) -> tuple[int, int, int]:
    """Permille W/D/L of a score: certain for mates and tablebase wins, the winning-chance curve otherwise."""
    if score >= TB_BOUND:
        return 1000, 0, 0
    if score <= -TB_BOUND:
        return 0, 0, 1000
    return q_to_wdl(cp_to_q(score), draw)
