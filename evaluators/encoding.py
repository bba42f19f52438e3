"""Board encodings for the policy-value network, shared by the engine and training.

Every plane is from the side to move's point of view (the board is flipped
vertically for Black, and "own" pieces come first). An encoding splits into
binary planes (stored bit-packed in training shards) and the fifty-move
counter plane, which is stored as one byte and expanded when a batch is built.

- ``planes18``: no history. 12 piece planes, 4 castling planes, 1 en-passant
  plane, then the fifty-move plane: the compact design of common PyTorch engines.
- ``lc0-112``: Leela-style. 8 positions of history x (12 piece planes + a
  repetition plane), 4 castling planes, side-to-move colour, an all-zeros and
  an all-ones plane (111 binary planes), then the fifty-move plane: 112 in all.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess
import numpy as np

PIECE_ORDER = [chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING]


def _bitboards(board: chess.Board, us: chess.Color) -> list[int]:
    """12 bitboards (ours P..K then theirs), flipped so that ``us`` plays up the board."""
    boards = []
    for color in (us, not us):
        occupied = board.occupied_co[color]
        for bb in (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings):
            boards.append(bb & occupied)
    if us == chess.BLACK:
        boards = [chess.flip_vertical(bb) for bb in boards]
    return boards


def _unpack(bitboards: list[int]) -> np.ndarray:
    """List of bitboards -> bool array (len, 8, 8) with [rank][file] = square rank*8+file."""
    raw = np.array(bitboards, dtype="<u8").view(np.uint8)
    return np.unpackbits(raw, bitorder="little").reshape(len(bitboards), 8, 8).astype(bool)


def _castling_bits(board: chess.Board, us: chess.Color) -> list[int]:
    full = 0xFFFFFFFFFFFFFFFF
    return [full if flag else 0 for flag in (board.has_kingside_castling_rights(us),
                                             board.has_queenside_castling_rights(us),
                                             board.has_kingside_castling_rights(not us),
                                             board.has_queenside_castling_rights(not us))]


@dataclass(frozen=True)
class Encoding:
    """A named board encoding: ``binary_planes`` bool planes followed by one fifty-move plane."""

    name: str
    binary_planes: int
    history: int

    @property
    def planes(self) -> int:
        return self.binary_planes + 1

    @property
    def castling_planes(self) -> slice:
        """Where the four castling-rights planes are: after the piece planes (and repetition planes)."""
        first = 12 if self.history == 1 else 13 * self.history
        return slice(first, first + 4)

    def binary(self, board: chess.Board) -> np.ndarray:
        """The bool planes (binary_planes, 8, 8) of ``board``."""
        us = board.turn
        if self.history == 1:
            return unpack_unflipped(np.array([unflipped_bitboards(board)], dtype=np.uint64),
                                    np.array([us == chess.BLACK]))[0]
        bbs: list[int] = []
        replay = board.copy(stack=self.history)
        for step in range(self.history):
            if step > 0:
                if not replay.move_stack:
                    bbs.extend([0] * 13)
                    continue
                replay.pop()
            bbs.extend(_bitboards(replay, us))
            bbs.append(0xFFFFFFFFFFFFFFFF if replay.is_repetition(2) else 0)
        bbs += _castling_bits(board, us)
        bbs += [0xFFFFFFFFFFFFFFFF if us == chess.BLACK else 0, 0, 0xFFFFFFFFFFFFFFFF]
        return _unpack(bbs)

    def mover_board(self, binary: np.ndarray) -> chess.Board:
        """The position of bool planes (binary_planes, 8, 8) as the network sees it: the side to move as
        White, playing up the board (move counters unknown).

        Its legal moves have the policy slots of the encoded position's legal moves, so training data
        without FENs can still be restricted to legal moves. ``lc0-112`` keeps no en-passant plane: an
        en-passant capture is missing from such a board.
        """
        squares = np.packbits(binary.reshape(binary.shape[0], 64), axis=1, bitorder="little").view("<u8")[:, 0]
        board = chess.Board.empty()
        for offset, color in ((0, chess.WHITE), (6, chess.BLACK)):
            for piece_type, bb in zip(PIECE_ORDER, squares[offset:offset + 6]):
                for square in chess.scan_forward(int(bb)):
                    board.set_piece_at(square, chess.Piece(piece_type, color))
        rights = [bool(squares[plane]) for plane in range(self.castling_planes.start, self.castling_planes.stop)]
        for right, rook in zip(rights, (chess.H1, chess.A1, chess.H8, chess.A8)):
            if right:
                board.castling_rights |= chess.BB_SQUARES[rook]
        en_passant = self.castling_planes.stop  # planes18's last binary plane; lc0-112 has none
        if self.history == 1 and squares[en_passant]:
            board.ep_square = chess.lsb(int(squares[en_passant]))
        return board

    def encode(self, board: chess.Board) -> np.ndarray:
        """Float32 planes (planes, 8, 8), ready for the network."""
        return assemble(self.binary(board)[None], np.array([board.halfmove_clock], dtype=np.uint8))[0]


def unflipped_bitboards(board: chess.Board) -> list[int]:
    """The ``planes18`` binary planes of ``board`` as 17 bitboards, not yet flipped for Black.

    Taking 17 integers from the board is all the per-position Python work of an
    encoding; :func:`unpack_unflipped` turns a whole batch into planes at once.
    """
    us = board.turn
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    pieces = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    ep = board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else None
    return ([bb & ours for bb in pieces] + [bb & theirs for bb in pieces] + _castling_bits(board, us)
            + [0 if ep is None else 1 << ep])


def unpack_unflipped(bitboards: np.ndarray, black: np.ndarray) -> np.ndarray:
    """uint64 bitboards (N, C) of :func:`unflipped_bitboards` and who is to move (N,) -> bool planes (N, C, 8, 8),
    flipped vertically where Black is to move."""
    n, channels = bitboards.shape
    planes = np.unpackbits(bitboards.astype("<u8").view(np.uint8), bitorder="little").reshape(n, channels, 8, 8)
    if black.any():
        planes[black] = planes[black][:, :, ::-1, :]
    return planes.astype(bool)


def assemble(binary: np.ndarray, rule50: np.ndarray) -> np.ndarray:
    """Bool planes (N, C, 8, 8) + fifty-move counters (N,) -> float32 network input (N, C+1, 8, 8)."""
    n = binary.shape[0]
    out = np.empty((n, binary.shape[1] + 1, 8, 8), dtype=np.float32)
    out[:, :-1] = binary
    out[:, -1] = (np.minimum(rule50, 100).astype(np.float32) / 100.0)[:, None, None]
    return out


ENCODINGS = {e.name: e for e in (Encoding("planes18", 17, 1), Encoding("lc0-112", 111, 8))}


def get_encoding(name: str) -> Encoding:
    try:
        return ENCODINGS[name]
    except KeyError:
        raise KeyError(f"unknown board encoding {name!r} (known: {', '.join(ENCODINGS)})") from None
