"""Syzygy endgame tablebases through python-chess, shared by all searches."""

from __future__ import annotations

import os
from typing import Optional

import chess
import chess.syzygy


class Tablebase:
    """Syzygy tables from one or more directories (separated by ``os.pathsep``)."""

    def __init__(self, paths: str) -> None:
        self._tables = chess.syzygy.Tablebase()
        self.directories: list[str] = []
        missing = []
        for path in filter(None, (p.strip() for p in paths.split(os.pathsep))):
            if not os.path.isdir(path):
                missing.append(path)
                continue
            self._tables.add_directory(path)
            self.directories.append(path)
        if missing:
            raise FileNotFoundError("SyzygyPath directory not found: " + ", ".join(missing))
        self.max_pieces = self._max_pieces()
        if self.max_pieces == 0:
            raise FileNotFoundError("no Syzygy tables (*.rtbw) found in " + paths)

    def _max_pieces(self) -> int:
        counts = [len(name) - 1 for name in self._tables.wdl]  # "KQvK" -> 3 pieces + "v"
        return max(counts, default=0)

    def probe_wdl(self, board: chess.Board) -> Optional[int]:
        """WDL (-2..2) for the side to move, or None if the position is not covered."""
        if chess.popcount(board.occupied) > self.max_pieces or board.castling_rights:
            return None
        try:
            return self._tables.probe_wdl(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None

    def close(self) -> None:
        self._tables.close()
