"""Board encodings for the policy-value network, shared by the engine and training.

Every plane is from the side to move's point of view (the board is flipped
vertically for Black, and "own" pieces come first). An encoding splits into
binary planes (stored bit-packed in training shards) and the fifty-move
counter plane, which is stored as one byte and expanded when a batch is built.

- ``planes18``: no history. 12 piece planes, 4 castling planes, 1 en-passant
  plane, then the fifty-move plane: the compact design of common PyTorch engines.
- ``lc0-112``: exactly Lc0's classical input (INPUT_CLASSICAL_112_PLANE, src/neural/encoder.cc), in this
  project's order: 8 positions of history x (12 piece planes + a repetition plane), 4 castling planes
  (we O-O-O, we O-O, they O-O-O, they O-O), side to move (ones for Black), an all-zeros and an all-ones plane
  (111 binary planes), then the fifty-move plane (Lc0 has the raw ply count before the zeros and ones).
  The history is the game's (the board's move stack), each position seen by the side to move now; a position's
  repetition plane says it occurred before in the game since the last capture or pawn move. Where the game is
  shorter than 8 positions, Lc0's default (``HistoryFill`` fen_only) fills the rest: nothing if the game began
  at the standard start position, else copies of its first position, with the pawn of an en-passant square
  moved back.
- ``features36``: ``planes18``'s 17 binary planes in the same order (so that a network grown from a ``planes18``
  one, the new input channels' weights at zero, computes the same function), 18 binary planes cheap to compute
  at play time (after Czech et al. 2024, "Representation matters for mastering chess", arXiv 2304.14918), then
  the fifty-move plane:

  17 our pieces; 18 their pieces; 19 the checkers (the pieces giving check to the side to move, none when it is
  not in check); 20 opposite-coloured bishops (ones where each side has exactly one bishop and the two stand on
  squares of different colours); 21-25 ones where we have more pawns, knights, bishops, rooks, queens (a plane
  each) than they have, 26-30 where we have fewer; 31-32 the from and to squares of the game's last move (theirs),
  33-34 those of the move before it (ours).

  The last moves are the board's move stack's (:func:`last_move_squares`), castling as the king's move to its
  g- or c-file square in standard chess and Chess960 alike; their planes are empty where the game has fewer
  moves (a FEN without moves has none, a FEN and one move has no move before the last) or the move is a null move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import chess
import numpy as np

from hackmate_core.boards import BoardState, state_stack

PIECE_ORDER = [chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING]
#: A plane of ones.
FULL = 0xFFFFFFFFFFFFFFFF
#: The fifty-move plane holds min(plies, FIFTY_MOVE_PLIES) / FIFTY_MOVE_PLIES.
FIFTY_MOVE_PLIES = 100
#: The encodings' names: what a network's metadata, a shard's meta.json and the options say.
PLANES18, LC0_112, FEATURES36 = "planes18", "lc0-112", "features36"
#: The castling planes of each encoding, by the rook of each right in the side to move's frame (H1: our O-O).
PLANES18_CASTLING = (chess.H1, chess.A1, chess.H8, chess.A8)
LC0_CASTLING = (chess.A1, chess.H1, chess.A8, chess.H8)
#: The positions of Lc0's history.
LC0_HISTORY = 8
#: The moves of the game whose squares ``features36`` shows, the last first.
FEATURES_LAST_MOVES = 2
#: ``features36``'s material planes compare these piece types' counts.
MATERIAL_TYPES = PIECE_ORDER[:5]


def _castling_bits(board: chess.Board, us: chess.Color, rooks: Sequence[chess.Square]) -> list[int]:
    """The castling planes in the order of ``rooks`` (:data:`PLANES18_CASTLING`, :data:`LC0_CASTLING`)."""
    return [FULL if (board.has_kingside_castling_rights if chess.square_file(rook) == 7
                     else board.has_queenside_castling_rights)(us if rook < 8 else not us) else 0
            for rook in rooks]


@dataclass(frozen=True)
class Encoding:
    """A named board encoding: ``binary_planes`` bool planes followed by one fifty-move plane."""

    name: str
    binary_planes: int
    #: The positions of the game whose pieces the planes show: 1 (the position alone) or Lc0's history.
    history: int
    #: The order of the castling planes (:data:`PLANES18_CASTLING`, :data:`LC0_CASTLING`).
    castling_rooks: tuple[chess.Square, ...]
    #: The binary planes of a board as bitboards, not yet flipped for Black.
    unflipped: Callable[[chess.Board], list[int]]
    #: The game's moves whose squares the planes show (:func:`last_move_squares`).
    last_moves: int = 0
    #: The encoding whose binary planes this one's begin with (in the same order): a network of that encoding grows
    #: into one of this with the new planes' weights at zero and computes the same function (training's grow).
    extends: str = ""

    @property
    def position_only(self) -> bool:
        """Whether the planes are a function of the position alone (no history, no last moves): a position and
        its mirror image, or a transposition, are encoded alike whatever the game."""
        return self.history == 1 and not self.last_moves

    @property
    def planes(self) -> int:
        return self.binary_planes + 1

    @property
    def castling_planes(self) -> slice:
        """Where the four castling-rights planes are: after the piece planes (and repetition planes)."""
        first = 12 if self.history == 1 else 13 * self.history
        return slice(first, first + 4)

    def bitboards(self, board: chess.Board) -> list[int]:
        """The binary planes of ``board`` as bitboards, not yet flipped for Black (:func:`unpack_unflipped`)."""
        return self.unflipped(board)

    def binary(self, board: chess.Board) -> np.ndarray:
        """The bool planes (binary_planes, 8, 8) of ``board``."""
        return unpack_unflipped(np.array([self.bitboards(board)], dtype=np.uint64),
                                np.array([board.turn == chess.BLACK]))[0]

    def packed(self, board: chess.Board) -> np.ndarray:
        """:meth:`binary`'s planes bit-packed as the training data keeps them: uint8, bits little-endian, plane by
        plane."""
        return np.packbits(self.binary(board).reshape(-1), bitorder="little")

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
        for right, rook in zip(rights, self.castling_rooks):
            if right:
                board.castling_rights |= chess.BB_SQUARES[rook]
        en_passant = self.castling_planes.stop  # planes18's and features36's; lc0-112 has none
        if self.history == 1 and squares[en_passant]:
            board.ep_square = chess.lsb(int(squares[en_passant]))
        return board

    def encode(self, board: chess.Board) -> np.ndarray:
        """Float32 planes (planes, 8, 8), ready for the network."""
        return assemble(self.binary(board)[None], np.array([board.halfmove_clock], dtype=np.uint8))[0]


def _lc0_ep_flag(position: BoardState, first: bool) -> Optional[chess.Square]:
    """The en-passant square as Lc0's board keeps it: after a double step only where a pawn of the side to move
    stands beside the pawn that made it, and in the game's first position (a FEN) as given."""
    square = position.ep_square
    if square is None or first:
        return square
    movers = position.pawns & (position.occupied_w if position.turn == chess.WHITE else position.occupied_b)
    return square if movers & chess.BB_PAWN_ATTACKS[not position.turn][square] else None


