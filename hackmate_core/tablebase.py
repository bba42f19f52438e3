"""Syzygy endgame tablebases through python-chess: exact scores and the root move filter.

Every search uses one :class:`Tablebase`: inside the tree :meth:`Tablebase.probe_result`
scores a covered position exactly (a win, a draw or a loss under the fifty-move
rule); at the root :meth:`Tablebase.root_moves` keeps only the moves that
preserve the tablebase result, as Lc0 and Stockfish do, and among them the
ones that convert fastest by DTZ (a win: the fewest plies to the next capture,
pawn move or mate; a loss: the most), so that even a tiny search wins a won
ending within the fifty-move rule.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

import chess
import chess.syzygy

from hackmate_core.rules import fifty_move_draw, repetition_draw

#: Root ranks: a certain win in n plies ranks WIN_RANK - n, a certain loss -WIN_RANK + n;
#: cursed wins and blessed losses (the fifty-move rule decides them) rank +1 / -1, draws 0.
WIN_RANK = 1000
#: DTZ from the root of a zeroing move by its WDL after the move (the root side's view).
_DTZ_OF_ZEROING = {2: 1, 1: 101, 0: 0, -1: -101, -2: -1}


class _NotCovered(Exception):
    """A position after a root move is missing from the tables."""


class Tablebase:
    """Syzygy tables from one or more directories (separated by ``os.pathsep``)."""

    def __init__(self, paths: str) -> None:
        self._tables = chess.syzygy.Tablebase()
        self.directories: list[str] = []
        #: Successful probes so far (UCI's `tbhits`).
        self.hits = 0
        missing = []
        for path in filter(None, (p.strip() for p in paths.split(os.pathsep))):
            if not os.path.isdir(path):
                missing.append(path)
                continue
            self._tables.add_directory(path)
            self.directories.append(path)
        if missing:
            raise FileNotFoundError("SyzygyPath directory not found: " + ", ".join(missing))
        self.max_pieces = max((len(name) - 1 for name in self._tables.wdl), default=0)  # "KQvK": 3 pieces + "v"
        if self.max_pieces == 0:
            raise FileNotFoundError("no Syzygy tables (*.rtbw) found in " + paths)

    def covers(self, board: chess.Board) -> bool:
        """True when the position has few enough pieces and no castling rights (the tables have none)."""
        return chess.popcount(board.occupied) <= self.max_pieces and not board.castling_rights

    def probe_wdl(self, board: chess.Board) -> Optional[int]:
        """WDL (-2..2) for the side to move, or None if the position is not covered."""
        if not self.covers(board):
            return None
        try:
            wdl = self._tables.probe_wdl(board)
        except KeyError:  # includes chess.syzygy.MissingTableError
            return None
        self.hits += 1
        return wdl

    def probe_dtz(self, board: chess.Board) -> Optional[int]:
        """DTZ for the side to move (positive: winning), or None if the position is not covered."""
        if not self.covers(board):
            return None
        try:
            dtz = self._tables.probe_dtz(board)
        except KeyError:
            return None
        self.hits += 1
        return dtz

    def probe_result(self, board: chess.Board) -> Optional[int]:
        """+1 / 0 / -1: the side to move wins, draws or loses under the fifty-move rule; None if not covered."""
        wdl = self.probe_wdl(board)
        if wdl is None:
            return None
        return 1 if wdl == 2 else -1 if wdl == -2 else 0

    def root_moves(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[tuple[int, list[chess.Move]]]:
        """(result, moves to search) for a covered root, or None.

        ``result`` is +1 / 0 / -1 for the side to move under the fifty-move rule
        (the game's clock included); the moves kept are those of the best rank
        among ``moves``: they preserve the result, and a win keeps only the
        fastest conversion by DTZ, a loss the slowest.
        """
        root_wdl = self.probe_wdl(board)
        if root_wdl is None or not moves:
            return None
        clock = board.halfmove_clock
        # a win cannot convert faster than the root's own DTZ: stop scanning once a move reaches it
        root_dtz = self.probe_dtz(board) if root_wdl == 2 else None
        best_possible = WIN_RANK - root_dtz if root_dtz else WIN_RANK
        ranked: list[tuple[int, chess.Move]] = []
        for move in moves:
            board.push(move)
            try:
                rank = self._rank_after_move(board, root_wdl, clock)
            except _NotCovered:
                return None
            finally:
                board.pop()
            if rank is None:
                continue  # worse than the root's result
            ranked.append((rank, move))
            if rank >= best_possible:
                break
        if not ranked:
            return None
        best = max(rank for rank, _ in ranked)
        result = 1 if best > 1 else -1 if best < -1 else 0
        return result, [move for rank, move in ranked if rank == best]

    def _rank_after_move(self, child: chess.Board, root_wdl: int, clock: int) -> Optional[int]:
        """Rank (root side's view) of the move just played from a root whose half-move clock was ``clock``;
        None if the move spoils the root's WDL."""
        if child.is_checkmate():
            return WIN_RANK - 1
        child_wdl = self.probe_wdl(child)
        if child_wdl is None:
            raise _NotCovered
        if -child_wdl < root_wdl:
            return None
        if child.halfmove_clock == 0:
            dtz = _DTZ_OF_ZEROING[-child_wdl]
        elif fifty_move_draw(child) or repetition_draw(child, 0):
            dtz = 0
        else:
            child_dtz = self.probe_dtz(child)
            if child_dtz is None:
                raise _NotCovered
            dtz = -child_dtz + 1 if child_dtz < 0 else -child_dtz - 1 if child_dtz > 0 else 0
        if dtz > 0:
            return WIN_RANK - dtz if dtz + clock <= 100 else 1
        if dtz < 0:
            return -WIN_RANK - dtz if -dtz + clock <= 100 else -1
        return 0

    def close(self) -> None:
        self._tables.close()
