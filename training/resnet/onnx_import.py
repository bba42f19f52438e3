"""Rebuild PyTorch weights from an exported policy-value ONNX file.

Export folds every BatchNorm into the convolution before it, so the ONNX file
holds the network's function but not its BatchNorm statistics, which training
needs: each folded layer is split again, its statistics measured on real
positions (training.resnet.folded). The result is a weights file that
``train --init`` continues from and ``export`` turns back into the same ONNX.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import chess
import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

from evaluators.encoding import get_encoding
from evaluators.onnx_model import KIND_KEY, RESNET_KIND
from training.data.pgn import DataError
from training.resnet.folded import recalibrate, unfold
from training.resnet.model import PolicyValueNet
from training.resnet.weights import FORMAT, VERSION


def _metadata(model: onnx.ModelProto, path: Path) -> dict:
    import json
    raw = {p.key: p.value for p in model.metadata_props}
    if raw.get(KIND_KEY) != RESNET_KIND:
        raise ValueError(f"{path} is not a hackmate policy-value network ({KIND_KEY}={raw.get(KIND_KEY)!r})")
    meta = {}
    for key, value in raw.items():
        try:
            meta[key] = json.loads(value)
        except ValueError:
            meta[key] = value
    return meta


def _conv_layers(model: nn.Module) -> list[tuple[nn.Conv2d, nn.BatchNorm2d | None]]:
    """The network's convolutions in forward order, each with the BatchNorm that follows it (if any)."""
    net: PolicyValueNet = model  # type: ignore[assignment]
    layers: list[tuple[nn.Conv2d, nn.BatchNorm2d | None]] = [(net.stem[0], net.stem[1])]
    for block in net.tower:
        layers += [(block.conv1, block.bn1), (block.conv2, block.bn2)]
    layers += [(net.policy[0], net.policy[1]), (net.policy[3], None), (net.value[0], net.value[1])]
    return layers


def calibration_boards(pgn: Path, count: int, every: int = 25) -> list[chess.Board]:
    """``count`` positions of the games in ``pgn``, every ``every``-th one, so that many games are represented."""
    from training.data.pgn import ReadStats, iter_positions
    boards = []
    for index, position in enumerate(iter_positions(pgn, ReadStats())):
        if index % every == 0:
            boards.append(position.board)
            if len(boards) >= count:
                break
    if not boards:
        raise DataError(f"{pgn}: no positions to calibrate BatchNorm statistics with")
    return boards


def import_onnx(path: Path, calibration: Iterable[chess.Board]) -> dict:
    """A weights dictionary (the format ``torch.save`` writes to weights/resnet.pt) rebuilt from ``path``."""
    model_proto = onnx.load(str(path))
    meta = _metadata(model_proto, path)
    shape = meta["network"]
    if shape.get("squeeze"):
        raise ValueError(f"{path}: a network with SE units is not rebuilt from its ONNX graph; use the .pt it was "
                         f"exported from")
    if shape.get("policy_head", "az") != "az":
        raise ValueError(f"{path}: a network with Lc0's policy head is not rebuilt from its ONNX graph; use the .pt "
                         f"it was exported from, or import-leela on the Leela file")
    encoding = get_encoding(meta["encoding"])
    net = PolicyValueNet(**shape)
    initializers = {t.name: numpy_helper.to_array(t) for t in model_proto.graph.initializer}
    convs = [n for n in model_proto.graph.node if n.op_type == "Conv"]
    gemms = [n for n in model_proto.graph.node if n.op_type == "Gemm"]
    layers = _conv_layers(net)
    if len(convs) != len(layers) or len(gemms) != 2:
        raise ValueError(f"{path}: {len(convs)} convolutions and {len(gemms)} dense layers do not match a "
                         f"{shape['blocks']}-block network")
    with torch.no_grad():
        for node, (conv, norm) in zip(convs, layers):
            weight, bias = (initializers[node.input[1]].copy(), initializers[node.input[2]].copy())
            if tuple(weight.shape) != tuple(conv.weight.shape):
                raise ValueError(f"{path}: convolution {node.name} has shape {weight.shape}, "
                                 f"expected {tuple(conv.weight.shape)}")
            if norm is None:
                conv.weight.copy_(torch.from_numpy(weight))
                conv.bias.copy_(torch.from_numpy(bias))
            else:  # an exact identity plus the folded bias, until real statistics replace it below
                unfold(conv, norm, weight, bias)
        for node, linear in zip(gemms, (net.value[4], net.value[6])):
            linear.weight.copy_(torch.from_numpy(initializers[node.input[1]].copy()))
            linear.bias.copy_(torch.from_numpy(initializers[node.input[2]].copy()))

    inputs = torch.from_numpy(np.stack([encoding.encode(board) for board in calibration]))
    recalibrate(net, [(conv, norm) for conv, norm in layers if norm is not None], lambda: net(inputs))
    _check_agreement(path, net, inputs)
    sources = meta.get("training_data") or []
    return {"format": FORMAT, "version": VERSION, "shape": net.shape, "model": net.state_dict(),
            "meta": {"encoding": encoding.name, "sources": sources},
            "config": meta.get("training_config") or {}, "history": [meta["validation"]] if meta.get("validation")
            else []}


def _check_agreement(path: Path, net: PolicyValueNet, inputs: torch.Tensor) -> None:
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    policy, wdl = session.run(["policy", "wdl"], {"planes": inputs.numpy()})
    net.eval()
    with torch.no_grad():
        torch_policy, torch_wdl = net(inputs)
    error = max(float(np.abs(policy - torch_policy.numpy()).max()), float(np.abs(wdl - torch_wdl.numpy()).max()))
    if error > 1e-3:
        raise ValueError(f"{path}: rebuilt network differs from the ONNX file by {error:.2e}")
