"""A Leela Chess Zero network (.pb.gz, .pb) as a network of this project (training.resnet.model): a weights file
that ``train --init`` continues and ``export`` turns into the ONNX file the engine plays as it plays the original.

The file is read by the engine's reader (evaluators.leela, the one owner of the format), which folds each batch
norm into its convolution. The network is rebuilt from what it gives: the input convolution's planes reordered into
``lc0-112``'s as the engine's conversion does (evaluators.leela_convert), every folded convolution split into a
convolution and a batch norm with the statistics of real positions (training.resnet.folded), Lc0's SE units, policy
head and activation as they are, and a scalar value head's last layer as W/D/L logits (x, SCALAR_DRAW_LOGIT, -x) of
its pre-tanh output x: W - L is tanh(x) within 1e-8 and the draw below 1e-8, a probability that training on W/D/L
targets can raise (the engine's conversion, which never trains, puts the draw at -1e4). Before anything is written
the network is checked against the engine's conversion of the same file on the calibration positions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import chess
import numpy as np
import torch
from torch import nn

from evaluators.base import LoadError
from evaluators.encoding import LC0_112, get_encoding
from evaluators.leela import Conv, Dense, LeelaNetwork, read_network
from evaluators.leela_convert import build_model, input_weights
from training.network_files import WeightsError
from training.resnet.folded import recalibrate, unfold
from training.resnet.model import PolicyValueNet
from training.resnet.weights import FORMAT, VERSION

#: The draw's logit of a scalar value head (see the module's docstring).
SCALAR_DRAW_LOGIT = -20.0
#: How far the imported network may be from the engine's conversion: its logits (absolute) and W/D/L probabilities.
LOGIT_TOLERANCE, PROBABILITY_TOLERANCE = 1e-3, 1e-4


def read_leela(path: Path) -> tuple[LeelaNetwork, str]:
    """The network of a Leela file and the file's SHA-256; WeightsError for a file that cannot be read or holds a
    network this project cannot rebuild."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise WeightsError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        network = read_network(raw, path.name)
    except LoadError as error:
        raise WeightsError(str(error)) from None
    shape_of(network, path.name)  # refused before any calibration position is read
    return network, hashlib.sha256(raw).hexdigest()


def shape_of(network: LeelaNetwork, name: str) -> dict:
    """The shape (training.resnet.model) of the project's network that computes ``network``."""
    filters = network.filters
    units = [block.se for block in network.residual]
    squeeze = 0
    if any(unit is not None for unit in units):
        hidden = {unit.first.weights.shape[0] for unit in units if unit is not None}
        if None in units or len(hidden) > 1:
            raise WeightsError(f"{name}: unsupported Leela network: squeeze-excitation in some residual blocks "
                               f"only, or of several sizes")
        width = hidden.pop()
        if width > filters or filters % width:
            raise WeightsError(f"{name}: unsupported Leela network: squeeze-excitation units of {width} hidden units, "
                               f"which do not divide its {filters} filters")
        squeeze = filters // width
    dense = network.policy_dense is not None
    return {"planes": get_encoding(LC0_112).planes, "blocks": len(network.residual), "filters": filters,
            "value_hidden": network.value_dense1.weights.shape[0], "squeeze": squeeze,
            "activation": network.activation, "se_gate": "sigmoid" if squeeze else "2sigmoid",
            "policy_head": "lc0-dense" if dense else "lc0-convolution",
            "policy_channels": network.policy.weights.shape[0] if dense else 32,
            "value_channels": network.value.weights.shape[0]}


