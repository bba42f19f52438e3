"""Small Leela Chess Zero network files with random weights, written here, and their forward pass in plain numpy.

Written independently of the engine's reader (evaluators/leela.py) and encoder from lczero-common's
proto/net.proto and Lc0's sources: a protobuf writer of its own, Lc0's input planes built the way Lc0's
EncodePositionForNN builds them (each position seen from its own side, mirrored back every other ply, the fill
of a game begun at a FEN), its move index and convolutional policy map, and a forward pass over the raw weights
(batch norm not folded) in float64.
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import chess
import numpy as np

#: SHA-256 of Lc0's kMoveStrs (src/neural/encoder.cc) as its 1858 moves joined by spaces, and of its
#: kConvPolicyMap (src/neural/tables/policy_map.h) as its 4672 numbers joined by spaces, taken from Lc0's sources.
LC0_MOVES_SHA256 = "c4c47aca96e213995c772d1aab24498e3ad9c91209d3467889f20fa1a10678dd"
LC0_CONV_MAP_SHA256 = "233129ee320d8596cf6265810e02213a1c19be46ebf73c43497ed4e6f62dad61"

ENCODINGS = {"LINEAR16": 1, "FLOAT16": 2, "BFLOAT16": 3, "FLOAT32": 4}


# ------------------------------------------------------------------ protobuf


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def uint_field(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def bytes_field(number: int, value: bytes) -> bytes:
    return tag(number, 2) + varint(len(value)) + value


def fixed32_field(number: int, value: int) -> bytes:
    return tag(number, 5) + struct.pack("<I", value)


def float_field(number: int, value: float) -> bytes:
    return tag(number, 5) + struct.pack("<f", value)


# ------------------------------------------------------------ network files


@dataclass
class Spec:
    """What a test network looks like."""

    blocks: int = 2
    filters: int = 8
    se: bool = True
    policy: str = "convolution"  # or "classical" (dense)
    value: str = "wdl"  # or "classical" (scalar)
    encoding: str = "LINEAR16"
    activation: str = "relu"  # or "mish"
    #: Write no NetworkFormat at all (Lc0's oldest files: classical everything).
    no_format: bool = False
    #: Old conv blocks: biases beside the batch norm means, no gammas or betas.
    old_batch_norm: bool = False
    moves_left: bool = False
    seed: int = 1


@dataclass
class Layers:
    """The decoded values of every layer written (what Lc0 reads back), by name."""

    values: dict[str, np.ndarray] = field(default_factory=dict)


def encode_layer(values: np.ndarray, encoding: str) -> tuple[bytes, np.ndarray]:
    """A Layer message of ``values`` and the values Lc0 decodes from it."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if encoding == "LINEAR16":
        low, high = float(flat.min()), float(flat.max())
        if high == low:
            high = low + 1.0
        codes = np.round((flat - low) / (high - low) * 65535).astype("<u2")
        low32, high32 = np.float32(low), np.float32(high)
        theta = codes.astype(np.float64) / 65535
        decoded = float(low32) * (1 - theta) + float(high32) * theta
        message = float_field(1, low) + float_field(2, high) + bytes_field(3, codes.tobytes())
        return message, decoded
    if encoding == "FLOAT16":
        half = flat.astype("<f2")
        return bytes_field(3, half.tobytes()) + uint_field(4, 2), half.astype(np.float64)
    if encoding == "BFLOAT16":
        top = (flat.astype("<f4").view("<u4") >> 16).astype("<u2")
        return bytes_field(3, top.tobytes()) + uint_field(4, 3), \
            (top.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    single = flat.astype("<f4")
    return bytes_field(3, single.tobytes()) + uint_field(4, 4), single.astype(np.float64)


class Writer:
    """Random layers of one spec, kept decoded for the reference forward pass."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        self.layers = Layers()

    def layer(self, name: str, shape: tuple[int, ...], scale: float, offset: float = 0.0) -> bytes:
        values = self.rng.normal(offset, scale, size=shape)
        message, decoded = encode_layer(values, self.spec.encoding)
        self.layers.values[name] = decoded.reshape(shape)
        return message

    def values(self, name: str, values: np.ndarray) -> bytes:
        message, decoded = encode_layer(values, self.spec.encoding)
        self.layers.values[name] = decoded.reshape(values.shape)
        return message

    def conv_block(self, name: str, outputs: int, inputs: int, kernel: int, batch_norm: bool = True,
                   biases: bool = False) -> bytes:
        """A convolution block; its batch norm's variances from 0.001 to 1 or so (small ones make the epsilon
        count), the gammas scaled to match (an old block without gammas: variances near 1)."""
        fan_in = inputs * kernel * kernel
        out = bytes_field(1, self.layer(f"{name}.w", (outputs, inputs, kernel, kernel), 1.2 / np.sqrt(fan_in)))
        if biases or not batch_norm:
            out += bytes_field(2, self.layer(f"{name}.b", (outputs,), 0.1))
        if batch_norm:
            out += bytes_field(3, self.layer(f"{name}.mean", (outputs,), 0.1))
            old = self.spec.old_batch_norm
            variances = np.abs(self.rng.normal(1.0, 0.1, outputs)) if old else \
                np.exp(self.rng.normal(-3.0, 1.5, outputs))
            out += bytes_field(4, self.values(f"{name}.var", variances))
            if not old:
                gammas = np.sqrt(self.layers.values[f"{name}.var"]) * self.rng.normal(1.0, 0.1, outputs)
                out += bytes_field(5, self.values(f"{name}.gamma", gammas))
                out += bytes_field(6, self.layer(f"{name}.beta", (outputs,), 0.1))
        return out

    def dense(self, prefix_w: int, prefix_b: int, name: str, outputs: int, inputs: int, scale: float) -> bytes:
        return (bytes_field(prefix_w, self.layer(f"{name}.w", (outputs, inputs), scale / np.sqrt(inputs)))
                + bytes_field(prefix_b, self.layer(f"{name}.b", (outputs,), 0.1)))

    def weights(self) -> bytes:
        spec, filters = self.spec, self.spec.filters
        old = spec.old_batch_norm
        out = bytes_field(1, self.conv_block("input", filters, 112, 3, biases=old))
        for index in range(spec.blocks):
            block = (bytes_field(1, self.conv_block(f"res{index}.conv1", filters, filters, 3, biases=old))
                     + bytes_field(2, self.conv_block(f"res{index}.conv2", filters, filters, 3, biases=old)))
            if spec.se:
                hidden = max(2, filters // 4)
                block += bytes_field(3, self.dense(1, 2, f"res{index}.se1", hidden, filters, 1.0)
                                     + self.dense(3, 4, f"res{index}.se2", 2 * filters, hidden, 1.0))
            out += bytes_field(2, block)
        if spec.policy == "convolution":
            out += bytes_field(11, self.conv_block("policy1", filters, filters, 3))
            out += bytes_field(3, self.conv_block("policy", 80, filters, 3, batch_norm=False))
        else:
            out += bytes_field(3, self.conv_block("policy", 4, filters, 1))
            out += self.dense(4, 5, "ip_pol", 1858, 4 * 64, 2.0)
        out += bytes_field(6, self.conv_block("value", 4, filters, 1))
        out += self.dense(7, 8, "ip1_val", 16, 4 * 64, 1.5)
        out += self.dense(9, 10, "ip2_val", 3 if spec.value == "wdl" else 1, 16, 1.5)
        if spec.moves_left:
            out += bytes_field(12, self.conv_block("moves_left", 2, filters, 1))
            out += self.dense(13, 14, "ip1_mov", 8, 2 * 64, 1.0) + self.dense(15, 16, "ip2_mov", 1, 8, 1.0)
        return out


def network_format(spec: Spec, **override: int) -> bytes:
    """A NetworkFormat message: classical input, the spec's structure and heads (``override``: field by name)."""
    values = {"input": 1, "output": 2 if spec.value == "wdl" else 1, "network": 4 if spec.se else 3,
              "policy": 2 if spec.policy == "convolution" else 1, "value": 2 if spec.value == "wdl" else 1,
              "moves_left": 1 if spec.moves_left else 0, "default_activation": 1 if spec.activation == "mish" else 0}
    values.update(override)
    numbers = {"input": 1, "output": 2, "network": 3, "policy": 4, "value": 5, "moves_left": 6,
               "default_activation": 7}
    return b"".join(uint_field(numbers[name], value) for name, value in values.items())


