"""The validation split, its rules written once: which games, and which positions of no known game, are held out.

Games are held out whole, one in ``period``: by their identity where the data has one (a hash of the game's
moves, :func:`game_identity`, the same game in any file, so a split is stable when files are added) or by a hash
of their number in their file where it has not (supervised training's sources, DeepChess's games). A position of
no known game is held out by its Zobrist key. A fraction ``f`` held out is the period ``round(1 / f)``, at least 2.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Union

import chess
import chess.pgn
import numpy as np

Ids = Union[int, np.ndarray]
#: Knuth's multiplicative hash: consecutive game numbers land in every residue class alike.
MULTIPLIER = 2654435761


def period_of(fraction: float) -> int:
    """The period that holds out about ``fraction`` of the games (0: none held out, the period 0)."""
    return max(2, int(round(1 / fraction))) if fraction > 0 else 0


def numbered_game_held_out(number: Ids, period: int) -> Union[bool, np.ndarray]:
    """Whether the game of this number (in its file, or a number made of the file's and the game's) is held out."""
    if isinstance(number, np.ndarray) and number.dtype == np.uint64:
        hashed = number * np.uint64(MULTIPLIER) % np.uint64(2**32)
        return hashed % np.uint64(period) == 0
    return (number * MULTIPLIER % 2**32) % period == 0


def hash_held_out(value: Ids, period: int) -> Union[bool, np.ndarray]:
    """Whether a game of this identity, or a position of this key (hashes both), is held out."""
    return value % period == 0


def game_identity(game: chess.pgn.Game, moves: Iterable[chess.Move]) -> int:
    """A game's identity: a 63-bit hash of its start position and moves (the same game in any file)."""
    text = game.headers.get("FEN", "") + " " + " ".join(move.uci() for move in moves)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def split_name(period: int) -> str:
    """The name of the split that holds out one game in ``period`` by identity."""
    return f"games-1-in-{period}"


def validation_mask(game: np.ndarray, key: np.ndarray, fraction: float) -> np.ndarray:
    """Every ~1/fraction-th game goes to validation (no game is split); positions of unknown game (-1) by key."""
    period = period_of(fraction)
    if not period:
        return np.zeros(len(game), dtype=bool)
    return np.where(game >= 0, numbered_game_held_out(game.astype(np.uint64), period),
                    hash_held_out(key, np.uint64(period)))
