"""The DeepChess distilled comparator, evaluated with numpy: the reference of the compiled comparator.

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

The arithmetic is defined so that the compiled comparator (hackmate_core/ccomp.h,
which gets its weights from this loader) computes the same numbers bit for bit,
and the Python and the compiled comparison search make the same decisions:

- the first layer is fixed point: its weights and bias scaled by 2**bits and
  rounded to integers once (as many bits as keep any position's sum within an
  int64: 57 for the shipped network, finer than a float32 resolves its
  weights), the accumulator an exact integer sum. A move's update then equals
  a recomputation, so a position's features never depend on the moves that
  reached it, nor on a cache;
- every other layer sums its products in float32 one input after the other,
  then adds its bias (:func:`_dense`), the head's last layer in LANES partial
  sums added in order (:func:`_dot`): never a BLAS product, whose order of
  additions depends on the library and the processor;
- the symmetrised probability is 0.5 + (sigmoid(forward) - sigmoid(backward)) / 2
  in double precision with :func:`math.exp` (the C library's ``exp``), so two
  positions with equal features compare as exactly one half.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import chess
import numpy as np

from evaluators.base import Comparator, LoadError
from evaluators.cache import CachedComparator
from evaluators.bits773 import INPUT_SIZE, active_features, move_delta
from evaluators.onnx_model import open_session
from hackmate_core import compiled
from hackmate_core.options import Option

KIND = "deepchess-comparator"
#: Positions per product (see _in_blocks).
BLOCK_ROWS = 16
#: Partial sums of the head's last layer (see _dot): a vector of float32 (CC_LANES in hackmate_core/ccomp.h).
LANES = 16
#: First-layer rows an accumulator may hold at once: 32 pieces, the side to move, four castling rights, and
#: what a move adds before it removes, with room to spare.
MAX_ROWS = 64
#: The fixed-point accumulator stays below 2**ACCUMULATOR_BITS (it is an int64).
ACCUMULATOR_BITS = 62
#: First-layer weights beyond this size are not a trained network (and would leave no fixed-point precision).
MAX_FIRST_LAYER = 2.0 ** 40


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
        tower_layers, weights = read_weights(weights_path)
        first_weight, first_bias = weights[0]
        bits = _fixed_point_bits(first_weight, first_bias, weights_path)
        #: The first layer in fixed point (module docstring): real value = integer * accumulator_scale.
        self.first_weight = _fixed(first_weight, bits)
        self.first_bias = _fixed(first_bias, bits)
        self.accumulator_scale = 2.0 ** -bits
        self.tower_rest = weights[1:tower_layers]
        head = weights[tower_layers:]
        (joint, joint_bias), self.head_hidden, (out_weight, out_bias) = head[0], head[1:-1], head[-1]
        width = joint.shape[0] // 2
        # both halves of the head's first layer side by side: one product per position gives both rows
        self.projection = np.ascontiguousarray(np.concatenate([joint[:width], joint[width:]], axis=1))
        self.projection_bias = np.stack([joint_bias, np.zeros_like(joint_bias)])  # the bias once per comparison
        # P(first better) = softmax(logits)[0] = sigmoid(logit 0 - logit 1)
        self.out_weight = (out_weight[:, 0] - out_weight[:, 1]).astype(np.float32)
        self.out_bias = float(out_bias[0] - out_bias[1])
        self.accumulators: list[np.ndarray] = []
        #: For each accumulator, its children's accumulators by move once :meth:`child_features` made them.
        self.children: list[Optional[dict[chess.Move, np.ndarray]]] = []
        #: The same network in C for the compiled comparison search (hackmate_core._ccomparison), or None.
        self.compiled = self._compiled_network(weights_path)

    def _compiled_network(self, weights_path: Path) -> Any:
        """These weights handed to the compiled comparator, where it is built."""
        if compiled.ccomparison is None:
            return None
        try:
            return compiled.ccomparison.Network(
                self.first_weight, self.first_bias, self.accumulator_scale, self.tower_rest,
                (self.projection, self.projection_bias.reshape(-1)), self.head_hidden, self.out_weight, self.out_bias)
        except ValueError as error:  # a layer wider than the compiled comparator takes
            raise LoadError(f"{weights_path}: {error}") from error

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
            signs += [1] * len(added) + [-1] * len(removed)
        deltas = np.add.reduceat(self.first_weight[rows] * np.array(signs, dtype=np.int64)[:, None], starts)
        accumulators = self.accumulators[-1] + deltas
        self.children[-1] = dict(zip(moves, accumulators))  # push reuses them
        return list(self.features_from_accumulators(accumulators))

    def features_from_accumulators(self, accumulators: np.ndarray) -> np.ndarray:
        """(n, 2, hidden) float32 features of n positions given their fixed-point accumulators (n, width)."""
        return _in_blocks(self._features_block, accumulators)

    def _features_block(self, accumulators: np.ndarray) -> np.ndarray:
        x = np.maximum((accumulators * self.accumulator_scale).astype(np.float32), 0.0)
        for weight, bias in self.tower_rest:
            x = np.maximum(_dense(x, weight, bias), 0.0)
        return _dense(x, self.projection, None).reshape(len(x), 2, -1) + self.projection_bias

    # ----------------------------------------------------------- comparison

    def prefers_first(self, first: np.ndarray, second: np.ndarray) -> float:
        """P(first better for White), symmetrised (module docstring): equal features give exactly one half."""
        forward, backward = self._logits(first[None], second)[0].tolist()  # the rest in Python floats
        return self._probability(forward, backward)

    def prefers_first_many(self, firsts: Sequence[np.ndarray], second: np.ndarray) -> list[float]:
        """:meth:`prefers_first` of each of ``firsts`` against ``second``, the network's part in one call."""
        logits = _in_blocks(lambda block: self._logits(block, second), np.stack(firsts))
        return [self._probability(forward, backward) for forward, backward in logits.tolist()]

    def _logits(self, firsts: np.ndarray, second: np.ndarray) -> np.ndarray:
        """(n, 2) float32: the head's logit difference (before its bias) of (first, second), row 0, and of
        (second, first), row 1, for each of the n ``firsts``."""
        x = np.maximum(firsts + second[::-1], 0.0)
        for weight, bias in self.head_hidden:
            x = np.maximum(_dense(x, weight, bias), 0.0)
        return _dot(x, self.out_weight)

    def _probability(self, forward: float, backward: float) -> float:
        """(f(a, b) + 1 - f(b, a)) / 2 from the two logit differences: f(a, b) = sigmoid(forward + bias)."""
        return 0.5 + 0.5 * (_sigmoid(forward + self.out_bias) - _sigmoid(backward + self.out_bias))