def net_bytes(spec: Spec, weights: bytes, magic: int = 0x1C0, format_fields: Optional[bytes] = None,
              extra_weights: bytes = b"") -> bytes:
    """A whole Net message."""
    form = uint_field(1, 1)  # weights_encoding LINEAR16 (a layer's own encoding overrides it)
    if not spec.no_format:
        form += bytes_field(2, network_format(spec) if format_fields is None else format_fields)
    version = uint_field(1, 0) + uint_field(2, 30) + uint_field(3, 0)
    return (fixed32_field(1, magic) + bytes_field(2, b"test network") + bytes_field(3, version)
            + bytes_field(4, form) + bytes_field(10, weights + extra_weights))


def write_network(path: Path, spec: Spec, **net_arguments) -> Layers:
    """Write a random network of ``spec`` to ``path`` (gzipped for a .gz name); the layers' decoded values."""
    writer = Writer(spec)
    data = net_bytes(spec, writer.weights(), **net_arguments)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return writer.layers


# ------------------------------------------------------------- Lc0's input


def _lc0_equal_key(board: chess.Board, first: bool) -> str:
    """What Lc0's ChessBoard equality compares: pieces, side to move, castling, and the en-passant flag (set
    after a double step only beside an enemy pawn, which xfen's pseudo-legal rule gives; as given in a FEN)."""
    return " ".join(board.fen(en_passant="fen" if first else "xfen").split()[:4])