def import_leela(network: LeelaNetwork, source: dict, calibration: Sequence[chess.Board]) -> dict:
    """A weights dictionary (training.resnet.weights) of ``network``, its batch norms calibrated on the positions
    ``calibration`` (boards with their games: the history planes need them); ``source`` (the file's name and
    SHA-256) goes into its config. WeightsError where it does not compute what the engine's conversion does."""
    net = PolicyValueNet(**shape_of(network, source.get("file", "the network")))
    pairs = _set_weights(net, network)
    encoding = get_encoding(LC0_112)
    inputs = torch.from_numpy(np.stack([encoding.encode(board) for board in calibration]))
    recalibrate(net, pairs, lambda: net(inputs))
    _check(net, network, inputs, source.get("file", "the network"))
    return {"format": FORMAT, "version": VERSION, "shape": net.shape, "model": net.state_dict(),
            "meta": {"encoding": LC0_112, "sources": []},
            "config": {"imported_from": {**source, "format": "lc0", "network": network.description}}, "history": []}


def _set_weights(net: PolicyValueNet, network: LeelaNetwork) -> list[tuple[nn.Conv2d, nn.BatchNorm2d]]:
    """Set ``net`` to ``network``'s weights, every batch norm an identity plus its folded bias; the (convolution,
    batch norm) pairs to calibrate."""
    pairs: list[tuple[nn.Conv2d, nn.BatchNorm2d]] = []

    def folded(conv: nn.Conv2d, norm: nn.BatchNorm2d, layer: Conv) -> None:
        unfold(conv, norm, layer.weights, layer.biases)
        pairs.append((conv, norm))

    def plain(module: nn.Conv2d | nn.Linear, layer: Conv | Dense) -> None:
        with torch.no_grad():
            module.weight.copy_(torch.from_numpy(np.ascontiguousarray(layer.weights)))
            module.bias.copy_(torch.from_numpy(np.ascontiguousarray(layer.biases)))

    folded(net.stem[0], net.stem[1], Conv(input_weights(network.input.weights), network.input.biases))
    for block, residual in zip(net.tower, network.residual):
        folded(block.conv1, block.bn1, residual.conv1)
        folded(block.conv2, block.bn2, residual.conv2)
        if residual.se is not None:
            plain(block.se.reduce, residual.se.first)
            plain(block.se.expand, residual.se.second)
    body = net.policy.body
    if network.policy_dense is None:
        assert network.policy_conv is not None  # the reader's rule for a convolutional head
        folded(body[0], body[1], network.policy_conv)
        plain(body[3], network.policy)
    else:
        folded(body[0], body[1], network.policy)
        plain(body[4], network.policy_dense)
    folded(net.value[0], net.value[1], network.value)
    plain(net.value[4], network.value_dense1)
    last = network.value_dense2
    if not network.wdl:
        last = Dense(np.concatenate([last.weights, np.zeros_like(last.weights), -last.weights]),
                     np.array([last.biases[0], SCALAR_DRAW_LOGIT, -last.biases[0]], dtype=np.float32))
    plain(net.value[6], last)
    return pairs


def _check(net: PolicyValueNet, network: LeelaNetwork, inputs: torch.Tensor, name: str) -> None:
    """WeightsError unless ``net`` computes on ``inputs`` what the engine's conversion of ``network`` does: the
    logits of every slot a move has, and the W/D/L probabilities."""
    import onnxruntime as ort
    session = ort.InferenceSession(build_model(network).SerializeToString(), providers=["CPUExecutionProvider"])
    policy, wdl = session.run(["policy", "wdl"], {"planes": inputs.numpy()})
    net.eval()
    with torch.no_grad():
        own_policy, own_wdl = net.policy_and_value(inputs, own_slots=True)
    moves = net.policy.no_move.numpy() == 0
    logits = float(np.abs(policy[:, moves] - own_policy.numpy()[:, moves]).max())
    probabilities = float(np.abs(_softmax(wdl) - torch.softmax(own_wdl, dim=1).numpy()).max())
    if logits > LOGIT_TOLERANCE or probabilities > PROBABILITY_TOLERANCE:
        raise WeightsError(f"{name}: the imported network differs from the engine's reading of the file by "
                           f"{logits:.2e} in its policy logits and {probabilities:.2e} in its W/D/L")


def _softmax(logits: np.ndarray) -> np.ndarray:
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)
