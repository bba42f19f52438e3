"""Positions of held-out games with the move played there, to measure how often a player names that move: the
games of PGN files in the corpus's validation split (training.data.split: by a hash of their moves, which no
training run on the corpus saw), the plies asked about, a seeded sample of them, and the interval of a share.

The moves are Stockfish's (every move from ``from_ply`` on that carries an ``[%eval]``: book and random opening
moves carry none) or, with ``played``, every move from ``from_ply`` on (games without evals, a person's). A
position is asked about with its whole game (:meth:`Game.board_at`), so that a network with history planes sees
the game and repetitions count.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import chess
import chess.pgn
import numpy as np

from training.data.corpus.config import CorpusConfig
from training.data.pgn import ReadStats, iter_games, player_colours
from training.data.split import game_identity, hash_held_out

#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Game:
    """A game's start position (None: the standard one) and moves, named for messages."""

    name: str
    start_fen: Optional[str]
    moves: tuple[chess.Move, ...]

    def board_at(self, ply: int) -> chess.Board:
        """The position before move ``ply``, with the moves that led there on its stack."""
        board = chess.Board(self.start_fen) if self.start_fen else chess.Board()
        for move in self.moves[:ply]:
            board.push(move)
        return board


@dataclass
class Selection:
    """The sampled positions as (game, ply) pairs, and what was read to find them."""

    games: list[Game]
    samples: list[tuple[int, int]]
    games_read: int = 0
    games_in_split: int = 0
    positions_eligible: int = 0
    skipped: Counter = field(default_factory=Counter)

    @property
    def games_eligible(self) -> int:
        return len(self.games)

    def eligible(self) -> dict:
        """What was read and what was eligible, as figures."""
        return {"games_read": self.games_read, "games_in_split": self.games_in_split,
                "games_with_positions": self.games_eligible, "positions": self.positions_eligible,
                "games_skipped": dict(self.skipped)}


def eligible_plies(game: chess.pgn.Game, from_ply: int, played: bool, movers: frozenset[chess.Color]) -> list[int]:
    """Plies from ``from_ply`` on whose move carries an [%eval] (Stockfish's move, not a book or random one), or
    with ``played`` every one; only the moves of ``movers``."""
    return [ply for ply, node in enumerate(game.mainline())
            if ply >= from_ply and node.parent.turn() in movers and (played or node.eval() is not None)]


def in_split(game: chess.pgn.Game, period: Optional[int]) -> bool:
    """Whether the game is in the corpus's validation split of that period (None: every game is taken)."""
    return period is None or bool(hash_held_out(game_identity(game, (node.move for node in game.mainline())), period))


def select_positions(files: Iterable[Path], from_ply: int = 16, count: int = 3000, seed: int = 1,
                     period: Optional[int] = CorpusConfig.validation_period, played: bool = False, player: str = "",
                     progress: bool = False) -> Selection:
    """Every eligible position of the files' games in the split, then a seeded sample of ``count`` of them
    (0 or more than there are: all), in the files' order; with ``player``, only that player's moves (the corpus's
    rule, training.data.pgn.player_colours)."""
    from tqdm import tqdm
    stats = ReadStats()
    selection = Selection([], [])
    eligible: list[tuple[int, int]] = []
    with tqdm(desc="games", unit="game", disable=not progress) as bar:
        for path in files:
            for index, game in iter_games(path, stats):
                bar.update()
                selection.games_read += 1
                if not in_split(game, period):
                    continue
                selection.games_in_split += 1
                movers = player_colours(game.headers, player)
                if not movers:
                    selection.skipped["games without the player"] += 1
                    continue
                plies = eligible_plies(game, from_ply, played, movers)
                if plies:
                    number = len(selection.games)
                    selection.games.append(Game(f"{path.name} game {index + 1}", game.headers.get("FEN"),
                                                tuple(game.mainline_moves())))
                    eligible.extend((number, ply) for ply in plies)
    selection.games_read += sum(stats.skipped.values())
    selection.skipped.update(stats.skipped)
    selection.positions_eligible = len(eligible)
    if 0 < count < len(eligible):
        chosen = np.sort(np.random.default_rng(seed).choice(len(eligible), count, replace=False))
        eligible = [eligible[i] for i in chosen]
    selection.samples = eligible
    return selection


def wilson_interval(successes: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion: sound near 0 and 1 and for small counts, unlike p +- z*se."""
    if total == 0:
        return 0.0, 1.0
    share = successes / total
    denominator = 1 + z * z / total
    centre = (share + z * z / (2 * total)) / denominator
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
