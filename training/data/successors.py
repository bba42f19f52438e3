"""A position's piece planes from its predecessor's and the move between them: consecutive positions of a game
stored as moves, which a corpus pack (training.data.pack) uses to hold them in a fraction of their size.

Planes are rows of bit-packed ``planes18`` planes (evaluators.encoding; 17 planes of 8 bytes, byte ``r`` of a
plane its rank ``r``, bit ``f`` its file ``f``, from the side to move's point of view): read as little-endian
uint64, each plane is a bitboard in python-chess's square numbering, flipped vertically for Black. The first
twelve are the pieces (ours, then theirs: pawn, knight, bishop, rook, queen, king); :func:`successor_pieces`
plays a policy index (evaluators.moves) on them and turns the board to the opponent's point of view. The castling
and en-passant planes are not replayed: a pack keeps them for every row (constant along most of a game, they
cost next to nothing).

Nothing here knows the rules beyond moving pieces: :func:`replayable` checks, row by row, that replaying gives the
very planes stored, and only those rows are left out of a pack, so a wrong guess costs size, never correctness.
"""

from __future__ import annotations

import chess
import numpy as np

from evaluators.encoding import FEATURES36, FULL, MATERIAL_TYPES, PIECE_ORDER, PLANES18, get_encoding
from evaluators.moves import POLICY_SIZE, slot_move

#: Bytes of a planes18 row, and of its twelve piece planes (what comes before the castling planes).
ROW_BYTES = get_encoding(PLANES18).binary_planes * 8
PIECE_BYTES = get_encoding(PLANES18).castling_planes.start * 8
PAWN, BISHOP, ROOK, QUEEN, KING = (PIECE_ORDER.index(piece) for piece in (chess.PAWN, chess.BISHOP, chess.ROOK,
                                                                          chess.QUEEN, chess.KING))


def _move_table() -> np.ndarray:
    """(POLICY_SIZE, 3) int64: each slot's from square, to square and promoted piece's plane (-1: none, a queen
    promotion's is decided by the piece that moves); -1 rows encode no move."""
    table = np.full((POLICY_SIZE, 3), -1, dtype=np.int64)
    for index in range(POLICY_SIZE):
        key = slot_move(index)
        if key is not None:
            table[index] = (key[0], key[1], -1 if key[2] is None else PIECE_ORDER.index(key[2]))
    return table


MOVES = _move_table()


def _bit(square: np.ndarray) -> np.ndarray:
    """The bitboards of ``square`` (int64 array), shifts kept in range: their result beyond 63 differs by CPU."""
    return np.uint64(1) << np.clip(square, 0, 63).astype(np.uint64)


def pieces_of(planes: np.ndarray) -> np.ndarray:
    """(N, 12) uint64 piece bitboards of (N, ROW_BYTES) uint8 planes."""
    return np.ascontiguousarray(planes[:, :PIECE_BYTES]).view("<u8")


