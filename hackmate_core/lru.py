"""A least-recently-used cache sized in megabytes, safe to use from two threads.

The evaluators' caches (:mod:`evaluators.cache`) and the comparison search's
best-move table are built on it. All operations take a lock, since the UCI
thread resizes or clears while the search thread reads and writes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Optional

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
