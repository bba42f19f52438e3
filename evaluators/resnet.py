"""The ResNet policy-value evaluator: an ONNX network run by onnxruntime.

It masks illegal moves, softmaxes the remaining policy logits, converts the
W/D/L head to a value, caches evaluations by position and evaluates batches.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Hashable, Sequence

import chess
import numpy as np

from evaluators.base import Evaluation, Evaluator, EvaluatorOption, LoadError
from evaluators.encoding import ENCODINGS, assemble, get_encoding
from evaluators.moves import legal_move_indices
from evaluators.onnx_model import open_session
from evaluators.material import MaterialEvaluator, quiescence_cp
from evaluators.score import cp_to_q, q_to_cp

KIND = "resnet-policy-value"
#: Rough memory of one cached evaluation (priors dict of ~35 moves).
BYTES_PER_CACHE_ENTRY = 4000


class ResNetEvaluator(Evaluator):
    name = "resnet"
    has_policy = True

    def __init__(self, path: Path, threads: int = 2) -> None:
        self.path = path
        self.threads = threads
        self.session, self.metadata = open_session(path, KIND, threads)
        encoding_name = self.metadata.get("encoding")
        if encoding_name not in ENCODINGS:
            raise LoadError(f"{path}: unknown board encoding {encoding_name!r} (this engine knows "
                            f"{', '.join(ENCODINGS)})")
        if self.metadata.get("policy_layout") != "az-8x8x73" or self.metadata.get("value_head") != "wdl":
            raise LoadError(f"{path}: unsupported policy layout {self.metadata.get('policy_layout')!r} or value "
                            f"head {self.metadata.get('value_head')!r} (expected az-8x8x73 and wdl)")
        self.encoding = get_encoding(encoding_name)
        self.softmax_temperature = 1.0
        #: Share (0-1) of the heuristic capture/check priors mixed into the policy.
        self.tactical_priors = 0.5
        #: Share (0-1) of the capture-quiescence material score mixed into the value.
        self.material_blend = 0.6
        self.material = MaterialEvaluator()
        self.cache: OrderedDict[Hashable, Evaluation] = OrderedDict()
        self.cache_size = 16 * 1024 * 1024 // BYTES_PER_CACHE_ENTRY

    def options(self) -> list[EvaluatorOption]:
        return [EvaluatorOption("PolicyTemperature", "spin", 100, 10, 500),
                EvaluatorOption("TacticalPriors", "spin", int(self.tactical_priors * 100), 0, 100),
                EvaluatorOption("MaterialBlend", "spin", int(self.material_blend * 100), 0, 100),
                EvaluatorOption("NNThreads", "spin", self.threads, 1, 64)]

    def set_option(self, name: str, value: Any) -> None:
        if name == "PolicyTemperature":
            self.softmax_temperature = int(value) / 100.0
            self.cache.clear()
        elif name == "TacticalPriors":
            self.tactical_priors = int(value) / 100.0
            self.cache.clear()
        elif name == "MaterialBlend":
            self.material_blend = int(value) / 100.0
            self.cache.clear()
        elif name == "NNThreads" and int(value) != self.threads:
            self.threads = int(value)
            self.session, _ = open_session(self.path, KIND, self.threads)

    def set_cache_size(self, megabytes: int) -> None:
        self.cache_size = max(1000, megabytes * 1024 * 1024 // BYTES_PER_CACHE_ENTRY)

    def new_game(self) -> None:
        self.cache.clear()

    def _key(self, board: chess.Board) -> Hashable:
        key: tuple = (board._transposition_key(), min(board.halfmove_clock, 100))
        if self.encoding.history > 1:  # history planes: the previous moves matter too
            key += tuple(board.move_stack[-self.encoding.history + 1:])
        return key

    def run(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw network outputs (policy logits, W/D/L probabilities) for a batch of encoded positions."""
        policy, wdl_logits = self.session.run(["policy", "wdl"], {"planes": inputs})
        wdl = np.exp(wdl_logits - wdl_logits.max(axis=1, keepdims=True))
        return policy, wdl / wdl.sum(axis=1, keepdims=True)

    def evaluate(self, board: chess.Board) -> Evaluation:
        return self.evaluate_batch([board])[0]

    def evaluate_batch(self, boards: Sequence[chess.Board]) -> list[Evaluation]:
        results: list[Evaluation | None] = [None] * len(boards)
        keys = [self._key(b) for b in boards]
        todo = []
        for i, key in enumerate(keys):
            cached = self.cache.get(key)
            if cached is not None:
                self.cache.move_to_end(key)
                results[i] = cached
            else:
                todo.append(i)
        if todo:
            binary = np.stack([self.encoding.binary(boards[i]) for i in todo])
            rule50 = np.array([boards[i].halfmove_clock for i in todo], dtype=np.uint8)
            policy, wdl = self.run(assemble(binary, rule50))
            for row, i in enumerate(todo):
                evaluation = self._evaluation(boards[i], policy[row], wdl[row])
                results[i] = evaluation
                self.cache[keys[i]] = evaluation
            while len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        return results  # type: ignore[return-value]

    def _evaluation(self, board: chess.Board, logits: np.ndarray, wdl: np.ndarray) -> Evaluation:
        moves, indices = legal_move_indices(board)
        legal_logits = logits[indices] / self.softmax_temperature
        legal_logits = np.exp(legal_logits - legal_logits.max()) if len(moves) else legal_logits
        priors = legal_logits / legal_logits.sum() if len(moves) else legal_logits
        value, draw = float(wdl[0] - wdl[2]), float(wdl[1])
        if self.tactical_priors and len(moves):
            heuristic = self.material.evaluate(board).priors or {}
            priors = (1 - self.tactical_priors) * priors + self.tactical_priors * np.array(
                [heuristic[m] for m in moves])
        if self.material_blend:
            # a small network misses hanging pieces: blend in the material left after the captures
            material_q = cp_to_q(quiescence_cp(self.material, board))
            value = (1 - self.material_blend) * value + self.material_blend * material_q
            draw *= 1 - abs(value)
        return Evaluation(value=value, draw=draw, priors=dict(zip(moves, priors.tolist())))

    def centipawns(self, board: chess.Board) -> int:
        """The value head as centipawns (lets alpha-beta search with the network too)."""
        return q_to_cp(self.evaluate(board).value)
