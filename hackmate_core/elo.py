"""Match statistics: score, Elo difference with a 95% interval, and likelihood of superiority."""

from __future__ import annotations

import math
from dataclasses import dataclass


def score_to_elo(score: float) -> float:
    """Elo difference for an expected score in (0, 1); +-inf at the ends."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass
class MatchStats:
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    def elo(self) -> float:
        return score_to_elo(self.score)

    def elo_interval(self, z: float = 1.959964) -> tuple[float, float]:
        """95% confidence interval of the Elo difference (normal approximation of the score)."""
        n = self.games
        if n == 0:
            return -math.inf, math.inf
        s = self.score
        variance = (self.wins * (1 - s) ** 2 + self.draws * (0.5 - s) ** 2 + self.losses * s ** 2) / n
        margin = z * math.sqrt(variance / n)
        return score_to_elo(s - margin), score_to_elo(s + margin)

    def los(self) -> float:
        """Likelihood of superiority: probability that the first player is stronger (draws ignored)."""
        decisive = self.wins + self.losses
        if decisive == 0:
            return 0.5
        return 0.5 * (1.0 + math.erf((self.wins - self.losses) / math.sqrt(2.0 * decisive)))

    def summary(self) -> str:
        low, high = self.elo_interval()
        return (f"W {self.wins} D {self.draws} L {self.losses}  score {100 * self.score:.1f}% of {self.games}  "
                f"Elo {self.elo():+.0f} [{low:+.0f}, {high:+.0f}] (95%)  LOS {100 * self.los():.1f}%")
