"""A policy-value network's values of DeepChess positions: the teacher of value-labelled pairs.

A won-vs-lost label says only which side a position favours; a value orders any two positions. The engine's
ResNet ranks 95.3% of the fixed split's won-vs-lost pairs by its value alone, more than the comparators
trained on those labels (91.5%) and more than Stockfish 15.1 at one node (94.1%): it is the stronger eval the
comparator can learn from. Each position is evaluated once (its packed 773 bits decoded: no en passant square,
no move clocks) by the network file in fp32, on worker processes, and the values are cached under the user's
cache (``deepchess-values/``, one file per network), position by position, since a run's millions of positions
take a quarter of an hour to evaluate: a run on other files, another seed or another split evaluates only the
positions no run has evaluated before.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Callable, Iterable

import chess
import numpy as np

from hackmate_core import user_cache
from training.data.cache import save_array
from training.deepchess.accuracy import ranked_won_lost
from training.deepchess.pairs import board_of
from training.deepchess.valset import ValidationSet
from training.processes import process_pool

#: Positions per unit of work handed to a process, and per network call within it.
CHUNK = 8192
BATCH = 512
#: Part of the cache key: what a cached value means (bump it when that changes).
CACHE_FORMAT = b"deepchess-values 2: W - L for White, fp32, boards of the 773 bits, by 64-bit position hash"
#: A cache file: one record per position, sorted by hash.
CACHE_RECORD = np.dtype([("hash", "<u8"), ("value", "<f4")])


@functools.lru_cache(maxsize=1)
def open_network(network: str) -> Any:
    """The network, fp32 on one thread: each process opens it once. A file that is not an engine policy-value
    network raises :class:`evaluators.base.LoadError`, naming it."""
    from evaluators.resnet import ResNetEvaluator
    evaluator = ResNetEvaluator(Path(network), threads=1)
    evaluator.set_option("Precision", "fp32")
    return evaluator


def white_values_of(network: str, rows: np.ndarray) -> np.ndarray:
    """The network's expected score W - L for White of each packed row, by the network file itself (not its int8
    copy); a top-level function for the workers."""
    evaluator = open_network(network)
    values = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), BATCH):
        boards = [board_of(row) for row in rows[start:start + BATCH]]
        no_moves: list[list[chess.Move]] = [[] for _ in boards]  # the value alone: no policy over legal moves
        for i, (board, evaluation) in enumerate(zip(boards, evaluator.evaluate_batch(boards, no_moves)), start):
            values[i] = evaluation.value if board.turn == chess.WHITE else -evaluation.value
    return values


def cache_path(network: Path) -> Path:
    """The file that keeps this network file's values of positions (any run's)."""
    digest = hashlib.sha256(CACHE_FORMAT)
    digest.update(network.read_bytes())
    return user_cache.root() / "deepchess-values" / f"{digest.hexdigest()[:32]}.npy"


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every bit of the word moves every bit of the result (uint64, wrapping)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def row_hashes(packed: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each packed row (its bytes as little words, mixed in turn): the cache's key of a position.
    Ten million positions hold a collision with a chance of about one in 370,000."""
    rows = np.ascontiguousarray(packed, dtype=np.uint8).reshape(len(packed), -1)
    padded = np.zeros((len(rows), -(-rows.shape[1] // 8) * 8), dtype=np.uint8)
    padded[:, :rows.shape[1]] = rows
    hashes = np.full(len(rows), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for word in padded.view("<u8").T:
        hashes = _mix(hashes ^ word)
    return hashes


def _read_cache(path: Path) -> np.ndarray:
    """The records kept for a network (CACHE_RECORD, sorted by hash); none where the file is missing or unreadable
    (evaluated again)."""
    try:
        records = np.load(path, allow_pickle=False)
        if records.dtype == CACHE_RECORD and records.ndim == 1:
            return records
    except (OSError, ValueError, EOFError):
        pass
    return np.zeros(0, dtype=CACHE_RECORD)


def _evaluate(network: Path, packed: np.ndarray, workers: int) -> np.ndarray:
    from tqdm import tqdm
    chunks = [packed[i:i + CHUNK] for i in range(0, len(packed), CHUNK)]
    with tqdm(total=len(packed), desc="values", unit=" positions") as progress:
        def done(values: np.ndarray) -> np.ndarray:
            progress.update(len(values))
            return values
        if workers <= 1:
            parts = [done(white_values_of(str(network), chunk)) for chunk in chunks]
        else:
            with process_pool(min(workers, len(chunks))) as pool:
                parts = [done(values) for values in pool.map(white_values_of, [str(network)] * len(chunks), chunks)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def white_values(network: Path, packed: np.ndarray, workers: int = 1,
                 log: Callable[[str], None] = print) -> np.ndarray:
    """The value for White (-1..1) of each packed position by ``network`` (an engine ONNX policy-value network):
    the cached ones from the cache, each other distinct position evaluated once and added to it."""
    path = cache_path(network)
    known = _read_cache(path)
    hashes = row_hashes(packed)
    at = np.minimum(np.searchsorted(known["hash"], hashes), max(len(known) - 1, 0))
    cached = known["hash"][at] == hashes if len(known) else np.zeros(len(hashes), dtype=bool)
    values = np.empty(len(packed), dtype=np.float32)
    values[cached] = known["value"][at[cached]]
    missing = np.flatnonzero(~cached)
    new, first, inverse = np.unique(hashes[missing], return_index=True, return_inverse=True)
    log(f"values of {len(packed)} positions by {network}: {int(cached.sum())} from the cache, "
        f"{len(new)} distinct others evaluated on {workers} processes")
    if not len(new):
        return values
    added = np.empty(len(new), dtype=CACHE_RECORD)
    added["hash"], added["value"] = new, _evaluate(network, packed[missing[first]], workers)
    values[missing] = added["value"][inverse.reshape(-1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    save_array(path, np.sort(np.concatenate([known, added]), order="hash"))
    return values


def network_won_lost(network: Path, sets: Iterable[ValidationSet], workers: int = 1,
                     log: Callable[[str], None] = print) -> dict[str, dict[str, dict[str, float | None]]]:
    """{set name: {"NETWORK value": {"won_lost": accuracy}}}: the network's won-vs-lost pair accuracy, each pair ranked
    by the two values for White, a tie counting half (accuracy.ranked_won_lost, the comparators' rule)."""
    return {validation.name: {f"{network} value": {"won_lost": ranked_won_lost(
        validation, lambda rows: white_values(network, rows, workers, log))}} for validation in sets}
