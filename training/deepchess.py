"""The DeepChess pipeline (David, Netanyahu and Wolf, ICANN 2016).

1. Positions from decisive games: up to 10 random positions per game, never
   from the first 5 moves, never one whose played move is a capture; labelled
   by whether White won.
2. Pos2Vec: layer-wise autoencoder pretraining 773-600-400-200-100 (ReLU),
   learning rate decayed every epoch.
3. Siamese comparator: two weight-tied Pos2Vec towers, 400-200-100-2 on top of
   the concatenated features, trained on (won, lost) pairs drawn fresh each
   epoch, in random order.
4. Distillation into a 773-100-100-100 tower with a 100-2 head over the pair
   (200-100-2): first the tower regresses the teacher's features, then the
   whole network matches the teacher's soft outputs.
Also trains the same small network from scratch, for the paper's comparison.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from evaluators.bits773 import INPUT_SIZE, encode
from training.pgn import RESULT_WHITE, ReadStats, iter_games
from training.train import pick_device

POS2VEC_LAYERS = [INPUT_SIZE, 600, 400, 200, 100]
TEACHER_HEAD = [200, 400, 200, 100, 2]
STUDENT_LAYERS = [INPUT_SIZE, 100, 100, 100]
STUDENT_HEAD = [200, 100, 2]
CPU = torch.device("cpu")


def mlp(sizes: list[int], final_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or final_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Comparator(nn.Module):
    """Siamese network: shared tower on both positions, head on the concatenation.

    Output logits (N, 2): index 0 means "the first position is the better one for White".
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


@dataclass
class PositionSet:
    bits: np.ndarray  # (N, 773) uint8
    white_won: np.ndarray  # (N,) bool
    game: np.ndarray  # (N,) game number


def collect_positions(paths: list[Path], per_game: int = 10, skip_moves: int = 5, seed: int = 1,
                      stats: Optional[ReadStats] = None) -> PositionSet:
    """Sample DeepChess training positions from the decisive games of PGN files."""
    rng = random.Random(seed)
    stats = stats or ReadStats()
    bits, labels, games = [], [], []
    for file_number, path in enumerate(paths):
        for index, game in iter_games(path, stats):
            stats.games += 1
            result = RESULT_WHITE.get(game.headers.get("Result", "*"))
            if result in (None, 0):
                stats.skipped["drawn or unfinished games"] += 1
                continue
            board = game.board()
            candidates = []
            for ply, move in enumerate(game.mainline_moves()):
                if ply >= 2 * skip_moves and not board.is_capture(move):
                    candidates.append(encode(board).astype(np.uint8))
                board.push(move)
            for sample in rng.sample(candidates, min(per_game, len(candidates))):
                bits.append(sample)
                labels.append(result == 1)
                games.append(file_number * 10_000_000 + index)
                stats.positions += 1
    return PositionSet(np.array(bits, dtype=np.uint8).reshape(-1, INPUT_SIZE), np.array(labels, dtype=bool),
                       np.array(games, dtype=np.int64))


def split(positions: PositionSet, validation: float) -> tuple[PositionSet, PositionSet]:
    """Hold out whole games."""
    period = max(2, int(round(1 / validation)))
    is_val = (positions.game * 2654435761 % 2**32) % period == 0
    pick = lambda m: PositionSet(positions.bits[m], positions.white_won[m], positions.game[m])  # noqa: E731
    return pick(~is_val), pick(is_val)