def lc0_planes(root: chess.Board, moves: list[chess.Move]) -> np.ndarray:
    """Lc0's 112 input planes (float64, Lc0's order, the fifty-move plane in plies) of the game that begins at
    ``root`` and plays ``moves``, as EncodePositionForNN builds them with FillEmptyHistory::FEN_ONLY."""
    boards, rule50, repetitions = [root.copy(stack=False)], [root.halfmove_clock], [0]
    for move in moves:
        board = boards[-1].copy(stack=False)
        board.push(move)
        boards.append(board)
        rule50.append(board.halfmove_clock)
        count = 0
        if rule50[-1] >= 4:  # PositionHistory::ComputeLastMoveRepetitions
            for index in range(len(boards) - 5, -1, -2):
                if _lc0_equal_key(boards[index], index == 0) == _lc0_equal_key(board, False):
                    count = 1 + repetitions[index]
                    break
                if rule50[index] < 2:
                    break
        repetitions.append(count)
    planes = np.zeros((112, 64))
    current = boards[-1]
    we_are_black = current.turn == chess.BLACK
    own = current if not we_are_black else current.mirror()  # the board as the side to move sees it

    def bits(mask: int) -> np.ndarray:
        return np.array([(mask >> square) & 1 for square in range(64)], dtype=np.float64)

    planes[104] = own.has_queenside_castling_rights(chess.WHITE)
    planes[105] = own.has_kingside_castling_rights(chess.WHITE)
    planes[106] = own.has_queenside_castling_rights(chess.BLACK)
    planes[107] = own.has_kingside_castling_rights(chess.BLACK)
    planes[108] = 1.0 if we_are_black else 0.0
    planes[109] = rule50[-1]
    planes[111] = 1.0
    flip = False
    history_index = len(boards) - 1
    for i in range(8):
        board = boards[max(history_index, 0)]
        seen = board if board.turn == chess.WHITE else board.mirror()  # Position::GetBoard()
        if flip:
            seen = seen.mirror()
        start = chess.Board()
        if history_index < 0 and board.board_fen() == start.board_fen() and board.turn == chess.WHITE \
                and board.castling_rights == start.castling_rights and board.ep_square is None:
            break
        base = i * 13
        for k, piece in enumerate((chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)):
            planes[base + k] = bits(int(seen.pieces(piece, chess.WHITE)))
            planes[base + 6 + k] = bits(int(seen.pieces(piece, chess.BLACK)))
        if repetitions[max(history_index, 0)] >= 1:
            planes[base + 12] = 1.0
        if history_index < 0 and seen.ep_square is not None:  # undo the double step, Lc0's arithmetic
            file = chess.square_file(seen.ep_square)
            if chess.square_rank(seen.ep_square) == 2:  # the flag on rank 1: our pawn
                ours = int(seen.pieces(chess.PAWN, chess.WHITE)) + ((0x100 - 0x1000000) << file)
                planes[base + 0] = bits(ours % 2 ** 64)
            else:
                theirs = int(seen.pieces(chess.PAWN, chess.BLACK)) + ((0x0001000000000000 - 0x0000000100000000)
                                                                       << file)
                planes[base + 6] = bits(theirs % 2 ** 64)
        if history_index > 0:
            flip = not flip
        history_index -= 1
    return planes.reshape(112, 8, 8)


