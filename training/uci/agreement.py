"""Agreement with the moves of games: how often the engine's move at ``go nodes 1`` is the move Stockfish played
(its ``[%eval]`` moves), or with ``played`` the move played (any game: a person's), on positions of games that no
network trained on.

At one node the engine plays its policy's best move, so this measures the network's policy through the whole
engine (its options, the move encoding, the UCI layer) rather than through the training code. The games are by
default the corpus's validation split, and the positions those from ``from_ply`` on, a seeded sample of ``count``
of them (training.data.heldout). Each position is sent with its whole game, ``position startpos moves ...`` (or
the game's FEN and its moves), so that a network with history planes sees the game and repetitions count, after a
``ucinewgame``, so no tree or table is carried from one position to the next and the order does not matter.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Iterable

import chess
import chess.engine

from hackmate_core.options import option_settings
from training.data.heldout import Selection, wilson_interval
from training.engines import start_engine

#: The settings of the issue's figure: the policy alone, no heuristic priors, no material in the value.
DEFAULT_OPTIONS = {"TacticalPriors": "0", "MaterialBlend": "0"}
#: What can go wrong with one position, as named in the figures.
ENGINE_CRASHED, BAD_ANSWER, NO_MOVE = "engine crashed", "illegal or unreadable answer", "no move"


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
            "eligible": selection.eligible()}


def headline(result: dict) -> str:
    """The figure in one line, e.g. ``agreement: 1,020 / 3,000 = 34.00% (95% interval 32.32% to 35.72%)``."""
    agreement = result["agreement"]
    if not agreement["positions"]:
        return "agreement: no eligible position"
    low, high = agreement["interval_95"]
    return (f"agreement: {agreement['agreed']:,} / {agreement['positions']:,} = {agreement['percent']:.2f}% "
            f"(95% interval {low:.2f}% to {high:.2f}%)")
