"""The dual-head residual policy-value network (AlphaZero / Leela design).

Stem 3x3 convolution, ``blocks`` residual blocks of ``filters`` channels, a
convolutional policy head that outputs 73 planes of 8x8 logits (exactly the
4672-slot move layout of :mod:`evaluators.moves` when flattened), and a value
head that outputs win/draw/loss logits.

With ``squeeze`` > 0 every residual block also has a squeeze-and-excitation
unit (Hu et al. 2018, as Lc0's SE-ResNets): the block's output channels are
averaged over the board, passed through a bottleneck of ``filters // squeeze``
units and turned into a per-channel scale and shift, so that what happens on
one side of the board can reweigh features everywhere. The scale is
2 sigmoid(z), 1 where z is 0, so an SE block whose last layer is zero computes
what the same block without it does (training.resnet.grow starts one so).

A network imported from Leela Chess Zero (training.resnet.leela_import) keeps what
Lc0's networks have and the project's own do not, each a key of its ``shape``:
Mish instead of ReLU (``activation``), Lc0's SE scale sigmoid(z) (``se_gate``),
Lc0's policy head (``policy_head``: :class:`Lc0Policy`, with ``policy_channels``
for the dense one) and the value head's width (``value_channels``). A shape holds
such a key only where it differs from :data:`SHAPE_DEFAULTS`, so that the files
of every network made before (weights/resnet.pt among them) keep their shape,
and their exports their metadata, unchanged.
"""

from __future__ import annotations

import chess
import numpy as np
import torch
from torch import nn

from evaluators.encoding import PIECE_ORDER
from evaluators.lc0_policy import CONV_CHANNELS, LC0_MOVES, az_conv_sources, az_sources
from evaluators.moves import KING_TAKES_ROOK, OWN_SLOT, move_to_index, queen_promotion_own_slot
from evaluators.onnx_model import CASTLING_KEY, QUEEN_PROMOTION_KEY

#: Every key a shape may leave out, with the value it then has.
SHAPE_DEFAULTS = {"squeeze": 0, "activation": "relu", "se_gate": "2sigmoid", "policy_head": "az",
                  "policy_channels": 32, "value_channels": 32}
#: The activation between layers, by the name a shape gives it.
ACTIVATIONS = {"relu": nn.ReLU, "mish": nn.Mish}
#: The SE unit's scale of its logit z: the project's 2 sigmoid(z) (1 at z = 0), or Lc0's sigmoid(z).
SE_GATES = ("2sigmoid", "sigmoid")
#: The policy heads: the project's 73 planes, or Lc0's convolutional (80 planes) or dense (1858 moves) head.
POLICY_HEADS = ("az", "lc0-convolution", "lc0-dense")
#: The logit of a policy slot that no move has (that of the engine's conversion of a Leela network).
NO_MOVE_LOGIT = -1e4


def full_shape(shape: dict) -> dict:
    """``shape`` with every key a network has (:data:`SHAPE_DEFAULTS` where the shape leaves one out)."""
    return {**SHAPE_DEFAULTS, **shape}


