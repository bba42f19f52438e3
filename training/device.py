"""Where PyTorch runs, and positions as it reads them there: the device a command asks for, checked at its start,
whether it computes in bfloat16, and bit-packed rows unpacked on the device (planes, move masks, DeepChess bits).

Every bit-packed array of the training package packs with ``np.packbits(..., bitorder="little")``: bit ``k`` of a
row is bit ``k % 8`` of its byte ``k // 8``.
"""

from __future__ import annotations

from typing import Optional

import torch

from training.errors import TrainingError


class DeviceError(TrainingError, ValueError):
    """A ``--device`` this machine cannot train on; the commands print it instead of a traceback."""


def pick_device(name: str) -> torch.device:
    """``auto``: CUDA where PyTorch sees a device, else the CPU. A named device is checked here, at the start of a
    command, because PyTorch would otherwise fail only at the first tensor moved there, minutes or hours in."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise DeviceError(f"--device {name}: not a device name (auto, cpu, cuda or cuda:N)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"--device {name}: PyTorch sees no CUDA device here")
    if device.type not in ("cpu", "cuda"):
        raise DeviceError(f"--device {name}: only cpu and cuda are supported")
    return device


def start_device(name: str, cpu_threads: Optional[int] = None) -> torch.device:
    """The device of :func:`pick_device`, where it is the CPU with PyTorch limited to ``cpu_threads`` threads (a
    trainer's share of the cores; None: two, or the one PyTorch has)."""
    device = pick_device(name)
    if device.type == "cpu":
        torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)) if cpu_threads is None else cpu_threads)
    return device


def uses_bf16(precision: str, device: torch.device) -> bool:
    """Whether the forward pass runs under bfloat16 autocast (``TrainConfig.precision``). ``auto`` on a CPU asks
    PyTorch whether it has native bfloat16 (AVX-512 BF16 or AMX): without it bf16 is emulated and slower than fp32."""
    if precision != "auto":
        return precision == "bf16"
    if device.type == "cuda":
        return True
    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):  # a PyTorch without the checks (private ones): assume none
        return False


def unpack_bits(packed: torch.Tensor, count: int) -> torch.Tensor:
    """Bit-packed uint8 rows (B, bytes) -> bool (B, count): the first ``count`` bits of each row, on its device."""
    shifts = torch.arange(8, device=packed.device, dtype=torch.uint8)
    return ((packed.unsqueeze(-1) >> shifts) & 1).reshape(packed.shape[0], -1)[:, :count].bool()


def unpack_planes(packed: torch.Tensor, rule50: torch.Tensor, binary_planes: int) -> torch.Tensor:
    """Bit-packed uint8 planes (B, C*8) -> float input (B, C+1, 8, 8) on the tensor's device."""
    planes = unpack_bits(packed, binary_planes * 64).reshape(packed.shape[0], binary_planes, 8, 8).float()
    fifty = (rule50.float().clamp(max=100) / 100).view(-1, 1, 1, 1).expand(-1, 1, 8, 8)
    return torch.cat([planes, fifty], dim=1)
