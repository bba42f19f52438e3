"""The pairs DeepChess learns from: won-vs-lost positions (the paper), value pairs and sibling positions.

Won-vs-lost: a position won for White and one lost for White (by its eval, or by the paper's rule: from a
game White won and from one White lost). Such a pair usually differs in material or in how decided the game
already is, while a search has to rank positions one move apart. Siblings are two positions
reached by different moves from the same parent, and an engine's scores of the
parent's moves label every pair of its children (comparison training, Tesauro
1989): the child whose move scored higher is the better one for the parent's
side to move. Pairs whose scores are nearly equal in expected score carry no
reliable label and are skipped.

Value pairs: two positions drawn at random, the first better for White with a probability from a policy-value
network's values of both (training.deepchess.values): every pair carries an order, not only won against lost.

Label sources: the MultiPV JSON lines of ``../shared/data/labelled/`` and label
shard directories (training.data.shards).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

import chess
import chess.engine
import chess.polyglot
import numpy as np

from evaluators.bits773 import INPUT_SIZE, active_features, board_of_features
from evaluators.material import MaterialEvaluator, quiescence_line
from evaluators.moves import index_to_move
from hackmate_core.score import cp_to_q
from training.data.multipv import numbered_lines, parse
from training.data.pgn import DataError, open_text
from training.data.shards import is_shard_dir, iter_shards
from training.data.targets import score_cp
from training.processes import process_pool

PACKED_SIZE = (INPUT_SIZE + 7) // 8
#: Nodes of the capture quiescence that makes a sibling child quiet.
QUIET_BUDGET = 40


def pack(board: chess.Board) -> np.ndarray:
    """The 773 DeepChess bits of ``board``, bit-packed (97 bytes): children are stored by the million."""
    bits = np.zeros(INPUT_SIZE, dtype=np.uint8)
    bits[active_features(board)] = 1
    return np.packbits(bits, bitorder="little")


def unpack(rows: np.ndarray) -> np.ndarray:
    """(N, 97) packed rows -> (N, 773) float32 bits."""
    return np.unpackbits(rows, axis=1, count=INPUT_SIZE, bitorder="little").astype(np.float32)


def board_of(row: np.ndarray) -> chess.Board:
    """The position of one packed row (the inverse of :func:`pack`), for an engine to score
    (evaluators.bits773.board_of_features: no en passant square, no move clocks)."""
    return board_of_features(np.flatnonzero(unpack(row[None])[0]).tolist())


def position_key(board: chess.Board) -> int:
    """Zobrist hash (ignores move counters): the identity of a position across games and label files."""
    return chess.polyglot.zobrist_hash(board)


@dataclass
class PositionSet:
    """Positions labelled won or lost for White (training.deepchess.data: by their eval or their game's result)."""

    bits: np.ndarray  # (N, 97) uint8: packed 773 bits
    white_won: np.ndarray  # (N,) bool
    game: np.ndarray  # (N,) int64 game id
    key: np.ndarray  # (N,) uint64 Zobrist hash

    def subset(self, mask: np.ndarray) -> "PositionSet":
        return PositionSet(self.bits[mask], self.white_won[mask], self.game[mask], self.key[mask])


def won_lost_pairs(positions: PositionSet, count: int, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, second, label): a won and a lost position in random order; label 0: first is better for White."""
    won = np.flatnonzero(positions.white_won)
    lost = np.flatnonzero(~positions.white_won)
    w = positions.bits[rng.choice(won, count)]
    l = positions.bits[rng.choice(lost, count)]  # noqa: E741
    swap = rng.random(count) < 0.5
    return np.where(swap[:, None], l, w), np.where(swap[:, None], w, l), swap.astype(np.int64)


def value_pairs(values: np.ndarray, count: int, temperature: float, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, second, target): indices of two positions drawn at random and the probability that the first is the
    better one for White, sigmoid((v_first - v_second) / temperature), v a position's value for White
    (training.deepchess.values)."""
    first, second = rng.integers(0, len(values), count), rng.integers(0, len(values), count)
    difference = (values[first].astype(np.float64) - values[second]) / temperature
    return first, second, (1.0 / (1.0 + np.exp(-difference))).astype(np.float32)


@dataclass
class ScoredParent:
    """A position and an engine's scores of some of its moves (centipawns, side to move's view)."""

    board: chess.Board
    moves: list[chess.Move]
    scores: list[int]


def read_multipv(path: Path) -> Iterator[ScoredParent]:
    """Positions of a MultiPV JSON-lines file (``{"fen", "pv": [[uci, cp, mate], ...]}``, gzip or plain)."""
    with open_text(path) as handle:
        for line_number, line in numbered_lines(handle):
            try:
                record, board = parse(line)
                moves = [chess.Move.from_uci(uci) for uci, _, _ in record["pv"]]
                scores = [score_cp(chess.engine.Mate(mate) if mate is not None else chess.engine.Cp(cp))
                          for _, cp, mate in record["pv"]]
            except (ValueError, KeyError, TypeError) as error:
                raise DataError(f"{path} line {line_number}: not a MultiPV record ({error})") from error
            yield ScoredParent(board, moves, scores)


def read_shards(directory: Path) -> Iterator[ScoredParent]:
    """Positions of a label-shard directory with their engine-scored moves.

    Positions whose moves all score the same (no engine label) give no pair and are left out.
    """
    for _, arrays in iter_shards(directory, columns=("fen", "policy_offset", "policy_index", "policy_score")):
        offsets, indices, scores = arrays["policy_offset"], arrays["policy_index"], arrays["policy_score"]
        for i, fen in enumerate(arrays["fen"]):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            if hi - lo < 2 or scores[lo:hi].min() == scores[lo:hi].max():
                continue
            board = chess.Board(fen.decode())
            yield ScoredParent(board, [index_to_move(int(k), board) for k in indices[lo:hi]],
                               [int(s) for s in scores[lo:hi]])


def read_labels(path: Path) -> Iterator[ScoredParent]:
    """A label-shard directory or a MultiPV file."""
    if path.is_dir():
        if not is_shard_dir(path):
            raise DataError(f"{path}: not a label-shard directory")
        return read_shards(path)
    return read_multipv(path)


SIBLING_FIELDS = ("children", "offset", "score", "move", "white", "key", "fen")


@dataclass
class SiblingSet:
    """Parents with their engine-scored children, the children of a parent stored best first."""

    children: np.ndarray  # (C, 97) uint8: packed 773 bits of each child position
    offset: np.ndarray  # (P + 1,) int64: children of parent p are [offset[p], offset[p + 1])
    score: np.ndarray  # (C,) int32: score of the move to the child, from the parent's side to move's view
    move: np.ndarray  # (C,) bytes: the move to the child in UCI
    white: np.ndarray  # (P,) bool: White moves at the parent
    key: np.ndarray  # (P,) uint64: Zobrist hash of the parent
    fen: np.ndarray  # (P,) bytes: FEN of the parent

    def __len__(self) -> int:
        return len(self.white)

    def subset(self, parents: np.ndarray) -> "SiblingSet":
        """The given parents (indices), in that order."""
        counts = np.diff(self.offset)[parents]
        rows = np.concatenate([np.arange(self.offset[p], self.offset[p + 1]) for p in parents]) if len(parents) \
            else np.zeros(0, dtype=np.int64)
        return SiblingSet(self.children[rows], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                          self.score[rows], self.move[rows], self.white[parents], self.key[parents],
                          self.fen[parents])

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {prefix + name: getattr(self, name) for name in SIBLING_FIELDS}

    @classmethod
    def from_arrays(cls, data, prefix: str) -> "SiblingSet":
        return cls(*(np.asarray(data[prefix + name]) for name in SIBLING_FIELDS))


def encode_children(parents: list[tuple[str, list[str]]], quiet: bool) -> np.ndarray:
    """Packed children (one row per move, in order) of parents given as (FEN, UCI moves).

    A top-level function so that worker processes can encode a share of the parents each.
    """
    material = MaterialEvaluator()
    rows = []
    for fen, moves in parents:
        board = chess.Board(fen)
        for uci in moves:
            board.push_uci(uci)
            line = quiescence_line(material, board, QUIET_BUDGET)[1] if quiet else []
            for capture in line:
                board.push(capture)
            rows.append(pack(board))
            for _ in range(len(line) + 1):
                board.pop()
    return np.array(rows, dtype=np.uint8).reshape(-1, PACKED_SIZE)


#: Parents per unit of work handed to an encoding process.
ENCODE_CHUNK = 2000


class SiblingBuilder:
    """Collects parents and encodes their children.

    With ``quiet``, a child is encoded after the captures that material with
    capture quiescence expects both sides to make (at most ``QUIET_BUDGET``
    nodes): the comparison search judges its leaves only after its own capture
    quiescence, and the paper left out positions right after a capture for the
    same reason, so the pair shows the comparator the quiet position it will be
    asked about, not a half-finished exchange. That quiescence is most of the
    cost of reading labels, so the children are encoded at :meth:`build`, in
    chunks that worker processes can share (the result does not depend on how many).
    """

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.offsets, self.scores, self.moves = [0], [], []
        self.white, self.keys, self.fens = [], [], []

    def add(self, parent: ScoredParent, key: int) -> bool:
        """Add a parent with at least two legal scored moves; False (nothing added) otherwise."""
        board = parent.board
        scored = sorted(((s, m) for s, m in zip(parent.scores, parent.moves) if board.is_legal(m)),
                        key=lambda item: -item[0])  # stable: the engine's order among equal scores
        if len(scored) < 2:
            return False
        for score, move in scored:
            self.scores.append(score)
            self.moves.append(move.uci())
        self.offsets.append(len(self.scores))
        self.white.append(board.turn == chess.WHITE)
        self.keys.append(key)
        self.fens.append(board.fen())
        return True

    def build(self, pool: Optional[Executor] = None) -> SiblingSet:
        """The sibling set, its children encoded by ``pool``'s processes if given."""
        parents = [(fen, self.moves[self.offsets[p]:self.offsets[p + 1]]) for p, fen in enumerate(self.fens)]
        chunks = [parents[i:i + ENCODE_CHUNK] for i in range(0, len(parents), ENCODE_CHUNK)]
        encoded = list((pool.map if pool else map)(encode_children, chunks, [self.quiet] * len(chunks)))
        children = np.concatenate(encoded) if encoded else np.zeros((0, PACKED_SIZE), dtype=np.uint8)
        return SiblingSet(children, np.array(self.offsets, dtype=np.int64), np.array(self.scores, dtype=np.int32),
                          np.array(self.moves, dtype="S5"), np.array(self.white, dtype=bool),
                          np.array(self.keys, dtype=np.uint64), np.array(self.fens, dtype="S92"))


def split_siblings(parents: Iterable[ScoredParent], held_out: Callable[[int], bool], training: bool = True,
                   quiet: bool = False, workers: int = 1) -> tuple[SiblingSet, SiblingSet, dict[str, int]]:
    """(training, validation) sibling sets; ``held_out(key)`` sends a parent to validation.

    A position is used once (first occurrence); with ``training`` False only the
    validation set is encoded; ``quiet`` encodes the children after their captures
    (:class:`SiblingBuilder`), on ``workers`` processes.
    """
    train, validation = SiblingBuilder(quiet), SiblingBuilder(quiet)
    seen: set[int] = set()
    counts = {"read": 0, "duplicates": 0, "fewer than two legal scored moves": 0}
    for parent in parents:
        counts["read"] += 1
        key = position_key(parent.board)
        if key in seen:
            counts["duplicates"] += 1
            continue
        seen.add(key)
        builder = validation if held_out(key) else train if training else None
        if builder is not None and not builder.add(parent, key):
            counts["fewer than two legal scored moves"] += 1
    if workers <= 1:
        return train.build(), validation.build(), counts
    with process_pool(workers) as pool:
        return train.build(pool), validation.build(pool), counts


def expected_scores(scores: np.ndarray) -> np.ndarray:
    """Engine scores (mates as +-(MATE_CP - n), training.data.targets) -> expected score in [-1, 1]
    (hackmate_core.score)."""
    return np.fromiter((cp_to_q(float(s)) for s in scores), dtype=np.float64, count=len(scores))


def sibling_pairs(siblings: SiblingSet, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of children of a parent whose expected scores differ by at least ``margin``.

    Returns child indices (Q, 2) and labels (Q,), 0 when the first child is the
    better one for White, 1 when the second is (the Comparator's convention).
    The better child for the parent's side to move is listed first, so the
    label is 0 where White moves at the parent and 1 where Black does.
    """
    q = expected_scores(siblings.score)
    counts = np.diff(siblings.offset)
    firsts, seconds, labels = [], [], []
    for k in np.unique(counts):  # parents with k children share one index pattern
        parents = np.flatnonzero(counts == k)
        better, worse = np.triu_indices(int(k), k=1)  # best-first order: child `better` scored >= `worse`
        first = siblings.offset[parents][:, None] + better[None, :]
        second = siblings.offset[parents][:, None] + worse[None, :]
        clear = q[first] - q[second] >= margin
        firsts.append(first[clear])
        seconds.append(second[clear])
        labels.append(np.broadcast_to(np.where(siblings.white[parents], 0, 1)[:, None], clear.shape)[clear])
    if not firsts:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (np.stack([np.concatenate(firsts), np.concatenate(seconds)], axis=1).astype(np.int64),
            np.concatenate(labels).astype(np.int64))


class PairSampler:
    """Training pairs drawn fresh each epoch: won-vs-lost pairs (or, given the positions' values, value-labelled
    pairs) mixed with a share of sibling pairs."""

    def __init__(self, positions: PositionSet, siblings: SiblingSet, margin: float, share: float,
                 values: Optional[np.ndarray] = None, temperature: float = 0.1) -> None:
        self.positions = positions
        self.children = siblings.children
        self.pairs, self.labels = sibling_pairs(siblings, margin)
        self.share = share if len(self.pairs) else 0.0
        self.values = values
        self.temperature = temperature

    def sample(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, second, target), packed rows in random order; target: the probability that the first is the
        better one for White (1 or 0 for won-vs-lost and sibling pairs; for a value pair, value_pairs' soft
        target)."""
        siblings = int(round(count * self.share))
        if self.values is None:
            first, second, label = won_lost_pairs(self.positions, count - siblings, rng)
            target = (label == 0).astype(np.float32)
        else:
            i, j, target = value_pairs(self.values, count - siblings, self.temperature, rng)
            first, second = self.positions.bits[i], self.positions.bits[j]
        if not siblings:
            return first, second, target
        pick = rng.integers(0, len(self.pairs), siblings)
        a, b = self.children[self.pairs[pick, 0]], self.children[self.pairs[pick, 1]]
        swap = rng.random(siblings) < 0.5
        order = rng.permutation(count)
        sibling_target = (np.where(swap, 1 - self.labels[pick], self.labels[pick]) == 0).astype(np.float32)
        return (np.concatenate([first, np.where(swap[:, None], b, a)])[order],
                np.concatenate([second, np.where(swap[:, None], a, b)])[order],
                np.concatenate([target, sibling_target])[order])
