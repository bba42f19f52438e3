"""A Leela network converted once into the ONNX file :class:`evaluators.resnet.ResNetEvaluator` plays, cached by
the SHA-256 of the file's bytes.

The graph is Lc0's own (src/neural/onnx/converter.cc) with this project's conventions at its two ends, so that
the evaluator runs it as it runs a network of the training package:

- input ``planes``: the ``lc0-112`` encoding, whose last three planes (zeros, ones, the fifty-move plane as
  min(plies, 100) / 100) are Lc0's 110, 111 and 109 (the plies): the input convolution's weights are permuted and
  scaled to match, which costs nothing at run time (exact up to a clock of 100 plies, where the game is drawn);
- output ``policy`` (N, 4672): the az-8x8x73 slots, each gathered from Lc0's 1858 moves (or straight from the
  convolutional head's planes) as :func:`evaluators.lc0_policy.az_sources` says, with castling as the king taking
  its rook and queen promotions in their own slots (the metadata says so); a slot no move has gets
  :data:`NO_MOVE_LOGIT`;
- output ``wdl`` (N, 3): W/D/L logits. A scalar value head's last layer becomes (x, -10000, -x) for its
  pre-tanh output x: the softmax then gives W = sigmoid(2x), D = 0, L = sigmoid(-2x), and W - L = tanh(x), the
  network's value exactly.

The file is written under a temporary name and renamed, so a second load of the same network only opens it, and
a half-written file is never read. No int8 copy is made, so the Precision option runs the converted file alone:
quantised as `python -m training quantize` does, maia-1900 kept fp32's top move on 92.6% of 5,000 positions of Carlsen's games
(97.9% mixed), the shipped network on 94.5% (99.5%), and a rating network's prediction is its top move.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

from evaluators.base import LoadError
from evaluators.encoding import FIFTY_MOVE_PLIES, LC0_112
from evaluators.leela import Conv, Dense, LeelaNetwork, read_network
from evaluators.lc0_policy import az_conv_sources, az_sources
from evaluators.moves import KING_TAKES_ROOK, OWN_SLOT
from evaluators.onnx_model import CASTLING_KEY, QUEEN_PROMOTION_KEY, RESNET_KIND, network_metadata, set_metadata
from hackmate_core.user_cache import root

#: The cache's folder of converted networks.
FOLDER = "leela"
#: Bumped when the conversion changes, so that an older conversion is made again rather than played.
CONVERTER_VERSION = 1
#: Lc0's input channel for each plane of ``lc0-112``: the same up to the side-to-move plane, then this project's
#: zeros, ones and fifty-move planes, which are Lc0's 110, 111 and 109.
LC0_CHANNEL_OF_PLANE = [*range(109), 110, 111, 109]
#: The logit of a policy slot that no Lc0 move has (never a legal move's), and of a draw for a scalar value head.
NO_MOVE_LOGIT = NO_DRAW_LOGIT = -1e4
#: ONNX versions every onnxruntime the project supports (1.16 on) reads.
OPSET, IR_VERSION = 17, 8


def cache_path(digest: str) -> Path:
    """Where the conversion of the Leela file of SHA-256 ``digest`` lives."""
    return root() / FOLDER / f"{digest}-v{CONVERTER_VERSION}.onnx"


def converted(path: Path) -> Path:
    """The ONNX file of the Leela network ``path``, converted now unless the cache has it; LoadError for a file
    that cannot be read or a network this engine cannot play."""
    if not path.exists():
        raise LoadError(f"weights file not found: {path}")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise LoadError(f"cannot read {path}: {error.strerror or error}") from None
    digest = hashlib.sha256(raw).hexdigest()
    target = cache_path(digest)
    if target.exists():
        return target
    network = read_network(raw, path.name)
    model = build_model(network, {"source": {"file": path.name, "sha256": digest, "format": "lc0"}})
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{digest[:16]}", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(model.SerializeToString())
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except OSError as error:
        raise LoadError(f"cannot write the conversion of {path.name} into {target.parent}: {error}") from None
    return target


def input_weights(weights: np.ndarray) -> np.ndarray:
    """The input convolution's weights (out, 112, k, k) reordered from Lc0's planes to ``lc0-112``'s, the
    fifty-move plane's scaled from plies to its fraction of 100."""
    reordered = weights[:, LC0_CHANNEL_OF_PLANE].copy()
    reordered[:, -1] *= FIFTY_MOVE_PLIES
    return reordered


def metadata(network: LeelaNetwork, extra: dict) -> dict[str, Any]:
    """The converted file's metadata: what :class:`~evaluators.resnet.ResNetEvaluator` checks, and the source."""
    return {**network_metadata(RESNET_KIND, LC0_112, "wdl"), CASTLING_KEY: KING_TAKES_ROOK,
            QUEEN_PROMOTION_KEY: OWN_SLOT, "network": network.description, "converter": CONVERTER_VERSION, **extra}


