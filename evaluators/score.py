"""Conversions between centipawns, expected score and win/draw/loss.

One formula is used everywhere (search output, training targets) so that a
"+1.00" means the same thing to the network, the search and the GUI. It is the
winning-chance curve lichess uses: an advantage of ~300 cp is ~0.5 expected
score on the [-1, 1] scale.
"""

from __future__ import annotations

import math

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
