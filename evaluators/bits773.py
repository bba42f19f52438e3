"""DeepChess's 773-bit position encoding, always from White's point of view.

Bits 0-767: colour (White first) x piece type (P, N, B, R, Q, K) x square (a1 = 0);
bit 768: White to move; bits 769-772: castling rights K, Q, k, q.
"""

from __future__ import annotations

from typing import Iterable

import chess
import numpy as np

INPUT_SIZE = 773
SIDE_TO_MOVE = 768
CASTLING = {chess.BB_H1: 769, chess.BB_A1: 770, chess.BB_H8: 771, chess.BB_A8: 772}


def piece_feature(color: chess.Color, piece_type: chess.PieceType, square: chess.Square) -> int:
    return (0 if color == chess.WHITE else 384) + (piece_type - 1) * 64 + square


def active_features(board: chess.Board) -> list[int]:
    """Indices of the bits set for ``board``."""
    features = [piece_feature(piece.color, piece.piece_type, square) for square, piece in board.piece_map().items()]
    if board.turn == chess.WHITE:
        features.append(SIDE_TO_MOVE)
    rights = board.clean_castling_rights()
    features += [index for mask, index in CASTLING.items() if rights & mask]
    return features


def board_of_features(features: Iterable[int]) -> chess.Board:
    """The position whose set bits are ``features`` (the inverse of :func:`active_features`): pieces, side to move
    and castling rights; the 773 bits keep no en passant square and no move clocks."""
    board = chess.Board(None)
    board.turn = chess.BLACK
    rights = 0
    for feature in features:
        if feature < SIDE_TO_MOVE:
            colour, rest = divmod(feature, 384)  # piece_feature: colour x piece type x square
            piece_type, square = divmod(rest, 64)
            board.set_piece_at(square, chess.Piece(piece_type + 1, chess.WHITE if colour == 0 else chess.BLACK))
        elif feature == SIDE_TO_MOVE:
            board.turn = chess.WHITE
        else:
            rights |= next(mask for mask, index in CASTLING.items() if index == feature)
    board.castling_rights = rights
    return board


def encode(board: chess.Board) -> np.ndarray:
    """The 773 bits as a float32 vector."""
    bits = np.zeros(INPUT_SIZE, dtype=np.float32)
    bits[active_features(board)] = 1.0
    return bits


def move_delta(board: chess.Board, move: chess.Move) -> tuple[list[int], list[int]]:
    """(features removed, features added) by playing ``move`` on ``board`` (before it is pushed).

    This is what lets the comparator update its first layer incrementally. A null move
    (``chess.Move.null()``, a search passing) changes the side to move only.
    """
    color = board.turn
    if not move:
        return ([SIDE_TO_MOVE], []) if color == chess.WHITE else ([], [SIDE_TO_MOVE])
    piece_type = board.piece_type_at(move.from_square)
    assert piece_type is not None, f"no piece on {chess.square_name(move.from_square)}"
    removed = [piece_feature(color, piece_type, move.from_square)]
    added = [piece_feature(color, move.promotion or piece_type, move.to_square)]
    if board.is_castling(move):
        rook_from = move.to_square if board.piece_type_at(move.to_square) == chess.ROOK and \
            board.color_at(move.to_square) == color else None
        king_side = chess.square_file(move.to_square) > chess.square_file(move.from_square)
        rank = chess.square_rank(move.from_square)
        if rook_from is None:  # standard notation e1g1: the rook is in the corner
            rook_from = chess.square(7 if king_side else 0, rank)
        rook_to = chess.square(5 if king_side else 3, rank)
        king_to = chess.square(6 if king_side else 2, rank)
        added = [piece_feature(color, chess.KING, king_to), piece_feature(color, chess.ROOK, rook_to)]
        removed.append(piece_feature(color, chess.ROOK, rook_from))
    elif board.is_en_passant(move):
        captured_square = move.to_square + (-8 if color == chess.WHITE else 8)
        removed.append(piece_feature(not color, chess.PAWN, captured_square))
    else:
        captured = board.piece_type_at(move.to_square)
        if captured is not None:
            removed.append(piece_feature(not color, captured, move.to_square))
    if color == chess.WHITE:
        removed.append(SIDE_TO_MOVE)
    else:
        added.append(SIDE_TO_MOVE)
    before = board.clean_castling_rights()
    touched = chess.BB_SQUARES[move.from_square] | chess.BB_SQUARES[move.to_square]
    if piece_type == chess.KING:
        touched |= chess.BB_RANK_1 if color == chess.WHITE else chess.BB_RANK_8
    for mask, index in CASTLING.items():
        if before & mask and touched & mask:
            removed.append(index)
    return removed, added
