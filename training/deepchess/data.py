"""DeepChess data: positions sampled from decisive games, sibling parents from engine labels, and what is held out.

Up to ``per_game`` random positions per decisive game, never from the first 5
moves, never one whose played move is a capture, labelled by whether White won
(the paper's rules). A share of the games is held out, and so is every position
that occurs in a held-out game; label positions found in no game read are held
out by their key, with the same share.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from evaluators.bits773 import INPUT_SIZE
from training.configs import DeepChessConfig
from training.data.pgn import ReadStats, decisive_result, iter_games
from training.data.split import numbered_game_held_out, period_of
from training.deepchess.pairs import PositionSet, SiblingSet, pack, position_key, read_labels, split_siblings
from training.deepchess.valset import ValidationSet, build_validation_set


def held_out(ids, validation: float):
    """The split rule for game ids (and, for positions found in no game read, Zobrist keys): training.data.split's
    rule for numbered games."""
    return numbered_game_held_out(ids, period_of(validation))


@dataclass
class GameData:
    positions: PositionSet  # sampled from decisive games, training and held-out games alike
    heldout_keys: np.ndarray  # sorted keys of every position of every held-out game
    known_keys: np.ndarray  # sorted keys of every position of every game read
    decisive: int


def read_games(paths: list[Path], per_game: int = 10, skip_moves: int = 5, seed: int = 1, validation: float = 0.1,
               stats: Optional[ReadStats] = None) -> GameData:
    """Sample DeepChess positions from the decisive games of PGN files and note every position's key."""
    rng = random.Random(seed)
    stats = stats or ReadStats()
    bits, labels, games, keys = [], [], [], []
    heldout, known = array("Q"), array("Q")
    decisive = 0
    for file_number, path in enumerate(paths):
        for index, game in iter_games(path, stats):
            stats.games += 1
            game_id = file_number * 10_000_000 + index
            result = decisive_result(game)
            board = game.board()
            game_keys, candidates = [], []
            for ply, move in enumerate(game.mainline_moves()):
                key = position_key(board)
                game_keys.append(key)
                if result is not None and ply >= 2 * skip_moves and not board.is_capture(move):
                    candidates.append((pack(board), key))
                board.push(move)
            game_keys.append(position_key(board))
            known.extend(game_keys)
            if held_out(game_id, validation):
                heldout.extend(game_keys)
            if result is None:
                stats.skipped["drawn or unfinished games"] += 1
                continue
            decisive += 1
            for sample, key in rng.sample(candidates, min(per_game, len(candidates))):
                bits.append(sample)
                labels.append(result == 1)
                games.append(game_id)
                keys.append(key)
                stats.positions += 1
    positions = PositionSet(np.array(bits, dtype=np.uint8).reshape(-1, (INPUT_SIZE + 7) // 8),
                            np.array(labels, dtype=bool), np.array(games, dtype=np.int64),
                            np.array(keys, dtype=np.uint64))
    return GameData(positions, np.unique(np.frombuffer(heldout, dtype=np.uint64)),
                    np.unique(np.frombuffer(known, dtype=np.uint64)), decisive)


def split(positions: PositionSet, validation: float) -> tuple[PositionSet, PositionSet]:
    """Hold out whole games."""
    is_val = held_out(positions.game, validation)
    return positions.subset(~is_val), positions.subset(is_val)


def _contains(sorted_keys: np.ndarray, key: int) -> bool:
    i = int(np.searchsorted(sorted_keys, np.uint64(key)))
    return i < len(sorted_keys) and int(sorted_keys[i]) == key


@dataclass
class PreparedData:
    train: PositionSet
    siblings: SiblingSet  # training parents
    validation: ValidationSet  # this run's held-out games and parents
    eval_sets: list[ValidationSet]
    report: dict


def prepare_data(config: DeepChessConfig, name: str = "validation", training: bool = True,
                 log: Callable[[str], None] = print) -> PreparedData:
    """Read games and labels, hold out games and the parents that occur in them, and build the validation set.

    Positions held out by a named validation set are left out of training too.
    Label positions found in no game read are held out by their key, with the
    same fraction. With ``training`` False, training children are not encoded.
    """
    stats = ReadStats()
    games = read_games([Path(p) for p in config.pgn], config.per_game, seed=config.seed,
                       validation=config.validation, stats=stats)
    log(f"games: {stats.summary()}")
    eval_sets = [ValidationSet.load(Path(p)) for p in config.eval_sets]
    excluded = np.unique(np.concatenate([games.heldout_keys, *(s.heldout_keys for s in eval_sets)]))
    train_set, val_set = split(games.positions, config.validation)
    keep = ~np.isin(train_set.key, excluded)
    train_set = train_set.subset(keep)

    def parent_held_out(key: int) -> bool:
        if _contains(excluded, key):
            return True
        return not _contains(games.known_keys, key) and bool(held_out(key, config.validation))

    parents = chain.from_iterable(read_labels(Path(p)) for p in config.labels)
    train_siblings, val_siblings, counts = split_siblings(parents, parent_held_out, training,
                                                          config.sibling_quiet, config.workers)
    log(f"sibling parents: {len(train_siblings)} training, {len(val_siblings)} held out ("
        + ", ".join(f"{name} {count}" for name, count in counts.items()) + ")")
    validation = build_validation_set(
        name, val_set, val_siblings, games.heldout_keys, config.val_pairs, config.val_parents, config.sibling_margin,
        config.seed, {"files": config.pgn, "labels": config.labels, "validation": config.validation,
                      "per_game": config.per_game, "seed": config.seed, "sibling_quiet": config.sibling_quiet})
    report = {"files": config.pgn, "labels": config.labels, "read": stats.summary(), "games": stats.games,
              "decisive_games": games.decisive, "decisive_share": games.decisive / max(1, stats.games),
              "train_positions": int(len(train_set.bits)), "validation_positions": int(len(val_set.bits)),
              "train_positions_held_out_elsewhere": int((~keep).sum()),
              "won_lost_pairs_possible": int(train_set.white_won.sum()) * int((~train_set.white_won).sum()),
              "validation_pairs": int(len(validation.label)),
              "siblings": {**counts, "train_parents": len(train_siblings), "validation_parents": len(val_siblings),
                           "validation_parents_evaluated": len(validation.siblings)}}
    return PreparedData(train_set, train_siblings, validation, eval_sets, report)
