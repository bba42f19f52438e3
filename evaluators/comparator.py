"""The DeepChess distilled comparator, evaluated with numpy.

The first layer is sparse (at most 32 pieces + 5 flags among 773 inputs), so
its pre-activation is kept as an accumulator that :meth:`push`/:meth:`pop`
update by adding and subtracting a few weight rows, instead of recomputing
the 773x100 product. Features (the tower output) are cached by Zobrist hash.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import chess
import chess.polyglot
import numpy as np

from evaluators.base import Comparator, EvaluatorOption, LoadError
from evaluators.bits773 import INPUT_SIZE, active_features, move_delta
from evaluators.onnx_model import open_session

KIND = "deepchess-comparator"
BYTES_PER_CACHE_ENTRY = 600


class ComparatorEvaluator(Comparator):
    name = "comparator"

    def __init__(self, path: Path) -> None:
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
        self.incremental = True
        self.accumulators: list[np.ndarray] = []
        self.cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self.cache_size = 16 * 1024 * 1024 // BYTES_PER_CACHE_ENTRY
        self.feature_calls = 0

    # -------------------------------------------------------------- options

    def options(self) -> list[EvaluatorOption]:
        return [EvaluatorOption("IncrementalAccumulator", "check", True)]

    def set_option(self, name: str, value: Any) -> None:
        if name == "IncrementalAccumulator":
            self.incremental = bool(value)

    def set_cache_size(self, megabytes: int) -> None:
        self.cache_size = max(1000, megabytes * 1024 * 1024 // BYTES_PER_CACHE_ENTRY)

    def new_game(self) -> None:
        self.cache.clear()

    # --------------------------------------------------------- accumulator

    def full_accumulator(self, board: chess.Board) -> np.ndarray:
        return self.first_bias + self.first_weight[active_features(board)].sum(axis=0)

    def reset(self, board: chess.Board) -> None:
        self.accumulators = [self.full_accumulator(board)]

    def push(self, board: chess.Board, move: chess.Move) -> None:
        if self.incremental and self.accumulators:
            removed, added = move_delta(board, move)
            self.accumulators.append(self.accumulators[-1] + self.first_weight[added].sum(axis=0)
                                     - self.first_weight[removed].sum(axis=0))
        board.push(move)
        if not self.incremental:
            self.accumulators.append(self.full_accumulator(board))

    def pop(self, board: chess.Board) -> chess.Move:
        self.accumulators.pop()
        return board.pop()

    # ------------------------------------------------------------ features

    def features(self, board: chess.Board) -> np.ndarray:
        """Tower output of ``board``; uses the accumulator when it tracks ``board``."""
        key = chess.polyglot.zobrist_hash(board)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        accumulator = self.accumulators[-1] if self.accumulators else self.full_accumulator(board)
        features = self.tower_from_accumulator(accumulator)
        self.cache[key] = features
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return features

    def tower_from_accumulator(self, accumulator: np.ndarray) -> np.ndarray:
        self.feature_calls += 1
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
