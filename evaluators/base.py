"""The evaluator interface every search depends on.

Searches import only this module, never a concrete evaluator, so a new
evaluator plugs in by subclassing :class:`Evaluator` (scalar value and optional
move priors) or :class:`Comparator` (pairwise "which position is better").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import chess


@dataclass
class Evaluation:
    """A position's evaluation from the side to move's point of view.

    ``value`` is the expected score W - L in [-1, 1]; ``draw`` the draw
    probability when the evaluator models it; ``priors`` maps every legal move
    to a probability (they sum to 1) when the evaluator has a policy.
    """

    value: float
    draw: float | None = None
    priors: dict[chess.Move, float] | None = None


@dataclass
class EvaluatorOption:
    """A tuning knob an evaluator exposes as a UCI spin/check/string option."""

    name: str
    kind: str  # "spin", "check" or "string"
    default: Any
    minimum: int | None = None
    maximum: int | None = None


class Evaluator(ABC):
    """Scalar evaluator with optional move priors.

    Subclasses implement :meth:`centipawns` (cheap, used by alpha-beta) and may
    override :meth:`evaluate_batch` to evaluate many leaves in one call (used by
    PUCT to amortise neural-network inference).
    """

    name: str = "abstract"
    #: True when :meth:`evaluate` returns a learned policy rather than a heuristic.
    has_policy: bool = False

    @abstractmethod
    def centipawns(self, board: chess.Board) -> int:
        """Static score in centipawns from the side to move's point of view."""

    @abstractmethod
    def evaluate(self, board: chess.Board) -> Evaluation:
        """Value and (possibly heuristic) priors of a non-terminal position."""

    def evaluate_batch(self, boards: Sequence[chess.Board]) -> list[Evaluation]:
        """Evaluate several positions; neural evaluators override this to batch."""
        return [self.evaluate(board) for board in boards]

    def options(self) -> list[EvaluatorOption]:
        """Evaluator-specific UCI options."""
        return []

    def set_option(self, name: str, value: Any) -> None:
        """Apply one of :meth:`options`; called with an already validated value."""

    def set_cache_size(self, megabytes: int) -> None:
        """Resize any position cache to roughly this many megabytes."""

    def new_game(self) -> None:
        """Forget anything learned about the previous game (caches)."""


class Comparator(ABC):
    """Pairwise evaluator: says which of two positions is better for White.

    Positions are turned into feature vectors once (:meth:`features`, cached by
    the implementation) and compared cheaply (:meth:`prefers_first`).
    """

    name: str = "abstract-comparator"

    @abstractmethod
    def features(self, board: chess.Board) -> Any:
        """Feature vector of a position (the network tower output)."""

    @abstractmethod
    def prefers_first(self, first: Any, second: Any) -> float:
        """Probability in [0, 1] that ``first`` is better for White than ``second``."""

    def push(self, board: chess.Board, move: chess.Move) -> None:
        """Make ``move`` on ``board``, updating any incremental state."""
        board.push(move)

    def pop(self, board: chess.Board) -> chess.Move:
        """Unmake the last move on ``board``, restoring incremental state."""
        return board.pop()

    def reset(self, board: chess.Board) -> None:
        """Rebuild incremental state for ``board`` from scratch."""

    def options(self) -> list[EvaluatorOption]:
        return []

    def set_option(self, name: str, value: Any) -> None:
        """Apply one of :meth:`options`."""

    def set_cache_size(self, megabytes: int) -> None:
        """Resize the feature cache to roughly this many megabytes."""

    def new_game(self) -> None:
        """Clear caches."""


class LoadError(Exception):
    """A weights file is missing, unreadable or not what the evaluator expects."""
