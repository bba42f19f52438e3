"""Stoppers: the rules that end a search, one object each, composed from the `go` limits (Lc0's pattern).

A search asks two questions through its :class:`search.base.SearchControl`. Inside its loops, every few
nodes, whether it must return at once (:meth:`StopperChain.interrupts`: the node limit, the hard deadline);
at the end of each step, an iteration of a deepening search or a minibatch of PUCT, whether to go on, saying
where it stands in a :class:`Progress` (:meth:`StopperChain.ends`: also the depth limit, `go mate`, a forced
move, a proven result, the soft deadline and, for PUCT, a best move the time left cannot change). The
searches keep only what their own loops need: alpha-beta compares its count with the node limit at every
node, so that a budget of N nodes searches exactly N, and PUCT sends no minibatch that would come back
after the hard deadline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence


class Deadlines(Protocol):
    """The clock the stoppers read (:func:`time.monotonic` values; None while there is no time limit).

    The soft deadline is the target, the hard one the latest moment to answer; both stay None while
    pondering until the ponderhit installs them, and the soft one may be moved once (:class:`SoftDeadline`).
    """

    budget_start: float
    soft_deadline: Optional[float]
    hard_deadline: Optional[float]


@dataclass
class Progress:
    """Where a search stands at the end of a step, in the terms the stoppers need."""

    nodes: int
    #: The iteration just completed (deepening searches) or the average depth of the playouts (PUCT).
    depth: float
    #: Moves the search may play at the root.
    root_moves: int
    #: True when each step is an iteration one ply deeper than the last, which costs about as much as all
    #: the earlier ones together or more; False when a step is small (a minibatch).
    deepening: bool
    #: A mate for the side to move has been found (what `go mate` asks for).
    won: bool = False
    #: The result is proven (a mate within the depth searched, a decided root): searching on cannot change it.
    proven: bool = False
    #: PUCT: True when the runner-up cannot overtake the best move in that many more seconds of this search.
    cannot_change: Optional[Callable[[float], bool]] = None
    #: PUCT: True when the best move by visits is not the best by value.
    unclear: Optional[Callable[[], bool]] = None


class Stopper:
    """One rule; each question defaults to "go on"."""

    def interrupts(self, nodes: int, deadlines: Deadlines) -> bool:
        """Asked inside the search every few nodes: True when it must return at once. Must be cheap."""
        return False

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        """Asked at the end of each step: True when the search should return now."""
        return False


class NodeLimit(Stopper):
    """`go nodes N`, bench's budget, self-play's playouts."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes

    def interrupts(self, nodes: int, deadlines: Deadlines) -> bool:
        return nodes >= self.max_nodes


class HardDeadline(Stopper):
    """The latest moment to answer: the move's share of the clock, or `go movetime` less the overhead."""

    def interrupts(self, nodes: int, deadlines: Deadlines) -> bool:
        deadline = deadlines.hard_deadline
        return deadline is not None and time.monotonic() >= deadline


class DepthLimit(Stopper):
    """`go depth D`: the iteration D is complete, or PUCT's playouts reach D plies on average."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        return progress.nodes > 0 and progress.depth >= self.max_depth  # nothing searched has no depth yet


class MateTarget(Stopper):
    """`go mate N`: a mate found answers it, and a full-width search of 2N-1 plies has looked at every mate in N."""

    def __init__(self, moves: int) -> None:
        self.moves = moves

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        return progress.won or progress.deepening and progress.depth >= 2 * self.moves - 1


class ForcedMove(Stopper):
    """Only one move to play: with a clock running, spend none of it (pondering, with no deadline yet, goes on)."""

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        return progress.root_moves <= 1 and deadlines.soft_deadline is not None


class ProvenResult(Stopper):
    """A proven result cannot change by searching deeper (left out under `go infinite`, which waits for `stop`)."""

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        return progress.proven


class BestMoveSettled(Stopper):
    """Before the soft deadline: stop when the runner-up cannot overtake the best move in the time left
    (Lc0's smart pruning). Only PUCT, whose visits say how far ahead the best is, answers the question."""

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        soft = deadlines.soft_deadline
        return (soft is not None and now < soft and progress.cannot_change is not None
                and progress.cannot_change(soft - now))


class SoftDeadline(Stopper):
    """The time this move should take.

    A deepening search starts no iteration that would likely end after it: an iteration takes about as long as
    all the earlier ones together or longer, so none starts once half the time is spent (one started later would
    run on to the hard deadline). With ``spend_all`` (`go movetime`) the time cannot be saved for later moves, so
    every iteration starts and the hard deadline ends the last; the one it cuts still fills the transposition
    table, and the comparison search plays its root move when it beat the last iteration's. A search of small
    steps (PUCT) stops at the deadline, unless its best move is unclear there: then it thinks on, once, for half
    of what remains before the hard deadline.
    """

    def __init__(self, spend_all: bool = False) -> None:
        self.spend_all = spend_all
        self.extended = False

    def ends(self, progress: Progress, deadlines: Deadlines, now: float) -> bool:
        soft = deadlines.soft_deadline
        if soft is None:
            return False
        next_step = now - deadlines.budget_start if progress.deepening and not self.spend_all else 0.0
        if now + next_step < soft:
            return False
        hard = deadlines.hard_deadline
        if not self.extended and progress.unclear is not None and progress.unclear() and hard is not None:
            deadlines.soft_deadline = now + (hard - now) / 2
            self.extended = True
            return False
        return True


class StopperChain:
    """Stoppers asked in turn: the search stops as soon as one says so."""

    def __init__(self, stoppers: Sequence[Stopper]) -> None:
        self.stoppers = tuple(stoppers)
        #: Those with an inner-loop rule, the only ones :meth:`interrupts` needs to ask.
        self.interrupting = tuple(s for s in self.stoppers if type(s).interrupts is not Stopper.interrupts)

    def interrupts(self, nodes: int, deadlines: Deadlines) -> bool:
        for stopper in self.interrupting:
            if stopper.interrupts(nodes, deadlines):
                return True
        return False

    def ends(self, progress: Progress, deadlines: Deadlines) -> bool:
        if self.interrupts(progress.nodes, deadlines):
            return True
        now = time.monotonic()
        for stopper in self.stoppers:
            if stopper.ends(progress, deadlines, now):
                return True
        return False


def compose(max_nodes: Optional[int] = None, max_depth: Optional[int] = None, mate_in: Optional[int] = None,
            infinite: bool = False, spend_all: bool = False) -> StopperChain:
    """The chain for a `go` command's limits; the time rules read the deadlines as they are when asked.

    The extension of :class:`SoftDeadline` moves the soft deadline, so it comes last, after every rule
    that would have stopped the search anyway.
    """
    stoppers: list[Stopper] = []
    if max_nodes is not None:
        stoppers.append(NodeLimit(max_nodes))
    stoppers.append(HardDeadline())
    if max_depth is not None:
        stoppers.append(DepthLimit(max_depth))
    if mate_in is not None:
        stoppers.append(MateTarget(mate_in))
    stoppers.append(ForcedMove())
    if not infinite:
        stoppers.append(ProvenResult())
    stoppers += [BestMoveSettled(), SoftDeadline(spend_all)]
    return StopperChain(stoppers)
