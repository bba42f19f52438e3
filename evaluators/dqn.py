"""A DQN's Q-network as an evaluator (ONNX, onnxruntime): one Q-value per move slot of the 4672 layout.

The priors are a softmax over the legal moves' Q-values (at ``QTemperature``:
Q-values lie in [-1, 1] and differ by hundredths, so the default is 0.1), the
value is the best legal Q-value clipped to [-1, 1]: the discounted result the
network expects for the side to move. It plays alone (the greedy move is the
highest prior) or through PUCT. Trained by ``python -m training dqn``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import chess
import numpy as np

from evaluators.base import Evaluation, Evaluator, LoadError, MoveLists, value_centipawns
from evaluators.cache import CachedEvaluator
from evaluators.encoding import ENCODINGS, assemble, get_encoding
from evaluators.moves import POLICY_LAYOUT, move_to_index
from evaluators.onnx_model import open_session
from hackmate_core.options import Option

KIND = "dqn-q-network"


class DQNEvaluator(Evaluator):
    name = "dqn"
    has_policy = True
    NATURAL_SEARCH = "puct"
    DEFAULT_WEIGHTS = "dqn.onnx"
    HELP = "DQN Q-network, ONNX: priors from its Q-values; alone with `go nodes 1`, or through puct"
    WRAPPERS = (CachedEvaluator,)
    OPTIONS = (Option("QTemperature", "spin", 10, 1, 500, scale=100, attribute="temperature",
                      help="softmax temperature over the Q-values x100 (the priors PUCT searches with)"),)

    @classmethod
    def create(cls, weights: Optional[Path], threads: int, lazy: bool) -> "DQNEvaluator":
        """Read at once whatever ``lazy`` says (the DQN is an experiment, not the engine's default)."""
        assert weights is not None  # DEFAULT_WEIGHTS is set
        return cls(weights, threads)

    def __init__(self, path: Path, threads: int = 1) -> None:
        super().__init__()
        self.path = path
        self.threads = threads
        self.session, self.metadata = open_session(path, KIND, threads)
        encoding_name = self.metadata.get("encoding")
        if encoding_name not in ENCODINGS:
            raise LoadError(f"{path}: unknown board encoding {encoding_name!r} (this engine knows "
                            f"{', '.join(ENCODINGS)})")
        if self.metadata.get("policy_layout") != POLICY_LAYOUT or self.metadata.get("value_head") != "q":
            raise LoadError(f"{path}: unsupported move layout {self.metadata.get('policy_layout')!r} or head "
                            f"{self.metadata.get('value_head')!r} (expected {POLICY_LAYOUT} and q)")
        self.encoding = get_encoding(encoding_name)

    def set_threads(self, threads: int) -> None:
        if threads != self.threads:
            self.session, _ = open_session(self.path, KIND, threads)
            self.threads = threads

    def q_values(self, boards: Sequence[chess.Board]) -> np.ndarray:
        """The raw Q-values (N, 4672) of a batch of positions."""
        binary = np.stack([self.encoding.binary(board) for board in boards])
        rule50 = np.array([min(255, board.halfmove_clock) for board in boards], dtype=np.uint8)
        return self.session.run(["q"], {"planes": assemble(binary, rule50)})[0]

    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        return self.evaluate_batch([board], None if moves is None else [moves])[0]

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        if not boards:
            return []
        q = self.q_values(boards)
        return [self._evaluation(board, list(board.legal_moves) if moves is None else moves[i], q[i])
                for i, board in enumerate(boards)]

    def _evaluation(self, board: chess.Board, moves: Sequence[chess.Move], q: np.ndarray) -> Evaluation:
        if not moves:
            return Evaluation(value=0.0, priors={})
        legal = q[[move_to_index(move, board.turn) for move in moves]]
        weights = np.exp((legal - legal.max()) / self.temperature)
        priors = weights / weights.sum()
        return Evaluation(value=float(np.clip(legal.max(), -1.0, 1.0)), priors=dict(zip(moves, priors.tolist())))

    def centipawns(self, board: chess.Board) -> int:
        """The best Q-value as centipawns (lets alpha-beta search with the network too)."""
        return value_centipawns(self, board)