def build_model(network: LeelaNetwork, extra: Optional[dict] = None) -> Any:
    """The ONNX model (an ``onnx.ModelProto``) of ``network``; ``extra``: more metadata."""
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as error:  # a runtime dependency
        raise LoadError(f"converting a Leela network needs the onnx package: {error}") from None
    graph = _Graph(network.activation, helper, numpy_helper)
    flow = graph.conv(Conv(input_weights(network.input.weights), network.input.biases), "planes", "input")
    for index, block in enumerate(network.residual):
        name = f"block{index}"
        hidden = graph.conv(block.conv1, flow, f"{name}/conv1")
        out = graph.conv(block.conv2, hidden, f"{name}/conv2", activate=False)
        if block.se is not None:
            out = graph.squeeze_excite(block.se.first, block.se.second, out, f"{name}/se")
        flow = graph.activate(graph.node("Add", [out, flow], f"{name}/add"), name)
    if network.policy_conv is not None:
        policy = graph.conv(network.policy_conv, flow, "policy/conv1")
        policy = graph.conv(network.policy, policy, "policy/conv2", activate=False)
        policy, sources = graph.node("Flatten", [policy], "policy/flatten", axis=1), az_conv_sources()
    else:
        assert network.policy_dense is not None
        policy = graph.node("Flatten", [graph.conv(network.policy, flow, "policy/conv")], "policy/flatten", axis=1)
        policy, sources = graph.dense(network.policy_dense, policy, "policy/dense"), az_sources()
    policy = graph.node("Gather", [policy, graph.const("policy/sources", np.maximum(sources, 0))], "policy/gather",
                        axis=1)
    mask = np.where(sources >= 0, 0.0, NO_MOVE_LOGIT).astype(np.float32)
    graph.node("Add", [policy, graph.const("policy/no_move", mask)], "policy", output="policy")
    value = graph.node("Flatten", [graph.conv(network.value, flow, "value/conv")], "value/flatten", axis=1)
    value = graph.activate(graph.dense(network.value_dense1, value, "value/dense1"), "value/dense1")
    last = network.value_dense2 if network.wdl else Dense(
        np.concatenate([network.value_dense2.weights, np.zeros_like(network.value_dense2.weights),
                        -network.value_dense2.weights]),
        np.array([network.value_dense2.biases[0], NO_DRAW_LOGIT, -network.value_dense2.biases[0]],
                 dtype=np.float32))
    graph.dense(last, value, "value/dense2", output="wdl")
    batch = ["batch"]
    model = helper.make_model(
        helper.make_graph(graph.nodes, "leela", [helper.make_tensor_value_info("planes", onnx.TensorProto.FLOAT,
                                                                               batch + [112, 8, 8])],
                          [helper.make_tensor_value_info("policy", onnx.TensorProto.FLOAT, batch + [4672]),
                           helper.make_tensor_value_info("wdl", onnx.TensorProto.FLOAT, batch + [3])],
                          graph.initializers),
        opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hackmate")
    model.ir_version = IR_VERSION
    set_metadata(model, metadata(network, extra or {}))
    onnx.checker.check_model(model)
    return model


class _Graph:
    """The nodes and initializers of a graph being built; every name is unique by its layer's name."""

    def __init__(self, activation: str, helper: Any, numpy_helper: Any) -> None:
        self.helper, self.numpy_helper = helper, numpy_helper
        self.activation = activation
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, output: Optional[str] = None, **attributes: Any) -> str:
        output = output or f"{name}:out"
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=name, **attributes))
        return output

    def activate(self, flow: str, name: str) -> str:
        """The network's default activation: ReLU, or Mish (x tanh(softplus(x)))."""
        if self.activation == "relu":
            return self.node("Relu", [flow], f"{name}/relu")
        softplus = self.node("Softplus", [flow], f"{name}/softplus")
        return self.node("Mul", [flow, self.node("Tanh", [softplus], f"{name}/tanh")], f"{name}/mish")

    def conv(self, conv: Conv, flow: str, name: str, activate: bool = True) -> str:
        kernel = conv.weights.shape[-1]
        pad = (kernel - 1) // 2
        out = self.node("Conv", [flow, self.const(f"{name}/weights", conv.weights),
                                 self.const(f"{name}/biases", conv.biases)], name,
                        kernel_shape=[kernel, kernel], pads=[pad] * 4)
        return self.activate(out, name) if activate else out

    def dense(self, dense: Dense, flow: str, name: str, output: Optional[str] = None) -> str:
        return self.node("Gemm", [flow, self.const(f"{name}/weights", dense.weights),
                                  self.const(f"{name}/biases", dense.biases)], name, output=output, transB=1)

    def squeeze_excite(self, first: Dense, second: Dense, flow: str, name: str) -> str:
        """Lc0's squeeze-excitation: ``x * sigmoid(scale) + bias``, scale and bias the two halves of the second
        layer's output."""
        filters = first.weights.shape[1]
        pooled = self.node("Flatten", [self.node("GlobalAveragePool", [flow], f"{name}/pool")], f"{name}/flatten",
                           axis=1)
        hidden = self.activate(self.dense(first, pooled, f"{name}/dense1"), f"{name}/dense1")
        both = self.node("Reshape", [self.dense(second, hidden, f"{name}/dense2"),
                                     self.const(f"{name}/shape", np.array([-1, 2 * filters, 1, 1], dtype=np.int64))],
                         f"{name}/reshape")
        halves = []
        for part, (start, end) in (("scale", (0, filters)), ("bias", (filters, 2 * filters))):
            bounds = [self.const(f"{name}/{part}/{what}", np.array([value], dtype=np.int64))
                      for what, value in (("starts", start), ("ends", end), ("axes", 1))]
            halves.append(self.node("Slice", [both, *bounds], f"{name}/{part}"))
        scaled = self.node("Mul", [flow, self.node("Sigmoid", [halves[0]], f"{name}/sigmoid")], f"{name}/mul")
        return self.node("Add", [scaled, halves[1]], f"{name}/add")
