"""ONNX metadata of the training package's files: what the engine checks in a network file before it plays with it
(evaluators.onnx_model, whose writer this calls), and how the network was trained. Needs the ``onnx`` package,
not PyTorch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx

from evaluators.onnx_model import network_metadata, set_metadata


def write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    """Set the ONNX file's metadata to ``metadata`` (strings as they are, anything else as JSON), in its order."""
    model = onnx.load(str(path))
    set_metadata(model, metadata)
    onnx.save(model, str(path))


def read_metadata(path: Path) -> dict[str, str]:
    """The ONNX file's metadata as it is stored (every value a string), in its order."""
    return {entry.key: entry.value for entry in onnx.load(str(path)).metadata_props}


def move_network_metadata(kind: str, encoding: str, value_head: str, network: dict, config: dict, command: str,
                          **training: Any) -> dict[str, Any]:
    """The metadata of a network over the move slots: its kind, encoding, layout and value head, its shape, what it
    was trained on and how (``training``), its training config and the command that wrote it."""
    return {**network_metadata(kind, encoding, value_head), "network": network, **training,
            "training_config": config, "command": command}
