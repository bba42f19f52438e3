"""Exported networks are the ones that play: the engine is given the file with ``--weights`` and must load it
(strict mode, the suite's default, fails a file that does not load instead of letting the engine keep its shipped
network), and the network it loaded must give the training side's outputs (the PyTorch model's) on fixed positions.

The positions cover both colours to move (the encoder flips the board for Black), castling rights, an en-passant
square and promotions, so that an encoding or move-map difference between training and engine shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import chess
import numpy as np

from evaluators.base import unwrap
from evaluators.moves import move_to_index
from tests.uci_inprocess import Driver

FIXED_FENS = (
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "8/P1k5/8/3pP3/8/8/5p2/4K3 b - - 0 1",
    "6k1/5ppp/8/8/2N5/8/5PPP/6K1 b - - 3 40",
)
#: onnxruntime against PyTorch, both in float32: they differ in the order of their sums only.
TOLERANCE = 1e-5


def fixed_boards() -> list[chess.Board]:
    return [chess.Board(fen) for fen in FIXED_FENS]


def engine_network(start: Callable[..., Driver], evaluator: str, weights: Path) -> Any:
    """The network at the core of the evaluator of an in-process engine started by ``start`` (the ``driver``
    fixture) with ``--eval evaluator --weights weights``, once it is ready. Fails unless it loaded ``weights``."""
    driver = start("--eval", evaluator, "--weights", str(weights))
    driver.send("isready")  # builds the backend: under strict mode a file that does not load fails here
    assert driver.engine.backend_names[0] == evaluator, driver.engine.backend_names
    assert driver.engine.loaded_weights == {evaluator: str(weights)}, driver.engine.loaded_weights
    network = unwrap(driver.engine.evaluator)
    if hasattr(network, "source"):  # the resnet evaluator names the file it read
        assert Path(network.source) == weights, network.source
    return network


def legal_softmax(logits: np.ndarray, board: chess.Board, temperature: float = 1.0) -> dict[chess.Move, float]:
    """softmax(logits / temperature) of one position's 4672 move slots over its legal moves."""
    moves = list(board.legal_moves)
    row = logits[[move_to_index(move, board.turn) for move in moves]].astype(np.float64) / temperature
    weights = np.exp(row - row.max())
    return dict(zip(moves, (weights / weights.sum()).tolist()))


def assert_same_priors(engine: dict[chess.Move, float], training: dict[chess.Move, float], board: chess.Board,
                       tolerance: float = TOLERANCE) -> None:
    assert set(engine) == set(training) == set(board.legal_moves), board.fen()
    difference = max(abs(engine[move] - training[move]) for move in training)
    assert difference <= tolerance, f"{board.fen()}: the priors differ by {difference}"


def assert_engine_plays_resnet(start: Callable[..., Driver], onnx: Path, weights: Path,
                               boards: list[chess.Board] | None = None) -> None:
    """The engine plays ``onnx`` (``--eval resnet``), and its priors and W - L are those of the PyTorch
    policy-value network in ``weights`` (a checkpoint or weights file) on ``boards`` (default: the fixed ones)."""
    import torch

    from evaluators.encoding import get_encoding
    from training.resnet.weights import load_network
    model, state = load_network(weights)
    network = engine_network(start, "resnet", onnx)
    boards = boards or fixed_boards()
    encoding = get_encoding(state["meta"]["encoding"])
    with torch.no_grad():
        policy, wdl = model(torch.from_numpy(np.stack([encoding.encode(board) for board in boards])))
    wdl = torch.softmax(wdl, 1).numpy()
    for board, evaluation, logits, (win, _, loss) in zip(boards, network.evaluate_batch(boards), policy.numpy(),
                                                          wdl):
        assert_same_priors(evaluation.priors, legal_softmax(logits, board), board)
        assert abs(evaluation.value - (win - loss)) <= TOLERANCE, board.fen()


def assert_engine_plays_dqn(start: Callable[..., Driver], onnx: Path, checkpoint: Path) -> None:
    """The engine plays ``onnx`` (``--eval dqn``), and its Q-values, priors and value are those of the PyTorch
    Q-network of the DQN ``checkpoint`` on the fixed positions."""
    import torch

    from evaluators.encoding import get_encoding
    from training.rl.dqn import load_q_network
    model, state = load_q_network(checkpoint)
    network = engine_network(start, "dqn", onnx)
    boards = fixed_boards()
    encoding = get_encoding(state["encoding"])
    with torch.no_grad():
        q = model(torch.from_numpy(np.stack([encoding.encode(board) for board in boards]))).numpy()
    np.testing.assert_allclose(network.q_values(boards), q, atol=TOLERANCE)
    for board, evaluation, row in zip(boards, network.evaluate_batch(boards), q):
        assert_same_priors(evaluation.priors, legal_softmax(row, board, network.temperature), board)
        best = max(row[move_to_index(move, board.turn)] for move in board.legal_moves)
        assert abs(evaluation.value - np.clip(best, -1, 1)) <= TOLERANCE, board.fen()


def assert_engine_plays_comparator(start: Callable[..., Driver], onnx: Path, checkpoint: Path) -> None:
    """The engine plays ``onnx`` (``--eval comparator``), and its symmetrised preference between every two fixed
    positions is that of the PyTorch comparator in ``checkpoint`` (training.deepchess.accuracy's, as validation
    measures it)."""
    import torch

    from evaluators.bits773 import encode
    from training.deepchess.accuracy import white_prefers
    from training.deepchess.model import load_comparator
    model, _ = load_comparator(checkpoint)
    network = engine_network(start, "comparator", onnx)
    boards = fixed_boards()
    pairs = [(a, b) for a in range(len(boards)) for b in range(len(boards)) if a != b]
    with torch.no_grad():
        features = model.features(torch.from_numpy(np.stack([encode(board) for board in boards])).float())
        expected = white_prefers(model, features[[a for a, _ in pairs]], features[[b for _, b in pairs]]).numpy()
    engine_features = [network.features_from_accumulators(network.full_accumulator(board)[None])[0]
                       for board in boards]
    for (a, b), probability in zip(pairs, expected):
        assert abs(network.prefers_first(engine_features[a], engine_features[b]) - probability) <= TOLERANCE, \
            (FIXED_FENS[a], FIXED_FENS[b])


def play_legal_moves(engine: Any, board: chess.Board, limit: Any, plies: int) -> None:
    """The engine (a python-chess UCI engine) plays both sides from ``board`` until the game ends or reaches ``plies``
    plies; every move must be legal."""
    while not board.is_game_over() and board.ply() < plies:
        move = engine.play(board, limit).move
        assert move in board.legal_moves, (board.fen(), move)
        board.push(move)