def _lc0_key(position: BoardState, first: bool) -> tuple:
    """What Lc0 compares when it looks for a repetition: pieces, side to move, castling rights, en passant."""
    return (position.pawns, position.knights, position.bishops, position.rooks, position.queens, position.kings,
            position.occupied_w, position.occupied_b, position.turn, position.castling_rights,
            _lc0_ep_flag(position, first))


def _lc0_repeated(game: Sequence[BoardState], index: int) -> bool:
    """Whether ``game[index]`` occurred before in ``game`` (the positions from its first on) as Lc0 counts it
    (PositionHistory::ComputeLastMoveRepetitions): the same side to move at least four plies back, looking no
    further than the last capture or pawn move."""
    position = game[index]
    if position.halfmove_clock < 4:
        return False
    key = None
    for earlier in range(index - 4, -1, -2):
        before = game[earlier]
        if before.occupied == position.occupied:
            if key is None:
                key = _lc0_key(position, index == 0)
            if _lc0_key(before, earlier == 0) == key:
                return True
        if before.halfmove_clock < 2:
            return False
    return False


def _is_standard_start(position: BoardState) -> bool:
    """Whether a position is the standard start position (Lc0's kStartposBoard: side to move, castling rights
    and en passant included; the move counters are no part of a board)."""
    return _lc0_key(position, True) == _START_KEY


_START_KEY = _lc0_key(BoardState(chess.Board()), True)


def lc0_history(board: chess.Board) -> list[list[int]]:
    """The positions of the ``lc0-112`` history of ``board`` and its move stack, the board's own first: for each,
    White's pawns to king, Black's pawns to king and the repetition plane, 13 bitboards not yet flipped (Lc0's
    EncodePositionForNN with FillEmptyHistory::FEN_ONLY, which its search uses by default). PUCT's compiled leaves
    take those of a search's root from here (:meth:`evaluators.resnet.ResNetEvaluator.leaf_history`)."""
    game = [*state_stack(board), BoardState(board)]  # the game's positions, its first one first
    now = len(game) - 1
    history: list[list[int]] = []
    for back in range(LC0_HISTORY):
        index = now - back
        if index < 0:  # before the game's first position: Lc0 fills these from it, unless it is the start
            first = game[0]
            if _is_standard_start(first):
                history += [[0] * 13 for _ in range(LC0_HISTORY - back)]
                break
            block = _lc0_pieces(first, chess.WHITE)
            if first.ep_square is not None:  # the pawn that made the double step goes back to its square
                step = 8 if chess.square_rank(first.ep_square) == 2 else -8
                plane = 0 if step == 8 else 6
                block[plane] = block[plane] & ~chess.BB_SQUARES[first.ep_square + step] \
                    | chess.BB_SQUARES[first.ep_square - step]
            history.append(block + [0])  # the first position has no repetitions
        else:
            history.append(_lc0_pieces(game[index], chess.WHITE) + [FULL if _lc0_repeated(game, index) else 0])
    return history


