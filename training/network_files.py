"""Network files of PyTorch: a ``.pt`` read without running its code, and an ONNX export with its metadata.

Networks are files people download from strangers, so every ``.pt`` is read with ``torch.load(weights_only=True)``
(tensors and plain containers only, never arbitrary objects) and checked against what it claims to be by the
format that reads it. An export carries the metadata the engine checks (training.onnx_metadata).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from training.errors import TrainingError
from training.onnx_metadata import write_metadata


class WeightsError(TrainingError, ValueError):
    """A network file that is not what it claims to be, or not the network asked for."""


def read_torch_file(path: Path, device: str | torch.device = "cpu") -> object:
    """What ``path`` holds, refusing anything but tensors and plain containers; errors name the file."""
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except FileNotFoundError:
        raise WeightsError(f"{path}: no such file") from None
    except Exception as error:  # torch.load fails in many ways on a file that is not what it claims
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise WeightsError(f"{path}: not a PyTorch weights file, or one holding more than weights ({first_line})") \
            from None


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
