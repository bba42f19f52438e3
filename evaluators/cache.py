"""The wrappers that put a least-recently-used cache (:class:`hackmate_core.lru.LruCache`) around any evaluator.

:class:`CachedEvaluator` keeps evaluations by :meth:`Evaluator.cache_key`
(the position, its fifty-move clock and, for encodings with history, the
previous moves); :class:`CachedComparator` keeps comparator features by
position. Keys are stored as their 64-bit hash, which keeps an entry small;
a collision between two of the cached positions is negligibly rare. Both are
resized while a search runs (``Hash`` sent during a search) and cleared when
an option changes what they hold. All operations take a lock, since the UCI
thread resizes or clears while the search thread reads and writes.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import chess

from hackmate_core.boards import transposition_key
from hackmate_core.lru import LruCache
from evaluators.base import (Comparator, ComparatorWrapper, Evaluation, Evaluator, EvaluatorWrapper, MoveLists,
                             Request, evaluate_in_stages, value_centipawns)

class CachedEvaluator(EvaluatorWrapper):
    """Evaluations of ``inner`` by position, least recently used evicted first.

    Any option of the wrapped evaluators may change evaluations, so setting one
    clears the cache. ``centipawns`` is the cached evaluation's value: wrap
    evaluators whose value is what is expensive (networks).
    """

    #: Rough memory of one entry: an Evaluation with a priors dict of ~35 moves, and its key.
    BYTES_PER_ENTRY = 4000

    def __init__(self, inner: Evaluator, megabytes: float = 4) -> None:
        super().__init__(inner)
        self.cache = LruCache(megabytes, self.BYTES_PER_ENTRY)

    def centipawns(self, board: chess.Board) -> int:
        return value_centipawns(self, board)

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        return evaluate_in_stages(self, boards, moves)

    def prepare(self, board: chess.Board, moves: Sequence[chess.Move]) -> Request:
        """A hit is answered at once (the request carries its evaluation); a miss goes on to ``inner``."""
        key = self.inner.cache_key(board)  # the key itself: hash() of bitboards is not unique (see CachedComparator)
        evaluation = self.cache.get(key)
        if evaluation is not None:
            request = Request(moves)
            request.evaluation = evaluation
            return request
        generation = self.cache.generation
        request = self.inner.prepare(board, moves)
        request.cache_entry = key, generation  # type: ignore[attr-defined]
        return request

    def prepare_leaf(self, leaf: Any) -> Request:
        """:meth:`prepare` of a compiled PUCT leaf, keyed by its compiled key (the same position and clock)."""
        key = leaf.cache_key
        evaluation = self.cache.get(key)
        if evaluation is not None:
            request = Request(leaf.moves)
            request.evaluation = evaluation
            return request
        generation = self.cache.generation
        request = self.inner.prepare_leaf(leaf)
        request.cache_entry = key, generation  # type: ignore[attr-defined]
        return request

    def finish(self, requests: Sequence[Request]) -> list[Evaluation]:
        evaluations = self.inner.finish(requests)
        for request, evaluation in zip(requests, evaluations):
            key, generation = request.cache_entry  # type: ignore[attr-defined]
            self.cache.put(key, evaluation, generation)
        return evaluations

    def set_option(self, name: str, value: Any) -> bool:
        applied = super().set_option(name, value)
        if applied:
            self.cache.clear()
        return applied

    def new_game(self) -> None:
        self.cache.clear()
        super().new_game()


class CachedComparator(ComparatorWrapper):
    """Features of ``inner`` by position, least recently used evicted first."""

    #: Rough memory of one entry: 100 float32 features in a numpy array, and its key (a tuple of bitboards).
    BYTES_PER_ENTRY = 1000

    def __init__(self, inner: Comparator, megabytes: float = 4) -> None:
        super().__init__(inner)
        self.cache = LruCache(megabytes, self.BYTES_PER_ENTRY)

    def features(self, board: chess.Board) -> Any:
        # The position's exact key, never hash() of it: Python hashes an int modulo 2**61 - 1, so a piece on
        # f8, g8 or h8 hashes like one on a1, b1 or c1 and two such positions would share an entry.
        key = transposition_key(board)
        features = self.cache.get(key)
        if features is None:
            generation = self.cache.generation
            features = self.inner.features(board)
            self.cache.put(key, features, generation)
        return features

    def hashfull(self) -> int:
        return self.cache.permille()

    def new_game(self) -> None:
        self.cache.clear()
        super().new_game()


def find_cache(evaluator: Evaluator | Comparator) -> Optional[LruCache]:
    """The cache of the outermost caching wrapper in ``evaluator``'s chain, if any."""
    while isinstance(evaluator, (EvaluatorWrapper, ComparatorWrapper)):
        if isinstance(evaluator, (CachedEvaluator, CachedComparator)):
            return evaluator.cache
        evaluator = evaluator.inner
    return None


