"""Reading Leela Chess Zero's network files (``.pb.gz``, or an uncompressed ``.pb``) into numpy arrays.

A Leela file is a gzipped protobuf message ``Net`` of lczero-common's ``proto/net.proto``, read here by field
number (:mod:`evaluators.protobuf`) for the formats Lc0 calls classical: the 112-plane input of 8 positions
(INPUT_CLASSICAL_112_PLANE), a residual tower of 3x3 convolutions with or without squeeze-excitation, the dense
(POLICY_CLASSICAL) or convolutional (POLICY_CONVOLUTION) policy head, the scalar (VALUE_CLASSICAL) or W/D/L
(VALUE_WDL) value head, ReLU or Mish, and weights in any of Lc0's layer encodings (LINEAR16, FLOAT16, BFLOAT16,
FLOAT32). A moves-left head is skipped. Anything else raises :class:`~evaluators.base.LoadError` naming what it is.

Batch norm is folded into each convolution as Lc0's ``network_legacy.cc`` folds it: the stored "stddivs" are
variances, epsilon 1e-5, a missing gamma is 1 and a missing beta 0, and a convolution's bias (absent in most
files, which fold it into the means) is subtracted from the mean.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from evaluators.base import LoadError
from evaluators.lc0_policy import CONV_CHANNELS, LC0_MOVES
from evaluators.protobuf import Message, WireError

#: The ``magic`` field of every Leela network file.
MAGIC = 0x1C0
#: What Lc0's batch norm adds to the variance.
BATCH_NORM_EPSILON = 1e-5
#: The input planes of the classical format.
INPUT_PLANES = 112
#: File names that hold Leela networks.
SUFFIXES = (".pb.gz", ".pb")
#: How a Leela file begins: gzip's magic, or, uncompressed, field 1 (fixed32) holding the magic.
GZIP_START, PLAIN_START = b"\x1f\x8b", b"\x0d" + MAGIC.to_bytes(4, "little")

# Enumerations of net.proto, for messages.
INPUT_FORMATS = {0: "INPUT_UNKNOWN", 1: "INPUT_CLASSICAL_112_PLANE", 2: "INPUT_112_WITH_CASTLING_PLANE",
                 3: "INPUT_112_WITH_CANONICALIZATION", 4: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES",
                 132: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON",
                 5: "INPUT_112_WITH_CANONICALIZATION_V2", 133: "INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON"}
NETWORKS = {0: "NETWORK_UNKNOWN", 1: "NETWORK_CLASSICAL", 2: "NETWORK_SE", 3: "NETWORK_CLASSICAL_WITH_HEADFORMAT",
            4: "NETWORK_SE_WITH_HEADFORMAT", 5: "NETWORK_ONNX", 6: "NETWORK_ATTENTIONBODY_WITH_HEADFORMAT",
            7: "NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT", 134: "NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT"}
POLICIES = {0: "POLICY_UNKNOWN", 1: "POLICY_CLASSICAL", 2: "POLICY_CONVOLUTION", 3: "POLICY_ATTENTION"}
VALUES = {0: "VALUE_UNKNOWN", 1: "VALUE_CLASSICAL", 2: "VALUE_WDL", 3: "VALUE_PARAM"}
ACTIVATIONS = {0: "relu", 1: "mish"}
LAYER_ENCODINGS = {0: "UNKNOWN_ENCODING", 1: "LINEAR16", 2: "FLOAT16", 3: "BFLOAT16", 4: "FLOAT32"}
LINEAR16 = 1
#: The first Lc0 version that reads files whose overall weights encoding is not LINEAR16 (loader.cc).
OTHER_ENCODINGS_SINCE = (0, 33, 0)

# Field numbers of net.proto.
NET_MAGIC, NET_MIN_VERSION, NET_FORMAT, NET_WEIGHTS, NET_ONNX = 1, 3, 4, 10, 11
FORMAT_ENCODING, FORMAT_NETWORK = 1, 2
NF_INPUT, NF_NETWORK, NF_POLICY, NF_VALUE, NF_ACTIVATION = 1, 3, 4, 5, 7
W_INPUT, W_RESIDUAL, W_POLICY, W_IP_POL_W, W_IP_POL_B, W_VALUE = 1, 2, 3, 4, 5, 6
W_IP1_VAL_W, W_IP1_VAL_B, W_IP2_VAL_W, W_IP2_VAL_B, W_POLICY1 = 7, 8, 9, 10, 11
#: Fields of Weights that only attention networks have, by what they are.
W_ATTENTION = {27: "an attention body (encoder layers)", 25: "an attention body (input embedding)",
               21: "an attention policy (policy encoder layers)", 17: "an attention policy (wq)",
               19: "an attention policy (wk)", 22: "an attention policy (ppo)", 35: "smolgen",
               44: "several value heads (multihead format)", 45: "several policy heads (multihead format)"}
CONV_WEIGHTS, CONV_BIASES, BN_MEANS, BN_VARIANCES, BN_GAMMAS, BN_BETAS = 1, 2, 3, 4, 5, 6
RES_CONV1, RES_CONV2, RES_SE = 1, 2, 3
SE_W1, SE_B1, SE_W2, SE_B2 = 1, 2, 3, 4
LAYER_MIN, LAYER_MAX, LAYER_PARAMS, LAYER_ENCODING = 1, 2, 3, 4


@dataclass
class Conv:
    """A convolution with its batch norm folded in: weights (out, in, k, k), biases (out,)."""

    weights: np.ndarray
    biases: np.ndarray


@dataclass
class Dense:
    """A fully connected layer: weights (out, in), biases (out,)."""

    weights: np.ndarray
    biases: np.ndarray


@dataclass
class SqueezeExcite:
    """Lc0's squeeze-excitation: the channel means through ``first`` (C -> S), the activation, ``second``
    (S -> 2C), split into a scale (through a sigmoid) and a bias: ``x * sigmoid(scale) + bias``."""

    first: Dense
    second: Dense


@dataclass
class Residual:
    conv1: Conv
    conv2: Conv
    se: Optional[SqueezeExcite]


@dataclass
class LeelaNetwork:
    """A classical Leela network, batch norm folded. The policy is convolutional (``policy_conv`` then
    ``policy``: 80 planes) or dense (``policy``, a 1x1 convolution, then ``policy_dense``: 1858 moves); the value
    head's last layer gives W/D/L logits (``wdl``) or one value before its tanh."""

    activation: str
    input: Conv
    residual: list[Residual]
    policy: Conv
    policy_conv: Optional[Conv]
    policy_dense: Optional[Dense]
    value: Conv
    value_dense1: Dense
    value_dense2: Dense
    wdl: bool
    #: What the file says it is (format names, shape), for the converted network's metadata.
    description: dict = field(default_factory=dict)

    @property
    def filters(self) -> int:
        return self.input.biases.shape[0]


