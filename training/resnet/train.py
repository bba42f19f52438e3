"""Supervised policy-value training on label shards, old one-hot datasets and the shared MultiPV file.

Every source becomes shard arrays (training.data.sources): a sparse soft policy and a
W/D/L target per position. The policy loss is the cross-entropy against the soft
policy, the value loss the W/D/L cross-entropy against the engine's W/D/L mixed
with the game result (``result_weight``), both from training.resnet.losses.

Batches are unpacked from the bit-packed planes on the training device, so a
GPU is fed without a CPU data-loader bottleneck; on CPU the same code runs with
two threads. ``max_minutes`` stops at a batch boundary with a resumable
checkpoint, mid-epoch if need be, so a run can proceed in short steps.
``budget_minutes`` sets the length of the run by time instead of steps: the
learning-rate schedule runs over that much time spent training and validating
(summed over resumed steps), or over the epochs' steps if ``epochs`` (then a
cap) ends it first, and the run ends there, mid-epoch if need be, so a lease of
fixed length ends with an annealed network whatever the machine's speed.
``swa_every`` keeps a running mean of the weights (training.resnet.swa), validated
beside the network each epoch and written as the weights file ``swa.pt``.
``mirror`` shows half the positions without castling rights mirrored a-file <->
h-file (the rules are symmetric there), targets mirrored with them. Under
``torchrun`` several processes train as one with the same total batch
(training.resnet.distributed), rank 0 writing what the run writes.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from evaluators.encoding import get_encoding
from evaluators.moves import MIRROR_FILES
from training.configs import TrainConfig
from training.data import shards
from training.data.sources import format_of, read_source
from training.data.split import validation_mask
from training.device import pick_device, unpack_planes, uses_bf16
from training.readable import record_line
from training.resnet import distributed
from training.resnet.grow import grow
from training.resnet.losses import SparsePolicy, gather_policy, soft_policy_loss, value_target, wdl_loss
from training.resnet.metrics import batch_sums, finish
from training.resnet.model import PolicyValueNet, full_shape
from training.resnet.swa import WeightAverage
from training.resnet.weights import (WeightsError, inherited_shape, load_file, load_network, network_of, save_weights,
                                    weights_of)


def mirror_half(x: torch.Tensor, policy: SparsePolicy, castling: slice, table: torch.Tensor,
                coins: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, SparsePolicy]:
    """Mirror a-file <-> h-file a random half of the positions without castling rights, with their policy
    targets (``table``: evaluators.moves.MIRROR_FILES); the value targets stay, as the rules are symmetric.
    ``coins``: a uniform draw per position (default: drawn here)."""
    if coins is None:
        coins = torch.rand(x.shape[0], device=x.device)
    flip = (coins < 0.5) & (x[:, castling].flatten(1).amax(1) == 0)
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
    index = torch.where(flip[policy.row], table[policy.index], policy.index)
    return x, SparsePolicy(policy.row, index, policy.prob)


def load_data(config: TrainConfig) -> tuple[dict[str, np.ndarray], dict]:
    """Every source concatenated, minus --exclude positions, sampled down to --max-samples; ``validation`` marks
    the held-out positions (a corpus's or a pack's own split, whole games by --validation in other sources)."""
    parts, sources, encoding = [], [], None
    # sources that record their encoding come first and set it for the rest
    for name in sorted(config.data, key=lambda d: not format_of(Path(d)).records_encoding):
        arrays, description, encoding = read_source(Path(name), encoding, config.temperature)
        if "validation" not in arrays:  # a corpus names its own split
            arrays["validation"] = validation_mask(arrays["game"], arrays["key"], config.validation)
        parts.append(arrays)
        sources.append(description)
    arrays = parts[0] if len(parts) == 1 else shards.concatenate(parts)
    if config.exclude:
        excluded = shards.excluded_keys(Path(directory) for directory in config.exclude)
        drop = np.isin(arrays["key"], np.fromiter(excluded, dtype=np.uint64, count=len(excluded)))
        if (arrays["key"] == 0).any():
            print("--exclude: old one-hot datasets and corpus packs carry no position keys; their positions were "
                  "not checked (a pack's corpus left the test set out when it was joined)")
        if drop.any():
            print(f"--exclude: dropped {int(drop.sum())} training positions found in {', '.join(config.exclude)}")
            arrays = shards.select(arrays, ~drop)
    n = len(arrays["key"])
    if config.max_samples and n > config.max_samples:
        keep = np.random.default_rng(config.seed).choice(n, config.max_samples, replace=False)
        arrays = shards.select(arrays, np.sort(keep))
    return arrays, {"encoding": encoding, "sources": sources}


class Data:
    """Training or validation positions on the device, with their sparse policies."""

    def __init__(self, arrays: dict[str, np.ndarray], mask: np.ndarray, device: torch.device) -> None:
        part = shards.select(arrays, mask)

        def put(array: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(array)).to(device)

        self.planes, self.rule50 = put(part["planes"]), put(part["rule50"])
        self.offsets, self.index, self.prob = put(part["policy_offset"]), put(part["policy_index"]), \
            put(part["policy_prob"])
        self.best = put(shards.best_moves(part))
        self.wdl, self.result = put(part["wdl"]), put(part["result"])
        self.size = len(part["key"])
        self.mirror_table = put(MIRROR_FILES)

    def batch(self, rows: torch.Tensor, binary_planes: int, result_weight: float, mirror: Optional[slice] = None,
              coins: Optional[torch.Tensor] = None):
        """Inputs, policy, value target and weight of ``rows``; ``mirror``: the castling planes, to mirror
        half the positions without castling rights (:func:`mirror_half`, with ``coins``)."""
        x = unpack_planes(self.planes[rows], self.rule50[rows], binary_planes)
        value, weight = value_target(self.wdl[rows], self.result[rows], result_weight)
        policy = gather_policy(self.offsets, self.index, self.prob, rows)
        if mirror is not None:
            x, policy = mirror_half(x, policy, mirror, self.mirror_table, coins)
        return x, policy, value, weight


def run_finished(state: dict, config: TrainConfig) -> bool:
    """Whether a checkpoint's run is over for ``config``: every epoch done, or its time budget spent (a larger
    ``epochs`` or ``budget_minutes`` extends it)."""
    return state["epoch"] >= config.epochs or bool(
        config.budget_minutes and state.get("run_seconds", 0.0) >= config.budget_minutes * 60)


def train(config: TrainConfig, progress: bool = True) -> Path:
    """Train (or resume) and write checkpoint.pt, history.json and curves.png into ``config.out``.

    Returns the checkpoint's path; with ``max_minutes`` the checkpoint may be
    mid-run (:func:`run_finished` false): run again with ``resume``. Under torchrun
    each process trains on its share of every batch (training.resnet.distributed).
    """
    processes = distributed.start(config.device)
    checkpoint_path = _train(config, processes, progress)
    processes.finish()
    return checkpoint_path


def _train(config: TrainConfig, processes: distributed.Processes, progress: bool) -> Path:
    """train()'s run in this process (``processes``: which of torchrun's, or the only one)."""
    started = time.time()
    torch.manual_seed(config.seed)
    distributed.check_batch(config.batch_size, processes)
    device = processes.device
    progress = progress and processes.writer
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint_path = out / "checkpoint.pt"
    resumed = load_file(checkpoint_path, device) if config.resume and checkpoint_path.exists() else None
    if resumed is not None and "optimizer" not in resumed:
        raise WeightsError(f"{checkpoint_path}: a weights file, not a training checkpoint: use --init")
    if resumed is not None and run_finished(resumed, config):  # before reading any data
        if processes.writer:
            print(f"{checkpoint_path}: this run is already over")
        return checkpoint_path
    arrays, meta = load_data(config)
    encoding = get_encoding(meta["encoding"])
    is_val = arrays["validation"]
    if is_val.all():
        print(f"the validation split would leave no training positions: training on all {len(is_val)}, "
              "without validation")
        is_val[:] = False
    train_set, val_set = Data(arrays, ~is_val, device), Data(arrays, is_val, device)
    del arrays
    if train_set.size == 0:
        raise ValueError(f"no training positions in {', '.join(config.data)}")
    # the network continued (a resumed checkpoint, or --init without --grow) gives the shape no setting chooses
    parent = resumed if resumed is not None else \
        load_file(Path(config.init), device) if config.init and not config.grow else None
    model = processes.synchronise(PolicyValueNet(encoding.planes, config.blocks, config.filters,
                                                 squeeze=config.squeeze, **inherited_shape(parent)).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = max(1, train_set.size // config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    warmup = min(500, (steps_per_epoch if config.budget_minutes else total_steps) // 20)
    budget_seconds = config.budget_minutes * 60

    def lr_at(step: int, seconds: float) -> float:
        """The rate at ``step``: a linear warm-up, then the schedule over the run's steps or, with a time budget,
        over its time (``seconds`` of it spent)."""
        if step < warmup:
            return config.lr * (step + 1) / warmup
        if budget_seconds:  # whichever ends the run first: its time or its last epoch
            done = min(1.0, max(seconds / budget_seconds, step / max(1, total_steps)))
            drops = min(2, int(3 * done))
        else:
            done = (step - warmup) / max(1, total_steps - warmup)
            drops = 3 * step // max(1, total_steps)
        if config.schedule == "step":
            return config.lr * (0.1 ** drops)
        return config.lr * 0.5 * (1 + math.cos(math.pi * done))

    history: list[dict] = []
    start_epoch, start_batch, running = 0, 0, []
    resumed_seconds = 0.0  # the run's time before this step (see run_seconds)
    average = WeightAverage(config.swa_max_n) if config.swa_every > 0 else None
    if resumed is not None:
        model.load_state_dict(network_of(resumed, checkpoint_path, full_shape(model.shape), device).state_dict())
        optimizer.load_state_dict(resumed["optimizer"])
        start_epoch, start_batch = resumed["epoch"], resumed.get("batch", 0)
        history, running = resumed["history"], resumed.get("running", [])
        resumed_seconds = resumed.get("run_seconds", 0.0)
        if average is not None and "swa" in resumed:
            average = WeightAverage.from_dict(resumed["swa"])
    elif config.init and config.grow:  # a larger network, or more input planes (an encoding that extends it)
        start, start_state = load_network(Path(config.init), expect={"value_hidden": model.shape["value_hidden"]})
        try:
            model.load_state_dict(grow(start, config.blocks, config.filters, config.squeeze, encoding.name,
                                       start_state["meta"]["encoding"]).state_dict())
        except ValueError as error:
            raise WeightsError(f"{config.init}: {error}") from None
    elif parent is not None:
        model.load_state_dict(network_of(parent, Path(config.init), full_shape(model.shape), device).state_dict())
    try:
        model.freeze(config.frozen_blocks)
    except ValueError as error:
        raise WeightsError(f"--frozen-blocks: {error}") from None
    use_amp = uses_bf16(config.precision, device)
    channels_last = use_amp and device.type == "cpu"  # oneDNN's bf16 convolutions run faster on NHWC tensors
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    trained = processes.wrap(model)  # DistributedDataParallel under torchrun, else the model itself
    if processes.writer:
        print(f"training in {'bf16' if use_amp else 'fp32'} on {device}" +
              (f" and in {processes.world - 1} more processes" if processes.world > 1 else ""))
    deadline = started + config.max_minutes * 60 if config.max_minutes else None
    loop_started = time.time()

    def run_seconds() -> float:
        """Seconds the run has spent training and validating, over every resumed step (what a budget counts)."""
        return resumed_seconds + time.time() - loop_started

    def clock() -> tuple[float, float]:
        """(the run's seconds, seconds since this step started): rank 0's, the same in every process."""
        return processes.agree(run_seconds(), time.time() - started)  # type: ignore[return-value]

    def save(epoch: int, batch: int, seconds: Optional[float] = None) -> None:
        """The checkpoint, with the run's seconds so far (``seconds``: as of an earlier moment, e.g. a decision),
        written whole by rank 0 (under a temporary name, then renamed)."""
        if not processes.writer:
            return
        temporary = checkpoint_path.with_name("checkpoint.pt.tmp")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                    "batch": batch, "run_seconds": run_seconds() if seconds is None else seconds,
                    "running": running, "history": history, "config": asdict(config),
                    "shape": model.shape, "meta": meta,
                    **({"swa": average.to_dict()} if average is not None else {})}, temporary)
        temporary.replace(checkpoint_path)

    for epoch in range(start_epoch, config.epochs):
        model.train()
        order = torch.randperm(train_set.size, generator=torch.Generator().manual_seed(config.seed * 1000 + epoch))
        order = order.to(device)
        epoch_started = time.time()
        batches = range(start_batch, steps_per_epoch)
        if progress:
            from tqdm import tqdm
            batches = tqdm(batches, desc=f"epoch {epoch + 1}/{config.epochs}", unit="batch",
                           initial=start_batch, total=steps_per_epoch)
        budget_spent = False
        end = steps_per_epoch
        for b in batches:
            seconds, elapsed = clock() if budget_seconds or deadline is not None else (0.0, 0.0)
            if budget_seconds and seconds >= budget_seconds and b > start_batch:
                budget_spent, end = True, b
                break
            if deadline is not None and started + elapsed > deadline and b > start_batch:
                save(epoch, b)
                if processes.writer:
                    print(f"stopped after {config.max_minutes:g} minutes at epoch {epoch + 1}, batch {b}/"
                          f"{steps_per_epoch}: run again with --resume to continue")
                return checkpoint_path
            rows = order[b * config.batch_size:(b + 1) * config.batch_size]
            coins = None
            if config.mirror and processes.world > 1:  # the whole batch's draw, as one process draws it
                coins = processes.share(torch.rand(len(rows), device=device))
            x, policy_target, value, weight = train_set.batch(processes.share(rows), encoding.binary_planes,
                                                              config.result_weight,
                                                              encoding.castling_planes if config.mirror else None,
                                                              coins)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(epoch * steps_per_epoch + b, seconds)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                policy, wdl = trained(x)
            policy_loss = soft_policy_loss(policy, policy_target, config.label_smoothing)
            value_loss = wdl_loss(wdl, value, weight)
            if processes.world > 1:
                value_loss = value_loss * processes.whole_batch_weight(weight)
            loss = policy_loss + config.value_loss_weight * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            if average is not None and (epoch * steps_per_epoch + b + 1) % config.swa_every == 0:
                average.add(model)
            if b % 50 == 0:  # .item() synchronises a GPU: sample the losses
                running.append(processes.mean(policy_loss, value_loss))
        if progress:
            batches.close()  # type: ignore[attr-defined]
        start_batch = 0
        if processes.writer:  # the others go on to the next epoch and wait there for rank 0
            if budget_spent:
                print(f"time budget of {config.budget_minutes:g} minutes spent at epoch {epoch + 1}, batch {end}/"
                      f"{steps_per_epoch}: the run ends here")
            metrics = {f"val_{name}": value for name, value in evaluate(
                model, val_set, encoding.binary_planes, config.batch_size, config.result_weight).items()}
            metrics.update(epoch=epoch + 1, train_policy_loss=float(np.mean([r[0] for r in running])),
                           train_value_loss=float(np.mean([r[1] for r in running])),
                           seconds=time.time() - epoch_started, train_samples=end * config.batch_size
                           if budget_spent else train_set.size, val_samples=val_set.size)
            if average is not None and average.count:
                averaged = PolicyValueNet(**model.shape).to(device)
                averaged.load_state_dict(average.model_state(model))
                metrics.update({f"swa_val_{name}": value for name, value in evaluate(
                    averaged, val_set, encoding.binary_planes, config.batch_size, config.result_weight).items()})
                save_weights(weights_of({"model": averaged.state_dict(), "shape": model.shape, "meta": meta,
                                         "config": asdict(config), "history": history + [metrics]}), out / "swa.pt")
            history.append(metrics)
            print(record_line({"epoch": metrics["epoch"], **metrics}))
        running = []
        seconds, _ = clock()  # the run ends here if its budget is spent, and the checkpoint says so
        save(epoch + 1, 0, seconds)
        if processes.writer:
            write_whole(out / "history.json", json.dumps(history, indent=2).encode())
            plot_history(history, out / "curves.png")
        if budget_seconds and seconds >= budget_seconds:
            break
    return checkpoint_path


def validation_figures(networks: list[Path], config: TrainConfig) -> list[dict]:
    """Each network's figures on the validation split that a run on ``config``'s data would hold out
    (the same games, the same targets): networks compared without the test set, e.g. to pick an average."""
    device = pick_device(config.device)
    arrays, meta = load_data(config)
    encoding = get_encoding(meta["encoding"])
    val_set = Data(arrays, arrays["validation"], device)
    if val_set.size == 0:
        raise ValueError(f"no validation positions in {', '.join(config.data)} at --validation {config.validation}")
    figures = []
    for path in networks:
        model = load_network(path, expect={"planes": encoding.planes}, device=device)[0]
        figures.append({"network": str(path), "positions": val_set.size,
                        **evaluate(model, val_set, encoding.binary_planes, 1024, config.result_weight)})
    return figures


@torch.no_grad()
def evaluate(model: PolicyValueNet, data: Data, binary_planes: int, batch_size: int, result_weight: float) -> dict:
    """Validation figures (training.resnet.metrics.METRICS); the net's policy over all 4672 slots."""
    model.eval()
    if data.size == 0:
        return {}
    sums: dict[str, float] = {}
    for start in range(0, data.size, batch_size):
        rows = torch.arange(start, min(data.size, start + batch_size), device=data.planes.device)
        x, policy_target, value, weight = data.batch(rows, binary_planes, result_weight)
        policy, wdl = model(x)
        for name, total in batch_sums(policy, wdl, policy_target, data.best[rows], value, weight).items():
            sums[name] = sums.get(name, 0.0) + total
    model.train()
    return finish(sums, data.size)


def write_whole(path: Path, content: bytes) -> None:
    """``content`` into ``path`` under a temporary name, then renamed: a run stopped meanwhile leaves the old file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)


def plot_history(history: list[dict], path: Path) -> None:
    """Loss and accuracy curves per epoch as a PNG (written whole, as :func:`write_whole`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = [h["epoch"] for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for key in ("train_policy_loss", "val_policy_loss", "train_value_loss", "val_value_loss"):
        left.plot(epochs, [h.get(key, float("nan")) for h in history], marker="o", label=key)
    left.set_xlabel("epoch")
    left.legend()
    for key in ("val_top1", "val_top3"):
        right.plot(epochs, [h.get(key, float("nan")) for h in history], marker="o", label=key)
    right.set_xlabel("epoch")
    right.set_ylabel("accuracy")
    right.legend()
    fig.tight_layout()
    temporary = path.with_name(path.name + ".tmp")
    fig.savefig(temporary, format="png")
    plt.close(fig)
    os.replace(temporary, path)
