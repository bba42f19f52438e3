"""Training the DeepChess networks: Pos2Vec pretraining, the Siamese comparator, distillation, and the pipeline.

1. Pos2Vec: layer-wise autoencoder pretraining 773-600-400-200-100 (ReLU),
   learning rate decayed every epoch.
2. Siamese comparator: two weight-tied Pos2Vec towers, 400-200-100-2 on top of
   the concatenated features, trained on pairs drawn fresh each epoch, in random
   order: (won, lost) pairs and, given engine label files, a share of sibling
   pairs (two children of one parent, ranked by the engine's scores).
3. Distillation into a 773-100-100-100 tower with a 100-2 head over the pair
   (200-100-2): first the tower regresses the teacher's features, then the
   whole network matches the teacher's soft outputs. Beyond the paper, the
   teacher may be several trained comparators whose probabilities are averaged
   (an ensemble teaches better than any of its members, Hinton et al. 2015), and
   the student may start from an earlier one.
Also trains the same small network from scratch, for the paper's comparison.
4. Or, given a policy-value network (``--value-network``), the student learns that network's judgement of
   pairs directly: two training positions, the first better with a probability from their values
   (training.deepchess.values), beside the sibling pairs' engine labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from training.configs import DeepChessConfig
from training.deepchess.data import PreparedData, prepare_data
from training.deepchess.accuracy import evaluate, evaluate_all
from training.deepchess.model import (POS2VEC_LAYERS, STUDENT_HEAD, STUDENT_LAYERS, TEACHER_HEAD, Ensemble, Judge,
                                      SiameseComparator, load_comparator, save_comparator, to_bits)
from training.deepchess.pairs import PairSampler
from training.deepchess.valset import ValidationSet
from training.deepchess.values import network_won_lost, open_network, white_values
from training.errors import TrainingError
from training.device import start_device

CPU = torch.device("cpu")
NETWORKS = ("full", "distilled", "small_from_scratch")


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


def train_comparator(model: SiameseComparator, sampler: PairSampler, validation: ValidationSet, epochs: int,
                     pairs_per_epoch: int, lr: float, seed: int, teacher: Optional[Judge] = None,
                     decay: float = 0.99, batch: int = 256, name: str = "siamese",
                     log: Callable[[str], None] = print) -> list[dict]:
    """Cross-entropy against the sampler's targets on fresh pairs each epoch, or, with ``teacher``, against the
    teacher's soft outputs (distillation)."""
    rng = np.random.default_rng(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, decay)
    if teacher is not None:
        teacher.eval()
    history = []
    for epoch in range(epochs):
        model.train()
        first, second, target = (torch.from_numpy(a).to(device) for a in sampler.sample(pairs_per_epoch, rng))
        for start in range(0, pairs_per_epoch, batch):
            a, b = to_bits(first[start:start + batch]), to_bits(second[start:start + batch])
            logits = model(a, b)
            if teacher is None:
                p_first = target[start:start + batch, None]
                soft = torch.cat([p_first, 1.0 - p_first], 1)
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


def distill_tower(student: SiameseComparator, teacher: SiameseComparator, packed: np.ndarray, epochs: int,
                  lr: float, batch: int = 256, log: Callable[[str], None] = print) -> None:
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


def run_pipeline(config: DeepChessConfig, log: Callable[[str], None] = print) -> dict:
    """All stages; writes the networks it trains (teacher.pt, student.pt, scratch.pt), validation.npz and
    report.json into ``config.out``."""
    torch.manual_seed(config.seed)
    device = start_device(config.device)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    if config.value_network:
        if config.teachers or not config.student:
            raise TrainingError("--value-network teaches a --student (e.g. weights/comparator.pt) directly: give a "
                                "student, and no --teacher")
        open_network(config.value_network)  # a file that is no policy-value network stops the run before the data
    data = prepare_data(config, name=f"{out.name} validation", training=config.sibling_share > 0, log=log)
    train_set, validation = data.train, data.validation
    if train_set.white_won.all() or not train_set.white_won.any() or not len(validation.label):
        raise ValueError("need won and lost games for training and for validation")
    validation.save(out / "validation.npz")
    values = (white_values(Path(config.value_network), train_set.bits, config.workers, log)
              if config.value_network else None)
    sampler = PairSampler(train_set, data.siblings, config.sibling_margin, config.sibling_share, values,
                          config.value_temperature)
    data.report["siblings"].update(train_pairs=int(len(sampler.pairs)), share=sampler.share,
                                   margin=config.sibling_margin)
    log(f"training: {len(train_set.bits)} positions, {len(sampler.pairs)} sibling pairs (share {sampler.share})")
    train = learn_from_values if values is not None else learn_from_labels
    networks, history = train(config, data, sampler, device, log)
    evaluation = evaluate_all(networks, [validation, *data.eval_sets], own=validation)
    if config.value_network:  # the teacher beside its student
        for name, figures in network_won_lost(Path(config.value_network), [validation, *data.eval_sets],
                                              config.workers, log).items():
            evaluation["validation" if name == validation.name else name].update(figures)
    report = {"data": data.report,
              "accuracy": {name: evaluation["validation"][name]["won_lost"] for name in networks},
              "evaluation": evaluation, "history": history, "config": config.__dict__}
    for name, file in (("full", "teacher"), ("distilled", "student"), ("small_from_scratch", "scratch")):
        model = networks.get(name)
        if isinstance(model, SiameseComparator):  # not an ensemble of files already on disk (config.teachers)
            save_comparator(model, out / f"{file}.pt", report)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def load_student(path: Path, device: torch.device) -> SiameseComparator:
    """A trained network of the engine's comparator shape, to train further (the shape is checked)."""
    return load_comparator(path, sizes={"tower": STUDENT_LAYERS, "head": STUDENT_HEAD})[0].to(device)