def lc0_bitboards(board: chess.Board) -> list[int]:
    """The ``lc0-112`` binary planes of ``board`` and its move stack as 111 bitboards, not yet flipped for Black:
    :func:`lc0_history` seen by the side to move (its pieces first), then the castling and constant planes."""
    us = board.turn
    bitboards: list[int] = []
    for block in lc0_history(board):
        bitboards += (block[:12] if us == chess.WHITE else block[6:12] + block[:6]) + block[12:]
    bitboards += _castling_bits(board, us, LC0_CASTLING)
    bitboards += [FULL if us == chess.BLACK else 0, 0, FULL]
    return bitboards


def _lc0_pieces(position: BoardState, us: chess.Color) -> list[int]:
    """12 bitboards of a position: ``us``'s pawns to king, then the other side's (not flipped)."""
    pieces = (position.pawns, position.knights, position.bishops, position.rooks, position.queens, position.kings)
    ours, theirs = (position.occupied_w, position.occupied_b) if us == chess.WHITE else \
        (position.occupied_b, position.occupied_w)
    return [bb & ours for bb in pieces] + [bb & theirs for bb in pieces]


def unflipped_bitboards(board: chess.Board) -> list[int]:
    """The ``planes18`` binary planes of ``board`` as 17 bitboards, not yet flipped for Black.

    Taking 17 integers from the board is all the per-position Python work of an
    encoding; :func:`unpack_unflipped` turns a whole batch into planes at once.
    """
    us = board.turn
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    pieces = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    ep = board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else None
    return ([bb & ours for bb in pieces] + [bb & theirs for bb in pieces]
            + _castling_bits(board, us, PLANES18_CASTLING) + [0 if ep is None else 1 << ep])


def last_move_squares(board: chess.Board) -> list[int]:
    """The from and to squares of the last :data:`FEATURES_LAST_MOVES` moves of ``board``'s move stack, the last
    first (-1, -1 for a move the stack does not have, or a null move): castling as the king's move to its g- or
    c-file square (python-chess keeps e1g1 in standard chess, the king taking its rook in Chess960)."""
    moves, before = board.move_stack, state_stack(board)
    squares: list[int] = []
    for back in range(1, FEATURES_LAST_MOVES + 1):
        move = moves[-back] if back <= len(moves) else None
        if not move:  # none, or a null move
            squares += [-1, -1]
            continue
        origin, target, position = move.from_square, move.to_square, before[-back]
        if position.kings & chess.BB_SQUARES[origin] and (
                abs(chess.square_file(origin) - chess.square_file(target)) > 1
                or position.rooks & chess.BB_SQUARES[target] & (position.occupied_w if position.turn == chess.WHITE
                                                                else position.occupied_b)):
            target = chess.square(6 if target > origin else 2, chess.square_rank(origin))
        squares += [origin, target]
    return squares


def feature_bitboards(board: chess.Board) -> list[int]:
    """The ``features36`` binary planes of ``board`` and its move stack as 35 bitboards, not yet flipped for
    Black (the module's docstring lists them)."""
    planes = unflipped_bitboards(board)
    us = board.turn
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    bishops = board.bishops
    opposite = (chess.popcount(bishops & ours) == 1 and chess.popcount(bishops & theirs) == 1
                and chess.popcount(bishops & chess.BB_LIGHT_SQUARES) == 1)
    counts = [(chess.popcount(planes[index]), chess.popcount(planes[index + 6]))
              for index in range(len(MATERIAL_TYPES))]
    return (planes + [ours, theirs, board.checkers_mask(), FULL if opposite else 0]
            + [FULL if own > other else 0 for own, other in counts]
            + [FULL if own < other else 0 for own, other in counts]
            + [0 if square < 0 else 1 << square for square in last_move_squares(board)])


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
    out[:, -1] = (np.minimum(rule50, FIFTY_MOVE_PLIES).astype(np.float32) / FIFTY_MOVE_PLIES)[:, None, None]
    return out


ENCODINGS = {e.name: e for e in (Encoding(PLANES18, 17, 1, PLANES18_CASTLING, unflipped_bitboards),
                                  Encoding(LC0_112, 111, LC0_HISTORY, LC0_CASTLING, lc0_bitboards),
                                  Encoding(FEATURES36, 35, 1, PLANES18_CASTLING, feature_bitboards,
                                           FEATURES_LAST_MOVES, extends=PLANES18))}


def get_encoding(name: str) -> Encoding:
    try:
        return ENCODINGS[name]
    except KeyError:
        raise KeyError(f"unknown board encoding {name!r} (known: {', '.join(ENCODINGS)})") from None
