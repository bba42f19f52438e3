"""Play our engine against another UCI engine and report W/D/L, Elo and LOS.

Openings come from an EPD or PGN file and each is played twice with colours
swapped (paired openings). The clocks are kept here, so an engine that
oversteps its time loses on time exactly as under a GUI.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import chess
import chess.engine
import chess.pgn
import click

from engine.options import DEFAULT_THREADS
from tools.elo import MatchStats

MAX_PLIES = 400  # adjudicated as a draw beyond this
MATE_CP = 100_000


@dataclass
class Adjudication:
    """cutechess-cli style adjudication from the scores both engines report.

    Resign: both engines agree, for ``resign_moves`` moves each, that one side
    is at least ``resign_cp`` behind (or mated). Draw: from full move
    ``draw_after`` on, both see the game within ``draw_cp`` of equal for
    ``draw_moves`` moves each. A rule is off when its move count is 0.
    """

    resign_cp: int = 1000
    resign_moves: int = 3
    draw_cp: int = 10
    draw_moves: int = 8
    draw_after: int = 40

    def verdict(self, board: chess.Board, white_scores: list[Optional[int]]) -> Optional[tuple[str, str]]:
        """(result, termination) once a rule holds for the scores so far (one per ply, White's view)."""
        if self.resign_moves:
            recent = white_scores[-2 * self.resign_moves:]
            if len(recent) == 2 * self.resign_moves and all(s is not None for s in recent):
                if all(s >= self.resign_cp for s in recent):  # type: ignore[operator]
                    return "1-0", "adjudication (resign)"
                if all(s <= -self.resign_cp for s in recent):  # type: ignore[operator]
                    return "0-1", "adjudication (resign)"
        if self.draw_moves and board.fullmove_number > self.draw_after:
            recent = white_scores[-2 * self.draw_moves:]
            if len(recent) == 2 * self.draw_moves and all(s is not None and abs(s) <= self.draw_cp for s in recent):
                return "1/2-1/2", "adjudication (draw)"
        return None


@dataclass
class Player:
    name: str
    command: list[str]
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class TimeControl:
    base_s: float
    increment_s: float

    @classmethod
    def parse(cls, text: str) -> "TimeControl":
        """'10+0.1' -> 10 s base and 0.1 s increment; '60' -> 60 s, no increment."""
        base, _, inc = text.partition("+")
        return cls(float(base), float(inc or 0))


def load_openings(path: Optional[Path], limit: int, seed: int, plies: int = 0) -> list[chess.Board]:
    """Starting positions from an EPD file (one per line) or a PGN file.

    For PGN the first ``plies`` moves of each game are used (all moves when 0);
    duplicates are dropped so that every pair of games starts differently. As in
    tools.suite, unreadable input is a clear error, never a crash or a silent
    skip: every EPD line or PGN game that is not a playable position is listed
    by file and line (or game) number, with their count.
    """
    if path is None:
        return [chess.Board()]
    boards: list[chess.Board] = []
    bad: list[str] = []
    if path.suffix.lower() == ".pgn":
        unit, total = "games", 0
        with open(path, encoding="utf-8", errors="replace") as handle:
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
    else:
        unit, total = "lines", 0
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            total += 1
            try:
                board, _ = chess.Board.from_epd(line)
            except ValueError as error:
                bad.append(f"line {number}: {error}")
                continue
            if not board.is_valid():
                bad.append(f"line {number}: not a legal position ({board.status().name})")
            elif board.is_game_over():
                bad.append(f"line {number}: the game is already over")
            else:
                boards.append(board)
    if bad:
        shown = bad[:20] + ([f"... and {len(bad) - 20} more"] if len(bad) > 20 else [])
        raise click.ClickException(f"{path}: {len(bad)} of {total} {unit} are not playable openings:\n  "
                                   + "\n  ".join(shown))
    if not boards:
        raise click.ClickException(f"{path}: no opening positions")
    unique = list({board.epd(): board for board in boards}.values())
    random.Random(seed).shuffle(unique)
    return unique[:limit] if limit else unique


def play_game(white: Player, black: Player, opening: chess.Board, tc: TimeControl,
              round_name: str, adjudication: Optional[Adjudication] = None) -> chess.pgn.Game:
    """One game with clocks; returns the PGN with Result and Termination tags."""
    board = opening.copy()
    white_scores: list[Optional[int]] = []
    clocks = {chess.WHITE: tc.base_s, chess.BLACK: tc.base_s}
    engines = {}
    termination = "normal"
    result = "*"
    try:
        for color, player in ((chess.WHITE, white), (chess.BLACK, black)):
            engine = chess.engine.SimpleEngine.popen_uci(player.command, stderr=None)
            engine.configure({k: v for k, v in player.options.items()})
            engines[color] = engine
        for engine in engines.values():
            engine.ping()
        while not board.is_game_over(claim_draw=True) and board.ply() < MAX_PLIES + opening.ply():
            mover = board.turn
            limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                       white_inc=tc.increment_s, black_inc=tc.increment_s)
            started = time.monotonic()
            try:
                played = engines[mover].play(board, limit, game=round_name, info=chess.engine.INFO_SCORE)
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as error:
                termination = f"rules infraction ({error})"
                result = "0-1" if mover == chess.WHITE else "1-0"
                break
            clocks[mover] -= time.monotonic() - started
            if clocks[mover] < 0:
                termination = "time forfeit"
                result = "0-1" if mover == chess.WHITE else "1-0"
                break
            clocks[mover] += tc.increment_s
            if played.move is None or played.move not in board.legal_moves:
                termination = f"rules infraction (illegal move {played.move})"
                result = "0-1" if mover == chess.WHITE else "1-0"
                break
            board.push(played.move)
            score = played.info.get("score")
            white_scores.append(None if score is None else score.white().score(mate_score=MATE_CP))
            verdict = adjudication.verdict(board, white_scores) if adjudication else None
            if verdict is not None:
                result, termination = verdict
                break
        else:
            outcome = board.outcome(claim_draw=True)
            if outcome is not None:
                result = outcome.result()
            else:
                result, termination = "1/2-1/2", "adjudication (move limit)"
    finally:
        for engine in engines.values():
            try:
                engine.quit()
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError):
                engine.close()
    game = chess.pgn.Game.from_board(board)
    game.headers.update({"Event": "hackmate match", "Round": round_name, "White": white.name,
                         "Black": black.name, "Result": result, "Termination": termination,
                         "TimeControl": f"{tc.base_s:g}+{tc.increment_s:g}"})
    return game