# --------------------------------------------------------- Lc0's move index


#: Lc0's conv policy planes: queen-like (N, NE, E, SE, S, SW, W, NW) x distance 1-7, then knight jumps, then
#: promotions (capture left, push, capture right) x (rook, bishop, queen).
LC0_DIRECTIONS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]
LC0_KNIGHT_JUMPS = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]


def lc0_move_strings() -> list[str]:
    """Lc0's 1858 moves (kMoveStrs): every queen-like or knight move by from square then to square, then the
    promotions to q, r and b."""
    moves = []
    for from_square in range(64):
        rank, file = divmod(from_square, 8)
        targets = set()
        for dr, df in LC0_DIRECTIONS:
            for distance in range(1, 8):
                if 0 <= rank + dr * distance < 8 and 0 <= file + df * distance < 8:
                    targets.add((rank + dr * distance) * 8 + file + df * distance)
        for dr, df in LC0_KNIGHT_JUMPS:
            if 0 <= rank + dr < 8 and 0 <= file + df < 8:
                targets.add((rank + dr) * 8 + file + df)
        moves += [chess.SQUARE_NAMES[from_square] + chess.SQUARE_NAMES[to] for to in sorted(targets)]
    for file in range(8):
        for to_file in range(max(0, file - 1), min(7, file + 1) + 1):
            moves += [f"{'abcdefgh'[file]}7{'abcdefgh'[to_file]}8{piece}" for piece in "qrb"]
    return moves


def lc0_conv_map() -> list[int]:
    """Lc0's kConvPolicyMap: each 73x8x8 output's index among the 1858 moves (-1: none)."""
    index = {move: i for i, move in enumerate(lc0_move_strings())}
    table = []
    for plane in range(73):
        for from_square in range(64):
            table.append(index.get(_conv_move(plane, from_square), -1))
    return table


