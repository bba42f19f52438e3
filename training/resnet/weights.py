"""Policy-value network files: training checkpoints and shipped weights (weights/resnet.pt).

A weights file is ``{"format": "hackmate-resnet", "version": 1, "shape": {...},
"model": state_dict, "meta": {"encoding": ..., "sources": [...]}, "config": {...},
"history": [...]}``: a checkpoint without optimiser state or resume position.
Every file is read by training.network_files' ``read_torch_file`` (tensors and plain
containers only, never arbitrary objects) and checked against what it claims to be before use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch

from training.network_files import WeightsError, read_torch_file
from training.resnet.model import SHAPE_DEFAULTS, PolicyValueNet, full_shape

FORMAT = "hackmate-resnet"
VERSION = 1
#: Keys of a weights file (a training checkpoint has these and its optimiser state and position).
KEYS = ("shape", "model", "meta", "config", "history")
#: The keys of a shape that a training run's settings choose (the planes by the data's encoding, --blocks,
#: --filters, --squeeze); the others come with the network a run continues (:func:`inherited_shape`).
CHOSEN = ("planes", "blocks", "filters", "squeeze")


def load_file(path: Path, device: str | torch.device = "cpu") -> dict:
    """The policy-value network dictionary saved in ``path`` (read by :func:`read_torch_file`)."""
    state = read_torch_file(path, device)
    missing = [key for key in KEYS if not isinstance(state, dict) or key not in state]
    if missing:
        raise WeightsError(f"{path}: not a policy-value network file (missing {', '.join(missing)})")
    if "format" in state and (state["format"] != FORMAT or state.get("version") != VERSION):
        raise WeightsError(f"{path}: format {state['format']!r} version {state.get('version')!r}, "
                           f"expected {FORMAT!r} version {VERSION}")
    return state


def describe(shape: dict) -> str:
    squeeze = f" and SE units (squeeze {shape['squeeze']})" if shape.get("squeeze") else ""
    others = ", ".join(f"{key} {shape[key]}" for key, default in SHAPE_DEFAULTS.items()
                       if key != "squeeze" and shape.get(key, default) != default)
    return (f"{shape.get('blocks')}x{shape.get('filters')} network with {shape.get('planes')} input planes{squeeze}"
            + (f" ({others})" if others else ""))


def inherited_shape(state: Optional[dict]) -> dict:
    """The shape keys a training run's network takes from the network it continues (``state``: the dictionary of
    a resumed checkpoint or of an --init file; None: a new network): those no setting chooses, such as an imported
    Leela network's policy head, activation and SE gate (training.resnet.model), so that the run trains the network
    it was given and ``expect`` checks the keys it chose."""
    return {key: value for key, value in (state or {}).get("shape", {}).items() if key not in CHOSEN}


def load_network(path: Path, expect: Optional[dict] = None, device: str | torch.device = "cpu"
                 ) -> tuple[PolicyValueNet, dict]:
    """(network in eval mode, file dictionary) of a checkpoint or weights file.

    ``expect`` (a subset of the shape: planes, blocks, filters, value_hidden, squeeze) must match the file's shape.
    """
    state = load_file(path, device)
    return network_of(state, path, expect, device), state


def network_of(state: dict, path: Path, expect: Optional[dict] = None, device: str | torch.device = "cpu"
               ) -> PolicyValueNet:
    """The network (in eval mode) of a file dictionary that :func:`load_file` read from ``path``; ``expect`` as
    :func:`load_network`'s."""
    shape = state["shape"]
    if expect and any(full_shape(shape).get(key) != value for key, value in expect.items()):
        raise WeightsError(f"{path} holds a {describe(shape)}, not the requested {describe({**shape, **expect})}")
    try:
        model = PolicyValueNet(**shape)
        model.load_state_dict(state["model"])
    except (TypeError, RuntimeError) as error:
        raise WeightsError(f"{path}: its weights do not fit its declared shape {shape} ({error})") from None
    model.to(device).eval()
    return model


def weights_of(state: dict) -> dict:
    """The shipped-weights dictionary of a checkpoint (or weights) dictionary: no optimiser, no position, and
    every tensor on the CPU, so that a file written on a GPU loads anywhere, also with a plain ``torch.load``."""
    weights = {"format": FORMAT, "version": VERSION, **{key: state[key] for key in KEYS}}
    weights["model"] = {name: tensor.detach().cpu() for name, tensor in weights["model"].items()}
    return weights


def save_weights(weights: dict, out: Path) -> Path:
    """Write a weights dictionary (temporary name, then rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    torch.save(weights, temporary)
    temporary.replace(out)
    return out