def learn_from_values(config: DeepChessConfig, data: PreparedData, sampler: PairSampler, device: torch.device,
                      log: Callable[[str], None]) -> tuple[dict[str, Judge], dict[str, list]]:
    """The student learns the value network's judgement of pairs directly (the network is the teacher: no Pos2Vec,
    no Siamese network, no small network from scratch)."""
    log("the value network teaches the student: --epochs, --pretrain-epochs and --tower-positions are not used")
    student = load_student(Path(config.student), device)
    history = train_comparator(student, sampler, data.validation, config.distill_epochs, config.pairs_per_epoch,
                               config.lr, config.seed + 2, decay=config.lr_decay, batch=config.batch,
                               name="distilled", log=log)
    return {"distilled": student}, {"distilled": history}


def learn_from_labels(config: DeepChessConfig, data: PreparedData, sampler: PairSampler, device: torch.device,
                      log: Callable[[str], None]) -> tuple[dict[str, Judge], dict[str, list]]:
    """The paper's stages: Pos2Vec pretraining and the Siamese network (or trained ``--teacher`` comparators),
    distillation into the student, and the student's shape trained from scratch."""
    train_set, validation = data.train, data.validation
    # with sibling pairs, the towers also learn on children (positions one move apart)
    extra = min(len(data.siblings.children), len(train_set.bits)) if sampler.share else 0
    tower_inputs = np.concatenate([train_set.bits, data.siblings.children[
        np.random.default_rng(config.seed).choice(len(data.siblings.children), extra, replace=False)]])
    if 0 < config.tower_positions < len(tower_inputs):
        tower_inputs = tower_inputs[np.sort(np.random.default_rng(config.seed + 5).choice(
            len(tower_inputs), config.tower_positions, replace=False))]
    data.report["tower_positions"] = int(len(tower_inputs))

    teacher: Judge
    if config.teachers:
        teacher = Ensemble([load_comparator(Path(path))[0] for path in config.teachers]).to(device)
        history: dict[str, list] = {"full": []}  # trained by the runs that wrote them
    else:
        teacher = SiameseComparator(POS2VEC_LAYERS, TEACHER_HEAD).to(device)
        teacher.tower = pretrain_pos2vec(tower_inputs, config.pretrain_epochs, log=log, device=device)
        history = {"full": train_comparator(teacher, sampler, validation, config.epochs, config.pairs_per_epoch,
                                            config.lr, config.seed, decay=config.lr_decay, batch=config.batch,
                                            name="siamese",
                                            log=log)}
    if config.student:
        student = load_student(Path(config.student), device)
    else:
        student = SiameseComparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
        first_teacher = teacher.members[0] if isinstance(teacher, Ensemble) else teacher
        distill_tower(student, first_teacher, tower_inputs, max(1, config.distill_epochs // 4), config.lr, log=log)
    history["distilled"] = train_comparator(student, sampler, validation, config.distill_epochs,
                                            config.pairs_per_epoch, config.lr, config.seed + 2, teacher=teacher,
                                            decay=config.lr_decay, batch=config.batch, name="distilled", log=log)
    scratch = SiameseComparator(STUDENT_LAYERS, STUDENT_HEAD).to(device)
    history["small_from_scratch"] = train_comparator(scratch, sampler, validation, config.distill_epochs,
                                                     config.pairs_per_epoch, config.lr, config.seed + 3,
                                                     decay=config.lr_decay, batch=config.batch,
                                                     name="small-from-scratch", log=log)
    return dict(zip(NETWORKS, (teacher, student, scratch))), history
