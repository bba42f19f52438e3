"""Means of network weights: stochastic weight averaging during a run, and averages of finished networks.

The network at a run's last step sits somewhere on a noisy path; the mean of the weights along the
last stretch of that path generalises better (:class:`WeightAverage`, as Lc0's trainer does it with
its ``swa_steps`` and ``swa_max_n``). Networks fine-tuned from a common ancestor can be averaged the
same way afterwards (:func:`average_files`, a "model soup"). Every floating-point tensor of the state
dict is averaged, batch-norm statistics included, so the result is used as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from training.resnet.model import full_shape
from training.resnet.weights import WeightsError, describe, load_file, weights_of


class WeightAverage:
    """A running mean of a network's weights: the newest snapshot weighs 1 / (min(n, max_n) + 1).

    With ``max_n`` 0 every snapshot weighs the same (a plain mean); otherwise the mean forgets
    the oldest snapshots slowly, as an exponential average of about the last ``max_n``.
    """

    def __init__(self, max_n: int) -> None:
        if max_n < 0:
            raise ValueError(f"max_n must be 0 (a plain mean) or positive, not {max_n}")
        self.max_n = max_n
        self.count = 0
        self.state: dict[str, torch.Tensor] = {}

    def add(self, model: nn.Module) -> None:
        """Fold the model's present weights into the mean."""
        seen = self.count if self.max_n == 0 else min(self.count, self.max_n)
        weight = 1.0 / (seen + 1)
        for name, value in model.state_dict().items():
            value = value.detach()
            if not value.is_floating_point() or name not in self.state:
                self.state[name] = value.float().clone() if value.is_floating_point() else value.clone()
            else:
                self.state[name].lerp_(value.float(), weight)
        self.count += 1

    def model_state(self, like: nn.Module) -> dict[str, torch.Tensor]:
        """The averaged state dict, in the dtypes of ``like``'s."""
        if not self.state:
            raise ValueError("no weights averaged yet")
        return {name: self.state[name].to(value.dtype) for name, value in like.state_dict().items()}

    def to_dict(self) -> dict:
        """What a checkpoint keeps to resume the mean (tensors and numbers only)."""
        return {"count": self.count, "max_n": self.max_n, "state": self.state}

    @classmethod
    def from_dict(cls, saved: dict) -> "WeightAverage":
        average = cls(int(saved["max_n"]))
        average.count = int(saved["count"])
        average.state = dict(saved["state"])
        return average


def average_files(paths: Sequence[Path], shares: Sequence[float] = ()) -> dict:
    """The weights dictionary whose tensors are the ``shares``-weighted mean of the networks in ``paths``
    (equal shares by default; they must sum to 1). The networks must have one shape; the first file's
    metadata is kept, with the averaging recorded in it."""
    if len(paths) < 2:
        raise ValueError("give at least two networks to average")
    shares = list(shares) or [1.0 / len(paths)] * len(paths)
    if len(shares) != len(paths) or any(share <= 0 for share in shares) or abs(sum(shares) - 1) > 1e-6:
        raise ValueError(f"give one positive share per network, summing to 1 (got {shares} for {len(paths)})")
    states = [load_file(path) for path in paths]
    for path, state in zip(paths[1:], states[1:]):
        if full_shape(state["shape"]) != full_shape(states[0]["shape"]):
            raise WeightsError(f"{path} holds a {describe(state['shape'])}, {paths[0]} a "
                               f"{describe(states[0]['shape'])}: only networks of one shape can be averaged")
    model = {}
    for name, first in states[0]["model"].items():
        if first.is_floating_point():
            model[name] = sum(share * state["model"][name].float()
                              for share, state in zip(shares, states)).to(first.dtype)
        else:
            model[name] = first.clone()
    meta = {**states[0]["meta"], "averaged": [{"file": str(path), "share": share}
                                              for path, share in zip(paths, shares)]}
    return weights_of({**states[0], "model": model, "meta": meta})