def is_leela_file(path: Path) -> bool:
    """Whether ``path`` holds a Leela network, by its name (``.pb.gz``, ``.pb``), or, for a name that is not an
    ONNX file's, by how it begins (gzip, or the magic field)."""
    if path.name.lower().endswith(SUFFIXES):
        return True
    if path.suffix.lower() == ".onnx":
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(PLAIN_START))
    except OSError:
        return False
    return head.startswith(GZIP_START) or head == PLAIN_START


def decompress(raw: bytes, name: str) -> bytes:
    """The protobuf bytes of a Leela file's content (gzip, or plain)."""
    if not raw.startswith(GZIP_START):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise LoadError(f"{name}: corrupt gzip data ({error})") from None


def read_network(raw: bytes, name: str) -> LeelaNetwork:
    """The network of a Leela file's bytes (``name`` for messages); LoadError for anything it cannot play."""
    data = decompress(raw, name)
    if data[:2] in (b"1\n", b"2\n"):
        raise LoadError(f"{name}: a Leela network in the old text format, which Lc0 itself no longer reads")
    try:
        return _Reader(name).network(Message(data))
    except WireError as error:
        raise LoadError(f"{name}: not a Leela network: the protobuf data is damaged ({error})") from None


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, what: str) -> LoadError:
        return LoadError(f"{self.name}: {what}")

    def unsupported(self, what: str) -> LoadError:
        return LoadError(f"{self.name}: unsupported Leela network: {what} (this engine plays the classical "
                         "formats: residual towers with a convolutional or dense policy)")

    # ------------------------------------------------------------ structure

    def network(self, net: Message) -> LeelaNetwork:
        try:
            magic = net.fixed32(NET_MAGIC)
        except WireError:  # another protobuf message (an ONNX file's first field is a varint)
            raise self.fail("not a Leela network (no magic number)") from None
        if magic != MAGIC:
            raise self.fail(f"not a Leela network (magic {magic:#x}, expected {MAGIC:#x})")
        if net.has(NET_ONNX):
            raise self.unsupported("an ONNX model inside the file (NETWORK_ONNX)")
        weights = net.message(NET_WEIGHTS)
        if weights is None:
            raise self.fail("the file holds no weights")
        form = net.message(NET_FORMAT) or Message(b"")
        self.check_encoding(form, net.message(NET_MIN_VERSION))
        nf = form.message(FORMAT_NETWORK)
        if nf is None:  # the oldest files: everything classical (loader.cc, FixOlderWeightsFile)
            input_format, network, policy, value, activation = 1, 1, 1, 1, 0
        else:
            input_format, network = nf.uint(NF_INPUT), nf.uint(NF_NETWORK)
            policy, value, activation = nf.uint(NF_POLICY), nf.uint(NF_VALUE), nf.uint(NF_ACTIVATION)
            if network in (1, 2):  # NETWORK_CLASSICAL and NETWORK_SE predate head formats
                policy, value = 1, 1
        for number, what in W_ATTENTION.items():
            if weights.has(number):
                raise self.unsupported(what)
        if input_format != 1:
            raise self.unsupported(f"input format {INPUT_FORMATS.get(input_format, input_format)}")
        if network not in (1, 2, 3, 4):
            raise self.unsupported(f"network structure {NETWORKS.get(network, network)}")
        if policy not in (1, 2):
            raise self.unsupported(f"policy head {POLICIES.get(policy, policy)}")
        if value not in (1, 2):
            raise self.unsupported(f"value head {VALUES.get(value, value)}")
        if activation not in ACTIVATIONS:
            raise self.unsupported(f"default activation {activation}")
        return self.weights(weights, policy == 2, value == 2, ACTIVATIONS[activation], {
            "input": INPUT_FORMATS[input_format], "network": NETWORKS[network], "policy": POLICIES[policy],
            "value": VALUES[value], "activation": ACTIVATIONS[activation]})

    def check_encoding(self, form: Message, version: Optional[Message]) -> None:
        """Lc0's rule (loader.cc): a file whose overall encoding is not LINEAR16 needs Lc0 0.33 or later."""
        encoding = form.uint(FORMAT_ENCODING)
        needs = tuple(version.uint(number) for number in (1, 2, 3)) if version is not None else (0, 0, 0)
        if encoding != LINEAR16 and needs < OTHER_ENCODINGS_SINCE:
            raise self.unsupported(f"weights encoding {encoding} in a file for Lc0 {'.'.join(map(str, needs))} "
                                   "(Lc0 reads only LINEAR16 before 0.33)")

    def weights(self, weights: Message, conv_policy: bool, wdl: bool, activation: str,
                description: dict) -> LeelaNetwork:
        input_block = self.block(weights, W_INPUT, "input convolution")
        filters = self.outputs(input_block, "input convolution")
        stem = self.conv(input_block, "input convolution", filters, INPUT_PLANES, 3)
        residual = []
        for index, block in enumerate(weights.messages(W_RESIDUAL)):
            name = f"residual block {index}"
            conv1 = self.conv(self.block(block, RES_CONV1, f"{name} conv1"), f"{name} conv1", filters, filters, 3)
            conv2 = self.conv(self.block(block, RES_CONV2, f"{name} conv2"), f"{name} conv2", filters, filters, 3)
            se = block.message(RES_SE)
            residual.append(Residual(conv1, conv2, None if se is None else self.se(se, f"{name} SE", filters)))
        if not residual:
            raise self.fail("the network has no residual blocks")
        if conv_policy:
            if not weights.has(W_POLICY1):
                raise self.fail("POLICY_CONVOLUTION without its first convolution (policy1)")
            policy_conv = self.conv(self.block(weights, W_POLICY1, "policy1"), "policy1", filters, filters, 3)
            policy = self.conv(self.block(weights, W_POLICY, "policy"), "policy", CONV_CHANNELS, filters, 3)
            policy_dense = None
        else:
            if weights.has(W_POLICY1):
                raise self.fail("POLICY_CLASSICAL with a convolutional policy head (policy1)")
            block = self.block(weights, W_POLICY, "policy")
            channels = self.outputs(block, "policy convolution")
            policy_conv, policy = None, self.conv(block, "policy convolution", channels, filters, 1)
            policy_dense = self.dense(weights, W_IP_POL_W, W_IP_POL_B, "policy dense layer", LC0_MOVES,
                                      channels * 64)
        block = self.block(weights, W_VALUE, "value")
        channels = self.outputs(block, "value convolution")
        value = self.conv(block, "value convolution", channels, filters, 1)
        hidden = self.layer(weights, W_IP1_VAL_B, "value dense layer 1 biases").size
        value_dense1 = self.dense(weights, W_IP1_VAL_W, W_IP1_VAL_B, "value dense layer 1", hidden, channels * 64)
        value_dense2 = self.dense(weights, W_IP2_VAL_W, W_IP2_VAL_B, "value dense layer 2", 3 if wdl else 1, hidden)
        description = {**description, "blocks": len(residual), "filters": filters,
                       "squeeze_excitation": any(block.se is not None for block in residual)}
        return LeelaNetwork(activation, stem, residual, policy, policy_conv, policy_dense, value, value_dense1,
                            value_dense2, wdl, description)

    # --------------------------------------------------------------- layers

    def block(self, parent: Message, number: int, name: str) -> Message:
        block = parent.message(number)
        if block is None or not block.has(CONV_WEIGHTS):
            raise self.fail(f"the {name} is missing")
        return block

    def outputs(self, block: Message, name: str) -> int:
        """A convolution's output channels: the length of its biases or batch norm means."""
        for number in (BN_MEANS, CONV_BIASES):
            if block.has(number):
                return self.layer(block, number, f"{name} biases").size
        raise self.fail(f"the {name} has neither biases nor batch norm")

    def conv(self, block: Message, name: str, outputs: int, inputs: int, kernel: int) -> Conv:
        weights = self.sized(self.layer(block, CONV_WEIGHTS, f"{name} weights"), outputs * inputs * kernel * kernel,
                             f"{name} weights", f"{outputs} x {inputs} x {kernel} x {kernel}")
        vectors = {}
        for number, what, default in ((CONV_BIASES, "biases", 0.0), (BN_MEANS, "batch norm means", None),
                                      (BN_VARIANCES, "batch norm variances", None),
                                      (BN_GAMMAS, "batch norm gammas", 1.0), (BN_BETAS, "batch norm betas", 0.0)):
            if block.has(number):
                vectors[number] = self.sized(self.layer(block, number, f"{name} {what}"), outputs,
                                             f"{name} {what}", str(outputs))
            elif default is not None:
                vectors[number] = np.full(outputs, default, dtype=np.float32)
        weights = weights.reshape(outputs, inputs, kernel, kernel)
        biases = vectors[CONV_BIASES]
        if (BN_MEANS in vectors) != (BN_VARIANCES in vectors):
            raise self.fail(f"the {name} has batch norm means or variances without the other")
        if BN_MEANS not in vectors:
            return Conv(weights, biases)
        scale = vectors[BN_GAMMAS] / np.sqrt(vectors[BN_VARIANCES] + np.float32(BATCH_NORM_EPSILON))
        return Conv((weights * scale[:, None, None, None]).astype(np.float32),
                    (scale * (biases - vectors[BN_MEANS]) + vectors[BN_BETAS]).astype(np.float32))

    def se(self, unit: Message, name: str, filters: int) -> SqueezeExcite:
        hidden = self.layer(unit, SE_B1, f"{name} b1").size
        return SqueezeExcite(self.dense(unit, SE_W1, SE_B1, f"{name} first layer", hidden, filters),
                             self.dense(unit, SE_W2, SE_B2, f"{name} second layer", 2 * filters, hidden))

    def dense(self, parent: Message, weights: int, biases: int, name: str, outputs: int, inputs: int) -> Dense:
        return Dense(self.sized(self.layer(parent, weights, f"{name} weights"), outputs * inputs, f"{name} weights",
                                f"{outputs} x {inputs}").reshape(outputs, inputs),
                     self.sized(self.layer(parent, biases, f"{name} biases"), outputs, f"{name} biases",
                                str(outputs)))

    def sized(self, values: np.ndarray, size: int, name: str, shape: str) -> np.ndarray:
        if values.size != size:
            raise self.fail(f"wrong tensor size: the {name} hold {values.size} values, expected {size} ({shape})")
        return values

    def layer(self, parent: Message, number: int, name: str) -> np.ndarray:
        """A Layer's values as float32, decoded as Lc0's LayerAdapter decodes them."""
        layer = parent.message(number)
        if layer is None:
            raise self.fail(f"the {name} are missing")
        encoding = layer.uint(LAYER_ENCODING) if layer.has(LAYER_ENCODING) else LINEAR16
        params = bytes(layer.raw(LAYER_PARAMS) or b"")
        width = 4 if encoding == 4 else 2
        if len(params) % width:
            raise self.fail(f"wrong tensor size: the {name} take {len(params)} bytes, not a whole number of "
                            f"{width}-byte values")
        if encoding == LINEAR16:
            theta = np.frombuffer(params, dtype="<u2").astype(np.float32) / np.float32(0xFFFF)
            low, high = np.float32(layer.float32(LAYER_MIN)), np.float32(layer.float32(LAYER_MAX))
            return low * (np.float32(1) - theta) + high * theta
        if encoding == 2:
            return np.frombuffer(params, dtype="<f2").astype(np.float32)
        if encoding == 3:
            return (np.frombuffer(params, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        if encoding == 4:
            return np.frombuffer(params, dtype="<f4").astype(np.float32)
        raise self.unsupported(f"the {name} are in layer encoding {LAYER_ENCODINGS.get(encoding, encoding)}")

