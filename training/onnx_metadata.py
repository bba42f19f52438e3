"""ONNX metadata: what the engine checks in a network file before it plays with it (evaluators.onnx_model), written
here and only here. Needs the ``onnx`` package, not PyTorch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx

from evaluators.onnx_model import KIND_KEY

#: The move-slot layout of every policy and Q-value head here (evaluators.moves: 73 planes x 64 squares).
POLICY_LAYOUT = "az-8x8x73"


def write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    """Set the ONNX file's metadata to ``metadata`` (strings as they are, anything else as JSON), in its order."""
    model = onnx.load(str(path))
    del model.metadata_props[:]
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value if isinstance(value, str) else json.dumps(value)
    onnx.save(model, str(path))


def read_metadata(path: Path) -> dict[str, str]:
    """The ONNX file's metadata as it is stored (every value a string), in its order."""
    return {entry.key: entry.value for entry in onnx.load(str(path)).metadata_props}


def move_network_metadata(kind: str, encoding: str, value_head: str, network: dict, config: dict, command: str,
                          **training: Any) -> dict[str, Any]:
    """The metadata of a network over the move slots: its kind, encoding, layout, value head and shape, what it was
    trained on and how (``training``), its training config and the command that wrote it."""
    return {KIND_KEY: kind, "encoding": encoding, "policy_layout": POLICY_LAYOUT, "value_head": value_head,
            "network": network, **training, "training_config": config, "command": command}