def successor_pieces(pieces: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """The (N, 12) piece bitboards after each row's policy-index move (N,), from the opponent's point of view.

    The moving piece is whichever of ours stands on the from square (a pawn reaching the last rank becomes a
    queen unless the slot names an underpromotion); a capture clears the to square of theirs, a king's two-file
    step takes its rook along, and a pawn's diagonal step to an empty square captures en passant. A row whose move
    starts on none of our pieces comes out with nothing moved (a capture cleared): :func:`replayable` rejects it."""
    start, end, promotion = (MOVES[moves, k] for k in range(3))
    ours, theirs = pieces[:, :6].copy(), pieces[:, 6:].copy()
    from_bit, to_bit = _bit(start), _bit(end)
    rows = np.arange(len(moves))
    on_from = (ours & from_bit[:, None]) != 0
    moving = np.where(on_from.any(axis=1) & (start >= 0), on_from.argmax(axis=1), -1)
    captures = ((theirs & to_bit[:, None]) != 0).any(axis=1)
    en_passant = (moving == PAWN) & (start % 8 != end % 8) & ~captures
    theirs &= ~to_bit[:, None]
    theirs[en_passant, PAWN] &= ~_bit(end[en_passant] - 8)
    valid = moving >= 0
    ours[rows[valid], moving[valid]] &= ~from_bit[valid]
    lands_as = np.where((moving == PAWN) & (end >= 56), np.where(promotion >= 0, promotion, QUEEN), moving)
    ours[rows[valid], lands_as[valid]] |= to_bit[valid]
    castles = (moving == KING) & (np.abs(end - start) == 2)
    rook_from = _bit(np.where(end > start, start + 3, start - 4)[castles])
    rook_to = _bit(np.where(end > start, start + 1, start - 1)[castles])
    ours[castles, ROOK] = (ours[castles, ROOK] & ~rook_from) | rook_to
    turned = np.concatenate([theirs, ours], axis=1)
    return turned.byteswap()  # reversing a bitboard's bytes reverses its ranks: the opponent plays up the board


def predecessor_moves(offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has_move, move) per row: whether the row before it has exactly one policy entry, and that entry (the move
    a game played there, in a game's engine-annotated rows)."""
    counts = np.diff(offsets)
    has_move = np.zeros(len(counts), dtype=bool)
    has_move[1:] = counts[:-1] == 1
    move = np.zeros(len(counts), dtype=np.int64)
    move[1:] = index[np.minimum(offsets[:-2], max(len(index) - 1, 0))] if len(index) else 0
    return has_move, move


def replayable(planes: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> np.ndarray:
    """(N,) bool: the rows whose piece planes are the previous row's single policy move played on its planes."""
    has_move, move = predecessor_moves(offsets, index)
    rows = np.flatnonzero(has_move)
    result = np.zeros(len(planes), dtype=bool)
    if len(rows):
        predicted = successor_pieces(pieces_of(planes[rows - 1]), move[rows])
        result[rows] = (predicted == pieces_of(planes[rows])).all(axis=1)
    return result


def replay(stored: np.ndarray, other_planes: np.ndarray, replayed: np.ndarray, offsets: np.ndarray,
           index: np.ndarray) -> np.ndarray:
    """The (N, ROW_BYTES) planes again: ``stored`` holds the piece planes of the rows not ``replayed``, in order;
    ``other_planes`` (N, ROW_BYTES - PIECE_BYTES) the castling and en-passant planes of every row. Chains of
    replayed rows are rebuilt a step at a time, every chain at once."""
    n = len(replayed)
    if n and replayed[0]:
        raise ValueError("the first row cannot be replayed")
    pieces = np.zeros((n, 12), dtype=np.uint64)
    pieces[~replayed] = pieces_of(stored)
    _, move = predecessor_moves(offsets, index)
    rows = np.arange(n)
    depth = rows - np.maximum.accumulate(np.where(replayed, 0, rows))  # steps since the chain's stored row
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 2))
    for first, last in zip(bounds[:-1], bounds[1:]):
        step = order[first:last]
        pieces[step] = successor_pieces(pieces[step - 1], move[step])
    return np.concatenate([pieces.view(np.uint8).reshape(n, PIECE_BYTES), other_planes], axis=1)


#: features36's planes beyond planes18's seventeen (evaluators.encoding), 8 bytes each.
EXTRA_BYTES = get_encoding(FEATURES36).binary_planes * 8 - ROW_BYTES
#: Set bits of each byte value.
_POPCOUNT = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)
#: Rows at a time in :func:`features36_extra` (its counts take 96 bytes a row).
_CHUNK = 1 << 20


def _popcount(bitboards: np.ndarray) -> np.ndarray:
    """The set squares of each of a (contiguous) array of uint64 bitboards, in its shape."""
    return _POPCOUNT[bitboards.view(np.uint8)].reshape(*bitboards.shape, 8).sum(axis=-1, dtype=np.int64)


def features36_extra(planes: np.ndarray, replayed: np.ndarray, offsets: np.ndarray, index: np.ndarray
                     ) -> np.ndarray:
    """(N, EXTRA_BYTES) uint8: features36's planes 17-34 as far as the rows' planes18 planes (N, ROW_BYTES) and the
    games' moves give them: exact for the pieces' planes (ours, theirs, opposite-coloured bishops, material more
    and fewer), empty for the checkers, and the last two moves where the rows before are the game's (``replayed``:
    the previous row's single policy move led here). A pack stores features36's planes as their difference from
    this (mostly zero), so a wrong guess costs size, never correctness."""
    n = len(planes)
    extra = np.zeros((n, EXTRA_BYTES // 8), dtype=np.uint64)
    full = np.uint64(FULL)
    for start in range(0, n, _CHUNK):
        rows = slice(start, min(n, start + _CHUNK))
        pieces = pieces_of(planes[rows])
        extra[rows, 0] = np.bitwise_or.reduce(pieces[:, :6], axis=1)
        extra[rows, 1] = np.bitwise_or.reduce(pieces[:, 6:], axis=1)
        counts = _popcount(pieces)
        light = _popcount((pieces[:, BISHOP] | pieces[:, 6 + BISHOP]) & np.uint64(chess.BB_LIGHT_SQUARES))
        opposite = (counts[:, BISHOP] == 1) & (counts[:, 6 + BISHOP] == 1) & (light == 1)
        extra[rows, 3] = np.where(opposite, full, np.uint64(0))
        ours, theirs = counts[:, :len(MATERIAL_TYPES)], counts[:, 6:6 + len(MATERIAL_TYPES)]
        extra[rows, 4:4 + len(MATERIAL_TYPES)] = np.where(ours > theirs, full, np.uint64(0))
        extra[rows, 9:9 + len(MATERIAL_TYPES)] = np.where(ours < theirs, full, np.uint64(0))
    _, move = predecessor_moves(offsets, index)
    last = np.flatnonzero(replayed)  # the opponent's move led here: squares of its frame, turned to ours
    extra[last, 14] = _bit(MOVES[move[last], 0] ^ 56)
    extra[last, 15] = _bit(MOVES[move[last], 1] ^ 56)
    before = last[replayed[last - 1]]  # our move before it, played in our frame (the first row is never replayed)
    extra[before, 16] = _bit(MOVES[move[before - 1], 0])
    extra[before, 17] = _bit(MOVES[move[before - 1], 1])
    return extra.view(np.uint8)
