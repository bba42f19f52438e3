"""ONNX export with the metadata the engine checks before it plays with a file."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import torch
from torch import nn

from evaluators.comparator import KIND as COMPARATOR_KIND
from evaluators.onnx_model import KIND_KEY
from evaluators.resnet import KIND as RESNET_KIND


def write_metadata(path: Path, metadata: dict[str, str]) -> None:
    model = onnx.load(str(path))
    del model.metadata_props[:]
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value if isinstance(value, str) else json.dumps(value)
    onnx.save(model, str(path))


def export_module(module: nn.Module, example: tuple[torch.Tensor, ...], path: Path, input_names: list[str],
                  output_names: list[str], metadata: dict) -> Path:
    """Export ``module`` with a dynamic batch dimension and attach ``metadata``."""
    module.eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    dynamic = {name: {0: "batch"} for name in input_names + output_names}
    torch.onnx.export(module, example, str(path), input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic, opset_version=17, dynamo=False)
    write_metadata(path, metadata)
    return path


def export_resnet(checkpoint: Path, out: Path, command: str = "") -> Path:
    """Training checkpoint or weights file (training.weights) -> ONNX policy-value network the engine loads."""
    from evaluators.encoding import get_encoding
    from training.train import checkpoint_summary
    from training.weights import load_network
    model, state = load_network(checkpoint)
    encoding = get_encoding(state["meta"]["encoding"])
    example = torch.zeros(1, encoding.planes, 8, 8)
    metadata = {KIND_KEY: RESNET_KIND, "encoding": encoding.name, "policy_layout": "az-8x8x73",
                "value_head": "wdl", "network": state["shape"], "training_data": state["meta"]["sources"],
                "validation": checkpoint_summary(state) or {}, "training_config": state["config"],
                "command": command}
    return export_module(model, (example,), out, ["planes"], ["policy", "wdl"], metadata)


def export_comparator(checkpoint: Path, out: Path, command: str = "") -> Path:
    """DeepChess checkpoint -> ONNX comparator plus the .npz of weights the numpy evaluator uses.

    The ONNX graph maps two 773-bit positions to the probability that the first is
    better for White; the .npz holds the same weights for incremental evaluation.
    """
    import numpy as np
    from training.deepchess import load_comparator
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
