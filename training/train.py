"""Supervised policy-value training on prepared datasets (see training.dataset).

Batches are unpacked from the bit-packed planes on the training device, so a
GPU is fed without a CPU data-loader bottleneck; on CPU the same code runs
with two threads.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch.nn import functional as F

from evaluators.encoding import get_encoding
from training import dataset
from training.model import PolicyValueNet


@dataclass
class TrainConfig:
    data: list[str]
    out: str
    blocks: int = 6
    filters: int = 64
    epochs: int = 4
    batch_size: int = 512
    lr: float = 2e-3
    weight_decay: float = 1e-4
    schedule: str = "cosine"  # cosine | step
    label_smoothing: float = 0.0
    value_target: str = "mix"  # result | eval | mix
    eval_weight: float = 0.7  # share of the eval in the mixed value target
    value_loss_weight: float = 1.0
    grad_clip: float = 5.0
    validation: float = 0.05
    max_samples: int = 0
    device: str = "auto"
    seed: int = 1
    resume: bool = False
    init: str = ""  # start from this checkpoint's weights (fine-tuning, reinforcement learning)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def unpack_planes(packed: torch.Tensor, rule50: torch.Tensor, binary_planes: int) -> torch.Tensor:
    """Bit-packed uint8 planes (B, C*8) -> float input (B, C+1, 8, 8) on the tensor's device."""
    shifts = torch.arange(8, device=packed.device, dtype=torch.uint8)
    bits = (packed.unsqueeze(-1) >> shifts) & 1  # bitorder little
    planes = bits.reshape(packed.shape[0], binary_planes, 8, 8).float()
    fifty = (rule50.float().clamp(max=100) / 100).view(-1, 1, 1, 1).expand(-1, 1, 8, 8)
    return torch.cat([planes, fifty], dim=1)


def load_data(config: TrainConfig) -> tuple[dict[str, np.ndarray], dict]:
    parts, metas = [], []
    for directory in config.data:
        arrays, meta = dataset.load(Path(directory))
        parts.append(arrays)
        metas.append(meta)
    encodings = {m["encoding"] for m in metas}
    if len(encodings) != 1:
        raise ValueError(f"datasets use different encodings: {sorted(encodings)}")
    arrays = {name: np.concatenate([np.asarray(p[name]) for p in parts]) for name in dataset.ARRAYS}
    if config.max_samples and len(arrays["move"]) > config.max_samples:
        keep = np.random.default_rng(config.seed).choice(len(arrays["move"]), config.max_samples, replace=False)
        arrays = {k: v[np.sort(keep)] for k, v in arrays.items()}
    return arrays, {"encoding": encodings.pop(), "sources": metas}


