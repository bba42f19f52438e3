"""The policy-value network's ONNX export: the file the engine's resnet evaluator loads, with its metadata."""

from __future__ import annotations

from pathlib import Path

import torch

from evaluators.encoding import get_encoding
from evaluators.resnet import KIND as RESNET_KIND
from training.network_files import export_module
from training.onnx_metadata import move_network_metadata
from training.resnet.weights import load_network


def export_resnet(checkpoint: Path, out: Path, command: str = "") -> Path:
    """Training checkpoint or weights file (training.resnet.weights) -> ONNX policy-value network the engine loads."""
    model, state = load_network(checkpoint)
    encoding = get_encoding(state["meta"]["encoding"])
    example = torch.zeros(1, encoding.planes, 8, 8)
    last = state["history"][-1] if state.get("history") else None
    metadata = move_network_metadata(RESNET_KIND, encoding.name, "wdl", state["shape"], state["config"], command,
                                     training_data=state["meta"]["sources"], validation=last or {})
    return export_module(model, (example,), out, ["planes"], ["policy", "wdl"], metadata)
