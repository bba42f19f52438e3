"""Perft and divide: how many legal move sequences of a given length a position has, on either path.

Perft counts that are published for standard positions check a move generator exhaustively, and the
compiled board must agree with python-chess move for move (``go perft N``, tools/perft_check.py,
tests/hackmate_core/test_perft.py). The compiled path counts in C when it is active and takes the position (see
:mod:`hackmate_core.compiled`); the pure-Python path counts with :func:`hackmate_core.rules.legal_moves`.
"""

from __future__ import annotations

from typing import Any, Optional

import chess

from hackmate_core import compiled, rules

#: The deepest perft either path accepts (deeper would run for days).
MAX_DEPTH = 32


def compiled_board(board: chess.Board) -> Optional[Any]:
    """The position as a compiled board, or None when the compiled path is off or does not take the position."""
    if compiled.cboard is None:
        return None
    try:
        return compiled.cboard.Board.from_board(board, history=False)
    except ValueError:
        return None


def perft(board: chess.Board, depth: int, use_compiled: Optional[bool] = None) -> int:
    """The number of legal move sequences ``depth`` plies long from ``board``.

    ``use_compiled``: None takes the compiled path when it can, False the pure-Python path, True the compiled path
    or ValueError.
    """
    _check_depth(depth, 0)
    fast = _board_for(board, use_compiled)
    if fast is not None:
        return fast.perft(depth)
    return _pure_perft(board.copy(), depth)


def divide(board: chess.Board, depth: int, use_compiled: Optional[bool] = None) -> list[tuple[chess.Move, int]]:
    """Each legal move of ``board`` in python-chess's order with the perft ``depth - 1`` of the position after it."""
    _check_depth(depth, 1)
    fast = _board_for(board, use_compiled)
    if fast is not None:
        return [(compiled.code_move(code), nodes) for code, nodes in fast.divide(depth)]
    scratch = board.copy()
    counts = []
    for move in rules.legal_moves(scratch):
        scratch.push(move)
        counts.append((move, _pure_perft(scratch, depth - 1)))
        scratch.pop()
    return counts


def _check_depth(depth: int, least: int) -> None:
    if not least <= depth <= MAX_DEPTH:
        raise ValueError(f"perft depth must be between {least} and {MAX_DEPTH}, not {depth}")


def _board_for(board: chess.Board, use_compiled: Optional[bool]) -> Optional[Any]:
    if use_compiled is None:
        return compiled_board(board)
    if not use_compiled:
        return None
    if compiled.cboard is None:
        raise ValueError(compiled.why_not)
    return compiled.cboard.Board.from_board(board, history=False)  # its ValueError says why it refuses


def _pure_perft(board: chess.Board, depth: int) -> int:
    if depth == 0:
        return 1
    moves = rules.legal_moves(board)
    if depth == 1:
        return len(moves)
    nodes = 0
    for move in moves:
        board.push(move)
        nodes += _pure_perft(board, depth - 1)
        board.pop()
    return nodes
