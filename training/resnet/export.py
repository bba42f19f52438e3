"""The policy-value network's ONNX export: the file the engine's resnet evaluator loads, with its metadata.

A network with Lc0's policy head (an imported Leela network, training.resnet.model) is exported with its policy in
its own slot conventions, which the metadata names (``castling``, ``queen_promotion``), so that the engine reads
it as it reads the original file, Chess960 castling included.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from evaluators.encoding import get_encoding
from evaluators.onnx_model import RESNET_KIND
from training.network_files import export_module
from training.onnx_metadata import move_network_metadata
from training.resnet.model import PolicyValueNet
from training.resnet.weights import load_network


class _OwnSlots(nn.Module):
    """The network with its policy in its own slot conventions (PolicyValueNet.policy_and_value's ``own_slots``)."""

    def __init__(self, net: PolicyValueNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net.policy_and_value(x, own_slots=True)


def export_resnet(checkpoint: Path, out: Path, command: str = "") -> Path:
    """Training checkpoint or weights file (training.resnet.weights) -> ONNX policy-value network the engine loads."""
    model, state = load_network(checkpoint)
    encoding = get_encoding(state["meta"]["encoding"])
    example = torch.zeros(1, encoding.planes, 8, 8)
    last = state["history"][-1] if state.get("history") else None
    metadata = move_network_metadata(RESNET_KIND, encoding.name, "wdl", state["shape"], state["config"], command,
                                     training_data=state["meta"]["sources"], validation=last or {})
    conventions = model.slot_conventions
    module = _OwnSlots(model) if conventions else model
    return export_module(module, (example,), out, ["planes"], ["policy", "wdl"], {**metadata, **conventions})
