"""Loading ONNX networks with onnxruntime, checking their metadata, on the hardware asked; and writing that metadata
(:func:`set_metadata`, the one writer: training's exports and evaluators.leela_convert's conversions).

``Backend`` chooses onnxruntime's execution provider: ``cpu``; ``cuda`` (onnxruntime-gpu, an NVIDIA GPU);
``tensorrt`` (TensorRT through onnxruntime-gpu, which builds an engine for the network at the first load, then
caches it); ``auto``, the default, CUDA where onnxruntime has a working CUDA provider and the CPU otherwise. A
provider that is not installed, or fails to start (no GPU, a missing CUDA library), leaves the CPU's, and the
evaluator says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluators.base import LoadError
from evaluators.moves import POLICY_LAYOUT

#: Metadata key naming what kind of network a file holds.
KIND_KEY = "hackmate.kind"
#: The kind of a policy-value network (evaluators.resnet's): training.resnet.export's files and Leela networks
#: converted by evaluators.leela_convert.
RESNET_KIND = "resnet-policy-value"
#: Metadata keys of how the policy encodes castling and queen promotions (:class:`evaluators.moves.PolicySlots`);
#: a file without them (the training package's) has the king's two-square step and the push's slot.
CASTLING_KEY, QUEEN_PROMOTION_KEY = "castling", "queen_promotion"
#: The ``Backend`` choices, and the providers each asks onnxruntime for, best first (the CPU's always last).
CPU_PROVIDER = "CPUExecutionProvider"
BACKEND_PROVIDERS = {"auto": ("CUDAExecutionProvider",), "cpu": (),
                     "cuda": ("CUDAExecutionProvider",),
                     "tensorrt": ("TensorrtExecutionProvider", "CUDAExecutionProvider")}
BACKENDS = tuple(BACKEND_PROVIDERS)


def network_metadata(kind: str, encoding: str, value_head: str) -> dict[str, Any]:
    """The metadata a network over the move slots opens with, what the evaluators check before they play with it:
    its kind, board encoding, policy layout and value head."""
    return {KIND_KEY: kind, "encoding": encoding, "policy_layout": POLICY_LAYOUT, "value_head": value_head}


def set_metadata(model: Any, metadata: dict[str, Any]) -> None:
    """Set an ``onnx.ModelProto``'s metadata to ``metadata`` (strings as they are, anything else as JSON, which
    :func:`open_session` reads back), in its order."""
    del model.metadata_props[:]
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=value if isinstance(value, str) else json.dumps(value))


def providers(backend: str) -> list[str]:
    """The execution providers to ask for ``backend``: those of its list that this onnxruntime build has, then
    the CPU's."""
    import onnxruntime as ort
    available = set(ort.get_available_providers())
    return [name for name in BACKEND_PROVIDERS[backend] if name in available] + [CPU_PROVIDER]


def running_provider(session: Any) -> str:
    """The provider that runs a session's network (the first of those onnxruntime kept)."""
    return session.get_providers()[0]


def open_session(path: Path, expected_kind: str, threads: int = 2, backend: str = "cpu"
                 ) -> tuple[Any, dict[str, Any]]:
    """An onnxruntime session on ``backend``'s best working provider and the file's metadata; LoadError if it is
    missing or the wrong kind."""
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
        # a GPU provider that fails to start (no device, a missing library) is dropped by onnxruntime with a
        # warning, and the session runs on the providers left: running_provider says which
        session = ort.InferenceSession(str(path), options, providers=providers(backend))
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
