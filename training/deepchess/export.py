"""The comparator's files for the engine: an ONNX graph and the .npz of its weights (evaluators.comparator)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from evaluators.comparator import KIND as COMPARATOR_KIND
from evaluators.onnx_model import KIND_KEY
from training.deepchess.model import load_comparator
from training.network_files import export_module


def export_comparator(checkpoint: Path, out: Path, command: str = "") -> Path:
    """DeepChess checkpoint -> ONNX comparator plus the .npz of weights the numpy evaluator uses.

    The ONNX graph maps two 773-bit positions to the probability that the first is
    better for White; the .npz holds the same weights for incremental evaluation.
    """
    model, state = load_comparator(checkpoint)
    example = (torch.zeros(1, 773), torch.zeros(1, 773))

    class Probability(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.model(first, second), dim=1)

    metadata = {KIND_KEY: COMPARATOR_KIND, "encoding": "bits773", "network": state["sizes"],
                "report": state["report"], "command": command}
    export_module(Probability(), example, out, ["first", "second"], ["probability"], metadata)
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    tower_layers = len(state["sizes"]["tower"]) - 1
    arrays = {"kind": np.array(COMPARATOR_KIND), "tower_layers": np.array(tower_layers)}
    for i, layer in enumerate(linear):
        arrays[f"w{i}"] = layer.weight.detach().numpy().T.copy()
        arrays[f"b{i}"] = layer.bias.detach().numpy().copy()
    np.savez(out.with_suffix(".npz"), **arrays)
    return out
