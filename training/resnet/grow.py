"""Growing a trained policy-value network into a larger one that computes the same function.

A larger network need not start from scratch: the shipped 6x64 network's knowledge
is kept when it is embedded in a deeper and wider one (Chen, Goodfellow and Shlens,
"Net2Net", 2016), so that fine-tuning a larger size builds on the shipped network
instead of spending its first hours relearning it.

- **Deeper**: new residual blocks are appended to the tower with their second batch
  norm's scale and shift at zero, so a new block adds nothing to its input; the input
  is the output of a ReLU (never negative), so the block's ReLU passes it unchanged.
  The zero scale still gets gradients, as in the "zero-init residual" trick.
- **Wider**: the new channels of every batch norm get scale and shift zero (their
  outputs are zero, whatever the convolution computes), and the weights that read
  new channels into old ones are zero; the convolutions that write new channels keep
  their random initialisation, which breaks the symmetry once training moves the scales.
- **Squeeze-and-excitation**: SE units added to a network without them (or in appended
  blocks) start with their last layer at zero: a scale of exactly 1 and a shift of 0.
  An SE network can grow deeper, not wider (its scale and shift halves would mix).
- **More input planes**: into an encoding that extends the network's own (its binary planes
  first, in the same order: ``Encoding.extends``), the stem's weights for the new planes
  start at zero and the fifty-move plane's move to the last input.

An imported Leela network (training.resnet.leela_import) does not grow: with Mish or Lc0's SE scale, new blocks
and SE units would not start as identities.
"""

from __future__ import annotations

import torch

from evaluators.encoding import get_encoding
from training.resnet.model import PolicyValueNet, full_shape


def grow(small: PolicyValueNet, blocks: int, filters: int, squeeze: int = 0, encoding: str = "",
         small_encoding: str = "") -> PolicyValueNet:
    """A ``blocks`` x ``filters`` network (with SE units of ``squeeze`` where > 0) computing what ``small``
    computes (up to float rounding), on the input planes of ``encoding`` where it extends ``small_encoding`` (the
    small network's), on the small network's own otherwise.

    ``small`` must be no deeper and no wider than the result; same value head; an SE network keeps its ``squeeze``
    and its width.
    """
    shape = small.shape
    old_squeeze = full_shape(shape)["squeeze"]
    if full_shape(shape) != full_shape({key: shape[key] for key in ("planes", "blocks", "filters", "value_hidden",
                                                                    "squeeze") if key in shape}):
        raise ValueError("an imported Leela network (Lc0's policy head, SE gate or activation) does not grow: its "
                         "new blocks and channels would not start as identities")
    if blocks < shape["blocks"] or filters < shape["filters"]:
        raise ValueError(f"cannot grow a {shape['blocks']}x{shape['filters']} network into a smaller "
                         f"{blocks}x{filters} one")
    if old_squeeze and (squeeze != old_squeeze or filters != shape["filters"]):
        raise ValueError(f"an SE network (squeeze {old_squeeze}) grows deeper only, with the same squeeze and "
                         f"{shape['filters']} filters")
    planes = shape["planes"]
    if encoding and encoding != small_encoding:
        if get_encoding(encoding).extends != small_encoding:
            raise ValueError(f"a {small_encoding} network grows into {encoding} only if {encoding} extends it")
        planes = get_encoding(encoding).planes
    big = PolicyValueNet(planes, blocks, filters, shape["value_hidden"], squeeze)
    state = big.state_dict()
    with torch.no_grad():
        for key, old in small.state_dict().items():
            new = state[key]
            if old.dim() == 0:  # num_batches_tracked
                new.copy_(old)
                continue
            if key.endswith("running_var"):
                new.fill_(1.0)
            elif key.endswith((".weight", ".bias", "running_mean")) and old.dim() == 1 and _is_norm(big, key):
                new.zero_()
            elif old.dim() >= 2:
                new[:old.shape[0], old.shape[1]:] = 0  # new inputs feed nothing old
            if key == STEM_WEIGHT and new.shape[1] > old.shape[1]:  # the fifty-move plane stays the last input
                new[:old.shape[0]] = 0
                new[:old.shape[0], -1] = old[:, -1]
                old = old[:, :-1]
            new[tuple(slice(0, size) for size in old.shape)] = old
        for index in range(shape["blocks"], blocks):  # appended blocks start as identities
            state[f"tower.{index}.bn2.weight"].zero_()
            state[f"tower.{index}.bn2.bias"].zero_()
        for index in range(0 if squeeze and not old_squeeze else shape["blocks"], blocks if squeeze else 0):
            state[f"tower.{index}.se.expand.weight"].zero_()  # new SE units: scale 1, shift 0
            state[f"tower.{index}.se.expand.bias"].zero_()
    big.load_state_dict(state)
    return big


#: The stem convolution's weights: (filters, input planes, 3, 3).
STEM_WEIGHT = "stem.0.weight"


def _is_norm(model: PolicyValueNet, key: str) -> bool:
    module = model.get_submodule(key.rsplit(".", 1)[0])
    return isinstance(module, torch.nn.BatchNorm2d)
