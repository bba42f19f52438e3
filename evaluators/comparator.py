"""The DeepChess distilled comparator, evaluated with numpy.

The first layer is sparse (at most 32 pieces + 5 flags among 773 inputs), so
its pre-activation is kept as an accumulator that :meth:`push`/:meth:`pop`
update by adding and subtracting a few weight rows, instead of recomputing
the 773x100 product. The backend registry wraps it in a feature cache
(:class:`evaluators.cache.CachedComparator`).

The head's first layer is linear in the two towers' outputs, so a position's
features are its tower output already multiplied by both halves of that layer
(row 0: as the first position, with the bias; row 1: as the second). A
comparison is then an addition, a ReLU and the small rest of the head, and
comparing many positions with one (:meth:`ComparatorEvaluator.prefers_first_many`)
is one stacked numpy call.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Optional, Sequence

import chess
import numpy as np

from evaluators.base import Comparator, LoadError
from evaluators.cache import CachedComparator
from evaluators.bits773 import INPUT_SIZE, active_features, move_delta
from evaluators.onnx_model import open_session
from hackmate_core.options import Option

KIND = "deepchess-comparator"
#: Positions per matrix product (see _in_blocks).
BLOCK_ROWS = 16


class ComparatorEvaluator(Comparator):
    name = "comparator"
    DEFAULT_WEIGHTS = "comparator.onnx"
    HELP = "DeepChess pairwise network, ONNX + .npz"
    WRAPPERS = (CachedComparator,)
    OPTIONS = (Option("IncrementalAccumulator", "check", True, attribute="incremental",
                      help="update the first layer by the features a move changes instead of recomputing it"),)

    @classmethod
    def create(cls, weights: Optional[Path], threads: int, lazy: bool) -> "ComparatorEvaluator":
        """Read at once whatever ``lazy`` says: the numpy weights are small."""
        assert weights is not None  # DEFAULT_WEIGHTS is set
        return cls(weights)

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
        head = weights[tower_layers:]
        if len(head) < 2 or head[-1][0].shape[1] != 2:
            raise LoadError(f"{weights_path}: the head must have two layers or more and two outputs")
        (joint, joint_bias), self.head_hidden = head[0], head[1:-1]
        width = joint.shape[0] // 2
        # both halves of the head's first layer side by side: one product per position gives both rows
        self.projection = np.concatenate([joint[:width], joint[width:]], axis=1)  # (width, 2 * hidden)
        self.projection_bias = np.stack([joint_bias, np.zeros_like(joint_bias)])  # the bias once per comparison
        out_weight, out_bias = head[-1]
        # P(first better) = softmax(logits)[0] = sigmoid(logit 0 - logit 1)
        self.out_weight = (out_weight[:, 0] - out_weight[:, 1]).astype(np.float32)
        self.out_bias = float(out_bias[0] - out_bias[1])
        self.accumulators: list[np.ndarray] = []
        #: For each accumulator, its children's accumulators by move once :meth:`child_features` made them.
        self.children: list[Optional[dict[chess.Move, np.ndarray]]] = []

    # --------------------------------------------------------- accumulator

    def full_accumulator(self, board: chess.Board) -> np.ndarray:
        return self.first_bias + self.first_weight[active_features(board)].sum(axis=0)

    def reset(self, board: chess.Board) -> None:
        self.accumulators = [self.full_accumulator(board)]
        self.children = [None]

    def push(self, board: chess.Board, move: chess.Move) -> None:
        incremental = self.incremental  # read once: the UCI thread may switch it during a search
        if incremental and self.accumulators:
            known = self.children[-1]
            accumulator = known.get(move) if known is not None else None
            if accumulator is None:
                removed, added = move_delta(board, move)
                accumulator = (self.accumulators[-1] + self.first_weight[added].sum(axis=0)
                               - self.first_weight[removed].sum(axis=0))
            self.accumulators.append(accumulator)
            self.children.append(None)
        board.push(move)
        if not incremental:
            self.accumulators.append(self.full_accumulator(board))
            self.children.append(None)

    def pop(self, board: chess.Board) -> chess.Move:
        self.accumulators.pop()
        self.children.pop()
        return board.pop()

    # ------------------------------------------------------------ features

    def features(self, board: chess.Board) -> np.ndarray:
        """Features of ``board`` (see the module docstring); uses the accumulator when it tracks ``board``."""
        accumulator = self.accumulators[-1] if self.accumulators else self.full_accumulator(board)
        return self.features_from_accumulators(accumulator[None])[0]

    def child_features(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[np.ndarray]:
        """Features after each of ``moves``: every child's accumulator from the parent's, one batched tower."""
        if not (self.incremental and self.accumulators and moves):
            return super().child_features(board, moves)
        rows, signs, starts = [], [], []
        for move in moves:
            removed, added = move_delta(board, move)
            starts.append(len(rows))
            rows += added
            rows += removed
            signs += [1.0] * len(added) + [-1.0] * len(removed)
        deltas = np.add.reduceat(self.first_weight[rows] * np.array(signs, dtype=np.float32)[:, None], starts)
        accumulators = self.accumulators[-1] + deltas
        self.children[-1] = dict(zip(moves, accumulators))  # push reuses them
        return list(self.features_from_accumulators(accumulators))

    def features_from_accumulators(self, accumulators: np.ndarray) -> np.ndarray:
        """(n, 2, hidden) features of n positions given their first-layer accumulators (n, width)."""
        return _in_blocks(self._features_block, accumulators)

    def _features_block(self, accumulators: np.ndarray) -> np.ndarray:
        x = np.maximum(accumulators, 0.0)
        for weight, bias in self.tower_rest:
            x = np.maximum(x @ weight + bias, 0.0)
        return (x @ self.projection).reshape(len(x), 2, -1) + self.projection_bias

    # ----------------------------------------------------------- comparison

    def prefers_first(self, first: np.ndarray, second: np.ndarray) -> float:
        """P(first better for White), symmetrised so that swapping the arguments gives exactly 1 - p."""
        x = np.maximum(first + second[::-1], 0.0)
        for weight, bias in self.head_hidden:
            x = np.maximum(x @ weight + bias, 0.0)
        forward, backward = (x @ self.out_weight).tolist()  # the rest in Python floats: one pair is the hot path
        return 0.5 * (_sigmoid(forward + self.out_bias) + _sigmoid(-backward - self.out_bias))

    def prefers_first_many(self, firsts: Sequence[np.ndarray], second: np.ndarray) -> np.ndarray:
        """:meth:`prefers_first` of each of ``firsts`` against ``second``, in one call."""
        return _in_blocks(self._symmetrised, np.stack(firsts) + second[::-1])

    def _symmetrised(self, pairs: np.ndarray) -> np.ndarray:
        """(f(a, b) + 1 - f(b, a)) / 2 from the summed first-layer halves: row 0 is (a, b), row 1 is (b, a)."""
        x = np.maximum(pairs, 0.0)
        for weight, bias in self.head_hidden:
            x = np.maximum(x @ weight + bias, 0.0)
        logit = np.clip(x @ self.out_weight + self.out_bias, -50.0, 50.0)  # (..., 2); no overflow in exp
        return 0.5 * (1.0 / (1.0 + np.exp(-logit[..., 0])) + 1.0 / (1.0 + np.exp(logit[..., 1])))


def _in_blocks(function: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
    """``function`` of ``rows``, BLOCK_ROWS rows at a time.

    numpy's OpenBLAS hands larger products to a thread per core, which on a
    busy machine (a match: two engines on two cores) takes milliseconds
    instead of microseconds; blocks this small stay on the calling thread.
    """
    if len(rows) <= BLOCK_ROWS:
        return function(rows)
    return np.concatenate([function(rows[start:start + BLOCK_ROWS]) for start in range(0, len(rows), BLOCK_ROWS)])


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
