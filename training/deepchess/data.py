"""DeepChess data: won and lost positions of the games read, sibling parents from engine labels, and what is held out.

Positions are never from the first 5 moves, never one whose played move is a capture (the paper's rules). A
position's label, won or lost for White, comes from its game: in a game with ``[%eval]`` annotations, from each
annotated position's eval (:func:`eval_won`: beyond a threshold of expected score, or left out); in a game without,
from its result (the paper's rule: up to ``per_game`` random positions of a decisive game, labelled by whether
White won; a drawn game gives none). A share of the games is held out, and so is every position that occurs in a
held-out game; label positions found in no game read are held out by their key, with the same share.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Callable, Optional

import chess.engine
import numpy as np

from training.configs import DeepChessConfig
from training.data.pgn import ReadStats, decisive_result, iter_games
from training.data.split import numbered_game_held_out, period_of
from training.data.targets import wdl_target
from training.deepchess.pairs import (PACKED_SIZE, PositionSet, SiblingSet, pack, position_key, read_labels,
                                      split_siblings)
from training.deepchess.valset import ValidationSet, build_validation_set


def held_out(ids, validation: float):
    """The split rule for game ids (and, for positions found in no game read, Zobrist keys): training.data.split's
    rule for numbered games."""
    return numbered_game_held_out(ids, period_of(validation))


def eval_won(score: chess.engine.PovScore, ply: int, threshold: float) -> Optional[bool]:
    """An annotated position's label: True (won for White) when its expected score for White, W - L by the W/D/L
    model (training.data.targets) at its ply, is above ``threshold``; False (lost) below minus it; None between."""
    wins, _, losses = wdl_target(score.white(), ply)
    expected = float(wins) - float(losses)
    return True if expected > threshold else False if expected < -threshold else None


@dataclass
class GameData:
    positions: PositionSet  # labelled positions of training and held-out games alike
    heldout_keys: np.ndarray  # sorted keys of every position of every held-out game
    known_keys: np.ndarray  # sorted keys of every position of every game read
    decisive: int  # decisive games read, labelled by their result or not
    annotated: int = 0  # games whose positions are labelled by their evals


def read_games(paths: list[Path], per_game: int = 10, skip_moves: int = 5, seed: int = 1, validation: float = 0.1,
               stats: Optional[ReadStats] = None, eval_threshold: Optional[float] = None) -> GameData:
    """Label DeepChess positions of PGN games and note every position's key.

    With ``eval_threshold``, a game with ``[%eval]`` annotations gives every annotated position that
    :func:`eval_won` labels at that threshold, and the other games their result (the module docstring); without
    it, every game its result. Which games and positions are held out does not depend on the labels.
    """
    rng = random.Random(seed)
    stats = stats or ReadStats()
    bits, labels, games, keys = bytearray(), array("b"), array("q"), array("Q")
    heldout, known = array("Q"), array("Q")
    decisive = annotated = 0
    for file_number, path in enumerate(paths):
        for index, game in iter_games(path, stats):
            stats.games += 1
            game_id = file_number * 10_000_000 + index
            result = decisive_result(game)
            decisive += result is not None
            nodes = list(game.mainline())
            # a comment's eval is of the position after its move: position `ply` is the one before nodes[ply].move
            scores = [node.eval() for node in (game, *nodes[:-1])] if eval_threshold is not None else []
            by_eval = any(score is not None for score in scores)
            board = game.board()
            game_keys, candidates = [], []
            for ply, node in enumerate(nodes):
                key = position_key(board)
                game_keys.append(key)
                if ply >= 2 * skip_moves and not board.is_capture(node.move):
                    if by_eval:
                        score = scores[ply]
                        label = None if score is None else eval_won(score, board.ply(), eval_threshold)
                    else:
                        label = None if result is None else result == 1
                    if label is not None:
                        candidates.append((pack(board).tobytes(), key, label))
                board.push(node.move)
            game_keys.append(position_key(board))
            known.extend(game_keys)
            if held_out(game_id, validation):
                heldout.extend(game_keys)
            if by_eval:
                annotated += 1
            elif result is None:
                stats.skipped["drawn or unfinished games without evals"
                              if eval_threshold is not None else "drawn or unfinished games"] += 1
                continue
            else:
                candidates = rng.sample(candidates, min(per_game, len(candidates)))
            for sample, key, label in candidates:
                bits.extend(sample)
                labels.append(label)
                games.append(game_id)
                keys.append(key)
            stats.positions += len(candidates)
    positions = PositionSet(np.frombuffer(bits, dtype=np.uint8).reshape(-1, PACKED_SIZE),
                            np.frombuffer(labels, dtype=np.int8).astype(bool), np.frombuffer(games, dtype=np.int64),
                            np.frombuffer(keys, dtype=np.uint64))
    return GameData(positions, np.unique(np.frombuffer(heldout, dtype=np.uint64)),
                    np.unique(np.frombuffer(known, dtype=np.uint64)), decisive, annotated)


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
    eval_threshold = config.eval_threshold if config.won_lost == "eval" else None
    games = read_games([Path(p) for p in config.pgn], config.per_game, seed=config.seed,
                       validation=config.validation, stats=stats, eval_threshold=eval_threshold)
    log(f"games: {stats.summary()}")
    log(f"won-vs-lost positions: {len(games.positions.bits)} ({int(games.positions.white_won.sum())} won), "
        f"{games.annotated} games labelled by their evals, the decisive ones of the other "
        f"{stats.games - games.annotated} by their result")
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
                      "per_game": config.per_game, "seed": config.seed, "sibling_quiet": config.sibling_quiet,
                      "won_lost": config.won_lost, "eval_threshold": eval_threshold})
    report = {"files": config.pgn, "labels": config.labels, "read": stats.summary(), "games": stats.games,
              "decisive_games": games.decisive, "decisive_share": games.decisive / max(1, stats.games),
              "won_lost": config.won_lost, "eval_threshold": eval_threshold, "games_labelled_by_evals": games.annotated,
              "train_positions": int(len(train_set.bits)), "validation_positions": int(len(val_set.bits)),
              "train_won_positions": int(train_set.white_won.sum()),
              "validation_won_positions": int(val_set.white_won.sum()),
              "train_positions_held_out_elsewhere": int((~keep).sum()),
              "won_lost_pairs_possible": int(train_set.white_won.sum()) * int((~train_set.white_won).sum()),
              "validation_pairs": int(len(validation.label)),
              "siblings": {**counts, "train_parents": len(train_siblings), "validation_parents": len(val_siblings),
                           "validation_parents_evaluated": len(validation.siblings)}}
    return PreparedData(train_set, train_siblings, validation, eval_sets, report)
