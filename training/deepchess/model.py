"""The DeepChess networks: a Siamese comparator (two weight-tied towers, a head over the pair) and an ensemble of them.

Shapes: the Pos2Vec tower 773-600-400-200-100 with a 200-400-200-100-2 head (the
paper's teacher), and the distilled 773-100-100-100 tower with a 200-100-2 head
(the student the engine plays). Checkpoints hold the state dictionary and the
sizes, so a network is rebuilt from its file without pickled classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from evaluators.bits773 import INPUT_SIZE
from training.device import unpack_bits
from training.network_files import WeightsError, read_torch_file

POS2VEC_LAYERS = [INPUT_SIZE, 600, 400, 200, 100]
TEACHER_HEAD = [200, 400, 200, 100, 2]
STUDENT_LAYERS = [INPUT_SIZE, 100, 100, 100]
STUDENT_HEAD = [200, 100, 2]


def mlp(sizes: list[int], final_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or final_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class SiameseComparator(nn.Module):
    """Siamese network: shared tower on both positions, head on the concatenation.

    Output logits (N, 2): index 0 means "the first position is the better one for White".
    (The engine's side of it is :class:`evaluators.comparator.ComparatorEvaluator`.)
    """

    def __init__(self, tower: list[int], head: list[int]) -> None:
        super().__init__()
        self.tower = mlp(tower, final_activation=True)
        self.head = mlp(head, final_activation=False)
        self.sizes = {"tower": tower, "head": head}

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.tower(x)

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.tower(first), self.tower(second)], dim=1))


class Ensemble(nn.Module):
    """Trained comparators judging together: their probabilities averaged (forward gives the log of the mean).

    Its features are the members' features side by side and its head splits them
    again, so the evaluation's tower-then-head path measures it as one network.
    """

    def __init__(self, members: list[SiameseComparator]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.widths = [member.sizes["tower"][-1] for member in members]
        self.sizes = {"tower": [INPUT_SIZE, sum(self.widths)], "members": [member.sizes for member in members]}

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([member.features(x) for member in self.members], dim=1)

    def head(self, pair: torch.Tensor) -> torch.Tensor:
        half = pair.shape[1] // 2
        firsts, seconds = torch.split(pair[:, :half], self.widths, 1), torch.split(pair[:, half:], self.widths, 1)
        probabilities = [F.softmax(member.head(torch.cat([a, b], dim=1)), 1)
                         for member, a, b in zip(self.members, firsts, seconds)]
        return torch.stack(probabilities).mean(0).log()

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.features(first), self.features(second)], dim=1))


Judge = Union[SiameseComparator, Ensemble]


def to_bits(packed: torch.Tensor) -> torch.Tensor:
    """(N, 97) bit-packed rows (bitorder little) on any device -> (N, 773) float bits."""
    return unpack_bits(packed, INPUT_SIZE).float()


def save_comparator(model: SiameseComparator, path: Path, report: dict) -> None:
    """A checkpoint as :func:`load_comparator` reads it: CPU tensors, the sizes and the run's report."""
    torch.save({"model": {k: v.cpu() for k, v in model.state_dict().items()}, "sizes": model.sizes,
                "report": report}, path)


def load_comparator(path: Path, sizes: Optional[dict] = None) -> tuple[SiameseComparator, dict]:
    """A comparator checkpoint (teacher.pt, student.pt, scratch.pt); with ``sizes``, only a network of that shape."""
    state = read_torch_file(path)  # a .pt from a stranger runs no code
    if not isinstance(state, dict) or not {"model", "sizes"} <= state.keys():
        raise WeightsError(f"{path}: not a comparator checkpoint (teacher.pt, student.pt or scratch.pt of a run)")
    if sizes is not None and state["sizes"] != sizes:
        raise WeightsError(f"{path}: a comparator of sizes {state['sizes']}, not {sizes}")
    model = SiameseComparator(state["sizes"]["tower"], state["sizes"]["head"])
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def load_network(path: Path) -> SiameseComparator:
    """A training checkpoint (.pt) or an exported comparator (.onnx with its .npz)."""
    if path.suffix == ".pt":
        return load_comparator(path)[0]
    with np.load(path.with_suffix(".npz")) as data:
        tower_layers = int(data["tower_layers"])
        count = len([k for k in data.files if k.startswith("w")])
        weights = [(data[f"w{i}"], data[f"b{i}"]) for i in range(count)]
    tower = [weights[0][0].shape[0], *(w.shape[1] for w, _ in weights[:tower_layers])]
    head = [weights[tower_layers][0].shape[0], *(w.shape[1] for w, _ in weights[tower_layers:])]
    model = SiameseComparator(tower, head)
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for layer, (w, b) in zip(linear, weights):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    return model.eval()
