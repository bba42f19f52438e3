"""What every search shares: limits, stop control, progress reports and the Search ABC."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import chess

from evaluators.base import EvaluatorOption
from search.tablebase import Tablebase


class SearchStopped(Exception):
    """Raised inside a search to unwind when time, nodes or `stop` say so."""


@dataclass
class SearchControl:
    """Decides when a running search must stop; shared with the UCI thread.

    ``soft_deadline`` is the time after which no new iteration should start,
    ``hard_deadline`` the time at which the search must return at once. Both
    are :func:`time.monotonic` values or None. While pondering they stay None
    until :meth:`ponderhit` installs them.
    """

    max_depth: Optional[int] = None
    max_nodes: Optional[int] = None
    mate_in: Optional[int] = None
    infinite: bool = False
    pondering: bool = False
    soft_deadline: Optional[float] = None
    hard_deadline: Optional[float] = None
    start: float = field(default_factory=time.monotonic)
    stop_event: threading.Event = field(default_factory=threading.Event)
    #: (soft, hard) seconds to install from the moment of a ponderhit.
    ponder_budget: Optional[tuple[float, float]] = None

    def stop(self) -> None:
        self.stop_event.set()

    def ponderhit(self) -> None:
        """The opponent played the expected move: start the real clock now."""
        now = time.monotonic()
        if self.ponder_budget is not None:
            self.soft_deadline = now + self.ponder_budget[0]
            self.hard_deadline = now + self.ponder_budget[1]
        self.pondering = False

    @property
    def must_wait_for_stop(self) -> bool:
        """UCI forbids `bestmove` before `stop`/`ponderhit` in these modes."""
        return self.infinite or self.pondering

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def stopped(self, nodes: int) -> bool:
        """True when the search has to return now."""
        if self.stop_event.is_set():
            return True
        if self.max_nodes is not None and nodes >= self.max_nodes:
            return True
        return self.hard_deadline is not None and time.monotonic() >= self.hard_deadline

    def past_soft_deadline(self) -> bool:
        return self.soft_deadline is not None and time.monotonic() >= self.soft_deadline

    def remaining_to_soft(self) -> Optional[float]:
        if self.soft_deadline is None:
            return None
        return self.soft_deadline - time.monotonic()


@dataclass
class SearchInfo:
    """One `info` line's worth of progress, formatted by the UCI layer."""

    depth: int
    seldepth: int
    nodes: int
    time_s: float
    pv: list[chess.Move]
    score_cp: Optional[int] = None
    mate: Optional[int] = None
    wdl: Optional[tuple[int, int, int]] = None
    multipv: int = 1
    hashfull: Optional[int] = None
    bound: Optional[str] = None  # "lowerbound" / "upperbound"


@dataclass
class SearchResult:
    best_move: Optional[chess.Move]
    ponder_move: Optional[chess.Move] = None


Reporter = Callable[[SearchInfo], None]


class Search(ABC):
    """A search over positions using an evaluator it was constructed with."""

    name: str = "abstract"

    def __init__(self) -> None:
        self.multipv = 1
        self.tablebase: Tablebase | None = None
        self.hash_mb = 16
        #: Nodes searched by the last (or running) search.
        self.nodes = 0

    @abstractmethod
    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        """Search ``board`` (which must not be modified) until ``control`` says stop."""

    def options(self) -> list[EvaluatorOption]:
        """Search-specific tuning options exposed over UCI."""
        return []

    def set_option(self, name: str, value: Any) -> None:
        """Apply one of :meth:`options`."""

    def set_hash(self, megabytes: int) -> None:
        self.hash_mb = megabytes

    def new_game(self) -> None:
        """Forget the previous game (hash tables, trees)."""

    def hashfull(self) -> int:
        """Permille of the hash table in use, as UCI reports it."""
        return 0