def read_weights(path: Path) -> tuple[int, list[tuple[np.ndarray, np.ndarray]]]:
    """The comparator weights file (training's export-comparator): (the tower's layer count, [(weight (in, out),
    bias (out,)) float32 of each layer]), every shape checked; LoadError for anything else."""
    try:
        with np.load(path) as data:
            files = set(data.files)
            if "kind" not in files or str(data["kind"]) != KIND:
                raise LoadError(f"{path} is not a comparator weights file")
            count = len([name for name in files if name.startswith("w")])
            missing = [name for i in range(count) for name in (f"w{i}", f"b{i}") if name not in files]
            if "tower_layers" not in files or missing:
                raise LoadError(f"{path}: incomplete comparator weights (missing "
                                f"{', '.join(missing or ['tower_layers'])})")
            tower_layers = int(data["tower_layers"])
            weights = [(data[f"w{i}"], data[f"b{i}"]) for i in range(count)]
    except (OSError, ValueError, TypeError, AttributeError, zipfile.BadZipFile, EOFError) as error:
        raise LoadError(f"{path}: not a readable .npz file ({error})") from error
    if not 1 <= tower_layers <= count - 2:
        raise LoadError(f"{path}: {count} layers cannot make a tower of {tower_layers} and a head of two or more")
    inputs = INPUT_SIZE
    for index, (weight, bias) in enumerate(weights):
        if index == tower_layers:
            inputs *= 2  # the head compares two towers' outputs side by side
        if (weight.ndim != 2 or bias.ndim != 1 or weight.shape[0] != inputs or bias.shape != weight.shape[1:]
                or weight.shape[1] < 2 or weight.dtype.kind != "f" or bias.dtype.kind != "f"):
            raise LoadError(f"{path}: layer {index} has weights {weight.shape} {weight.dtype} and bias {bias.shape} "
                            f"{bias.dtype}, not float ({inputs}, n) and (n,)")
        if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
            raise LoadError(f"{path}: layer {index} holds a weight that is not a finite number")
        inputs = weight.shape[1]
    if inputs != 2:
        raise LoadError(f"{path}: the head has {inputs} outputs, not 2")
    return tower_layers, [(np.ascontiguousarray(weight, np.float32), np.ascontiguousarray(bias, np.float32))
                          for weight, bias in weights]


