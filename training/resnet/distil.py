"""Policy distillation: training targets mixed with the policy of stronger networks (teachers).

Most training positions carry a one-hot target (the move played). Mixing in the
move probabilities of an ensemble of networks (knowledge distillation, Hinton et
al. 2015) gives the student the teachers' view of every other move as well. The
teachers here can be an ensemble of networks, each also asked about the board
mirrored a-file <-> h-file where that is the same game (no castling rights), so
the targets carry the ensemble's and the mirror's gain into one network of the
engine's size: the way a large network trained on a GPU becomes a fast one.

The teachers run once, over the whole dataset, and the mixed targets are written
as a shard directory (policy entries: the source's and the teachers' most likely
legal moves); training then reads it like any other. Value targets, games,
results and keys are copied unchanged.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from evaluators.encoding import Encoding, get_encoding
from evaluators.moves import MIRROR_FILES, POLICY_SIZE
from training.configs import DistilConfig
from training.data import shards
from training.data.sources import read_source
from training.device import pick_device, unpack_planes
from training.resnet.metrics import legal_mask
from training.resnet.weights import WeightsError, load_network

#: Positions per output shard (one teacher pass per shard; an interrupted run resumes at a shard boundary).
SHARD_SIZE = 65536


class Ensemble:
    """Teachers' policy probabilities over legal moves, averaged over networks (and mirror views)."""

    def __init__(self, paths: list[str], encoding: Encoding, mirror: bool, device: torch.device) -> None:
        self.networks = []
        for path in paths:
            model, state = load_network(Path(path), device=device)
            if state["meta"]["encoding"] != encoding.name:
                raise WeightsError(f"{path}: a network for {state['meta']['encoding']!r} positions, the data is "
                                   f"{encoding.name!r}")
            self.networks.append(model.eval())
        self.encoding = encoding
        self.mirror = mirror
        self.table = torch.from_numpy(MIRROR_FILES).to(device)
        self.device = device

    @torch.inference_mode()
    def __call__(self, x: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """(N, 4672) mean probabilities on the CPU; a position without castling rights is seen as itself and
        mirrored, half each."""
        x, legal = x.to(self.device), legal.to(self.device)
        symmetric = torch.zeros(len(x), dtype=torch.bool, device=self.device)
        if self.mirror:
            symmetric = x[:, self.encoding.castling_planes].flatten(1).amax(1) == 0
        total = torch.zeros(len(x), POLICY_SIZE, device=self.device)
        for network in self.networks:
            probs = F.softmax(network(x)[0].float().masked_fill(~legal, -torch.inf), dim=1)
            if symmetric.any():
                mirrored = network(x[symmetric].flip(-1))[0].float()[:, self.table]
                mirrored = F.softmax(mirrored.masked_fill(~legal[symmetric], -torch.inf), dim=1)
                probs[symmetric] = 0.5 * (probs[symmetric] + mirrored)
            total += probs
        return (total / len(self.networks)).cpu()


def mix_targets(arrays: dict[str, np.ndarray], teacher: torch.Tensor, share: float, top_k: int
                ) -> dict[str, np.ndarray]:
    """New CSR policy arrays: (1 - share) x the source's target + share x the teacher's top_k moves
    (renormalised); entries sorted by probability, most likely first."""
    n = teacher.shape[0]
    dense = torch.zeros(n, POLICY_SIZE)
    offsets = arrays["policy_offset"]
    rows = np.repeat(np.arange(n), np.diff(offsets))
    dense.index_put_((torch.from_numpy(rows), torch.from_numpy(arrays["policy_index"].astype(np.int64))),
                     torch.from_numpy(arrays["policy_prob"].astype(np.float32)) * (1 - share), accumulate=True)
    top = teacher.topk(min(top_k, POLICY_SIZE), dim=1)
    kept = torch.where(top.values > 0, top.values, 0.0)
    kept = kept / kept.sum(1, keepdim=True).clamp(min=1e-12)
    dense.scatter_add_(1, top.indices, kept * share)
    order = dense.argsort(dim=1, descending=True, stable=True)
    counts = (dense > 0).sum(1)
    width = int(counts.max())
    order = order[:, :width]
    probs = dense.gather(1, order)
    present = torch.arange(width)[None, :] < counts[:, None]
    index, prob = order[present].numpy(), probs[present].numpy()
    new_offsets = np.concatenate([[0], np.cumsum(counts.numpy())]).astype(np.int64)
    prob = (prob / np.repeat(np.add.reduceat(prob, new_offsets[:-1]), counts.numpy())).astype(np.float32)
    return {"policy_offset": new_offsets, "policy_index": index.astype(np.int16), "policy_prob": prob,
            "policy_score": np.zeros(len(index), dtype=np.int32)}


def distil(config: DistilConfig, progress: bool = True) -> Path:
    """Write ``config.out``: every source position with its policy target mixed with the teachers'.

    Returns the directory. A run into a directory made with other settings is refused; one into a
    directory of the same settings continues after its last complete shard.
    """
    from tqdm import tqdm
    if not 0 < config.share <= 1:
        raise ValueError(f"--share must be in (0, 1], not {config.share}")
    device = pick_device(config.device)
    torch.set_num_threads(max(1, config.threads))
    parts, described, encoding_name = [], [], None
    for name in config.sources:
        arrays, description, encoding_name = read_source(Path(name), encoding_name, config.temperature)
        arrays.pop("validation", None)  # every position is distilled, a corpus's held-out games too
        parts.append(arrays)
        described.append(description)
    arrays = shards.concatenate(parts)
    encoding = get_encoding(encoding_name)
    teachers = Ensemble(config.teachers, encoding, config.mirror, device)
    # everything that makes the targets, so that a run never continues a directory made otherwise
    labeller = {"targets": f"distilled: share {config.share:g} of the top {config.top_k} moves of "
                           f"{' + '.join(config.teachers)}{' with mirror views' if config.mirror else ''} "
                           f"into {' + '.join(config.sources)}",
                "temperature": config.temperature or None}
    writer = shards.ShardWriter(Path(config.out), encoding, labeller, SHARD_SIZE)
    n = len(arrays["key"])
    done = sum(entry["positions"] for entry in writer.meta["shards"])
    if done:
        print(f"{config.out}: {done} of {n} positions already distilled, continuing")
    bar = tqdm(total=n, initial=done, desc="distilling", unit="pos", disable=not progress)
    for start in range(done, n, SHARD_SIZE):
        part = shards.select(arrays, np.arange(start, min(n, start + SHARD_SIZE)))
        policies = []
        for first in range(0, len(part["key"]), config.batch_size):
            rows = slice(first, first + config.batch_size)
            planes = torch.from_numpy(np.ascontiguousarray(part["planes"][rows]))
            x = unpack_planes(planes, torch.from_numpy(part["rule50"][rows]), encoding.binary_planes)
            teacher = teachers(x, legal_mask(part["planes"][rows], encoding))
            policies.append(mix_targets(shards.select(part, np.arange(rows.start, rows.start + len(planes))),
                                        teacher, config.share, config.top_k))
            bar.update(len(planes))
        part.update(shards.concatenate(policies))
        part["fen"] = np.zeros(len(part["key"]), dtype="S92")  # a distilled position keeps no FEN
        writer.write_arrays({name: part[name] for name in shards.ARRAYS}, [str(s) for s in config.sources])
    bar.close()
    writer.record_run({"command": " ".join(shlex.quote(a) for a in sys.argv), "positions": n,
                       "settings": asdict(config), "sources": described})
    return Path(config.out)
