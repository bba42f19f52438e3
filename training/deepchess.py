"""The DeepChess pipeline (David, Netanyahu and Wolf, ICANN 2016), with sibling pairs.

1. Positions from decisive games: up to 10 random positions per game, never
   from the first 5 moves, never one whose played move is a capture; labelled
   by whether White won. A tenth of the games is held out, and so is every
   position that occurs in a held-out game.
2. Pos2Vec: layer-wise autoencoder pretraining 773-600-400-200-100 (ReLU),
   learning rate decayed every epoch.
3. Siamese comparator: two weight-tied Pos2Vec towers, 400-200-100-2 on top of
   the concatenated features, trained on pairs drawn fresh each epoch, in random
   order: (won, lost) pairs and, given engine label files, a share of sibling
   pairs (two children of one parent, ranked by the engine's scores).
4. Distillation into a 773-100-100-100 tower with a 100-2 head over the pair
   (200-100-2): first the tower regresses the teacher's features, then the
   whole network matches the teacher's soft outputs. Beyond the paper, the
   teacher may be several trained comparators whose probabilities are averaged
   (an ensemble teaches better than any of its members, Hinton et al. 2015), and
   the student may start from an earlier one.
Also trains the same small network from scratch, for the paper's comparison.
Every network is measured on the run's validation set (``validation.npz``) and
on any named validation set (training.valset) with the engine's symmetrised
comparison: won-vs-lost pair accuracy, sibling-pair accuracy, and how often its
preferred child is the engine's best move.
"""

from __future__ import annotations

import json
import random
from array import array
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from evaluators.bits773 import INPUT_SIZE
from training.generate import decisive_result
from training.pairs import (PairSampler, PositionSet, SiblingSet, pack, position_key, read_labels, sibling_pairs,
                            split_siblings)
from training.pgn import ReadStats, iter_games
from training.train import pick_device
from training.valset import ValidationSet, build_validation_set
from training.weights import WeightsError, read_torch_file

POS2VEC_LAYERS = [INPUT_SIZE, 600, 400, 200, 100]
TEACHER_HEAD = [200, 400, 200, 100, 2]
STUDENT_LAYERS = [INPUT_SIZE, 100, 100, 100]
STUDENT_HEAD = [200, 100, 2]
CPU = torch.device("cpu")
NETWORKS = ("full", "distilled", "small_from_scratch")


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


class Ensemble(nn.Module):
    """Trained comparators judging together: their probabilities averaged (forward gives the log of the mean).

    Its features are the members' features side by side and its head splits them
    again, so the evaluation's tower-then-head path measures it as one network.
    """

    def __init__(self, members: list[Comparator]) -> None:
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


Judge = Union[Comparator, Ensemble]


def to_bits(packed: torch.Tensor) -> torch.Tensor:
    """(N, 97) bit-packed rows (bitorder little) on any device -> (N, 773) float bits."""
    shifts = torch.arange(8, device=packed.device, dtype=torch.uint8)
    return ((packed.unsqueeze(-1) >> shifts) & 1).reshape(len(packed), -1)[:, :INPUT_SIZE].float()


# ------------------------------------------------------------------ data


def held_out(ids, validation: float):
    """The split rule for game ids (and, for positions found in no game read, Zobrist keys)."""
    period = max(2, int(round(1 / validation)))
    return (ids * 2654435761 % 2**32) % period == 0


@dataclass
class GameData:
    positions: PositionSet  # sampled from decisive games, training and held-out games alike
    heldout_keys: np.ndarray  # sorted keys of every position of every held-out game
    known_keys: np.ndarray  # sorted keys of every position of every game read
    decisive: int


