"""The DeepChess distilled comparator, evaluated with numpy.

The first layer is sparse (at most 32 pieces + 5 flags among 773 inputs), so
its pre-activation is kept as an accumulator that :meth:`push`/:meth:`pop`
update by adding and subtracting a few weight rows, instead of recomputing
the 773x100 product. The backend registry wraps it in a feature cache
(:class:`evaluators.cache.CachedComparator`).
"""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np

from evaluators.base import Comparator, LoadError
from evaluators.bits773 import INPUT_SIZE, active_features, move_delta
from evaluators.onnx_model import open_session
from evaluators.options import Option

KIND = "deepchess-comparator"


class ComparatorEvaluator(Comparator):
    name = "comparator"
    OPTIONS = (Option("IncrementalAccumulator", "check", True, attribute="incremental",
                      help="update the first layer by the features a move changes instead of recomputing it"),)

    def __init__(self, path: Path) -> None:
        super().__init__()
        # The ONNX file is the published artifact (checked here); the .npz beside it holds the same weights.
        open_session(path, KIND, threads=1)
        weights_path = path.with_suffix(".npz")
        if not weights_path.exists():
            raise LoadError(f"{weights_path} not found: export writes it next to {path.name}")
        with np.load(weights_path) as data:
            if str(data["kind"]) != KIND:
                raise LoadError(f"{weights_path} is not a comparator weights file")
            tower_layers = int(data["tower_layers"])
            count = len([k for k in data.files if k.startswith("w")])
            weights = [(data[f"w{i}"].astype(np.float32), data[f"b{i}"].astype(np.float32)) for i in range(count)]
        if weights[0][0].shape[0] != INPUT_SIZE:
            raise LoadError(f"{weights_path}: first layer takes {weights[0][0].shape[0]} inputs, not {INPUT_SIZE}")
        self.first_weight, self.first_bias = weights[0]
        self.tower_rest = weights[1:tower_layers]
        self.head = weights[tower_layers:]
        self.accumulators: list[np.ndarray] = []

    # --------------------------------------------------------- accumulator

    def full_accumulator(self, board: chess.Board) -> np.ndarray:
        return self.first_bias + self.first_weight[active_features(board)].sum(axis=0)

    def reset(self, board: chess.Board) -> None:
        self.accumulators = [self.full_accumulator(board)]

    def push(self, board: chess.Board, move: chess.Move) -> None:
        incremental = self.incremental  # read once: the UCI thread may switch it during a search
        if incremental and self.accumulators:
            removed, added = move_delta(board, move)
            self.accumulators.append(self.accumulators[-1] + self.first_weight[added].sum(axis=0)
                                     - self.first_weight[removed].sum(axis=0))
        board.push(move)
        if not incremental:
            self.accumulators.append(self.full_accumulator(board))

    def pop(self, board: chess.Board) -> chess.Move:
        self.accumulators.pop()
        return board.pop()

    # ------------------------------------------------------------ features

    def features(self, board: chess.Board) -> np.ndarray:
        """Tower output of ``board``; uses the accumulator when it tracks ``board``."""
        accumulator = self.accumulators[-1] if self.accumulators else self.full_accumulator(board)
        return self.tower_from_accumulator(accumulator)

    def tower_from_accumulator(self, accumulator: np.ndarray) -> np.ndarray:
        x = np.maximum(accumulator, 0.0)
        for weight, bias in self.tower_rest:
            x = np.maximum(x @ weight + bias, 0.0)
        return x

    def prefers_first(self, first: np.ndarray, second: np.ndarray) -> float:
        """P(first better for White), symmetrised so that swapping the arguments gives exactly 1 - p."""
        return 0.5 * (self._head(first, second) + 1.0 - self._head(second, first))

    def _head(self, first: np.ndarray, second: np.ndarray) -> float:
        x = np.concatenate([first, second])
        for weight, bias in self.head[:-1]:
            x = np.maximum(x @ weight + bias, 0.0)
        weight, bias = self.head[-1]
        logits = x @ weight + bias
        return float(1.0 / (1.0 + np.exp(logits[1] - logits[0])))
