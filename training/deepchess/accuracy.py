"""Measuring comparators on a validation set with the engine's symmetrised comparison.

Figures: won-vs-lost pair accuracy, sibling-pair accuracy (two children of one
parent, ranked by an engine's scores), and how often the comparator's preferred
child is the engine's best move.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch
from torch.nn import functional as F

from training.deepchess.model import Judge, to_bits
from training.deepchess.pairs import SiblingSet, sibling_pairs
from training.deepchess.valset import ValidationSet


@torch.no_grad()
def tower_features(model: Judge, packed: np.ndarray, batch: int = 8192) -> torch.Tensor:
    device = next(model.parameters()).device
    if not len(packed):
        return torch.zeros(0, model.sizes["tower"][-1], device=device)
    return torch.cat([model.features(to_bits(torch.from_numpy(packed[i:i + batch]).to(device)))
                      for i in range(0, len(packed), batch)])


@torch.no_grad()
def white_prefers(model: Judge, first: torch.Tensor, second: torch.Tensor, batch: int = 65536) -> torch.Tensor:
    """P(first better for White) from tower features, symmetrised as the engine does: (f(a,b) + 1 - f(b,a)) / 2."""
    out = []
    for i in range(0, len(first), batch):
        a, b = first[i:i + batch], second[i:i + batch]
        ab = F.softmax(model.head(torch.cat([a, b], 1)), 1)[:, 0]
        ba = F.softmax(model.head(torch.cat([b, a], 1)), 1)[:, 0]
        out.append(0.5 * (ab + 1.0 - ba))
    return torch.cat(out) if out else torch.zeros(0, device=first.device)


def ordering_accuracy(first: np.ndarray, second: np.ndarray, label: np.ndarray) -> Optional[float]:
    """Share of pairs ranked as labelled (label 0: the first is better), the first ranked better where its value
    is higher; a tie counts half, as a coin toss would."""
    if not len(label):
        return None
    right = np.where(first == second, 0.5, (first > second) == (label == 0))
    return float(right.mean())


def ranked_won_lost(validation: ValidationSet, score: Callable[[np.ndarray], np.ndarray]) -> Optional[float]:
    """Won-vs-lost pair accuracy of a reference that scores positions (``score``: packed rows -> a score for White
    each, higher better), each distinct position of the pairs scored once, a tie counting half."""
    count = len(validation.label)
    rows, inverse = np.unique(np.concatenate([validation.first, validation.second]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    scores = score(rows)
    return ordering_accuracy(scores[inverse[:count]], scores[inverse[count:]], validation.label)


def _accuracy(p_first: torch.Tensor, label: np.ndarray) -> Optional[float]:
    return ordering_accuracy(p_first.cpu().numpy(), np.float32(0.5), label)


@torch.no_grad()
def preferred_child_share(model: Judge, features: torch.Tensor, siblings: SiblingSet) -> Optional[float]:
    """Share of parents whose round-robin winner among the scored children is the engine's best move.

    Each child scores the sum of its probabilities of beating the others for the
    parent's side to move.
    """
    if not len(siblings):
        return None
    counts = np.diff(siblings.offset)
    tournament = torch.zeros(len(features), device=features.device)
    hits = 0
    for k in np.unique(counts):
        parents = np.flatnonzero(counts == k)
        starts = siblings.offset[parents][:, None]
        i, j = np.triu_indices(int(k), k=1)
        a, b = (starts + i).ravel(), (starts + j).ravel()
        p = white_prefers(model, features[a], features[b])
        white = torch.from_numpy(np.repeat(siblings.white[parents], len(i))).to(p.device)
        mine = torch.where(white, p, 1.0 - p)
        tournament.index_add_(0, torch.from_numpy(a).to(p.device), mine)
        tournament.index_add_(0, torch.from_numpy(b).to(p.device), 1.0 - mine)
        rows = torch.from_numpy(starts + np.arange(int(k))).to(p.device)
        hits += int((tournament[rows].argmax(1) == 0).sum())  # child 0: the engine's best
    return hits / len(siblings)


@torch.no_grad()
def evaluate(model: Judge, validation: ValidationSet) -> dict[str, Optional[float]]:
    """Won-vs-lost pair accuracy, sibling-pair accuracy and preferred-child share on a validation set."""
    model.eval()
    p = white_prefers(model, tower_features(model, validation.first), tower_features(model, validation.second))
    siblings = validation.siblings
    features = tower_features(model, siblings.children)
    pairs, labels = sibling_pairs(siblings, validation.margin)
    first, second = (torch.from_numpy(pairs[:, i]).to(features.device) for i in (0, 1))
    q = white_prefers(model, features[first], features[second])
    return {"won_lost": _accuracy(p, validation.label), "sibling_pairs": _accuracy(q, labels),
            "preferred_child": preferred_child_share(model, features, siblings)}


def evaluate_all(networks: dict[str, Judge], sets: list[ValidationSet],
                 own: Optional[ValidationSet] = None) -> dict[str, dict]:
    """{set name ("validation" for ``own``): {network: figures, baseline: figures}}."""
    return {("validation" if s is own else s.name): {**{name: evaluate(model, s) for name, model in networks.items()},
                                                     **s.info["baselines"]}
            for s in sets}