class SqueezeExcitation(nn.Module):
    """Per-channel scale (2 sigmoid(w), or Lc0's sigmoid(w)) and shift b from the board-wide mean of each
    channel."""

    def __init__(self, filters: int, squeeze: int, activation: str = "relu", gate: str = "2sigmoid") -> None:
        super().__init__()
        self.reduce = nn.Linear(filters, max(1, filters // squeeze))
        self.expand = nn.Linear(max(1, filters // squeeze), 2 * filters)
        self.act = ACTIVATIONS[activation]()
        self.gain = 2.0 if gate == "2sigmoid" else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale, shift = self.expand(self.act(self.reduce(x.mean(dim=(2, 3))))).chunk(2, dim=1)
        return x * (self.gain * torch.sigmoid(scale))[:, :, None, None] + shift[:, :, None, None]


class ResidualBlock(nn.Module):
    def __init__(self, filters: int, squeeze: int = 0, activation: str = "relu", se_gate: str = "2sigmoid"
                 ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)
        self.se = SqueezeExcitation(filters, squeeze, activation, se_gate) if squeeze else None
        self.act = ACTIVATIONS[activation]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.se is not None:
            y = self.se(y)
        return self.act(x + y)


def _index(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long)


class Lc0Policy(nn.Module):
    """Lc0's policy head in the az-8x8x73 slots: an imported Leela network's (training.resnet.leela_import).

    The body is Lc0's: a 3x3 convolution, then a 3x3 convolution to 80 planes (``lc0-convolution``), or a 1x1
    convolution to ``channels`` planes, then a dense layer to 1858 moves (``lc0-dense``). Each az-8x8x73 slot
    takes its move's output as the engine's conversion does (evaluators.lc0_policy), a slot no move has
    :data:`NO_MOVE_LOGIT`: :meth:`own_slots`, in Lc0's conventions (castling as the king taking its rook, queen
    promotions in slots of their own: :attr:`CONVENTIONS`), which the export keeps, so that it plays as the
    original file does. :meth:`forward` gives the same logits in the project's conventions, those of training's
    targets: the king on e1 (the side to move's) castles into its two-square step's slot, a pawn on the seventh
    rank promotes to a queen in its step's slot, and the slots they leave, which no legal move has then, get
    :data:`NO_MOVE_LOGIT` (the policy loss's softmax sees each logit once).
    """

    #: The slot conventions of :meth:`own_slots`, as the export's metadata says them (evaluators.resnet).
    CONVENTIONS = {CASTLING_KEY: KING_TAKES_ROOK, QUEEN_PROMOTION_KEY: OWN_SLOT}
    #: The input planes of the side to move's pawns and king (every encoding puts the mover's pieces first).
    PAWNS, KING = PIECE_ORDER.index(chess.PAWN), PIECE_ORDER.index(chess.KING)

    def __init__(self, filters: int, head: str, channels: int, activation: str) -> None:
        super().__init__()
        if head == "lc0-convolution":
            self.body = nn.Sequential(nn.Conv2d(filters, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters),
                                      ACTIVATIONS[activation](), nn.Conv2d(filters, CONV_CHANNELS, 3, padding=1),
                                      nn.Flatten())
            sources = az_conv_sources()
        else:
            self.body = nn.Sequential(nn.Conv2d(filters, channels, 1, bias=False), nn.BatchNorm2d(channels),
                                      ACTIVATIONS[activation](), nn.Flatten(), nn.Linear(channels * 64, LC0_MOVES))
            sources = az_sources()
        self.register_buffer("sources", torch.from_numpy(np.maximum(sources, 0)), persistent=False)
        self.register_buffer("no_move", torch.from_numpy(np.where(sources >= 0, 0.0, NO_MOVE_LOGIT)
                                                         .astype(np.float32)), persistent=False)
        king = lambda to: move_to_index(chess.Move(chess.E1, to), chess.WHITE)  # noqa: E731
        self.register_buffer("two_squares", _index([king(chess.G1), king(chess.C1)]), persistent=False)
        self.register_buffer("takes_rook", _index([king(chess.H1), king(chess.A1)]), persistent=False)
        pushes, own, knights, files = [], [], [], []
        for origin in chess.SquareSet(chess.BB_RANK_7):
            for target in chess.SquareSet(chess.BB_RANK_8):
                if abs(chess.square_file(target) - chess.square_file(origin)) <= 1:
                    pushes.append(move_to_index(chess.Move(origin, target), chess.WHITE))
                    own.append(queen_promotion_own_slot(origin, target))
                    knights.append(move_to_index(chess.Move(origin, target, chess.KNIGHT), chess.WHITE))
                    files.append(chess.square_file(origin))
        for name, values in (("pushes", pushes), ("own_queen", own), ("knights", knights), ("files", files)):
            self.register_buffer(name, _index(values), persistent=False)

    def own_slots(self, h: torch.Tensor) -> torch.Tensor:
        """The logits (N, 4672) in Lc0's conventions."""
        return self.body(h)[:, self.sources] + self.no_move

    def forward(self, h: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """The logits (N, 4672) in the project's conventions; ``planes``: the network's input."""
        own = self.own_slots(h)
        king = planes[:, self.KING, 0, 4, None] > 0.5
        pawns = planes[:, self.PAWNS, 6][:, self.files] > 0.5
        nothing = torch.full_like(own[:, :1], NO_MOVE_LOGIT)
        out = own.clone()
        out[:, self.two_squares] = torch.where(king, own[:, self.takes_rook], own[:, self.two_squares])
        out[:, self.takes_rook] = torch.where(king, nothing, own[:, self.takes_rook])
        out[:, self.pushes] = torch.where(pawns, own[:, self.own_queen], own[:, self.pushes])
        out[:, self.knights] = torch.where(pawns, own[:, self.knights], nothing)
        out[:, self.own_queen] = nothing
        return out


class PolicyValueNet(nn.Module):
    def __init__(self, planes: int, blocks: int = 6, filters: int = 64, value_hidden: int = 128,
                 squeeze: int = 0, activation: str = "relu", se_gate: str = "2sigmoid", policy_head: str = "az",
                 policy_channels: int = 32, value_channels: int = 32) -> None:
        super().__init__()
        if activation not in ACTIVATIONS or se_gate not in SE_GATES or policy_head not in POLICY_HEADS:
            raise ValueError(f"unknown activation {activation!r}, SE gate {se_gate!r} or policy head {policy_head!r} "
                             f"(known: {', '.join(ACTIVATIONS)}; {', '.join(SE_GATES)}; {', '.join(POLICY_HEADS)})")
        self.shape = {"planes": planes, "blocks": blocks, "filters": filters, "value_hidden": value_hidden}
        given = {"squeeze": squeeze, "activation": activation, "se_gate": se_gate, "policy_head": policy_head,
                 "policy_channels": policy_channels, "value_channels": value_channels}
        self.shape.update({key: value for key, value in given.items() if value != SHAPE_DEFAULTS[key]})
        act = ACTIVATIONS[activation]
        self.stem = nn.Sequential(nn.Conv2d(planes, filters, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(filters), act())
        self.tower = nn.Sequential(*(ResidualBlock(filters, squeeze, activation, se_gate) for _ in range(blocks)))
        self.policy: nn.Module
        if policy_head == "az":
            self.policy = nn.Sequential(nn.Conv2d(filters, filters, 3, padding=1, bias=False),
                                        nn.BatchNorm2d(filters), act(), nn.Conv2d(filters, 73, 3, padding=1))
        else:
            self.policy = Lc0Policy(filters, policy_head, policy_channels, activation)
        self.value = nn.Sequential(nn.Conv2d(filters, value_channels, 1, bias=False), nn.BatchNorm2d(value_channels),
                                   act(), nn.Flatten(), nn.Linear(value_channels * 64, value_hidden), act(),
                                   nn.Linear(value_hidden, 3))
        #: The modules :meth:`freeze` keeps as they are (none unless asked).
        self.frozen: list[nn.Module] = []

    def freeze(self, blocks: int) -> None:
        """Keep the stem and the first ``blocks`` residual blocks as they are, weights and BatchNorm statistics
        (no gradient; in eval mode whatever mode the network is in): a fine-tune on few positions trains the rest."""
        if not 0 <= blocks <= len(self.tower):
            raise ValueError(f"cannot freeze {blocks} residual blocks of a network with {len(self.tower)}")
        self.frozen = [self.stem, *self.tower[:blocks]] if blocks else []
        for module in self.frozen:
            module.requires_grad_(False)
        self.train(self.training)

    def train(self, mode: bool = True) -> "PolicyValueNet":
        super().train(mode)
        for module in self.frozen:
            module.train(False)
        return self

    @property
    def slot_conventions(self) -> dict[str, str]:
        """How the export's policy encodes castling and queen promotions, as its metadata says it (empty: the
        project's conventions, which the engine assumes where the metadata says nothing)."""
        return Lc0Policy.CONVENTIONS if isinstance(self.policy, Lc0Policy) else {}

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy logits (N, 4672), WDL logits (N, 3))."""
        return self.policy_and_value(x)

    def policy_and_value(self, x: torch.Tensor, value_trains_trunk: bool = True, own_slots: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward``; with ``value_trains_trunk`` False the value's gradient stops at the value head (PPO's
        critic, which must not drag the shared trunk); with ``own_slots`` an Lc0 policy head's logits are in its
        own conventions (:attr:`slot_conventions`: what the export plays), not the project's (what training's
        targets use). Not ``forward``'s arguments: ONNX export traces forward."""
        h = self.tower(self.stem(x))
        if isinstance(self.policy, Lc0Policy):
            policy = self.policy.own_slots(h) if own_slots else self.policy(h, x)
        else:
            policy = self.policy(h).flatten(1)
        return policy, self.value(h if value_trains_trunk else h.detach())
