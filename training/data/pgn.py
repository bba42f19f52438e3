"""Streaming PGN and EPD readers that turn games into training positions.

Nothing is loaded whole: games are read one at a time, compressed files
(.gz, .bz2, .xz) are opened transparently, and every game that cannot be used
is counted with the reason, so nothing is dropped silently.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, TextIO

import chess
import chess.pgn

from evaluators.encoding import LC0_HISTORY
from hackmate_core.boards import state_stack
from hackmate_core.epd import BadLine, read_epd
from hackmate_core.score import cp_to_q
from hackmate_core.textfiles import open_text as open_any
from training.errors import TrainingError

#: A PGN result as White's: +1, 0 or -1 (an unfinished game, "*", has none).
RESULT_WHITE = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}


class DataError(TrainingError):
    """A data file that cannot be read at all."""


def open_text(path: Path) -> TextIO:
    """Open a plain or compressed text file (hackmate_core.textfiles), a missing one a DataError naming it."""
    if not path.exists():
        raise DataError(f"{path}: no such file")
    return open_any(path)


def decisive_result(game: chess.pgn.Game) -> Optional[int]:
    """The decisive-game filter: +1 if White won, -1 if Black won, None for a draw or an unfinished game."""
    return RESULT_WHITE.get(game.headers.get("Result", "*")) or None


@dataclass
class Position:
    """A position before ``move`` was played, with its labels from the side to move's view."""

    board: chess.Board
    move: chess.Move
    result: int  # +1 win, 0 draw, -1 loss for the side to move
    eval_q: Optional[float]  # engine evaluation as expected score in [-1, 1], if annotated
    game: int  # index of the game in its file


@dataclass
class ReadStats:
    """What was read and what was skipped, with the first few error messages."""

    games: int = 0
    positions: int = 0
    skipped: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def error(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        if len(self.errors) < 10:
            self.errors.append(message)

    def merge(self, other: "ReadStats") -> None:
        self.games += other.games
        self.positions += other.positions
        self.skipped.update(other.skipped)
        self.errors.extend(other.errors[: max(0, 10 - len(self.errors))])

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        text = f"{self.games} games, {self.positions} positions; skipped: {skipped}"
        return text + "".join(f"\n  {e}" for e in self.errors)


def _rating(headers: chess.pgn.Headers, key: str) -> Optional[int]:
    try:
        return int(headers.get(key, ""))
    except ValueError:
        return None


def player_colours(headers: chess.pgn.Headers, player: str) -> frozenset[chess.Color]:
    """The colours whose player's name (the White and Black headers) contains ``player``, case-insensitively:
    how a person's own moves are told from the opponents' (e.g. ``Carlsen`` matches "Carlsen,M"); no ``player``:
    both colours. Empty: the game is not the player's."""
    wanted = player.casefold()
    return frozenset(colour for colour, key in ((chess.WHITE, "White"), (chess.BLACK, "Black"))
                     if wanted in headers.get(key, "").casefold())


def game_id(source: str, index: int) -> int:
    """A stable id for game ``index`` of the file named ``source`` (validation splits by game; a shard directory
    that keeps its source file beside it finds each position's game again by it)."""
    return ((zlib.crc32(source.encode()) & 0x7FFFFF) << 32) | index


def game_index(identity: int) -> int:
    """The index in its file of the game whose :func:`game_id` is ``identity``."""
    return identity & 0xFFFFFFFF


def iter_games(path: Path, stats: ReadStats, worker: int = 0, workers: int = 1
               ) -> Iterator[tuple[int, chess.pgn.Game]]:
    """(index, game) for the games of ``path`` with index % workers == worker; parse errors raise DataError."""
    with open_text(path) as handle:
        index = 0
        while True:
            if index % workers != worker:
                if not chess.pgn.skip_game(handle):
                    return
                index += 1
                continue
            game = chess.pgn.read_game(handle)
            if game is None:
                return
            if game.errors:
                stats.error("games with illegal or unreadable moves",
                            f"{path.name} game {index + 1}: {game.errors[0]}")
                index += 1
                continue
            yield index, game
            index += 1


def with_history(board: chess.Board) -> chess.Board:
    """A copy of ``board`` with as much of its game as any encoding reads (``lc0-112``'s): its last eight positions
    and, for their repetition planes, every position back to the last capture or pawn move before them, and one
    more, so that the copy's first position (which the encoding takes as a game's start) is never compared."""
    clocks = [board.halfmove_clock] + [state.halfmove_clock for state in state_stack(board)[1 - LC0_HISTORY:]]
    return board.copy(stack=LC0_HISTORY + max(clocks))


def iter_positions(path: Path, stats: ReadStats, *, skip_plies: int = 0, min_rating: int = 0,
                   require_eval: bool = False, decisive_only: bool = False, worker: int = 0,
                   workers: int = 1) -> Iterator[Position]:
    """Positions of the games in a PGN file, filtered as asked."""
    for index, game in iter_games(path, stats, worker, workers):
        stats.games += 1
        result = RESULT_WHITE.get(game.headers.get("Result", "*"))
        if result is None:
            stats.skipped["games without a result"] += 1
            continue
        if decisive_only and result == 0:
            stats.skipped["drawn games"] += 1
            continue
        if min_rating:
            ratings = [_rating(game.headers, k) for k in ("WhiteElo", "BlackElo")]
            if any(r is not None and r < min_rating for r in ratings):
                stats.skipped["games below the minimum rating"] += 1
                continue
        board = game.board()
        for ply, node in enumerate(game.mainline()):
            move = node.move
            score = node.eval()
            if ply >= skip_plies and (score is not None or not require_eval):
                turn = board.turn
                eval_q = None
                if score is not None:
                    eval_q = cp_to_q(score.pov(turn).score(mate_score=20000))
                stats.positions += 1
                yield Position(with_history(board), move, result if turn == chess.WHITE else -result, eval_q,
                               index)
            board.push(move)


def iter_epd(path: Path, stats: ReadStats) -> Iterator[Position]:
    """Positions of an EPD file with a `bm` (best move) opcode; `ce` (centipawns, side to move) if present."""
    with open_text(path) as handle:
        for entry in read_epd(handle):
            if isinstance(entry, BadLine):
                stats.error("bad EPD lines", f"{path.name} {entry}")
                continue
            best = entry.operations.get("bm")
            if not best:
                stats.skipped["EPD lines without bm"] += 1
                continue
            ce = entry.operations.get("ce")
            eval_q = cp_to_q(float(ce)) if isinstance(ce, (int, float)) else None
            stats.positions += 1
            result = 0 if eval_q is None else (1 if eval_q > 0.5 else -1 if eval_q < -0.5 else 0)
            yield Position(entry.board, best[0], result, eval_q, entry.line)  # type: ignore[index]
