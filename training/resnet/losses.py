"""Policy and value losses on shard targets, shared by supervised and reinforcement-learning training.

The policy target is sparse (training.data.shards' CSR: per position a few move slots
with probabilities), so a batch gathers only its own entries, vectorised on the
device; the value target is a W/D/L distribution from the engine mixed with the
game result.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.nn import functional as F


class SparsePolicy(NamedTuple):
    """The policy entries of a batch: entry k belongs to batch row ``row[k]``, move slot ``index[k]``."""

    row: torch.Tensor  # int64 (K,)
    index: torch.Tensor  # int64 (K,)
    prob: torch.Tensor  # float32 (K,)


def gather_policy(offsets: torch.Tensor, index: torch.Tensor, prob: torch.Tensor, batch: torch.Tensor
                  ) -> SparsePolicy:
    """The CSR entries of positions ``batch`` (``offsets`` N+1, ``index``/``prob`` M), all on one device."""
    starts = offsets[batch]
    counts = offsets[batch + 1] - starts
    total = int(counts.sum())
    row = torch.repeat_interleave(torch.arange(len(batch), device=batch.device), counts, output_size=total)
    first = torch.cumsum(counts, 0) - counts  # where each row's entries start in the gathered list
    entry = torch.arange(total, device=batch.device) + (starts - first).repeat_interleave(counts, output_size=total)
    return SparsePolicy(row, index[entry].long(), prob[entry].float())


def soft_policy_loss(logits: torch.Tensor, target: SparsePolicy, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean over the batch of -sum_i p_i log softmax(logits)[i] (cross-entropy with a sparse soft target).

    ``label_smoothing`` mixes in the cross-entropy against a uniform distribution
    over all slots, as torch.nn.functional.cross_entropy does.
    """
    log_probs = F.log_softmax(logits.float(), dim=1)
    loss = -(target.prob * log_probs[target.row, target.index]).sum() / logits.shape[0]
    if label_smoothing:
        loss = (1 - label_smoothing) * loss - label_smoothing * log_probs.mean(1).mean()
    return loss


def value_target(wdl: torch.Tensor, result: torch.Tensor, result_weight: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(target (B, 3), weight (B,)): ``result_weight`` of the game result mixed into the engine's W/D/L.

    A position with only one of the two uses that one; one with neither has weight 0.
    ``result`` is +1/0/-1 for the side to move, anything else (-128) unknown; a NaN W/D/L row is unknown.
    """
    has_wdl = ~torch.isnan(wdl).any(1)
    has_result = (result >= -1) & (result <= 1)
    one_hot = F.one_hot((1 - result.long()).clamp(0, 2), 3).float()  # +1 -> W, 0 -> D, -1 -> L
    share = torch.where(has_wdl, torch.where(has_result, result_weight, 0.0), 1.0).unsqueeze(1)
    target = (1 - share) * torch.nan_to_num(wdl.float()) + share * one_hot
    return target, (has_wdl | has_result).float()


def wdl_loss(logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of W/D/L logits against ``target``, averaged over the positions with a target."""
    per_position = -(target * F.log_softmax(logits.float(), dim=1)).sum(1)
    return (per_position * weight).sum() / weight.sum().clamp(min=1.0)
