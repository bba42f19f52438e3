"""A policy-value network's values of DeepChess positions: the teacher of value-labelled pairs.

A won-vs-lost label says only which side a position favours; a value orders any two positions. The engine's
ResNet ranks 95.3% of the fixed split's won-vs-lost pairs by its value alone, more than the comparators
trained on those labels (91.5%) and more than Stockfish 15.1 at one node (94.1%): it is the stronger eval the
comparator can learn from. Each position is evaluated once (its packed 773 bits decoded: no en passant square,
no move clocks) by the network file in fp32, on worker processes, and the values are cached under the user's
cache (``deepchess-values/``), keyed by the network's contents and the positions' (all of them, in order: the
same run's positions), since a run's millions of positions take a quarter of an hour to evaluate.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Callable, Iterable

import chess
import numpy as np

from hackmate_core import user_cache
from training.deepchess.accuracy import ranked_won_lost
from training.deepchess.pairs import board_of
from training.deepchess.valset import ValidationSet
from training.processes import process_pool

#: Positions per unit of work handed to a process, and per network call within it.
CHUNK = 8192
BATCH = 512
#: Part of the cache key: what a cached value means (bump it when that changes).
CACHE_FORMAT = b"deepchess-values 1: W - L for White, fp32, boards of the 773 bits"


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


def cache_path(network: Path, packed: np.ndarray) -> Path:
    """Where the values of these positions, in this order, by this network file are kept."""
    digest = hashlib.sha256(CACHE_FORMAT)
    digest.update(network.read_bytes())
    digest.update(np.ascontiguousarray(packed).tobytes())
    return user_cache.root() / "deepchess-values" / f"{digest.hexdigest()[:32]}.npy"


def white_values(network: Path, packed: np.ndarray, workers: int = 1,
                 log: Callable[[str], None] = print) -> np.ndarray:
    """The value for White (-1..1) of each packed position by ``network`` (an engine ONNX policy-value network),
    from the cache when these positions were evaluated by this network before."""
    path = cache_path(network, packed)
    try:
        values = np.load(path)
        if values.shape == (len(packed),):
            log(f"values of {len(packed)} positions by {network}: from {path}")
            return values
    except (OSError, ValueError):  # not there, or not a whole array: evaluated again
        pass
    from tqdm import tqdm
    chunks = [packed[i:i + CHUNK] for i in range(0, len(packed), CHUNK)]
    log(f"values of {len(packed)} positions by {network}: {workers} processes")
    with tqdm(total=len(packed), desc="values", unit=" positions") as progress:
        def done(values: np.ndarray) -> np.ndarray:
            progress.update(len(values))
            return values
        if workers <= 1:
            parts = [done(white_values_of(str(network), chunk)) for chunk in chunks]
        else:
            with process_pool(min(workers, len(chunks))) as pool:
                parts = [done(values) for values in pool.map(white_values_of, [str(network)] * len(chunks), chunks)]
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npy")
    np.save(partial, values)
    partial.replace(path)
    return values


def network_won_lost(network: Path, sets: Iterable[ValidationSet], workers: int = 1,
                     log: Callable[[str], None] = print) -> dict[str, dict[str, dict[str, float | None]]]:
    """{set name: {"NETWORK value": {"won_lost": accuracy}}}: the network's won-vs-lost pair accuracy, each pair ranked
    by the two values for White, a tie counting half (accuracy.ranked_won_lost, the comparators' rule)."""
    return {validation.name: {f"{network} value": {"won_lost": ranked_won_lost(
        validation, lambda rows: white_values(network, rows, workers, log))}} for validation in sets}
