"""The dual-head residual policy-value network (AlphaZero / Leela design).

Stem 3x3 convolution, ``blocks`` residual blocks of ``filters`` channels, a
convolutional policy head that outputs 73 planes of 8x8 logits (exactly the
4672-slot move layout of :mod:`evaluators.moves` when flattened), and a value
head that outputs win/draw/loss logits.

With ``squeeze`` > 0 every residual block also has a squeeze-and-excitation
unit (Hu et al. 2018, as Lc0's SE-ResNets): the block's output channels are
averaged over the board, passed through a bottleneck of ``filters // squeeze``
units and turned into a per-channel scale and shift, so that what happens on
one side of the board can reweigh features everywhere. The scale is
2 sigmoid(z), 1 where z is 0, so an SE block whose last layer is zero computes
what the same block without it does (training.resnet.grow starts one so).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def full_shape(shape: dict) -> dict:
    """``shape`` with every key a network has (files and networks without SE units leave ``squeeze`` out)."""
    return {"squeeze": 0, **shape}


class SqueezeExcitation(nn.Module):
    """Per-channel scale 2 sigmoid(w) and shift b from the board-wide mean of each channel."""

    def __init__(self, filters: int, squeeze: int) -> None:
        super().__init__()
        self.reduce = nn.Linear(filters, max(1, filters // squeeze))
        self.expand = nn.Linear(max(1, filters // squeeze), 2 * filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale, shift = self.expand(F.relu(self.reduce(x.mean(dim=(2, 3))))).chunk(2, dim=1)
        return x * (2 * torch.sigmoid(scale))[:, :, None, None] + shift[:, :, None, None]


class ResidualBlock(nn.Module):
    def __init__(self, filters: int, squeeze: int = 0) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)
        self.se = SqueezeExcitation(filters, squeeze) if squeeze else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.se is not None:
            y = self.se(y)
        return F.relu(x + y)


class PolicyValueNet(nn.Module):
    def __init__(self, planes: int, blocks: int = 6, filters: int = 64, value_hidden: int = 128,
                 squeeze: int = 0) -> None:
        super().__init__()
        self.shape = {"planes": planes, "blocks": blocks, "filters": filters, "value_hidden": value_hidden}
        if squeeze:  # only then: the shape of every network without SE stays what older weights files hold
            self.shape["squeeze"] = squeeze
        self.stem = nn.Sequential(nn.Conv2d(planes, filters, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(filters), nn.ReLU())
        self.tower = nn.Sequential(*(ResidualBlock(filters, squeeze) for _ in range(blocks)))
        self.policy = nn.Sequential(nn.Conv2d(filters, filters, 3, padding=1, bias=False),
                                    nn.BatchNorm2d(filters), nn.ReLU(), nn.Conv2d(filters, 73, 3, padding=1))
        self.value = nn.Sequential(nn.Conv2d(filters, 32, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                                   nn.Flatten(), nn.Linear(32 * 64, value_hidden), nn.ReLU(),
                                   nn.Linear(value_hidden, 3))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy logits (N, 4672), WDL logits (N, 3))."""
        return self.policy_and_value(x)

    def policy_and_value(self, x: torch.Tensor, value_trains_trunk: bool = True
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward``; with ``value_trains_trunk`` False the value's gradient stops at the value head (PPO's
        critic, which must not drag the shared trunk). Not ``forward``'s argument: ONNX export traces forward."""
        h = self.tower(self.stem(x))
        return self.policy(h).flatten(1), self.value(h if value_trains_trunk else h.detach())