def _fixed_point_bits(weight: np.ndarray, bias: np.ndarray, path: Path) -> int:
    """The most fractional bits the first layer can have with every accumulator below 2**ACCUMULATOR_BITS."""
    bound = float(np.abs(bias).max()) + MAX_ROWS * float(np.abs(weight).max())
    if bound > MAX_FIRST_LAYER:
        raise LoadError(f"{path}: first-layer weights up to {bound / MAX_ROWS:g} are out of range")
    return min(ACCUMULATOR_BITS - math.frexp(bound)[1], 1000)  # bound < 2**exponent


def _fixed(values: np.ndarray, bits: int) -> np.ndarray:
    """``values`` * 2**bits rounded to int64."""
    return np.rint(values.astype(np.float64) * 2.0 ** bits).astype(np.int64)


def _dense(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray]) -> np.ndarray:
    """``x @ weight + bias`` (x: (..., k) float32), each output the float32 sum of its k products in input order,
    then the bias.

    The products are laid out (..., k, outputs) in C order, so that numpy adds the k slices one after the other
    (along an axis other than the contiguous one it adds each term to the result in turn; along the contiguous
    one it sums pairwise). Inputs that are zero in every row (ReLU outputs often are) are left out: adding their
    zero products changes no sum (at most the sign of a zero one).
    """
    active = np.flatnonzero(x.reshape(-1, x.shape[-1]).any(axis=0))
    if len(active) < x.shape[-1]:
        x, weight = x[..., active], weight[active]
    products = np.empty(x.shape + weight.shape[1:], np.float32)
    np.multiply(x[..., None], weight, out=products)
    total = np.add.reduce(products, axis=-2)
    return total if bias is None else total + bias


def _dot(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``x @ weight`` (x: (..., k) float32 with at least two rows, weight (k,)) in LANES float32 sums: lane l adds
    the products of inputs l, l + LANES, ... in order, then the lanes are added in order (one vector's sums in C).
    Laid out (k, rows) so that each sum runs along a non-contiguous axis (see _dense)."""
    rows = x.reshape(-1, x.shape[-1])
    count, full = rows.shape[1], rows.shape[1] // LANES * LANES
    products = np.empty((count, len(rows)), np.float32)
    np.multiply(rows.T, weight[:, None], out=products)
    lanes = np.add.reduce(products[:full].reshape(full // LANES, LANES, len(rows)), axis=0)
    lanes[:count - full] += products[full:]  # the inputs past the last whole chunk, into the first lanes
    return np.add.reduce(lanes, axis=0).reshape(x.shape[:-1])


def _in_blocks(function: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
    """``function`` of ``rows``, BLOCK_ROWS rows at a time: the products of a block stay small."""
    if len(rows) <= BLOCK_ROWS:
        return function(rows)
    return np.concatenate([function(rows[start:start + BLOCK_ROWS]) for start in range(0, len(rows), BLOCK_ROWS)])


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
