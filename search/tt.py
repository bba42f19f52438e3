"""A fixed-size transposition table keyed by Zobrist hash, sized in megabytes.

The compiled search (hackmate_core/cab.c) keeps the same table in C: as many slots, 24 bytes each
instead of about 220, so ``Hash`` bounds both.
"""

from __future__ import annotations

from typing import Optional

import chess

EXACT, LOWER, UPPER = 0, 1, 2
#: Rough memory of one entry (a six-tuple, its key and score ints, the move it keeps alive, the list slot),
#: measured with tracemalloc.
BYTES_PER_ENTRY = 220


def slot_count(megabytes: float) -> int:
    """Slots of a table of ``megabytes``; the compiled search's table has as many, so both search alike."""
    return max(1024, int(megabytes * 1024 * 1024) // BYTES_PER_ENTRY)


class TranspositionTable:
    """Depth-preferred slots indexed by ``key % size``; entries of older searches are replaced first.

    An entry is ``(key, depth, score, bound, move, generation)``.
    """

    def __init__(self, megabytes: float) -> None:
        self.size = slot_count(megabytes)
        self.slots: list[Optional[tuple[int, int, int, int, Optional[chess.Move], int]]] = [None] * self.size
        self.generation = 0

    def new_search(self) -> None:
        self.generation = (self.generation + 1) & 0xFF

    def clear(self) -> None:
        self.slots = [None] * self.size

    def probe(self, key: int) -> Optional[tuple[int, int, int, int, Optional[chess.Move], int]]:
        entry = self.slots[key % self.size]
        return entry if entry is not None and entry[0] == key else None

    def store(self, key: int, depth: int, score: int, bound: int, move: Optional[chess.Move]) -> None:
        index = key % self.size
        old = self.slots[index]
        if old is None or old[5] != self.generation or depth >= old[1] or old[0] == key:
            if move is None and old is not None and old[0] == key:
                move = old[4]
            self.slots[index] = (key, depth, score, bound, move, self.generation)

    def hashfull(self) -> int:
        """Permille of the first 1000 slots holding an entry of the current search."""
        sample = self.slots[:1000]
        return sum(1 for e in sample if e is not None and e[5] == self.generation) * 1000 // len(sample)
