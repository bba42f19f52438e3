"""The settings of a DeepChess run: which data, how it is held out, and the three training stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class DeepChessConfig:
    pgn: list[str]
    out: str
    labels: list[str] = field(default_factory=list)  # MultiPV files or label-shard directories
    eval_sets: list[str] = field(default_factory=list)  # named validation sets (training.valset)
    per_game: int = 10
    pretrain_epochs: int = 5
    epochs: int = 20
    pairs_per_epoch: int = 200_000
    distill_epochs: int = 20
    lr: float = 1e-3
    lr_decay: float = 0.99  # learning rate factor per comparator epoch
    teachers: list[str] = field(default_factory=list)  # trained comparators (.pt) to distil from, else train one
    student: Optional[str] = None  # a small network (.pt) to continue distilling, else its tower regresses first
    sibling_share: float = 0.5  # share of sibling pairs among the training pairs (when labels are given)
    sibling_margin: float = 0.05  # expected-score gap below which two siblings count as tied
    sibling_quiet: bool = False  # children encoded after their captures (training.pairs.SiblingBuilder)
    validation: float = 0.1
    val_pairs: int = 20_000
    val_parents: int = 10_000
    seed: int = 1
    workers: int = 1  # processes encoding sibling children (training.pairs.SiblingBuilder)
    device: str = "auto"  # auto, cpu, cuda