def read_games(paths: list[Path], per_game: int = 10, skip_moves: int = 5, seed: int = 1, validation: float = 0.1,
               stats: Optional[ReadStats] = None) -> GameData:
    """Sample DeepChess positions from the decisive games of PGN files and note every position's key."""
    rng = random.Random(seed)
    stats = stats or ReadStats()
    bits, labels, games, keys = [], [], [], []
    heldout, known = array("Q"), array("Q")
    decisive = 0
    for file_number, path in enumerate(paths):
        for index, game in iter_games(path, stats):
            stats.games += 1
            game_id = file_number * 10_000_000 + index
            result = decisive_result(game)
            board = game.board()
            game_keys, candidates = [], []
            for ply, move in enumerate(game.mainline_moves()):
                key = position_key(board)
                game_keys.append(key)
                if result is not None and ply >= 2 * skip_moves and not board.is_capture(move):
                    candidates.append((pack(board), key))
                board.push(move)
            game_keys.append(position_key(board))
            known.extend(game_keys)
            if held_out(game_id, validation):
                heldout.extend(game_keys)
            if result is None:
                stats.skipped["drawn or unfinished games"] += 1
                continue
            decisive += 1
            for sample, key in rng.sample(candidates, min(per_game, len(candidates))):
                bits.append(sample)
                labels.append(result == 1)
                games.append(game_id)
                keys.append(key)
                stats.positions += 1
    positions = PositionSet(np.array(bits, dtype=np.uint8).reshape(-1, (INPUT_SIZE + 7) // 8),
                            np.array(labels, dtype=bool), np.array(games, dtype=np.int64),
                            np.array(keys, dtype=np.uint64))
    return GameData(positions, np.unique(np.frombuffer(heldout, dtype=np.uint64)),
                    np.unique(np.frombuffer(known, dtype=np.uint64)), decisive)


def split(positions: PositionSet, validation: float) -> tuple[PositionSet, PositionSet]:
    """Hold out whole games."""
    is_val = held_out(positions.game, validation)
    return positions.subset(~is_val), positions.subset(is_val)


def _contains(sorted_keys: np.ndarray, key: int) -> bool:
    i = int(np.searchsorted(sorted_keys, np.uint64(key)))
    return i < len(sorted_keys) and int(sorted_keys[i]) == key


# ------------------------------------------------------------- training


def pretrain_pos2vec(packed: np.ndarray, epochs: int, lr: float = 5e-3, decay: float = 0.98, batch: int = 256,
                     log: Callable[[str], None] = print, device: torch.device = CPU) -> nn.Sequential:
    """Layer-wise autoencoder pretraining; returns the stacked encoder (the Pos2Vec tower)."""
    x = torch.from_numpy(packed).to(device)
    encoders: list[nn.Module] = []
    for depth in range(len(POS2VEC_LAYERS) - 1):
        encoder = nn.Sequential(nn.Linear(POS2VEC_LAYERS[depth], POS2VEC_LAYERS[depth + 1]), nn.ReLU()).to(device)
        decoder = nn.Linear(POS2VEC_LAYERS[depth + 1], POS2VEC_LAYERS[depth]).to(device)
        optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, decay)
        for epoch in range(epochs):
            order = torch.randperm(len(x), device=device)
            total = torch.zeros((), device=device)
            for start in range(0, len(x), batch):
                with torch.no_grad():
                    chunk = to_bits(x[order[start:start + batch]])
                    for previous in encoders:
                        chunk = previous(chunk)
                output = decoder(encoder(chunk))
                loss = (F.binary_cross_entropy_with_logits(output, chunk) if depth == 0
                        else F.mse_loss(output, chunk))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.detach() * len(chunk)
            scheduler.step()
            log(f"pos2vec layer {depth + 1} epoch {epoch + 1}: reconstruction loss {total.item() / len(x):.4f}")
        encoders.append(encoder)
    return nn.Sequential(*[layer for encoder in encoders for layer in encoder])