def run_match(ours: Player, theirs: Player, openings: list[chess.Board], games: int, tc: TimeControl,
              concurrency: int, pgn_out: Optional[Path], log=print,
              adjudication: Optional[Adjudication] = None) -> MatchStats:
    """Play ``games`` games (pairs of colours per opening); returns stats from our point of view."""
    schedule = []
    for index in range(games):
        opening = openings[(index // 2) % len(openings)]
        ours_white = index % 2 == 0
        schedule.append((index, opening, ours_white))
    stats = MatchStats(0, 0, 0)
    lock = threading.Lock()
    pgn_handle = open(pgn_out, "w") if pgn_out else None

    def one(item: tuple[int, chess.Board, bool]) -> None:
        index, opening, ours_white = item
        white, black = (ours, theirs) if ours_white else (theirs, ours)
        game = play_game(white, black, opening, tc, str(index + 1), adjudication)
        result = game.headers["Result"]
        with lock:
            if result == "1/2-1/2":
                stats.draws += 1
            elif (result == "1-0") == ours_white:
                stats.wins += 1
            else:
                stats.losses += 1
            if pgn_handle:
                print(game, file=pgn_handle, end="\n\n", flush=True)
            log(f"game {index + 1}: {white.name} - {black.name} {result} "
                f"({game.headers['Termination']})  now {stats.summary()}")

    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(one, schedule))
    finally:
        if pgn_handle:
            pgn_handle.close()
    return stats


def parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {pair!r}")
        options[name.strip()] = value.strip()
    return options


def with_thread_share(options: dict[str, str], concurrency: int) -> dict[str, str]:
    """Our engine's options with ``Threads`` at most its share of the cores, unless given.

    Only one engine of a game thinks at a time, so ``concurrency`` engines think at once: each gets
    the default thread count, or cores // concurrency (at least one) where that is fewer.
    """
    if any(name.lower() == "threads" for name in options):
        return options
    return {**options, "Threads": str(max(1, min(DEFAULT_THREADS, (os.cpu_count() or 1) // concurrency)))}


def find_stockfish() -> Optional[str]:
    """Debian installs Stockfish in /usr/games, which is not always on PATH."""
    return shutil.which("stockfish") or (shutil.which("stockfish", path="/usr/games"))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--engine-args", default="", help="Arguments for our engine, e.g. '--eval material --search alphabeta'.")
@click.option("--engine-option", "engine_options", multiple=True, help="UCI option NAME=VALUE for our engine.")
@click.option("--opponent", default="stockfish",
              help="Opponent command line (default: stockfish), or 'self' for our engine with --opponent-args.")
@click.option("--opponent-args", default="", help="Arguments for the opponent when --opponent self.")
@click.option("--opponent-option", "opponent_options", multiple=True,
              help="UCI option NAME=VALUE for the opponent, e.g. 'UCI_LimitStrength=true' 'UCI_Elo=1500'.")
@click.option("--games", default=20, show_default=True, help="Number of games (pairs of colours per opening).")
@click.option("--tc", default="10+0.1", show_default=True, help="Time control: base seconds + increment.")
@click.option("--openings", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="EPD or PGN file of opening positions (default: the start position).")
@click.option("--opening-plies", default=8, show_default=True,
              help="With a PGN opening file: how many plies of each game to play before the engines take over.")
@click.option("--concurrency", default=2, show_default=True,
              help="Games played at the same time; each of our engines gets Threads = cores / concurrency "
                   "unless an option sets it.")
@click.option("--pgn", "pgn_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the games to this PGN file.")
@click.option("--seed", default=1, show_default=True, help="Seed for choosing openings.")
@click.option("--adjudicate/--no-adjudicate", default=True, show_default=True,
              help="End decided games early: resign when both engines see one side 1000 cp behind for 3 moves "
                   "each; draw after move 40 when both see the game within 10 cp for 8 moves each.")
def cli(engine_args: str, engine_options: tuple[str, ...], opponent: str, opponent_args: str,
        opponent_options: tuple[str, ...], games: int, tc: str, openings: Optional[Path], opening_plies: int, concurrency: int,
        pgn_out: Optional[Path], seed: int, adjudicate: bool) -> None:
    """Play a match of our engine against another UCI engine and print W/D/L, Elo and LOS."""
    our_command = [sys.executable, "-m", "engine", *shlex.split(engine_args)]
    ours = Player("hackmate " + engine_args if engine_args else "hackmate", our_command,
                  with_thread_share(parse_options(engine_options), concurrency))
    if opponent == "self":
        theirs = Player("hackmate " + opponent_args, [sys.executable, "-m", "engine", *shlex.split(opponent_args)],
                        with_thread_share(parse_options(opponent_options), concurrency))
    else:
        command = shlex.split(opponent)
        if command == ["stockfish"]:
            found = find_stockfish()
            if found is None:
                raise click.ClickException("stockfish not found: apt-get install stockfish, or pass --opponent")
            command = [found]
        opts = parse_options(opponent_options)
        theirs = Player(" ".join(command) + "".join(f" {k}={v}" for k, v in opts.items()), command, opts)
    positions = load_openings(openings, (games + 1) // 2, seed, opening_plies)
    stats = run_match(ours, theirs, positions, games, TimeControl.parse(tc), concurrency, pgn_out,
                      adjudication=Adjudication() if adjudicate else None)
    click.echo(f"Final: {ours.name} vs {theirs.name} at {tc}: {stats.summary()}")


if __name__ == "__main__":
    cli()
