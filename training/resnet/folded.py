"""Batch norm split out again from convolutions saved with it folded in (an exported ONNX file, a Leela network),
so that training continues the network it was.

A folded convolution computes w * x + b. Split, the convolution keeps w and the batch norm after it holds b: an
exact identity plus b (:func:`unfold`) until :func:`recalibrate` gives it the mean and variance of the convolution's
output on real positions, with a scale and shift that keep the function. The statistics matter in training: there
a batch norm normalises by its batch's, and one set to the identity would change the network's outputs at the
first step; with the statistics of real positions it computes very nearly what it does in evaluation.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import nn

#: The smallest variance a recalibrated batch norm keeps (a channel that is constant on the positions).
MIN_VARIANCE = 1e-4


def unfold(conv: nn.Conv2d, norm: nn.BatchNorm2d, weights: np.ndarray, bias: np.ndarray) -> None:
    """Set ``conv`` and the batch norm after it to the folded convolution (``weights``, ``bias``): the batch norm
    an exact identity plus ``bias`` in evaluation mode."""
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(weights)))
        norm.running_mean.zero_()
        norm.running_var.fill_(1.0 - norm.eps)
        norm.weight.fill_(1.0)
        norm.bias.copy_(torch.from_numpy(np.ascontiguousarray(bias)))


def recalibrate(net: nn.Module, pairs: list[tuple[nn.Conv2d, nn.BatchNorm2d]], run: Callable[[], object]) -> None:
    """Give every batch norm of ``pairs`` (each after its convolution, as :func:`unfold` left it) the statistics of
    its convolution's output while ``run`` runs the network on real positions, keeping the network's function."""
    statistics: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]] = {}

    def measure(module: nn.Module, _: object, out: torch.Tensor) -> None:
        statistics[module] = (out.mean(dim=(0, 2, 3)), out.var(dim=(0, 2, 3), unbiased=False))

    hooks = [conv.register_forward_hook(measure) for conv, _ in pairs]
    net.eval()
    try:
        with torch.no_grad():
            run()
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        for conv, norm in pairs:
            mean, variance = statistics[conv]
            variance = variance.clamp(min=MIN_VARIANCE)
            folded_bias = norm.bias.clone()
            norm.running_mean.copy_(mean)
            norm.running_var.copy_(variance)
            norm.weight.copy_(torch.sqrt(variance + norm.eps))
            norm.bias.copy_(mean + folded_bias)
