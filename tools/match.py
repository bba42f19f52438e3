"""Play our engine against another UCI engine and report W/D/L, Elo and LOS.

Openings come from an EPD or PGN file and each is played twice with colours
swapped (paired openings). The clocks are kept here, so an engine that
oversteps its time loses on time exactly as under a GUI; games end by the
rules of hackmate_core.games, or earlier by adjudication.
"""

from __future__ import annotations

import os
import shlex
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
from hackmate_core.elo import MatchStats
from hackmate_core.epd import InputError
from hackmate_core.games import MAX_PLIES, Forfeit, Mover, play_game as play_movers
from hackmate_core.openings import load_openings
from hackmate_core.options import option_settings
from hackmate_core.uci_engines import find_stockfish, start_engine

#: The openings a match starts from unless told otherwise: 200 distinct positions after the first 8 plies of
#: Carlsen's classical games (../shared/data/games/carlsen-classical.pgn), shipped so that a clone alone can play.
SHIPPED_OPENINGS = Path(__file__).resolve().parent / "openings.pgn"

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


class UciMover(Mover):
    """A UCI engine on the match's clocks: it loses on time, or when it crashes or answers no move.

    The clocks are the game's (shared by both movers); every score it reports is added to ``scores``,
    White's view, for the adjudication.
    """

    def __init__(self, player: Player, tc: TimeControl, clocks: dict[chess.Color, float],
                 scores: list[Optional[int]], round_name: str) -> None:
        self.name, self.tc, self.clocks, self.scores, self.round_name = player.name, tc, clocks, scores, round_name
        self.engine = start_engine(player.command, player.options, stderr=None)

    def choose(self, board: chess.Board) -> chess.Move:
        limit = chess.engine.Limit(white_clock=self.clocks[chess.WHITE], black_clock=self.clocks[chess.BLACK],
                                   white_inc=self.tc.increment_s, black_inc=self.tc.increment_s)
        started = time.monotonic()
        try:
            played = self.engine.play(board, limit, game=self.round_name, info=chess.engine.INFO_SCORE)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as error:
            raise Forfeit(f"rules infraction ({error})") from None
        self.clocks[board.turn] -= time.monotonic() - started
        if self.clocks[board.turn] < 0:
            raise Forfeit("time forfeit")
        self.clocks[board.turn] += self.tc.increment_s
        if played.move is None:
            raise Forfeit(f"rules infraction (no move from {self.name})")
        score = played.info.get("score")
        self.scores.append(None if score is None else score.white().score(mate_score=MATE_CP))
        return played.move

    def close(self) -> None:
        try:
            self.engine.quit()
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError):
            self.engine.close()


def play_game(white: Player, black: Player, opening: chess.Board, tc: TimeControl,
              round_name: str, adjudication: Optional[Adjudication] = None) -> chess.pgn.Game:
    """One game with clocks (hackmate_core.games' rules); returns the PGN with Result and Termination tags."""
    clocks = {chess.WHITE: tc.base_s, chess.BLACK: tc.base_s}
    white_scores: list[Optional[int]] = []
    movers: list[UciMover] = []
    try:
        for player in (white, black):
            movers.append(UciMover(player, tc, clocks, white_scores, round_name))
        for mover in movers:
            mover.engine.ping()
        adjudicate = (lambda board: adjudication.verdict(board, white_scores)) if adjudication else None
        record = play_movers(movers[0], movers[1], opening, MAX_PLIES, adjudicate)
    finally:
        for mover in movers:
            mover.close()
    return record.pgn(Event="hackmate match", Round=round_name, White=white.name, Black=black.name,
                      TimeControl=f"{tc.base_s:g}+{tc.increment_s:g}")


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
    """The UCI options given as NAME=VALUE (a click error for one that is not)."""
    try:
        return option_settings(pairs)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def with_thread_share(options: dict[str, str], concurrency: int) -> dict[str, str]:
    """Our engine's options with ``Threads`` at most its share of the cores, unless given.

    Only one engine of a game thinks at a time, so ``concurrency`` engines think at once: each gets
    the default thread count, or cores // concurrency (at least one) where that is fewer.
    """
    if any(name.lower() == "threads" for name in options):
        return options
    return {**options, "Threads": str(max(1, min(DEFAULT_THREADS, (os.cpu_count() or 1) // concurrency)))}


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
@click.option("--openings", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=SHIPPED_OPENINGS,
              show_default=True,
              help="EPD or PGN file of opening positions (the shipped file: 200 distinct openings, the first 8 plies "
                   "of Carlsen's classical games).")
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
        opponent_options: tuple[str, ...], games: int, tc: str, openings: Path, opening_plies: int, concurrency: int,
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
    try:
        positions = load_openings(openings, (games + 1) // 2, seed, opening_plies)
    except InputError as error:
        raise click.ClickException(str(error)) from None
    stats = run_match(ours, theirs, positions, games, TimeControl.parse(tc), concurrency, pgn_out,
                      adjudication=Adjudication() if adjudicate else None)
    click.echo(f"Final: {ours.name} vs {theirs.name} at {tc}: {stats.summary()}")


if __name__ == "__main__":
    cli()
