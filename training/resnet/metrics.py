"""Measuring a policy-value network against labelled positions: validation during training and the test set.

(Measured elsewhere: a UCI engine at a labelling setting on the test set, training.uci.label; the engine's move
against Stockfish's, training.uci.agreement; DeepChess comparators, training.deepchess.accuracy.)

Figures, per position: top-1 / top-3 agreement with the target's best move (the
engine's first MultiPV move), the policy cross-entropy and KL(target || net)
over the target's moves, the W/D/L cross-entropy against the value target, and
the mean absolute error of the expected score (W - L).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import chess
import numpy as np
import torch
from torch.nn import functional as F

from evaluators.encoding import Encoding, get_encoding
from evaluators.moves import POLICY_SIZE, legal_move_indices
from training.data import shards
from training.network_files import WeightsError
from training.resnet.losses import SparsePolicy, gather_policy

METRICS = ("policy_loss", "policy_kl", "top1", "top3", "value_loss", "value_mae")


def batch_sums(policy_logits: torch.Tensor, wdl_logits: torch.Tensor, target: SparsePolicy, best: torch.Tensor,
               value: torch.Tensor, value_weight: torch.Tensor) -> dict[str, float]:
    """Sums over a batch of every figure in METRICS, plus ``valued`` (positions with a value target)."""
    log_probs = F.log_softmax(policy_logits.float(), dim=1)
    picked = log_probs[target.row, target.index]
    entropy_terms = torch.where(target.prob > 0, target.prob * torch.log(target.prob.clamp(min=1e-30)), 0.0)
    cross_entropy = -(target.prob * picked).sum()
    top3 = policy_logits.topk(3, dim=1).indices
    wdl_log = F.log_softmax(wdl_logits.float(), dim=1)
    wdl = wdl_log.exp()
    q_error = ((wdl[:, 0] - wdl[:, 2]) - (value[:, 0] - value[:, 2])).abs()
    return {"policy_loss": cross_entropy.item(), "policy_kl": (cross_entropy + entropy_terms.sum()).item(),
            "top1": (top3[:, 0] == best).sum().item(), "top3": (top3 == best[:, None]).any(1).sum().item(),
            "value_loss": (-(value * wdl_log).sum(1) * value_weight).sum().item(),
            "value_mae": (q_error * value_weight).sum().item(), "valued": value_weight.sum().item()}


def finish(sums: dict[str, float], positions: int) -> dict[str, float]:
    """Per-position means (value figures over the positions that have a value target)."""
    valued = max(sums.get("valued", 0.0), 1.0)
    return {name: sums.get(name, 0.0) / (valued if name.startswith("value") else max(positions, 1))
            for name in METRICS}


class Network:
    """A .pt (checkpoint or weights) run by PyTorch, or an .onnx run by onnxruntime: planes -> logits."""

    def __init__(self, path: Path) -> None:
        if path.suffix == ".onnx":
            from evaluators.onnx_model import CASTLING_KEY, QUEEN_PROMOTION_KEY, RESNET_KIND, open_session
            session, metadata = open_session(path, RESNET_KIND)
            if CASTLING_KEY in metadata or QUEEN_PROMOTION_KEY in metadata:  # legal_mask's slots are the project's
                raise WeightsError(f"{path}: its policy slots follow Lc0's conventions (an imported Leela network's "
                                   f"export): evaluate the .pt it was exported from")
            self.encoding = get_encoding(metadata["encoding"])
            self.run = lambda x: tuple(torch.from_numpy(a) for a in session.run(["policy", "wdl"], {"planes": x}))
        else:
            from training.resnet.weights import load_network
            model, state = load_network(path)
            self.encoding = get_encoding(state["meta"]["encoding"])
            self.run = lambda x: model(torch.from_numpy(x))

    @torch.no_grad()
    def __call__(self, inputs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        return self.run(inputs)


def legal_mask(planes: np.ndarray, encoding: Encoding, fens: Optional[np.ndarray] = None) -> torch.Tensor:
    """(N, 4672) True at the slots of each position's legal moves: from its FEN where there is one, else
    from its packed planes (data converted from old `prepare` sets or distilled keeps no FEN)."""
    binary = np.unpackbits(planes, axis=1, bitorder="little")[:, : encoding.binary_planes * 64]
    binary = binary.reshape(-1, encoding.binary_planes, 8, 8)
    mask = np.zeros((len(planes), POLICY_SIZE), dtype=bool)
    for row in range(len(planes)):
        fen = fens[row].decode() if fens is not None else ""
        board = chess.Board(fen) if fen else encoding.mover_board(binary[row])
        mask[row, legal_move_indices(board)[1]] = True
    return torch.from_numpy(mask)


def evaluate_network(path: Path, test: Path, batch_size: int = 256) -> dict:
    """Figures of the network in ``path`` on the shard directory ``test`` (the net's policy over legal moves)."""
    network = Network(path)
    arrays, meta = shards.load_dir_encoded(test, network.encoding)
    n = len(arrays["key"])
    offsets = torch.from_numpy(arrays["policy_offset"])
    index = torch.from_numpy(arrays["policy_index"].astype(np.int64))
    prob = torch.from_numpy(arrays["policy_prob"])
    best = torch.from_numpy(shards.best_moves(arrays))
    sums: dict[str, float] = {}
    for start in range(0, n, batch_size):
        part = slice(start, min(n, start + batch_size))
        policy, wdl = network(shards.to_inputs(arrays["planes"][part], arrays["rule50"][part], network.encoding))
        policy = policy.float().masked_fill(~legal_mask(arrays["planes"][part], network.encoding,
                                                              arrays["fen"][part]), float("-inf"))
        engine_wdl = torch.from_numpy(arrays["wdl"][part])
        known = (~torch.isnan(engine_wdl).any(1)).float()  # value figures against the engine's W/D/L only
        rows = torch.arange(part.start, part.stop)
        figures = batch_sums(policy, wdl, gather_policy(offsets, index, prob, rows), best[rows],
                             torch.nan_to_num(engine_wdl), known)
        for name, total in figures.items():
            sums[name] = sums.get(name, 0.0) + total
    return {"network": str(path), "test": str(test), "positions": n, "labeller": meta.get("labeller"),
            "planes": meta.get("planes", f"{network.encoding.name} as stored"), **finish(sums, n)}