def _conv_move(plane: int, from_square: int) -> str:
    rank, file = divmod(from_square, 8)
    if plane < 56:
        (dr, df), distance = LC0_DIRECTIONS[plane // 7], plane % 7 + 1
        to_rank, to_file = rank + dr * distance, file + df * distance
    elif plane < 64:
        dr, df = LC0_KNIGHT_JUMPS[plane - 56]
        to_rank, to_file = rank + dr, file + df
    else:
        df, piece = (plane - 64) // 3 - 1, "rbq"[(plane - 64) % 3]
        if rank != 6 or not 0 <= file + df < 8:
            return ""
        return chess.SQUARE_NAMES[from_square] + chess.SQUARE_NAMES[56 + file + df] + piece
    if not (0 <= to_rank < 8 and 0 <= to_file < 8):
        return ""
    return chess.SQUARE_NAMES[from_square] + chess.SQUARE_NAMES[to_rank * 8 + to_file]


def lc0_move_string(board: chess.Board, move: chess.Move) -> str:
    """``move`` as Lc0's network names it: from the side to move's point of view, castling as the king taking
    its rook, a knight promotion as the plain move."""
    to_square = move.to_square
    if board.is_castling(move) and not board.chess960:
        rank = chess.square_rank(move.from_square)
        to_square = chess.square(7 if to_square > move.from_square else 0, rank)
    from_square = move.from_square
    if board.turn == chess.BLACK:
        from_square, to_square = chess.square_mirror(from_square), chess.square_mirror(to_square)
    name = chess.SQUARE_NAMES[from_square] + chess.SQUARE_NAMES[to_square]
    if move.promotion in (chess.QUEEN, chess.ROOK, chess.BISHOP):
        name += chess.piece_symbol(move.promotion)
    return name


# ------------------------------------------------------------- forward pass


def _activation(x: np.ndarray, kind: str) -> np.ndarray:
    return np.maximum(x, 0) if kind == "relu" else x * np.tanh(np.logaddexp(0, x))


def _conv(x: np.ndarray, layers: dict, name: str) -> np.ndarray:
    """Lc0's convolution block: convolution (same padding), its bias, batch norm with the raw statistics (an old
    block without gammas and betas: 1 and 0)."""
    weights = layers[f"{name}.w"]
    kernel = weights.shape[-1]
    pad = kernel // 2
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((weights.shape[0], 8, 8))
    for dy in range(kernel):
        for dx in range(kernel):
            out += np.einsum("oi,ihw->ohw", weights[:, :, dy, dx], padded[:, dy:dy + 8, dx:dx + 8])
    if f"{name}.b" in layers:
        out += layers[f"{name}.b"][:, None, None]
    if f"{name}.mean" in layers:
        gamma = layers.get(f"{name}.gamma", np.ones(weights.shape[0]))
        beta = layers.get(f"{name}.beta", np.zeros(weights.shape[0]))
        out = (out - layers[f"{name}.mean"][:, None, None]) / np.sqrt(layers[f"{name}.var"][:, None, None] + 1e-5)
        out = out * gamma[:, None, None] + beta[:, None, None]
    return out


def forward(spec: Spec, layers: Layers, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The policy (1858 logits, or the convolutional head's 80x8x8 output) and the value head's output (3
    logits, or the scalar before its tanh) of Lc0's planes (112, 8, 8)."""
    values, act = layers.values, spec.activation
    x = _activation(_conv(planes, values, "input"), act)
    for index in range(spec.blocks):
        hidden = _activation(_conv(x, values, f"res{index}.conv1"), act)
        out = _conv(hidden, values, f"res{index}.conv2")
        if spec.se:
            pooled = out.mean(axis=(1, 2))
            squeezed = _activation(values[f"res{index}.se1.w"] @ pooled + values[f"res{index}.se1.b"], act)
            excited = values[f"res{index}.se2.w"] @ squeezed + values[f"res{index}.se2.b"]
            scale, bias = excited[:spec.filters], excited[spec.filters:]
            out = out / (1 + np.exp(-scale))[:, None, None] + bias[:, None, None]
        x = _activation(out + x, act)
    if spec.policy == "convolution":
        policy = _conv(_activation(_conv(x, values, "policy1"), act), values, "policy")
    else:
        flat = _activation(_conv(x, values, "policy"), act).ravel()
        policy = values["ip_pol.w"] @ flat + values["ip_pol.b"]
    flat = _activation(_conv(x, values, "value"), act).ravel()
    hidden = _activation(values["ip1_val.w"] @ flat + values["ip1_val.b"], act)
    return policy, values["ip2_val.w"] @ hidden + values["ip2_val.b"]


def reference_evaluation(spec: Spec, layers: Layers, root: chess.Board, moves: list[chess.Move]
                         ) -> tuple[dict[chess.Move, float], float, float]:
    """The priors over the legal moves (softmax of their logits), the value W - L and the draw probability of
    the game's last position, by :func:`forward`."""
    board = root.copy(stack=False)
    for move in moves:
        board.push(move)
    policy, value = forward(spec, layers, lc0_planes(root, moves))
    index = {name: i for i, name in enumerate(lc0_move_strings())}
    conv_map = lc0_conv_map()
    legal = list(board.legal_moves)
    if spec.policy == "convolution":
        position = {lc0: i for i, lc0 in enumerate(conv_map) if lc0 >= 0}
        flat = policy.ravel()
        logits = np.array([flat[position[index[lc0_move_string(board, move)]]] for move in legal])
    else:
        logits = np.array([policy[index[lc0_move_string(board, move)]] for move in legal])
    weights = np.exp(logits - logits.max())
    priors = dict(zip(legal, weights / weights.sum()))
    if spec.value == "wdl":
        wdl = np.exp(value - value.max())
        wdl /= wdl.sum()
        return priors, float(wdl[0] - wdl[2]), float(wdl[1])
    return priors, float(np.tanh(value[0])), 0.0
