"""Killer moves, kept alike by both alpha-beta searches (alphabeta.py, comparison.py) and their C (ckillers.h).

Per ply, the last two moves that cut off there without a capture, newest first: tried early at the same ply of
another branch, where they often cut off again. Which moves count is each search's (see its caller).
"""

from __future__ import annotations

from typing import Optional

import chess


class Killers:
    """The killer moves of each ply below ``plies``."""

    def __init__(self, plies: int) -> None:
        self.plies = plies
        self.table: list[list[Optional[chess.Move]]] = []
        self.clear()

    def clear(self) -> None:
        """Forget every killer (a new search)."""
        self.table = [[None, None] for _ in range(self.plies)]

    def at(self, ply: int) -> list[Optional[chess.Move]]:
        """The ply's killers, newest first (None where there is none yet)."""
        return self.table[ply]

    def remember(self, ply: int, move: chess.Move) -> None:
        """``move`` cut off at ``ply``: it becomes the newest killer there (once, however often it cuts off)."""
        killers = self.table[ply]
        if killers[0] != move:
            killers[0], killers[1] = move, killers[0]