def train(config: TrainConfig, progress: bool = True) -> Path:
    """Train (or resume) and write checkpoint.pt, history.json and curves.png into ``config.out``."""
    torch.manual_seed(config.seed)
    device = pick_device(config.device)
    if device.type == "cpu":
        torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    arrays, meta = load_data(config)
    encoding = get_encoding(meta["encoding"])
    eval_weight = {"result": 0.0, "eval": 1.0, "mix": config.eval_weight}[config.value_target]
    targets = dataset.value_target(arrays["result"], arrays["eval"], eval_weight)
    is_val = dataset.validation_mask(arrays["game"], config.validation)

    def tensors(mask: np.ndarray) -> dict[str, torch.Tensor]:
        return {"planes": torch.from_numpy(np.ascontiguousarray(arrays["planes"][mask])).to(device),
                "rule50": torch.from_numpy(np.ascontiguousarray(arrays["rule50"][mask])).to(device),
                "move": torch.from_numpy(arrays["move"][mask].astype(np.int64)).to(device),
                "value": torch.from_numpy(targets[mask]).to(device),
                "result": torch.from_numpy(arrays["result"][mask].astype(np.int64)).to(device)}

    train_set, val_set = tensors(~is_val), tensors(is_val)
    n_train = len(train_set["move"])
    model = PolicyValueNet(encoding.planes, config.blocks, config.filters).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = max(1, n_train // config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    warmup = min(500, total_steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return config.lr * (step + 1) / warmup
        if config.schedule == "step":
            return config.lr * (0.1 ** (3 * step // max(1, total_steps)))
        return config.lr * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total_steps - warmup)))

    history: list[dict] = []
    start_epoch = 0
    checkpoint_path = out / "checkpoint.pt"
    if config.init:
        model.load_state_dict(torch.load(config.init, map_location=device)["model"])
    if config.resume and checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch, history = state["epoch"], state["history"]
    use_amp = device.type == "cuda"
    step = start_epoch * steps_per_epoch
    generator = torch.Generator(device="cpu").manual_seed(config.seed)
    for epoch in range(start_epoch, config.epochs):
        model.train()
        order = torch.randperm(n_train, generator=generator).to(device)
        started = time.time()
        batches = range(steps_per_epoch)
        if progress:
            from tqdm import tqdm
            batches = tqdm(batches, desc=f"epoch {epoch + 1}/{config.epochs}", unit="batch")
        running = []
        for b in batches:
            index = order[b * config.batch_size:(b + 1) * config.batch_size]
            x = unpack_planes(train_set["planes"][index], train_set["rule50"][index], encoding.binary_planes)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                policy, value = model(x)
            policy_loss = F.cross_entropy(policy.float(), train_set["move"][index],
                                          label_smoothing=config.label_smoothing)
            value_loss = -(train_set["value"][index] * F.log_softmax(value.float(), dim=1)).sum(1).mean()
            loss = policy_loss + config.value_loss_weight * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            step += 1
            if b % 50 == 0:  # .item() synchronises a GPU: sample the losses
                running.append((policy_loss.item(), value_loss.item()))
        metrics = evaluate(model, val_set, encoding.binary_planes, config.batch_size)
        metrics.update(epoch=epoch + 1, train_policy_loss=float(np.mean([r[0] for r in running])),
                       train_value_loss=float(np.mean([r[1] for r in running])),
                       seconds=time.time() - started, train_samples=n_train, val_samples=len(val_set["move"]))
        history.append(metrics)
        print(json.dumps(metrics))
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1,
                    "history": history, "config": asdict(config), "shape": model.shape, "meta": meta},
                   checkpoint_path)
        (out / "history.json").write_text(json.dumps(history, indent=2))
        plot_history(history, out / "curves.png")
    return checkpoint_path


@torch.no_grad()
def evaluate(model: PolicyValueNet, data: dict[str, torch.Tensor], binary_planes: int, batch_size: int) -> dict:
    """Validation policy loss, top-1/top-3 accuracy, value loss and mean absolute value error."""
    model.eval()
    n = len(data["move"])
    if n == 0:
        return {}
    totals = {"val_policy_loss": 0.0, "val_top1": 0.0, "val_top3": 0.0, "val_value_loss": 0.0, "val_value_mae": 0.0}
    for start in range(0, n, batch_size):
        sl = slice(start, start + batch_size)
        x = unpack_planes(data["planes"][sl], data["rule50"][sl], binary_planes)
        policy, value = model(x)
        policy, value = policy.float(), value.float()
        moves = data["move"][sl]
        totals["val_policy_loss"] += F.cross_entropy(policy, moves, reduction="sum").item()
        top3 = policy.topk(3, dim=1).indices
        totals["val_top1"] += (top3[:, 0] == moves).sum().item()
        totals["val_top3"] += (top3 == moves[:, None]).any(1).sum().item()
        target = data["value"][sl]
        totals["val_value_loss"] += -(target * F.log_softmax(value, 1)).sum().item()
        wdl = value.softmax(1)
        q = wdl[:, 0] - wdl[:, 2]
        totals["val_value_mae"] += (q - data["result"][sl].float()).abs().sum().item()
    return {k: v / n for k, v in totals.items()}


def plot_history(history: list[dict], path: Path) -> None:
    """Loss and accuracy curves per epoch as a PNG."""
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
    fig.savefig(path)
    plt.close(fig)


def load_checkpoint(path: Path) -> tuple[PolicyValueNet, dict]:
    state = torch.load(path, map_location="cpu")
    model = PolicyValueNet(**state["shape"])
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def checkpoint_summary(state: dict) -> Optional[dict]:
    return state["history"][-1] if state.get("history") else None
