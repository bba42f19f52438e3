"""A least-recently-used cache sized in megabytes, and the wrappers that put it around any evaluator.

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

import threading
from collections import OrderedDict
from typing import Any, Hashable, Optional, Sequence

import chess

from evaluators.base import (Comparator, ComparatorWrapper, Evaluation, Evaluator, EvaluatorWrapper, MoveLists,
                             Request, evaluate_in_stages, value_centipawns)

#: Smallest capacity, whatever the megabytes.
MIN_ENTRIES = 64


class LruCache:
    """Up to ``capacity`` entries; a hit makes an entry the most recent, an insert evicts the least recent."""

    def __init__(self, megabytes: float, bytes_per_entry: int) -> None:
        self.bytes_per_entry = bytes_per_entry
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        #: Incremented by :meth:`clear`; a value computed before a clear is not stored after it.
        self.generation = 0
        self.capacity = MIN_ENTRIES
        self.resize(megabytes)

    def resize(self, megabytes: float) -> None:
        with self._lock:
            self.capacity = max(MIN_ENTRIES, int(megabytes * 1024 * 1024) // self.bytes_per_entry)
            self._evict()

    def get(self, key: Hashable) -> Any:
        """The value, or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any, generation: Optional[int] = None) -> None:
        """Store ``value``; skipped if the cache was cleared since ``generation`` was read."""
        with self._lock:
            if generation is not None and generation != self.generation:
                return
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.generation += 1

    def _evict(self) -> None:
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def permille(self) -> int:
        """Share of the capacity in use, as UCI's `hashfull` reports it."""
        return len(self._entries) * 1000 // self.capacity


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
        key = board._transposition_key()
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