def train_comparator(model: Comparator, sampler: PairSampler, validation: ValidationSet, epochs: int,
                     pairs_per_epoch: int, lr: float, seed: int, teacher: Optional[Judge] = None,
                     decay: float = 0.99, batch: int = 256, name: str = "siamese",
                     log: Callable[[str], None] = print) -> list[dict]:
    """Cross-entropy on fresh pairs each epoch, or, with ``teacher``, matching its soft outputs (distillation)."""
    rng = np.random.default_rng(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, decay)
    if teacher is not None:
        teacher.eval()
    history = []
    for epoch in range(epochs):
        model.train()
        first, second, label = (torch.from_numpy(a).to(device) for a in sampler.sample(pairs_per_epoch, rng))
        for start in range(0, pairs_per_epoch, batch):
            a, b = to_bits(first[start:start + batch]), to_bits(second[start:start + batch])
            logits = model(a, b)
            if teacher is None:
                loss = F.cross_entropy(logits, label[start:start + batch])
            else:
                with torch.no_grad():
                    soft = F.softmax(teacher(a, b), 1)
                loss = -(soft * F.log_softmax(logits, 1)).sum(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        figures = evaluate(model, validation)
        history.append(figures)
        log(f"{name} epoch {epoch + 1}: validation " + ", ".join(
            f"{k} {v:.4f}" for k, v in figures.items() if v is not None))
    return history


def distill_tower(student: Comparator, teacher: Comparator, packed: np.ndarray, epochs: int, lr: float,
                  batch: int = 256, log: Callable[[str], None] = print) -> None:
    """Stage one of distillation: the small tower regresses the teacher's 100 features."""
    device = next(student.parameters()).device
    x = torch.from_numpy(packed).to(device)
    optimizer = torch.optim.Adam(student.tower.parameters(), lr=lr)
    for epoch in range(epochs):
        order = torch.randperm(len(x), device=device)
        total = torch.zeros((), device=device)
        for start in range(0, len(x), batch):
            chunk = to_bits(x[order[start:start + batch]])
            with torch.no_grad():
                target = teacher.features(chunk)
            loss = F.mse_loss(student.features(chunk), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(chunk)
        log(f"distill tower epoch {epoch + 1}: feature MSE {total.item() / len(x):.4f}")


# ----------------------------------------------------------- evaluation


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


def _accuracy(p_first: torch.Tensor, label: np.ndarray) -> Optional[float]:
    if not len(label):
        return None
    predicted = (p_first <= 0.5).long().cpu().numpy()  # label 0: the first is better
    return float((predicted == label).mean())


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


# ------------------------------------------------------------- pipeline


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


@dataclass
class PreparedData:
    train: PositionSet
    siblings: SiblingSet  # training parents
    validation: ValidationSet  # this run's held-out games and parents
    eval_sets: list[ValidationSet]
    report: dict


def prepare_data(config: DeepChessConfig, name: str = "validation", training: bool = True,
                 log: Callable[[str], None] = print) -> PreparedData:
    """Read games and labels, hold out games and the parents that occur in them, and build the validation set.

    Positions held out by a named validation set are left out of training too.
    Label positions found in no game read are held out by their key, with the
    same fraction. With ``training`` False, training children are not encoded.
    """
    stats = ReadStats()
    games = read_games([Path(p) for p in config.pgn], config.per_game, seed=config.seed,
                       validation=config.validation, stats=stats)
    log(f"games: {stats.summary()}")
    eval_sets = [ValidationSet.load(Path(p)) for p in config.eval_sets]
    excluded = np.unique(np.concatenate([games.heldout_keys, *(s.heldout_keys for s in eval_sets)]))
    train_set, val_set = split(games.positions, config.validation)
    keep = ~np.isin(train_set.key, excluded)
    train_set = train_set.subset(keep)

    def parent_held_out(key: int) -> bool:
        if _contains(excluded, key):
            return True
        return not _contains(games.known_keys, key) and bool(held_out(key, config.validation))

    parents = chain.from_iterable(read_labels(Path(p)) for p in config.labels)
    train_siblings, val_siblings, counts = split_siblings(parents, parent_held_out, training,
                                                          config.sibling_quiet, config.workers)
    log(f"sibling parents: {len(train_siblings)} training, {len(val_siblings)} held out ({counts})")
    validation = build_validation_set(
        name, val_set, val_siblings, games.heldout_keys, config.val_pairs, config.val_parents, config.sibling_margin,
        config.seed, {"files": config.pgn, "labels": config.labels, "validation": config.validation,
                      "per_game": config.per_game, "seed": config.seed, "sibling_quiet": config.sibling_quiet})
    report = {"files": config.pgn, "labels": config.labels, "read": stats.summary(), "games": stats.games,
              "decisive_games": games.decisive, "decisive_share": games.decisive / max(1, stats.games),
              "train_positions": int(len(train_set.bits)), "validation_positions": int(len(val_set.bits)),
              "train_positions_held_out_elsewhere": int((~keep).sum()),
              "won_lost_pairs_possible": int(train_set.white_won.sum()) * int((~train_set.white_won).sum()),
              "validation_pairs": int(len(validation.label)),
              "siblings": {**counts, "train_parents": len(train_siblings), "validation_parents": len(val_siblings),
                           "validation_parents_evaluated": len(validation.siblings)}}
    return PreparedData(train_set, train_siblings, validation, eval_sets, report)


def run_pipeline(config: DeepChessConfig, log: Callable[[str], None] = print) -> dict:
    """All stages; writes teacher.pt, student.pt, scratch.pt, validation.npz and report.json into ``config.out``."""
    torch.manual_seed(config.seed)
    device = pick_device(config.device)
    if device.type == "cpu":
        torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    data = prepare_data(config, name=f"{out.name} validation", training=config.sibling_share > 0, log=log)
    train_set, validation = data.train, data.validation
    if train_set.white_won.all() or not train_set.white_won.any() or not len(validation.label):
        raise ValueError("need won and lost games for training and for validation")
    validation.save(out / "validation.npz")
    sampler = PairSampler(train_set, data.siblings, config.sibling_margin, config.sibling_share)
    data.report["siblings"].update(train_pairs=int(len(sampler.pairs)), share=sampler.share,
                                   margin=config.sibling_margin)
    log(f"training: {len(train_set.bits)} positions, {len(sampler.pairs)} sibling pairs (share {sampler.share})")
    # with sibling pairs, the towers also learn on children (positions one move apart)
    extra = min(len(data.siblings.children), len(train_set.bits)) if sampler.share else 0
    tower_inputs = np.concatenate([train_set.bits, data.siblings.children[
        np.random.default_rng(config.seed).choice(len(data.siblings.children), extra, replace=False)]])

    teacher: Judge
    if config.teachers:
        teacher = Ensemble([load_comparator(Path(path))[0] for path in config.teachers]).to(device)
        history: dict[str, list] = {"full": []}  # trained by the runs that wrote them
    else:
        teacher = Comparator(POS2VEC_LAYERS, TEACHER_HEAD).to(device)
        teacher.tower = pretrain_pos2vec(tower_inputs, config.pretrain_epochs, log=log, device=device)
        history = {"full": train_comparator(teacher, sampler, validation, config.epochs, config.pairs_per_epoch,
                                            config.lr, config.seed, decay=config.lr_decay, name="siamese",
                                            log=log)}
    if config.student:
        student = load_comparator(Path(config.student), sizes={"tower": STUDENT_LAYERS, "head": STUDENT_HEAD})[0]
        student = student.to(device)
    else:
        student = Comparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
        first_teacher = teacher.members[0] if isinstance(teacher, Ensemble) else teacher
        distill_tower(student, first_teacher, tower_inputs, max(1, config.distill_epochs // 4), config.lr, log=log)
    history["distilled"] = train_comparator(student, sampler, validation, config.distill_epochs,
                                            config.pairs_per_epoch, config.lr, config.seed + 2, teacher=teacher,
                                            decay=config.lr_decay, name="distilled", log=log)
    scratch = Comparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
    history["small_from_scratch"] = train_comparator(scratch, sampler, validation, config.distill_epochs,
                                                     config.pairs_per_epoch, config.lr, config.seed + 3,
                                                     decay=config.lr_decay, name="small-from-scratch", log=log)
    networks = dict(zip(NETWORKS, (teacher, student, scratch)))
    evaluation = evaluate_all(networks, [validation, *data.eval_sets], own=validation)
    report = {"data": data.report,
              "accuracy": {name: evaluation["validation"][name]["won_lost"] for name in NETWORKS},
              "evaluation": evaluation, "history": history, "config": config.__dict__}
    for name, model in (("teacher", teacher), ("student", student), ("scratch", scratch)):
        if not isinstance(model, Comparator):
            continue  # an ensemble of files already on disk (config.teachers)
        torch.save({"model": {k: v.cpu() for k, v in model.state_dict().items()}, "sizes": model.sizes,
                    "report": report}, out / f"{name}.pt")
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def evaluate_all(networks: dict[str, Judge], sets: list[ValidationSet],
                 own: Optional[ValidationSet] = None) -> dict[str, dict]:
    """{set name ("validation" for ``own``): {network: figures, baseline: figures}}."""
    return {("validation" if s is own else s.name): {**{name: evaluate(model, s) for name, model in networks.items()},
                                                     **s.info["baselines"]}
            for s in sets}


def load_comparator(path: Path, sizes: Optional[dict] = None) -> tuple[Comparator, dict]:
    """A comparator checkpoint (teacher.pt, student.pt, scratch.pt); with ``sizes``, only a network of that shape."""
    state = read_torch_file(path)  # a .pt from a stranger runs no code
    if not isinstance(state, dict) or not {"model", "sizes"} <= state.keys():
        raise WeightsError(f"{path}: not a comparator checkpoint (teacher.pt, student.pt or scratch.pt of a run)")
    if sizes is not None and state["sizes"] != sizes:
        raise WeightsError(f"{path}: a comparator of sizes {state['sizes']}, not {sizes}")
    model = Comparator(state["sizes"]["tower"], state["sizes"]["head"])
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def load_network(path: Path) -> Comparator:
    """A training checkpoint (.pt) or an exported comparator (.onnx with its .npz)."""
    if path.suffix == ".pt":
        return load_comparator(path)[0]
    with np.load(path.with_suffix(".npz")) as data:
        tower_layers = int(data["tower_layers"])
        count = len([k for k in data.files if k.startswith("w")])
        weights = [(data[f"w{i}"], data[f"b{i}"]) for i in range(count)]
    tower = [weights[0][0].shape[0], *(w.shape[1] for w, _ in weights[:tower_layers])]
    head = [weights[tower_layers][0].shape[0], *(w.shape[1] for w, _ in weights[tower_layers:])]
    model = Comparator(tower, head)
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for layer, (w, b) in zip(linear, weights):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    return model.eval()
