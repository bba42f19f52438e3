"""The evaluator interface every search depends on.

Searches import only this module, never a concrete evaluator, so a new
evaluator plugs in by subclassing :class:`Evaluator` (scalar value and optional
move priors) or :class:`Comparator` (pairwise "which position is better").
Wrappers (:class:`EvaluatorWrapper`, :class:`ComparatorWrapper`) add a concern
such as a cache or a heuristic blend around any of them; the backend registry
(:mod:`engine.backends`) composes them.

Evaluation in stages (:class:`Request`): a search that wants to keep working
while a network runs hands a position over in four steps: :meth:`Evaluator.prepare`
on its own thread while it stands on the position, :meth:`Evaluator.collate` of a
whole batch on the same thread (the network's input), :meth:`Evaluator.infer` on any
thread (the network, which releases the GIL), :meth:`Evaluator.finish` back on
its own thread. Every evaluator supports them: the default stages copy the board
and call :meth:`Evaluator.evaluate_batch` in ``finish``; networks and their
wrappers split the work for real.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Hashable, Optional, Sequence, Union

import chess

from hackmate_core.boards import transposition_key
from hackmate_core.options import Configurable, Option
from hackmate_core.score import q_to_cp

#: Legal moves of each board of a batch, when the caller has generated them already (same order as the boards).
MoveLists = Optional[Sequence[Sequence[chess.Move]]]


class Evaluation:
    """A position's evaluation from the side to move's point of view.

    ``value`` is the expected score W - L in [-1, 1]; ``draw`` the draw
    probability when the evaluator models it; ``priors`` maps every legal move
    to a probability (they sum to 1) when the evaluator has a policy.

    A network hands its priors over as a list aligned with the move list it
    was given (``moves`` and ``policy``), because a dict keyed by moves costs a
    Python-level hash per move; the dict is built from them only when asked for.
    """

    __slots__ = ("value", "draw", "moves", "policy", "_priors")

    def __init__(self, value: float, draw: float | None = None, priors: dict[chess.Move, float] | None = None,
                 moves: Optional[Sequence[chess.Move]] = None, policy: Optional[Sequence[float]] = None) -> None:
        self.value = value
        self.draw = draw
        self._priors = priors
        self.moves = moves if priors is None else None
        self.policy = policy if priors is None else None

    @property
    def priors(self) -> dict[chess.Move, float] | None:
        if self._priors is None and self.moves is not None:
            self._priors = dict(zip(self.moves, self.policy))  # type: ignore[arg-type]
        return self._priors

    def policy_of(self, moves: Sequence[chess.Move]) -> Optional[list[float]]:
        """The priors of ``moves``, in their order (None without a policy)."""
        if self.moves is moves:
            return list(self.policy)  # type: ignore[arg-type]
        priors = self.priors
        return None if priors is None else [priors[move] for move in moves]

    def __repr__(self) -> str:
        return f"Evaluation(value={self.value!r}, draw={self.draw!r}, priors={self.priors!r})"


class Request:
    """A position on its way through an evaluator's stages (see the module docstring).

    ``moves`` are the position's legal moves; ``evaluation`` is set by
    :meth:`Evaluator.prepare` when the answer is known at once (a cache hit),
    in which case the request skips ``collate``, ``infer`` and ``finish``. Each layer of a
    wrapped evaluator keeps what it took from the board in attributes of its own.
    """

    def __init__(self, moves: Sequence[chess.Move]) -> None:
        self.moves = moves
        self.evaluation: Optional[Evaluation] = None


class Pluggable:
    """What the engine's registry reads from an evaluator class without building it (docs/plugins.md).

    Declared once on the class, the registry derives from it the CLI's ``--eval`` and its help, the UCI
    ``Evaluator`` combo, the option listing and bench.
    """

    #: The search it plays best with: the engine's choice when ``--search`` is left out or ``Evaluator`` is set alone.
    NATURAL_SEARCH: ClassVar[str] = "alphabeta"
    #: Its shipped network, a file name in weights/ (or an absolute path); "" when it reads no weights.
    DEFAULT_WEIGHTS: ClassVar[str] = ""
    #: A few words for ``--eval``'s help.
    HELP: ClassVar[str] = ""
    #: The wrappers the engine puts around it, outermost first (their options are listed with its own).
    WRAPPERS: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def create(cls, weights: Optional[Path], threads: int, lazy: bool) -> Any:
        """The bare evaluator as the engine builds it: ``weights`` is the network file (None without
        ``DEFAULT_WEIGHTS``), ``threads`` the UCI option Threads, ``lazy`` allows reading the weights at
        :meth:`load` instead of now."""
        return cls()


class Evaluator(Configurable, Pluggable, ABC):
    """Scalar evaluator with optional move priors.

    Subclasses implement :meth:`centipawns` (cheap, used by alpha-beta) and
    :meth:`evaluate`, and may override :meth:`evaluate_batch` to evaluate many
    leaves in one call (used by PUCT to amortise neural-network inference).
    Tuning knobs are declared in ``OPTIONS`` (see :mod:`hackmate_core.options`).
    """

    name: str = "abstract"
    #: True when :meth:`evaluate` returns a learned policy rather than a heuristic.
    has_policy: bool = False

    @abstractmethod
    def centipawns(self, board: chess.Board) -> int:
        """Static score in centipawns from the side to move's point of view."""

    @abstractmethod
    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        """Value and (possibly heuristic) priors of a non-terminal position (``moves``: its legal moves, if known)."""

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        """Evaluate several positions; neural evaluators override this to batch."""
        return [self.evaluate(board, moves[i] if moves is not None else None) for i, board in enumerate(boards)]

    def prepare(self, board: chess.Board, moves: Sequence[chess.Move]) -> Request:
        """Take what evaluating ``board`` (legal ``moves``) needs; ``board`` may change as soon as this returns."""
        request = Request(moves)
        request.board = board.copy(stack=max(8, board.halfmove_clock))  # type: ignore[attr-defined]
        return request

    def root_evaluation(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[Evaluation]:
        """A better evaluation of a search's root than :meth:`evaluate` gives, or None (the default) when this
        evaluator has none: one position starts a whole search, so an evaluator may spend more on it (the ResNet's
        ``MirrorRoot``). PUCT expands a new root with it and re-ranks a root kept from the last search by it."""
        return None

    def takes_leaves(self) -> bool:
        """Whether :meth:`prepare_leaf` takes a compiled PUCT leaf (hackmate_core._cpuct.Leaf) instead of a board:
        the compiled PUCT path runs only for evaluators that say so (the default: no)."""
        return False

    def prepare_leaf(self, leaf: Any) -> Request:
        """:meth:`prepare` of a compiled PUCT leaf, for evaluators whose :meth:`takes_leaves` is true: the same
        request, with what the evaluator takes from the board read from the leaf instead."""
        raise NotImplementedError(f"{self.name} does not take compiled leaves")

    def leaf_history(self, board: chess.Board) -> Optional[bytes]:
        """What the compiled leaves of a search from ``board`` take from the game before it, once per search: an
        encoding with history gives the input of the root and the positions before it (hackmate_core._cpuct.game);
        None (the default) when a leaf's own position is all its input."""
        return None

    def collate(self, requests: Sequence[Request]) -> Any:
        """A batch of prepared requests as the network's input (None by default), on the preparing thread.

        Whatever Python work a batch needs happens here, so that :meth:`infer`, on another thread, takes
        the GIL only to start and end the network: an inference thread that waits for the GIL idles its core.
        """
        return None

    def infer(self, requests: Sequence[Request], inputs: Any) -> None:
        """The network part of a batch of prepared requests (``inputs``: what :meth:`collate` made of them): runs
        on any thread and touches no board.

        The default does nothing (its work is done by :meth:`finish`).
        """

    def finish(self, requests: Sequence[Request]) -> list[Evaluation]:
        """The evaluations of requests that went through :meth:`infer`, in order (on the preparing thread)."""
        return self.evaluate_batch([request.board for request in requests],  # type: ignore[attr-defined]
                                   [request.moves for request in requests])

    @property
    def infers_in_native_code(self) -> bool:
        """True when :meth:`infer` runs a network that releases the GIL: worth a thread of its own."""
        return False

    def load(self) -> None:
        """Read weights now if construction deferred it (LoadError when they are unusable)."""

    def cache_key(self, board: chess.Board) -> Hashable:
        """What the evaluation of ``board`` depends on (a cache's key): the position and the fifty-move clock."""
        return transposition_key(board), min(board.halfmove_clock, 100)

    def set_threads(self, threads: int) -> None:
        """Use at most this many CPU threads (networks set their runtime's thread pool)."""

    def new_game(self) -> None:
        """Forget anything learned about the previous game."""


def evaluate_in_stages(evaluator: Evaluator, boards: Sequence[chess.Board], moves: MoveLists = None
                       ) -> list[Evaluation]:
    """:meth:`Evaluator.evaluate_batch` by way of the stages, for evaluators that implement the stages."""
    requests = [evaluator.prepare(board, list(board.legal_moves) if moves is None else moves[i])
                for i, board in enumerate(boards)]
    todo = [request for request in requests if request.evaluation is None]
    if todo:
        evaluator.infer(todo, evaluator.collate(todo))
        for request, evaluation in zip(todo, evaluator.finish(todo)):
            request.evaluation = evaluation
    return [request.evaluation for request in requests]  # type: ignore[misc]


class Forwarding:
    """What every wrapper forwards to the evaluator or comparator it wraps (``inner``): its name, its options after
    the wrapper's own, its notices and fallbacks after the wrapper's, loading, threads and new games."""

    inner: Any
    OPTIONS: ClassVar[Sequence[Option]]

    @property
    def name(self) -> str:
        return self.inner.name

    def load(self) -> None:
        self.inner.load()

    def options(self) -> list[Option]:
        return list(self.OPTIONS) + self.inner.options()

    def notices(self) -> list[str]:
        return super().notices() + self.inner.notices()

    def fallbacks(self) -> list[str]:
        return super().fallbacks() + self.inner.fallbacks()

    def set_option(self, name: str, value: Any) -> bool:
        return super().set_option(name, value) or self.inner.set_option(name, value)

    def set_threads(self, threads: int) -> None:
        self.inner.set_threads(threads)

    def new_game(self) -> None:
        self.inner.new_game()


class EvaluatorWrapper(Forwarding, Evaluator):  # type: ignore[misc]
    """An evaluator around another one: forwards everything, its own options first.

    The stages are forwarded too, unless a subclass changes evaluations by
    overriding ``evaluate_batch`` or ``evaluate`` without overriding
    :meth:`prepare`: then the default stages run, which call that override.
    """

    def __init__(self, inner: Evaluator) -> None:
        self.inner = inner
        super().__init__()
        cls = type(self)
        self._forwards_stages = cls.prepare is not EvaluatorWrapper.prepare or (
            cls.evaluate_batch is EvaluatorWrapper.evaluate_batch and cls.evaluate is EvaluatorWrapper.evaluate)


    @property
    def has_policy(self) -> bool:  # type: ignore[override]
        return self.inner.has_policy

    def centipawns(self, board: chess.Board) -> int:
        return self.inner.centipawns(board)

    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        return self.evaluate_batch([board], None if moves is None else [moves])[0]

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        return self.inner.evaluate_batch(boards, moves)

    def prepare(self, board: chess.Board, moves: Sequence[chess.Move]) -> Request:
        return self.inner.prepare(board, moves) if self._forwards_stages else super().prepare(board, moves)

    def root_evaluation(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[Evaluation]:
        """The inner evaluator's, where this wrapper forwards the stages; a wrapper whose own stages change
        evaluations overrides this too (else its change would be skipped at the root, as the blend's would)."""
        return self.inner.root_evaluation(board, moves) if self._forwards_stages else None

    def takes_leaves(self) -> bool:
        """True when the stages are forwarded to an evaluator that takes compiled leaves and a ``prepare`` of this
        wrapper's own, if any, has a ``prepare_leaf`` beside it."""
        cls = type(self)
        own_prepare = cls.prepare is not EvaluatorWrapper.prepare
        return (self._forwards_stages and (not own_prepare or cls.prepare_leaf is not EvaluatorWrapper.prepare_leaf)
                and self.inner.takes_leaves())

    def prepare_leaf(self, leaf: Any) -> Request:
        return self.inner.prepare_leaf(leaf)

    def leaf_history(self, board: chess.Board) -> Optional[bytes]:
        return self.inner.leaf_history(board)

    def collate(self, requests: Sequence[Request]) -> Any:
        return self.inner.collate(requests) if self._forwards_stages else None

    def infer(self, requests: Sequence[Request], inputs: Any) -> None:
        if self._forwards_stages:
            self.inner.infer(requests, inputs)

    def finish(self, requests: Sequence[Request]) -> list[Evaluation]:
        return self.inner.finish(requests) if self._forwards_stages else super().finish(requests)

    @property
    def infers_in_native_code(self) -> bool:
        return self._forwards_stages and self.inner.infers_in_native_code

    def cache_key(self, board: chess.Board) -> Hashable:
        return self.inner.cache_key(board)


def value_centipawns(evaluator: Evaluator, board: chess.Board) -> int:
    """An evaluator's :meth:`~Evaluator.evaluate` value as centipawns (networks score alpha-beta nodes so)."""
    return q_to_cp(evaluator.evaluate(board).value)


class Comparator(Configurable, Pluggable, ABC):
    """Pairwise evaluator: says which of two positions is better for White.

    Positions are turned into feature vectors once (:meth:`features`) and
    compared cheaply (:meth:`prefers_first`).
    """

    name: str = "abstract-comparator"
    NATURAL_SEARCH = "comparison"

    @abstractmethod
    def features(self, board: chess.Board) -> Any:
        """Feature vector of a position (the network tower output)."""

    @abstractmethod
    def prefers_first(self, first: Any, second: Any) -> float:
        """Probability in [0, 1] that ``first`` is better for White than ``second``."""

    def prefers_first_many(self, firsts: Sequence[Any], second: Any) -> Sequence[float]:
        """:meth:`prefers_first` of each of ``firsts`` against ``second`` (networks batch it)."""
        return [self.prefers_first(first, second) for first in firsts]

    def child_features(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[Any]:
        """Features of the position after each of ``moves`` (networks batch them)."""
        features = []
        for move in moves:
            self.push(board, move)
            try:
                features.append(self.features(board))
            finally:
                self.pop(board)
        return features

    def push(self, board: chess.Board, move: chess.Move) -> None:
        """Make ``move`` on ``board``, updating any incremental state."""
        board.push(move)

    def pop(self, board: chess.Board) -> chess.Move:
        """Unmake the last move on ``board``, restoring incremental state."""
        return board.pop()

    def reset(self, board: chess.Board) -> None:
        """Rebuild incremental state for ``board`` from scratch."""

    def hashfull(self) -> int:
        """Permille of the feature cache in use (0 without one)."""
        return 0

    def load(self) -> None:
        """Read weights now if construction deferred it (LoadError when they are unusable)."""

    def set_threads(self, threads: int) -> None:
        """Use at most this many CPU threads."""

    def new_game(self) -> None:
        """Forget the previous game."""


class ComparatorWrapper(Forwarding, Comparator):  # type: ignore[misc]
    """A comparator around another one: forwards everything, its own options first."""

    def __init__(self, inner: Comparator) -> None:
        self.inner = inner
        super().__init__()

    def features(self, board: chess.Board) -> Any:
        return self.inner.features(board)

    def prefers_first(self, first: Any, second: Any) -> float:
        return self.inner.prefers_first(first, second)

    def prefers_first_many(self, firsts: Sequence[Any], second: Any) -> Sequence[float]:
        return self.inner.prefers_first_many(firsts, second)

    def child_features(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[Any]:
        return self.inner.child_features(board, moves)

    def push(self, board: chess.Board, move: chess.Move) -> None:
        self.inner.push(board, move)

    def pop(self, board: chess.Board) -> chess.Move:
        return self.inner.pop(board)

    def reset(self, board: chess.Board) -> None:
        self.inner.reset(board)

    def hashfull(self) -> int:
        return self.inner.hashfull()


AnyEvaluator = Union[Evaluator, Comparator]


def unwrap(evaluator: AnyEvaluator) -> AnyEvaluator:
    """The evaluator at the core of any wrappers (the network itself)."""
    while isinstance(evaluator, (EvaluatorWrapper, ComparatorWrapper)):
        evaluator = evaluator.inner
    return evaluator


class LoadError(Exception):
    """A weights file is missing, unreadable or not what the evaluator expects."""
