"""Score a UCI engine on an EPD test suite (WAC, Bratko-Kopec, ...).

A position is solved when the engine's move is one of the `bm` moves, or,
for a position with only `am` (avoid move) opcodes, none of them. Each
position is searched from a fresh `ucinewgame` for a fixed time or node
budget, as test-suite results are usually quoted.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import chess
import chess.engine
import click

from hackmate_core.epd import BadLine, EpdPosition, InputError, read_epd_file
from hackmate_core.uci_engines import start_engine
from tools.match import parse_options


@dataclass
class SuiteResult:
    solved: int = 0
    total: int = 0
    nodes: int = 0
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        share = 100.0 * self.solved / self.total if self.total else 0.0
        return f"solved {self.solved}/{self.total} ({share:.1f}%), {self.nodes} nodes"


def load_suite(path: Path) -> tuple[list[EpdPosition], int]:
    """The positions with a `bm` or `am` operation, and how many others the file holds (they cannot be scored).

    A line that is not a legal position makes the whole suite an error that lists every such line.
    """
    entries = read_epd_file(path)
    bad = [entry for entry in entries if isinstance(entry, BadLine)]
    if bad:
        raise InputError.listing(path, bad, len(entries), "lines", "are not legal positions")
    positions = [entry for entry in entries if isinstance(entry, EpdPosition)]
    scored = [position for position in positions if position.operations.get("bm") or position.operations.get("am")]
    return scored, len(positions) - len(scored)


def is_solved(move: Optional[chess.Move], ops: dict) -> bool:
    if move is None:
        return False
    if ops.get("bm"):
        return move in ops["bm"]
    return move not in ops.get("am", [])


def run_suite(command: list[str], options: dict[str, str], positions: list[EpdPosition],
              limit: chess.engine.Limit, verbose: bool = False) -> SuiteResult:
    result = SuiteResult()
    with start_engine(command, options) as engine:
        for position in positions:
            board, ops = position.board, position.operations
            played = engine.play(board, limit, info=chess.engine.INFO_BASIC, game=object())
            solved = is_solved(played.move, ops)
            result.total += 1
            result.solved += solved
            result.nodes += played.info.get("nodes", 0)
            name = str(ops.get("id", board.fen()))
            if not solved:
                result.failed.append(name)
            if verbose:
                move = board.san(played.move) if played.move else "(none)"
                click.echo(f"{'ok  ' if solved else 'FAIL'} {name}: {move}")
    return result


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("epd", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--engine-args", default="", help="Arguments for our engine, e.g. '--eval material --search alphabeta'.")
@click.option("--engine", "engine_command", default="", help="Another UCI engine's command line instead of ours.")
@click.option("--option", "options", multiple=True, help="UCI option NAME=VALUE.")
@click.option("--movetime", default=1000, show_default=True, help="Milliseconds per position.")
@click.option("--nodes", default=0, show_default=True, help="Nodes per position instead of a time (0: use time).")
@click.option("--limit", "count", default=0, show_default=True, help="Only the first N positions (0: all).")
@click.option("--verbose", is_flag=True, help="Print every position's move.")
def cli(epd: Path, engine_args: str, engine_command: str, options: tuple[str, ...], movetime: int, nodes: int,
        count: int, verbose: bool) -> None:
    """Score an engine on an EPD suite: the share of positions where it plays a `bm` move (or avoids `am`)."""
    command = shlex.split(engine_command) if engine_command else [sys.executable, "-m", "engine",
                                                                 *shlex.split(engine_args)]
    try:
        positions, unscored = load_suite(epd)
    except InputError as error:
        raise click.ClickException(str(error)) from None
    if unscored:
        click.echo(f"{epd.name}: {unscored} positions without bm or am are not scored")
    positions = positions[:count or None]
    limit = chess.engine.Limit(nodes=nodes) if nodes else chess.engine.Limit(time=movetime / 1000)
    result = run_suite(command, parse_options(options), positions, limit, verbose)
    budget = f"{nodes} nodes" if nodes else f"{movetime} ms"
    click.echo(f"{epd.name} at {budget} per position: {result.summary()}")


if __name__ == "__main__":
    cli()
