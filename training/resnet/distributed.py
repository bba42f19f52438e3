"""The policy-value trainer across processes: PyTorch's DistributedDataParallel, started by ``torchrun``.

``torchrun --nproc_per_node N -m training train ...`` starts N copies of the command, and the environment torchrun
sets (RANK, WORLD_SIZE, LOCAL_RANK) tells each which it is. Each process takes its share of every batch (every
N-th row, as torch's DistributedSampler shards an epoch) on its own device, the GPU of its local rank with NCCL or
the CPU with Gloo, and DDP averages the gradients, so that N processes take the steps one process takes with the same
total batch (``--batch-size``, a multiple of N): the batch norms see the whole batch (torch's SyncBatchNorm on GPUs;
:class:`WholeBatchNorm` on CPUs, where SyncBatchNorm refuses to run), the value loss is normalised over the whole
batch, the mirroring coins are drawn for the whole batch, and what the clock decides (a time budget, ``--max-minutes``)
is rank 0's clock, shared at every step. Rank 0 alone validates and writes the checkpoint, history and curves.
Without torchrun (WORLD_SIZE unset or 1) nothing here touches the training.
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.distributed as dist
from torch import nn

from training.device import pick_device, start_device
from training.errors import TrainingError


class DistributedError(TrainingError):
    """Settings that several processes cannot train with."""


@dataclass
class Processes:
    """This process among those torchrun started: ``rank`` of ``world``, on ``device``."""

    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")
    clock_group: Optional[Any] = None  # Gloo, for the clock's few numbers on the CPU whatever the devices

    @property
    def writer(self) -> bool:
        """Whether this process writes (and prints): rank 0."""
        return self.rank == 0

    def share(self, rows: torch.Tensor) -> torch.Tensor:
        """This process's rows of a batch: every ``world``-th from its rank."""
        return rows if self.world == 1 else rows[self.rank::self.world]

    def agree(self, *values: float) -> tuple[float, ...]:
        """Rank 0's ``values`` (readings of its clock), in every process."""
        if self.world == 1:
            return values
        shared = torch.tensor(values, dtype=torch.float64)
        dist.broadcast(shared, 0, group=self.clock_group)
        return tuple(shared.tolist())

    def mean(self, *values: torch.Tensor) -> tuple[float, ...]:
        """The mean over the processes of scalar tensors (each process's losses), as numbers."""
        stacked = torch.stack([value.detach().float() for value in values])
        if self.world > 1:
            dist.all_reduce(stacked)
            stacked /= self.world
        return tuple(stacked.tolist())

    def whole_batch_weight(self, weight: torch.Tensor) -> torch.Tensor:
        """The factor that turns this process's value loss, normalised by its own positions with a value target
        (training.resnet.losses.wdl_loss), into its part of the loss normalised over the whole batch's: the
        gradients DDP averages are then those of one process with the whole batch."""
        if self.world == 1:
            return torch.ones((), device=weight.device)
        mine = weight.detach().sum()
        total = mine.clone()
        dist.all_reduce(total)
        return mine.clamp(min=1.0) * self.world / total.clamp(min=1.0)

    def synchronise(self, model: nn.Module) -> nn.Module:
        """``model`` with batch norms over the whole batch of all the processes (one process: as it is)."""
        if self.world == 1:
            return model
        if self.device.type == "cuda":
            return nn.SyncBatchNorm.convert_sync_batchnorm(model)
        return _whole_batch_norms(model)

    def finish(self) -> None:
        """Leave the process group together once the run is over: each process waits for the others (rank 0 writes
        last) before it destroys its part, since Gloo can abort (SIGABRT) a process that tears down while a peer
        still holds the connections. Only at the normal end: after a failure a barrier would wait on a process
        stuck in a collective, and torchrun stops the others instead."""
        if self.world == 1:
            return
        dist.barrier(device_ids=[self.device.index] if self.device.type == "cuda" else None)
        _end()

    def wrap(self, model: nn.Module) -> nn.Module:
        """What the training steps call: ``model`` in DistributedDataParallel (one process: itself)."""
        if self.world == 1:
            return model
        return nn.parallel.DistributedDataParallel(
            model, device_ids=[self.device.index] if self.device.type == "cuda" else None)


def start(device_name: str) -> Processes:
    """This process's place and device: under torchrun, the process group joined (NCCL between GPUs, Gloo between
    CPUs) and the GPU of the local rank; else one process on the ``--device`` (training.device.start_device)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Processes(device=start_device(device_name))
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = pick_device(device_name)
    if device.type == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise DistributedError(f"process {rank} (local rank {local_rank}) has no GPU of its own: this machine "
                                   f"has {torch.cuda.device_count()}, give torchrun --nproc_per_node at most that")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = start_device("cpu")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        atexit.register(_end)
    clock_group = dist.new_group(backend="gloo") if device.type == "cuda" else None
    return Processes(rank, world, device, clock_group)


def check_batch(batch_size: int, processes: Processes) -> None:
    """Every process takes the same share of a batch, or their gradients would not average to the whole batch's."""
    if batch_size % processes.world:
        raise DistributedError(f"--batch-size {batch_size} is the batch of all {processes.world} processes together: "
                               f"make it a multiple of {processes.world}")


def _end() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


class _SumOverProcesses(torch.autograd.Function):
    """A tensor summed over the processes; its gradient, the processes' gradients summed (each process's loss
    depends on every process's part of the sum)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        total = tensor.clone()
        dist.all_reduce(total)
        return total

    @staticmethod
    def backward(ctx: Any, gradient: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        total = gradient.clone()
        dist.all_reduce(total)
        return total


class WholeBatchNorm(nn.BatchNorm2d):
    """BatchNorm2d whose training statistics are those of the whole batch of every process, for CPUs (Gloo),
    where torch.nn.SyncBatchNorm refuses to run: each channel's count, sum and squared deviations summed over the
    processes, with gradients summed back (as torch.distributed.nn's deprecated all_reduce does).
    Evaluation uses the running statistics, as BatchNorm2d does; the parameters and buffers are BatchNorm2d's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return super().forward(x)
        channels = x.shape[1]
        values = x.float()
        counted = torch.tensor([values.numel() // channels], dtype=torch.float64)
        dist.all_reduce(counted)
        count = float(counted[0])
        mean = _SumOverProcesses.apply(values.sum((0, 2, 3))) / count
        centred = values - mean.view(1, -1, 1, 1)
        variance = _SumOverProcesses.apply((centred * centred).sum((0, 2, 3))) / count
        with torch.no_grad():
            momentum = self.momentum if self.momentum is not None else 1 / float(self.num_batches_tracked + 1)
            self.running_mean.mul_(1 - momentum).add_(momentum * mean)
            self.running_var.mul_(1 - momentum).add_(momentum * variance * count / max(count - 1, 1.0))
            self.num_batches_tracked.add_(1)
        out = centred * torch.rsqrt(variance + self.eps).view(1, -1, 1, 1)
        if self.affine:
            out = out * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)
        return out.to(x.dtype)


def _whole_batch_norms(module: nn.Module) -> nn.Module:
    """``module`` with each BatchNorm2d replaced by a WholeBatchNorm holding the same parameters and buffers."""
    if isinstance(module, nn.BatchNorm2d) and not isinstance(module, WholeBatchNorm):
        whole = WholeBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                               module.track_running_stats)
        whole.load_state_dict(module.state_dict())
        return whole
    for name, child in module.named_children():
        module.add_module(name, _whole_batch_norms(child))
    return module

