"""A fixed, named validation set for DeepChess comparators.

Figures measured on different data are comparable only on the same pairs, and
easier data must not inflate them. A validation set is one ``.npz`` file with:
won-vs-lost pairs from held-out games, held-out parents with their
engine-scored children (sibling pairs and the "preferred child" test), and the
Zobrist keys of every position of its held-out games, which any run evaluated
on it leaves out of its training data. It also records the baselines on its
parents: material with capture quiescence, and a random choice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import chess
import numpy as np

from evaluators.material import MaterialEvaluator, quiescence_cp
from search.base import Search, SearchControl
from training.data.pgn import DataError
from training.deepchess.pairs import PositionSet, SiblingSet, won_lost_pairs

FORMAT = "hackmate-deepchess-validation"


@dataclass
class ValidationSet:
    name: str
    first: np.ndarray  # (n, 97) packed won-vs-lost pairs
    second: np.ndarray
    label: np.ndarray  # (n,) 0: first is better for White
    siblings: SiblingSet  # held-out parents and their children, best first
    heldout_keys: np.ndarray  # sorted Zobrist keys of every position of the held-out games
    margin: float  # expected-score gap below which two siblings count as tied
    info: dict = field(default_factory=dict)  # how it was made, sizes, baselines

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "name": self.name, "margin": self.margin, "info": self.info}
        with open(path, "wb") as handle:  # np.savez would append .npz to another suffix
            np.savez_compressed(handle, meta=np.array(json.dumps(meta)), first=self.first, second=self.second,
                                label=self.label, heldout_keys=self.heldout_keys, **self.siblings.arrays("sib_"))
        return path

    @classmethod
    def load(cls, path: Path) -> "ValidationSet":
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") != FORMAT:
                    raise DataError(f"{path} is not a DeepChess validation set")
                return cls(meta["name"], data["first"], data["second"], data["label"],
                           SiblingSet.from_arrays(data, "sib_"), data["heldout_keys"], float(meta["margin"]),
                           meta["info"])
        except (OSError, ValueError, KeyError) as error:
            raise DataError(f"{path}: cannot read a validation set ({error})") from error


def build_validation_set(name: str, positions: PositionSet, siblings: SiblingSet, heldout_keys: np.ndarray,
                         pairs: int, parents: int, margin: float, seed: int, info: dict) -> ValidationSet:
    """Draw ``pairs`` won-vs-lost pairs and keep at most ``parents`` sibling parents (both seeded).

    Every held-out parent's key joins ``heldout_keys``, kept or not, so that no
    run evaluated on this set trains on it.
    """
    heldout_keys = np.unique(np.concatenate([heldout_keys.astype(np.uint64), siblings.key]))
    empty = np.zeros((0, positions.bits.shape[1]), dtype=np.uint8)
    if positions.white_won.any() and not positions.white_won.all():
        first, second, label = won_lost_pairs(positions, pairs, np.random.default_rng(seed + 1))
    else:
        first, second, label = empty, empty, np.zeros(0, dtype=np.int64)
    if len(siblings) > parents:
        siblings = siblings.subset(np.sort(np.random.default_rng(seed + 4).choice(len(siblings), parents,
                                                                                   replace=False)))
    info = {**info, "won_lost_pairs": int(len(label)), "won_lost_positions": int(len(positions.bits)),
            "sibling_parents": len(siblings), "sibling_children": int(len(siblings.score)),
            "baselines": {"material_quiescence": {"preferred_child": material_preferred_child(siblings)},
                          "random": {"preferred_child": random_preferred_child(siblings)}}}
    return ValidationSet(name, first, second, label, siblings, heldout_keys, margin, info)


def material_preferred_child(siblings: SiblingSet) -> float | None:
    """Share of parents where material after capture quiescence prefers the engine's best child.

    Ties (most quiet moves keep material equal) are broken at random, so a tie
    among t children including the best one counts 1/t.
    """
    if not len(siblings):
        return None
    evaluator = MaterialEvaluator()
    credit = 0.0
    for p in range(len(siblings)):
        board = chess.Board(siblings.fen[p].decode())
        values = []
        for move in siblings.move[siblings.offset[p]:siblings.offset[p + 1]]:
            board.push_uci(move.decode())
            values.append(-quiescence_cp(evaluator, board))  # the child is seen by the opponent
            board.pop()
        best = max(values)
        if values[0] == best:
            credit += 1.0 / values.count(best)
    return credit / len(siblings)


def random_preferred_child(siblings: SiblingSet) -> float | None:
    """The same share for a uniformly random choice among the scored children."""
    return float(np.mean(1.0 / np.diff(siblings.offset))) if len(siblings) else None


def search_preferred_child(search: Search, siblings: SiblingSet, depth: int, parents: int) -> float | None:
    """Share of the first ``parents`` parents where ``search`` to ``depth``, allowed only the scored children
    (`go searchmoves`), plays the engine's best move: the preferred child as the engine itself would pick it,
    its quiescence included."""
    count = min(parents, len(siblings))
    if not count:
        return None
    hits = 0
    for p in range(count):
        board = chess.Board(siblings.fen[p].decode())
        moves = [chess.Move.from_uci(m.decode()) for m in siblings.move[siblings.offset[p]:siblings.offset[p + 1]]]
        search.new_game()
        result = search.search(board, SearchControl(max_depth=depth, searchmoves=moves), lambda info: None)
        hits += result.best_move == moves[0]
    return hits / count
