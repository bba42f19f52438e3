"""What every search shares: limits, stop control, progress reports, root moves and the Search ABC."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

import chess

from evaluators.base import Evaluator
from hackmate_core.options import Configurable
from hackmate_core.score import mate_in_moves, uci_score
from hackmate_core.tablebase import Tablebase
from search.stoppers import Progress, StopperChain, compose


class SearchStopped(Exception):
    """Raised inside a search to unwind when time, nodes or `stop` say so."""


def _ignore(text: str) -> None:
    """Default for :attr:`SearchControl.note`."""


@dataclass
class SearchControl:
    """The limits of one `go`, shared with the UCI thread: `stop`, and the stoppers made from the limits.

    ``soft_deadline`` is the time this move should take, ``hard_deadline``
    the time at which the search must return at once. Both are
    :func:`time.monotonic` values or None. While pondering they stay None
    until :meth:`ponderhit` installs them. The rules that apply them, and the
    other limits, are the :attr:`stoppers` (:mod:`search.stoppers`).
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
    #: `go searchmoves`: the root moves the search may play (None: all).
    searchmoves: Optional[list[chess.Move]] = None
    #: Where the search says something once (`info string`), such as a full tree.
    note: Callable[[str], None] = _ignore
    #: `go movetime`: this move's time cannot be saved for later moves, so deepening searches spend all of it.
    fixed_time: bool = False

    def stop(self) -> None:
        self.stop_event.set()

    def __post_init__(self) -> None:
        #: When the time budget started: the `go`, or the ponderhit.
        self.budget_start = self.start
        #: The rules that end the search, made from the limits above.
        self.stoppers: StopperChain = compose(self.max_nodes, self.max_depth, self.mate_in, self.infinite,
                                              spend_all=self.fixed_time)

    def ponderhit(self) -> None:
        """The opponent played the expected move: start the real clock now."""
        now = time.monotonic()
        if self.ponder_budget is not None:
            self.soft_deadline = now + self.ponder_budget[0]
            self.hard_deadline = now + self.ponder_budget[1]
        self.budget_start = now
        self.pondering = False

    @property
    def must_wait_for_stop(self) -> bool:
        """UCI forbids `bestmove` before `stop`/`ponderhit` in these modes."""
        return self.infinite or self.pondering

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def stopped(self, nodes: int) -> bool:
        """True when the search has to return at once (`stop`, the node limit, the hard deadline); asked inside
        the search every few nodes."""
        return self.stop_event.is_set() or self.stoppers.interrupts(nodes, self)

    def should_stop(self, progress: Progress) -> bool:
        """True when the search should return after the step it just finished (an iteration, a minibatch)."""
        return self.stop_event.is_set() or self.stoppers.ends(progress, self)


@dataclass
class SearchInfo:
    """One `info` line's worth of progress, formatted by the UCI layer.

    ``score`` is on the shared scale of :mod:`hackmate_core.score` (centipawns,
    mates, tablebase wins) from the side to move's point of view.
    """

    depth: int
    seldepth: int
    nodes: int
    time_s: float
    pv: list[chess.Move]
    score: int
    wdl: Optional[tuple[int, int, int]] = None
    multipv: int = 1
    hashfull: int = 0
    tbhits: int = 0
    bound: Optional[str] = None  # "lowerbound" / "upperbound"

    @property
    def mate(self) -> Optional[int]:
        """UCI's `mate N`, or None for a centipawn score."""
        return mate_in_moves(self.score)

    @property
    def score_cp(self) -> Optional[int]:
        """UCI's `cp N`, or None for a mate."""
        kind, value = uci_score(self.score)
        return value if kind == "cp" else None


@dataclass
class SearchResult:
    best_move: Optional[chess.Move]
    ponder_move: Optional[chess.Move] = None


@dataclass
class RootMoves:
    """The moves a search may play at the root, and the root's tablebase result when it has one."""

    moves: list[chess.Move]
    #: +1 / 0 / -1 for the side to move when the tables cover the root, else None.
    tablebase_result: Optional[int] = None


Reporter = Callable[[SearchInfo], None]


class Search(Configurable, ABC):
    """A search over positions using an evaluator it was constructed with.

    Tuning knobs are declared in ``OPTIONS`` (see :mod:`hackmate_core.options`)
    and may be set while the search runs: searches read them as they go.
    """

    name: str = "abstract"
    #: True when the search keeps a structure sized by ``Hash`` (a transposition table, a tree).
    uses_hash: bool = True
    #: What the engine's registry reads without building it (docs/plugins.md): a few words for ``--search``'s help,
    #: the evaluator interface the search is built over (``cls(evaluator)``), and bench's nodes per position.
    HELP: ClassVar[str] = ""
    EVALUATES_WITH: ClassVar[type] = Evaluator
    BENCH_NODES: ClassVar[int] = 1000

    def __init__(self, evaluator: Any) -> None:
        """``evaluator``: what the search evaluates with, an instance of the class's ``EVALUATES_WITH``."""
        super().__init__()
        self.evaluator = evaluator
        #: The stop control of the running search (a fresh one until the first search).
        self.control = SearchControl()
        self.multipv = 1
        self.tablebase: Tablebase | None = None
        self.hash_mb: float = 16
        #: Nodes searched by the last (or running) search.
        self.nodes = 0
        #: CPU threads the engine may use in all (the UCI option Threads), search and network together.
        self.threads = 1
        self._tablebase_hits_at_start = 0

    @abstractmethod
    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        """Search ``board`` (which must not be modified) until ``control`` says stop."""

    def root_moves(self, board: chess.Board, control: SearchControl) -> RootMoves:
        """The legal moves, narrowed to `go searchmoves` and then by the tablebase root filter.

        Called once at the start of every search (it also starts the `tbhits` count).
        """
        tablebase = self.tablebase
        self._tablebase_hits_at_start = tablebase.hits if tablebase is not None else 0
        moves = list(board.legal_moves)
        if control.searchmoves:
            allowed = set(control.searchmoves)
            moves = [move for move in moves if move in allowed] or moves
        if tablebase is not None and moves:
            filtered = tablebase.root_moves(board, moves)
            if filtered is not None:
                return RootMoves(filtered[1], filtered[0])
        return RootMoves(moves)

    def tbhits(self) -> int:
        """Tablebase probes of the current search."""
        tablebase = self.tablebase
        return max(0, tablebase.hits - self._tablebase_hits_at_start) if tablebase is not None else 0

    def set_hash(self, megabytes: float) -> None:
        """Memory for the search's own table; may be called while the search runs."""
        self.hash_mb = megabytes

    def set_threads(self, threads: int) -> None:
        """Use ``threads`` CPU threads in all; searches that share them with a network split them here."""
        self.threads = threads

    def new_game(self) -> None:
        """Forget the previous game (hash tables, trees)."""

    def hashfull(self) -> int:
        """Permille of the search's table in use, as UCI reports it."""
        return 0
