"""Where games start: opening positions read from an EPD or a PGN file, opening lines drawn from a book, and
positions after a few random plies. The one home of opening sources for matches, self-play and evaluation games.

Each pair of games should start differently, so duplicates are dropped. A file with entries that are
not playable openings is refused, each such entry named with its reason: a match on fewer openings
than its file holds would change its conditions without saying so. A book (:class:`OpeningBook`) is
walked afresh for each game instead, a Polyglot book by its weights or a PGN by a random game's first plies.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator, Optional

import chess
import chess.pgn
import chess.polyglot

from hackmate_core.epd import BadLine, InputError, read_epd_file
from hackmate_core.games import white_score
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


def _games(path: Path) -> Iterator[chess.pgn.Game]:
    """The games of a PGN file (plain or compressed); a file that cannot be read is an InputError naming it."""
    try:
        with open_text(path) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                yield game
    except READ_ERRORS as error:
        raise InputError.unreadable(path, error) from None


def _from_pgn(path: Path, plies: int) -> tuple[list[chess.Board], list[str], int]:
    """(openings, bad games named, games read)."""
    boards: list[chess.Board] = []
    bad: list[str] = []
    total = 0
    for game in _games(path):
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


def random_openings(count: int, plies: int, seed: int) -> list[chess.Board]:
    """``count`` distinct positions after ``plies`` random plies from the start (games not over)."""
    rng = random.Random(seed)
    openings: dict[str, chess.Board] = {}
    attempts = 0
    while len(openings) < count and attempts < 100 * count:
        attempts += 1
        board = chess.Board()
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if white_score(board) is None:
            openings.setdefault(board.epd(), board)
    return list(openings.values())


class OpeningBook:
    """Opening lines: a weighted random walk through a Polyglot book (``.bin``), or the first plies of a PGN game
    (games with unreadable moves are passed over)."""

    def __init__(self, path: str, plies: int) -> None:
        self.plies = plies
        self.reader: Optional[chess.polyglot.MemoryMappedReader] = None
        self.lines: list[tuple[chess.Move, ...]] = []
        if path.endswith(".bin"):
            self.reader = chess.polyglot.open_reader(path)
            return
        lines = {tuple(game.mainline_moves())[:plies] for game in _games(Path(path)) if not game.errors}
        self.lines = sorted(lines, key=lambda line: [m.uci() for m in line])
        if not self.lines:
            raise ValueError(f"{path}: no games to take openings from")

    def line(self, rng: random.Random, plies: int = 0) -> list[chess.Move]:
        """A random opening line of at most ``plies`` (default: the book's) plies."""
        plies = plies or self.plies
        if self.reader is None:
            return list(rng.choice(self.lines))[:plies]
        board, moves = chess.Board(), []
        while len(moves) < plies:
            try:
                move = self.reader.weighted_choice(board, random=rng).move
            except (IndexError, ValueError):  # out of book (or only zero-weight entries)
                break
            board.push(move)
            moves.append(move)
        return moves
