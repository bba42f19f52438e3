"""Engine labels as training targets: scores, the soft policy and the W/D/L target, made here and only here.

A score is kept as an integer (centipawns, or +-(MATE_CP - n) for mate in n); the soft policy is a softmax of a
position's MultiPV scores at a temperature in centipawns; the W/D/L target is Stockfish 15.1's model through
python-chess's public API (``Score.wdl(model="sf15.1", ply=...)``), for one score or a whole column at once.
"""

from __future__ import annotations

from typing import Optional

import chess
import chess.engine
import numpy as np

from evaluators.encoding import Encoding
from training.data.pgn import RESULT_WHITE
from training.data.shards import Record, make_record

#: Centipawn value of "mate now"; mate in n scores +-(MATE_CP - n), above every centipawn score.
MATE_CP = 32000
#: Softmax temperature of the soft policy, in centipawns: a move 60 cp worse gets e^-1 of the best's weight.
DEFAULT_TEMPERATURE = 60.0
WDL_MODEL = "sf15.1"
#: Ply given to the WDL model when a position's ply is unknown (python-chess's own default).
UNKNOWN_PLY = 30
UNKNOWN_RESULT = -128
#: The plies the model tells apart (python-chess clamps a ply to this range).
MODEL_PLIES = 240


def score_cp(score: chess.engine.Score) -> int:
    """An engine score as an integer: centipawns, or +-(MATE_CP - n) for mate in n."""
    return int(score.score(mate_score=MATE_CP))


def soft_policy(scores: np.ndarray, offsets: np.ndarray, temperature: float) -> np.ndarray:
    """Per position, softmax(score / temperature) over its entries (CSR ``offsets``), as float32.

    Mates score +-(MATE_CP - n), so a mating move takes all the weight from any
    non-mating move and a move that gets mated gets none.
    """
    if temperature <= 0:
        raise ValueError(f"the policy temperature must be positive, not {temperature}")
    counts = np.diff(offsets)
    if len(counts) == 0:
        return np.zeros(0, dtype=np.float32)
    starts = offsets[:-1]
    row = np.repeat(np.arange(len(counts)), counts)
    x = np.asarray(scores, dtype=np.float64) / temperature
    e = np.exp(x - np.maximum.reduceat(x, starts)[row])
    return (e / np.add.reduceat(e, starts)[row]).astype(np.float32)


def wdl_target(score: chess.engine.Score, ply: int) -> np.ndarray:
    """W/D/L probabilities for the side to move from an engine score (Stockfish 15.1's model)."""
    wdl = score.wdl(model=WDL_MODEL, ply=ply)
    return np.array([wdl.wins, wdl.draws, wdl.losses], dtype=np.float32) / 1000.0


def wdl_targets(scores: np.ndarray, plies: np.ndarray) -> np.ndarray:
    """:func:`wdl_target` of every integer score (:func:`score_cp`: a mate's is past the model's clamp and gives
    what the mate gives) at its ply, (N, 3) float32, computed once per distinct score and ply."""
    ply = np.clip(plies.astype(np.int64), 0, MODEL_PLIES)
    pairs = scores.astype(np.int64) * (MODEL_PLIES + 1) + ply
    distinct, inverse = np.unique(pairs, return_inverse=True)
    table = np.array([wdl_target(chess.engine.Cp(int(pair // (MODEL_PLIES + 1))), int(pair % (MODEL_PLIES + 1)))
                      for pair in distinct], dtype=np.float32).reshape(-1, 3)
    return table[inverse.reshape(-1)]


def side_result(result: Optional[str], turn: chess.Color) -> int:
    """A PGN result ("1-0", ...) as +1/0/-1 for ``turn``, or UNKNOWN_RESULT."""
    white = RESULT_WHITE.get(result or "*")
    if white is None:
        return UNKNOWN_RESULT
    return white if turn == chess.WHITE else -white


def engine_label(board: chess.Board, encoding: Encoding, lines: list[tuple[str, Optional[int], Optional[int]]],
                 temperature: float, result: int, game: int) -> Record:
    """A position labelled from MultiPV lines ``[(uci, centipawns, mate), ...]``, best first.

    Exactly one of centipawns and mate is set per line, from the side to move's
    view (the shared labelled file's format, and what the labeller's workers return).
    """
    if not lines:
        raise ValueError(f"{board.fen()}: no engine lines to label")
    scores = [chess.engine.Mate(mate) if cp is None else chess.engine.Cp(cp) for _, cp, mate in lines]
    cps = np.array([score_cp(s) for s in scores], dtype=np.int32)
    probs = soft_policy(cps, np.array([0, len(cps)]), temperature)
    moves = [chess.Move.from_uci(uci) for uci, _, _ in lines]
    return make_record(board, encoding, moves, probs, cps, wdl_target(scores[0], board.ply()), result, game)
