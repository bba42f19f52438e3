"""Loading ONNX networks with onnxruntime, checking the metadata written by training.export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluators.base import LoadError

#: Metadata key naming what kind of network a file holds.
KIND_KEY = "hackmate.kind"


def open_session(path: Path, expected_kind: str, threads: int = 2) -> tuple[Any, dict[str, Any]]:
    """An onnxruntime session and the file's metadata; LoadError if it is missing or the wrong kind."""
    if not path.exists():
        raise LoadError(f"weights file not found: {path}")
    try:
        import onnxruntime as ort
    except ImportError as error:  # pragma: no cover - a runtime dependency
        raise LoadError(f"onnxruntime is not installed: {error}") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # threads that wait for work sleep instead of spinning: a spinning thread takes the core the search
    # (or the opponent engine) needs, for a few percent of network speed
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types
        raise LoadError(f"cannot load {path} as an ONNX model: {error}") from None
    raw = session.get_modelmeta().custom_metadata_map
    metadata: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            metadata[key] = json.loads(value)
        except ValueError:
            metadata[key] = value
    kind = metadata.get(KIND_KEY)
    if kind != expected_kind:
        raise LoadError(f"{path} holds a {kind or 'network without hackmate metadata'}, not a {expected_kind}")
    return session, metadata
