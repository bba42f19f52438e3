"""Every use of python-chess's private names, in one place.

The searches need a few things python-chess keeps private: a position's exact
key, the stack of states behind its move stack (repetitions, the PUCT tree's
stored positions), and the pin and king-safety tests of its move generator.
Only this module touches them, so a python-chess release that renames one
breaks one file; pyproject.toml bounds the versions the tests cover.
"""

from __future__ import annotations

from typing import Hashable

import chess

#: A position without its move stack (python-chess's board state): ``BoardState(board)`` takes one,
#: ``state.restore(board)`` puts it back.
BoardState = chess._BoardState


def transposition_key(board: chess.Board) -> Hashable:
    """The position's exact key (pieces, side to move, castling rights, en-passant square)."""
    return board._transposition_key()


def state_stack(board: chess.Board) -> list[BoardState]:
    """The position before each move of ``board.move_stack``, oldest first: the list itself, so that a search
    may append to it, with the moves to ``board.move_stack``, to give a position set by a state its history."""
    return board._stack


def truncate_history(board: chess.Board, length: int) -> None:
    """Drop the history beyond its first ``length`` moves without unmaking them (restore a state after)."""
    del board.move_stack[length:], board._stack[length:]


def slider_blockers(board: chess.Board, king: chess.Square) -> chess.Bitboard:
    """Pieces of the king's side that alone stand between ``king`` and an enemy slider (pinned pieces)."""
    return board._slider_blockers(king)


def is_safe(board: chess.Board, king: chess.Square, blockers: chess.Bitboard, move: chess.Move) -> bool:
    """python-chess's test that a pseudo-legal ``move`` leaves the king of the side to move safe."""
    return board._is_safe(king, blockers, move)
