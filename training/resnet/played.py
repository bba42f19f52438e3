"""How often networks' policies name the move of the game, on the positions `agreement` asks the engine about
(training.data.heldout: the held-out games, Stockfish's moves or every move played), measured in this process.

Each network runs as the engine reads it (evaluators.resnet: an ONNX file with its metadata's slot conventions, or
a Leela file through the engine's conversion) in fp32, its raw policy over the legal moves (no heuristic priors:
what `agreement`'s defaults leave at one node), each position with its whole game. Figures per network: top-1
(the policy's most likely move is the game's; ties count for it), with its 95% interval, top-3, and the
cross-entropy of the game's move (mean -ln p). Every network after the first gets its top-1 gain over the first on
the same positions with a paired 95% interval: a fine-tune measured against the network it began from.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from evaluators.base import LoadError
from evaluators.resnet import ResNetEvaluator
from training.data.heldout import Z_95, Selection, wilson_interval
from training.network_files import WeightsError

#: Positions evaluated at once.
BATCH = 256
#: The probability below which a move's log is taken as this one's (a policy's underflow is no infinite loss).
SMALLEST_PROBABILITY = 1e-12


def open_network(path: Path, threads: int) -> ResNetEvaluator:
    """The engine's evaluator of ``path`` in fp32; WeightsError for a file it cannot play."""
    try:
        evaluator = ResNetEvaluator(path, threads)
    except LoadError as error:
        raise WeightsError(str(error)) from None
    evaluator.set_option("Precision", "fp32")
    return evaluator


def measure(selection: Selection, networks: Sequence[Path], threads: int = 1, progress: bool = False) -> dict:
    """The figures of each network (by its path) on the selection's positions."""
    from tqdm import tqdm
    evaluators = [open_network(path, threads) for path in networks]
    count = len(selection.samples)
    ranks = np.zeros((len(networks), count), dtype=np.int64)
    losses = np.zeros((len(networks), count))
    with tqdm(total=count, desc="positions", unit="pos", disable=not progress) as bar:
        for start in range(0, count, BATCH):
            chunk = selection.samples[start:start + BATCH]
            boards = [selection.games[game].board_at(ply) for game, ply in chunk]
            moves = [list(board.legal_moves) for board in boards]
            played = [moves[i].index(selection.games[game].moves[ply]) for i, (game, ply) in enumerate(chunk)]
            for row, evaluator in enumerate(evaluators):
                for i, evaluation in enumerate(evaluator.evaluate_batch(boards, moves)):
                    policy = np.asarray(evaluation.policy)
                    chance = policy[played[i]]
                    ranks[row, start + i] = int((policy > chance).sum())
                    losses[row, start + i] = -math.log(max(float(chance), SMALLEST_PROBABILITY))
            bar.update(len(chunk))
    figures = {}
    for row, path in enumerate(networks):
        hits = ranks[row] == 0
        low, high = wilson_interval(int(hits.sum()), count)
        figures[str(path)] = {"top1": _percent(hits), "top1_low": 100 * low, "top1_high": 100 * high,
                              "top3": _percent(ranks[row] < 3),
                              "cross_entropy": float(losses[row].mean()) if count else None}
        if row:
            figures[str(path)].update(_gain(hits, ranks[0] == 0))
    return {"networks": figures, "positions": count, "eligible": selection.eligible()}


def _percent(hits: np.ndarray) -> float | None:
    return 100 * float(hits.mean()) if len(hits) else None


def _gain(hits: np.ndarray, reference: np.ndarray) -> dict:
    """The top-1 gain in points over ``reference`` on the same positions, with a paired 95% interval (the normal
    approximation of the mean of per-position differences)."""
    difference = hits.astype(np.float64) - reference
    if len(difference) < 2:
        return {"top1_gain": None, "gain_low": None, "gain_high": None}
    mean, half = difference.mean(), Z_95 * difference.std(ddof=1) / math.sqrt(len(difference))
    return {"top1_gain": 100 * mean, "gain_low": 100 * (mean - half), "gain_high": 100 * (mean + half)}
