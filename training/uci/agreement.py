"""Agreement with Stockfish: how often the engine's move at ``go nodes 1`` is the move Stockfish played, on
positions of self-play games that no network trained on.

At one node the engine plays its policy's best move, so this measures the network's policy through the whole
engine (its options, the move encoding, the UCI layer) rather than through the training code. The games are by
default the corpus's validation split (training.data.split: one game in ``validation_period`` by ``game_identity``),
held out of every training run on the corpus. The positions are those from ``from_ply`` on whose next move
carries an ``[%eval]``, i.e. Stockfish's own move (book and random opening moves carry none); a seeded sample of
``count`` of them is asked. Each position is sent with the game's moves so far (repetitions count) after a
``ucinewgame``, so no tree or table is carried from one position to the next and the order does not matter.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

import chess
import chess.engine
import chess.pgn
import numpy as np

from hackmate_core.options import option_settings
from training.data.corpus import CorpusConfig
from training.data.pgn import ReadStats, iter_games
from training.data.split import game_identity, hash_held_out
from training.uci.engines import start_engine

#: The settings of the issue's figure: the policy alone, no heuristic priors, no material in the value.
DEFAULT_OPTIONS = {"TacticalPriors": "0", "MaterialBlend": "0"}
#: The corpus's validation period (one held-out game in this many).
VALIDATION_PERIOD = CorpusConfig.validation_period
#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054
#: What can go wrong with one position, as named in the figures.
ENGINE_CRASHED, BAD_ANSWER, NO_MOVE = "engine crashed", "illegal or unreadable answer", "no move"


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


def eligible_plies(game: chess.pgn.Game, from_ply: int) -> list[int]:
    """Plies from ``from_ply`` on whose move carries an [%eval] (Stockfish's move, not a book or random one)."""
    return [ply for ply, node in enumerate(game.mainline()) if ply >= from_ply and node.eval() is not None]


def in_split(game: chess.pgn.Game, period: Optional[int]) -> bool:
    """Whether the game is in the corpus's validation split of that period (None: every game is taken)."""
    return period is None or bool(hash_held_out(game_identity(game, (node.move for node in game.mainline())), period))


def select_positions(files: Iterable[Path], from_ply: int = 16, count: int = 3000, seed: int = 1,
                     period: Optional[int] = VALIDATION_PERIOD, progress: bool = False) -> Selection:
    """Every eligible position of the files' games in the split, then a seeded sample of ``count`` of them
    (0 or more than there are: all), in the files' order."""
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
                plies = eligible_plies(game, from_ply)
                if plies:
                    number = len(selection.games)
                    selection.games.append(Game(f"{path.name} game {index + 1}", game.headers.get("FEN"),
                                                tuple(game.mainline_moves())))
                    eligible.extend((number, ply) for ply in plies)
    selection.skipped = stats.skipped
    selection.games_read += sum(stats.skipped.values())
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


def parse_options(pairs: Iterable[str]) -> dict[str, str]:
    """``Name=Value`` pairs (:func:`hackmate_core.options.option_settings`) over DEFAULT_OPTIONS."""
    return {**DEFAULT_OPTIONS, **option_settings(pairs)}


def ask_engine(selection: Selection, command: str, options: dict[str, str], progress: bool = False,
               workers: int = 1) -> Counter:
    """Play ``go nodes 1`` on every sampled position, on ``workers`` engines at once (each a process of its own,
    asked in turn about every ``workers``-th position): "agreed" and "asked", and a count of each failure (a
    crashed engine is restarted; a failure counts as a disagreement, never as a skipped position). An error in
    one engine's share, or Ctrl-C, stops the others at their next position."""
    from tqdm import tqdm
    workers = max(1, min(workers, len(selection.samples)))
    stop = threading.Event()
    with tqdm(total=len(selection.samples), desc="positions", unit="pos", disable=not progress) as bar, \
            ThreadPoolExecutor(workers) as pool:
        try:
            shares = [pool.submit(_ask_share, selection, selection.samples[worker::workers], command, options, bar,
                                  stop) for worker in range(workers)]
            return sum((share.result() for share in as_completed(shares)), Counter())  # the first error raises
        finally:
            stop.set()  # before the pool waits for the other shares: they end at their next position


def _ask_share(selection: Selection, samples: list[tuple[int, int]], command: str, options: dict[str, str],
               bar: Any, stop: threading.Event) -> Counter:
    """One engine's share of :func:`ask_engine` (``bar``: the shared progress bar; ``stop``: set when the others
    have failed or been interrupted)."""
    counts: Counter = Counter()
    engine = start_engine(command, options)
    try:
        for number, ply in samples:
            if stop.is_set():
                break
            game = selection.games[number]
            counts["asked"] += 1
            try:
                result = engine.play(game.board_at(ply), chess.engine.Limit(nodes=1), game=object())
            except chess.engine.EngineTerminatedError:
                counts[ENGINE_CRASHED] += 1
                engine = start_engine(command, options)
                continue
            except chess.engine.EngineError:  # python-chess refuses an illegal or unreadable bestmove
                counts[BAD_ANSWER] += 1
                continue
            finally:
                bar.update()
            if not result.move:  # "(none)", or a null move
                counts[NO_MOVE] += 1
            elif result.move == game.moves[ply]:
                counts["agreed"] += 1
    finally:
        engine.quit()
    return counts


def figures(selection: Selection, counts: Counter, settings: dict) -> dict:
    """The measurement as JSON-ready figures: the agreement with its 95% interval, the failures, the settings and
    what was eligible."""
    asked, agreed = counts["asked"], counts["agreed"]
    low, high = wilson_interval(agreed, asked)
    return {"agreement": {"agreed": agreed, "positions": asked, "percent": 100 * agreed / asked if asked else None,
                          "interval_95": [100 * low, 100 * high]},
            "failures": {name: counts[name] for name in (ENGINE_CRASHED, BAD_ANSWER, NO_MOVE)},
            "settings": settings,
            "eligible": {"games_read": selection.games_read, "games_in_split": selection.games_in_split,
                         "games_with_positions": selection.games_eligible,
                         "positions": selection.positions_eligible,
                         "games_skipped": dict(selection.skipped)}}


def headline(result: dict) -> str:
    """The figure in one line, e.g. ``agreement: 1,020 / 3,000 = 34.00% (95% interval 32.32% to 35.72%)``."""
    agreement = result["agreement"]
    if not agreement["positions"]:
        return "agreement: no eligible position"
    low, high = agreement["interval_95"]
    return (f"agreement: {agreement['agreed']:,} / {agreement['positions']:,} = {agreement['percent']:.2f}% "
            f"(95% interval {low:.2f}% to {high:.2f}%)")
