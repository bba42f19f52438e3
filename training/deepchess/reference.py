"""A reference UCI engine (Stockfish) on a validation set's won-vs-lost pairs: how far a comparator's target is.

The engine ranks each pair by its score of the two positions from White's side, searching a given number of
nodes: at 1 node that is its evaluation with (almost) no search, the bar a static comparator is measured
against. Each distinct position is scored once per node count from a fresh game, so that no hash carries over.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import chess
import chess.engine
import numpy as np

from training.data.targets import score_cp
from training.deepchess.accuracy import ranked_won_lost
from training.deepchess.pairs import board_of
from training.deepchess.valset import ValidationSet
from training.engines import EngineFailure, start_engine

#: One thread and a small hash, where the engine has them: the same scores on any machine for a node count.
ENGINE_OPTIONS = {"Threads": 1, "Hash": 16}


def white_scores(engine: chess.engine.SimpleEngine, boards: list[chess.Board], nodes: int, name: str
                 ) -> np.ndarray:
    """The engine's score of each board from White's side after ``nodes`` nodes, mates above every centipawn
    score (training.data.targets.score_cp)."""
    from tqdm import tqdm
    scores = np.zeros(len(boards), dtype=np.int64)
    for i, board in enumerate(tqdm(boards, desc=f"{name} go nodes {nodes}", unit=" positions")):
        info = engine.analyse(board, chess.engine.Limit(nodes=nodes), game=object())
        if "score" not in info:
            raise EngineFailure(f"the engine {name!r} gave no score for {board.fen()}")
        scores[i] = score_cp(info["score"].white())
    return scores


def engine_won_lost(command: str, sets: Iterable[ValidationSet], node_counts: Sequence[int]
                    ) -> dict[str, dict[str, dict[str, float | None]]]:
    """{set name: {"ENGINE go nodes N": {"won_lost": accuracy}}}: the engine's won-vs-lost pair accuracy at each node
    count, a tie counting half (accuracy.ranked_won_lost, the networks' rule)."""
    engine = start_engine(command, ENGINE_OPTIONS, known_only=True)
    name = engine.id.get("name", command)
    figures: dict[str, dict[str, dict[str, float | None]]] = {}
    try:
        for validation in sets:
            for nodes in node_counts:
                accuracy = ranked_won_lost(validation, lambda rows: white_scores(
                    engine, [board_of(row) for row in rows], nodes, name))
                figures.setdefault(validation.name, {})[f"{name} go nodes {nodes}"] = {"won_lost": accuracy}
    except chess.engine.EngineError as error:  # it died, or answered what python-chess cannot read
        raise EngineFailure(f"the engine {command!r} failed: {error!r}") from None
    finally:
        try:
            engine.quit()
        except chess.engine.EngineError:  # already dead: nothing left to stop
            pass
    return figures
