"""A network's answers on real positions, as the engine runs it: each position's top legal move and value W - L,
and the bare network's speed. What an int8 copy (training.resnet.quantize) and another runtime
(tools.openvino_compare) are held against the fp32 file by.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chess
import chess.pgn
import numpy as np

from engine.bench import network_rate
from evaluators.resnet import ResNetEvaluator
from hackmate_core.textfiles import open_text


def pgn_positions(path: Path, count: int, skip_plies: int = 8) -> list[chess.Board]:
    """Up to ``count`` positions of the games in ``path`` (plain or compressed, as the self-play corpus's .xz parts),
    every ply after the first ``skip_plies``."""
    boards: list[chess.Board] = []
    with open_text(path) as handle:
        while len(boards) < count and (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                board.push(move)
                if ply >= skip_plies and not board.is_game_over():
                    boards.append(board.copy(stack=False))
    return boards[:count]


def fp32_evaluator(network: Path) -> ResNetEvaluator:
    """The network file alone (``Precision fp32``), whatever int8 copy lies beside it."""
    evaluator = ResNetEvaluator(network)
    evaluator.set_option("Precision", "fp32")
    return evaluator


def outputs(network: Path, boards: list[chess.Board]) -> tuple[list[str], np.ndarray]:
    """Each position's top legal move and value W - L, by one network file."""
    return evaluator_outputs(fp32_evaluator(network), boards)


def mixed_outputs(network: Path, int8: Path, boards: list[chess.Board]) -> tuple[list[str], np.ndarray, float]:
    """:func:`outputs` of ``Precision mixed`` (``int8`` with ``network`` where it is unsure), and the share of
    positions the fp32 network evaluated again."""
    mixed = ResNetEvaluator(network, int8=int8)
    mixed.set_option("Precision", "mixed")
    before = mixed.rechecked  # loading evaluates the start position
    tops, values = evaluator_outputs(mixed, boards)
    return tops, values, (mixed.rechecked - before) / max(1, len(boards))


def evaluator_outputs(evaluator: Any, boards: list[chess.Board]) -> tuple[list[str], np.ndarray]:
    """Each position's top legal move and value W - L, by a ResNet evaluator as the engine uses it."""
    tops, values = [], []
    for start in range(0, len(boards), 256):
        for evaluation in evaluator.evaluate_batch(boards[start:start + 256]):
            priors = evaluation.priors or {}
            tops.append(max(priors, key=priors.__getitem__).uci() if priors else "")
            values.append(evaluation.value)
    return tops, np.array(values)


def throughput(network: Path, threads: int, batch: int = 16, seconds: float = 2.0) -> float:
    """Positions per second of the bare network at ``batch``, as bench measures it."""
    return network_rate(fp32_evaluator(network), threads, batch, seconds)