def sample_pairs(positions: PositionSet, count: int, rng: np.random.Generator
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(first, second, label) with one won and one lost position in random order; label 0: first is better."""
    won = np.flatnonzero(positions.white_won)
    lost = np.flatnonzero(~positions.white_won)
    w = positions.bits[rng.choice(won, count)]
    l = positions.bits[rng.choice(lost, count)]
    swap = rng.random(count) < 0.5
    first = np.where(swap[:, None], l, w)
    second = np.where(swap[:, None], w, l)
    return (torch.from_numpy(first).float(), torch.from_numpy(second).float(),
            torch.from_numpy(swap.astype(np.int64)))


def pretrain_pos2vec(bits: np.ndarray, epochs: int, lr: float = 5e-3, decay: float = 0.98, batch: int = 256,
                     log: Callable[[str], None] = print, device: torch.device = CPU) -> nn.Sequential:
    """Layer-wise autoencoder pretraining; returns the stacked encoder (the Pos2Vec tower)."""
    x = torch.from_numpy(bits).float().to(device)
    encoders: list[nn.Module] = []
    for depth in range(len(POS2VEC_LAYERS) - 1):
        encoder = nn.Sequential(nn.Linear(POS2VEC_LAYERS[depth], POS2VEC_LAYERS[depth + 1]), nn.ReLU()).to(device)
        decoder = nn.Linear(POS2VEC_LAYERS[depth + 1], POS2VEC_LAYERS[depth]).to(device)
        optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, decay)
        with torch.no_grad():
            inputs = x
            for previous in encoders:
                inputs = previous(inputs)
        for epoch in range(epochs):
            order = torch.randperm(len(inputs), device=device)
            total = torch.zeros((), device=device)
            for start in range(0, len(inputs), batch):
                chunk = inputs[order[start:start + batch]]
                output = decoder(encoder(chunk))
                loss = (F.binary_cross_entropy_with_logits(output, chunk) if depth == 0
                        else F.mse_loss(output, chunk))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.detach() * len(chunk)
            scheduler.step()
            log(f"pos2vec layer {depth + 1} epoch {epoch + 1}: reconstruction loss {total.item() / len(inputs):.4f}")
        encoders.append(encoder)
    return nn.Sequential(*[layer for encoder in encoders for layer in encoder])


@torch.no_grad()
def pair_accuracy(model: Comparator, pairs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> float:
    model.eval()
    device = next(model.parameters()).device
    first, second, label = (t.to(device) for t in pairs)
    return (model(first, second).argmax(1) == label).float().mean().item()


def train_comparator(model: Comparator, train_set: PositionSet, val_pairs, epochs: int, pairs_per_epoch: int,
                     lr: float, seed: int, teacher: Optional[Comparator] = None, decay: float = 0.99,
                     batch: int = 256, name: str = "siamese", log: Callable[[str], None] = print) -> list[float]:
    """Cross-entropy on won/lost pairs, or, with ``teacher``, matching its soft outputs (distillation)."""
    rng = np.random.default_rng(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, decay)
    history = []
    for epoch in range(epochs):
        model.train()
        first, second, label = (t.to(device) for t in sample_pairs(train_set, pairs_per_epoch, rng))  # fresh each epoch
        if teacher is not None:
            teacher.eval()
            with torch.no_grad():
                soft = torch.cat([F.softmax(teacher(first[i:i + 4096], second[i:i + 4096]), 1)
                                  for i in range(0, len(first), 4096)])
        for start in range(0, pairs_per_epoch, batch):
            sl = slice(start, start + batch)
            logits = model(first[sl], second[sl])
            if teacher is None:
                loss = F.cross_entropy(logits, label[sl])
            else:
                loss = -(soft[sl] * F.log_softmax(logits, 1)).sum(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        accuracy = pair_accuracy(model, val_pairs)
        history.append(accuracy)
        log(f"{name} epoch {epoch + 1}: validation pair accuracy {accuracy:.4f}")
    return history


def distill_tower(student: Comparator, teacher: Comparator, bits: np.ndarray, epochs: int, lr: float,
                  batch: int = 256, log: Callable[[str], None] = print) -> None:
    """Stage one of distillation: the small tower regresses the teacher's 100 features."""
    device = next(student.parameters()).device
    x = torch.from_numpy(bits).float().to(device)
    with torch.no_grad():
        target = teacher.features(x)
    optimizer = torch.optim.Adam(student.tower.parameters(), lr=lr)
    for epoch in range(epochs):
        order = torch.randperm(len(x), device=device)
        total = torch.zeros((), device=device)
        for start in range(0, len(x), batch):
            index = order[start:start + batch]
            loss = F.mse_loss(student.features(x[index]), target[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(index)
        log(f"distill tower epoch {epoch + 1}: feature MSE {total.item() / len(x):.4f}")


@dataclass
class DeepChessConfig:
    pgn: list[str]
    out: str
    per_game: int = 10
    pretrain_epochs: int = 5
    epochs: int = 20
    pairs_per_epoch: int = 200_000
    distill_epochs: int = 20
    lr: float = 1e-3
    validation: float = 0.1
    val_pairs: int = 20_000
    seed: int = 1
    device: str = "auto"  # auto, cpu, cuda


def run_pipeline(config: DeepChessConfig, log: Callable[[str], None] = print) -> dict:
    """All stages; writes teacher.pt, student.pt, scratch.pt and report.json into ``config.out``."""
    torch.manual_seed(config.seed)
    device = pick_device(config.device)
    if device.type == "cpu":
        torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    stats = ReadStats()
    positions = collect_positions([Path(p) for p in config.pgn], config.per_game, seed=config.seed, stats=stats)
    log(f"positions: {stats.summary()}")
    train_set, val_set = split(positions, config.validation)
    if train_set.white_won.all() or not train_set.white_won.any() or not len(val_set.bits):
        raise ValueError("need won and lost games for training and for validation")
    val_pairs = sample_pairs(val_set, config.val_pairs, np.random.default_rng(config.seed + 1))

    teacher = Comparator(POS2VEC_LAYERS, TEACHER_HEAD).to(device)
    teacher.tower = pretrain_pos2vec(train_set.bits, config.pretrain_epochs, log=log, device=device)
    teacher_history = train_comparator(teacher, train_set, val_pairs, config.epochs, config.pairs_per_epoch,
                                       config.lr, config.seed, name="siamese", log=log)
    student = Comparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
    distill_tower(student, teacher, train_set.bits, max(1, config.distill_epochs // 4), config.lr, log=log)
    student_history = train_comparator(student, train_set, val_pairs, config.distill_epochs, config.pairs_per_epoch,
                                       config.lr, config.seed + 2, teacher=teacher, name="distilled", log=log)
    scratch = Comparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
    scratch_history = train_comparator(scratch, train_set, val_pairs, config.distill_epochs, config.pairs_per_epoch,
                                       config.lr, config.seed + 3, name="small-from-scratch", log=log)
    report = {"data": {"files": config.pgn, "read": stats.summary(), "train_positions": int(len(train_set.bits)),
                       "validation_positions": int(len(val_set.bits)), "validation_pairs": config.val_pairs},
              "accuracy": {"full": teacher_history[-1], "distilled": student_history[-1],
                           "small_from_scratch": scratch_history[-1]},
              "config": config.__dict__}
    for name, model in (("teacher", teacher), ("student", student), ("scratch", scratch)):
        torch.save({"model": {k: v.cpu() for k, v in model.state_dict().items()}, "sizes": model.sizes, "report": report}, out / f"{name}.pt")
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def load_comparator(path: Path) -> tuple[Comparator, dict]:
    state = torch.load(path, map_location="cpu")
    model = Comparator(state["sizes"]["tower"], state["sizes"]["head"])
    model.load_state_dict(state["model"])
    model.eval()
    return model, state
