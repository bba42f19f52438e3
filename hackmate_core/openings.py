"""Opening positions for matches and evaluation games, read from an EPD or a PGN file.

Each pair of games should start differently, so duplicates are dropped. A file with entries that are
not playable openings is refused, each such entry named with its reason: a match on fewer openings
than its file holds would change its conditions without saying so.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import chess
import chess.pgn

from hackmate_core.epd import BadLine, InputError, read_epd_file
from hackmate_core.textfiles import READ_ERRORS, base_suffix, open_text


def load_openings(path: Optional[Path], limit: int, seed: int, plies: int = 0) -> list[chess.Board]:
    """Up to ``limit`` (0: all) distinct openings of ``path`` in a seeded random order; the start position without one.

    From a PGN file, each game after its first ``plies`` moves (all of them when 0), with those moves on
    the board's stack. Raises :class:`InputError` listing every EPD line or PGN game that is not a legal
    position with the game still on, or when the file holds no opening at all.
    """
    if path is None:
        return [chess.Board()]
    is_pgn = base_suffix(path) == ".pgn"
    boards, bad, total = _from_pgn(path, plies) if is_pgn else _from_epd(path)
    unit = "games" if is_pgn else "lines"
    if bad:
        raise InputError.listing(path, bad, total, unit, "are not playable openings")
    if not boards:
        raise InputError(f"{path}: no opening positions")
    unique = list({board.epd(): board for board in boards}.values())
    random.Random(seed).shuffle(unique)
    return unique[:limit] if limit else unique


def _from_pgn(path: Path, plies: int) -> tuple[list[chess.Board], list[str], int]:
    """(openings, bad games named, games read)."""
    boards: list[chess.Board] = []
    bad: list[str] = []
    total = 0
    try:
        with open_text(path) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                total += 1
                if game.errors:
                    bad.append(f"game {total}: {game.errors[0]}")
                    continue
                board = game.board()
                for ply, move in enumerate(game.mainline_moves()):
                    if plies and ply >= plies:
                        break
                    board.push(move)
                if board.is_game_over():
                    bad.append(f"game {total}: the game is over after {board.ply()} plies")
                else:
                    boards.append(board)
    except READ_ERRORS as error:
        raise InputError.unreadable(path, error) from None
    return boards, bad, total


def _from_epd(path: Path) -> tuple[list[chess.Board], list[str], int]:
    """(openings, bad lines named, lines read)."""
    boards: list[chess.Board] = []
    bad: list[str] = []
    entries = read_epd_file(path)
    for entry in entries:
        if isinstance(entry, BadLine):
            bad.append(str(entry))
        elif entry.board.is_game_over():
            bad.append(str(BadLine(entry.line, "the game is already over")))
        else:
            boards.append(entry.board)
    return boards, bad, len(entries)
