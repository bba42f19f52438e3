"""Worker processes for the training package, always started with ``spawn``.

Forking copies a process that may be running threads (torch's and onnxruntime's
thread pools, python-chess engine readers, an earlier test's search): a lock one
of them held is copied locked, and the forked worker can wait on it for ever.
A spawned worker starts a fresh interpreter and imports what it needs, at the
cost of a second or so per worker.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

SPAWN = multiprocessing.get_context("spawn")


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=SPAWN)
