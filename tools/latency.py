"""How fast the engine answers a GUI: start-up, `stop`, low-clock moves, and memory in infinite analysis.

`python -m tools.latency [--launches 5] [-- ENGINE ARGS]`. The figures the unit tests must not time (a loaded
machine makes any wall-clock bound flaky), measured on a real engine process over pipes as a GUI sees it:

- start-up: `uci` -> `uciok` (Python's start and the imports included) and `isready` -> `readyok` (the network
  read), one fresh process per launch;
- `stop` after a second of `go infinite` -> `bestmove`;
- `go wtime 100 btime 100 winc 10 binc 10` (low-clock mode) -> `bestmove`, the slowest of 40 moves of a game;
- `go movetime 1000` with `Move Overhead 900` -> `bestmove` (the search may spend 100 ms);
- with `Hash 1`, the engine's resident memory growth over 5 seconds of `go infinite` after its tree filled
  (Linux only).

Medians over the launches, each launch's figures beside them. Run it on a quiet machine.
"""

from __future__ import annotations

import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import chess
import click


class Engine:
    """An engine process over pipes, its lines read by a thread so that waits can time out."""

    def __init__(self, args: tuple[str, ...]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "engine", *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, command: str) -> float:
        """Send a command; the moment it was sent."""
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return time.perf_counter()

    def wait_for(self, prefix: str, timeout: float = 120.0) -> str:
        deadline = time.perf_counter() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                line = None
            if line is None:
                raise click.ClickException(f"the engine did not answer with {prefix!r}")
            if line.startswith(prefix):
                return line

    def ask(self, command: str, answer: str) -> float:
        """Seconds from sending ``command`` to the first line starting with ``answer``."""
        sent = self.send(command)
        self.wait_for(answer)
        return time.perf_counter() - sent

    def close(self) -> None:
        try:
            self.send("quit")
            self.process.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.process.kill()


def start_up(engine: Engine) -> dict[str, float]:
    return {"uci -> uciok": engine.ask("uci", "uciok"), "isready -> readyok": engine.ask("isready", "readyok")}


def stop_after_infinite(engine: Engine) -> dict[str, float]:
    engine.send("position startpos")
    engine.send("go infinite")
    engine.wait_for("info depth")
    time.sleep(1.0)
    return {"stop -> bestmove": engine.ask("stop", "bestmove")}


def low_clock_game(engine: Engine) -> dict[str, float]:
    board = chess.Board()
    engine.send("ucinewgame")
    slowest = 0.0
    for _ in range(40):
        if board.is_game_over():
            break
        engine.send("position startpos moves " + " ".join(move.uci() for move in board.move_stack))
        sent = engine.send("go wtime 100 btime 100 winc 10 binc 10")
        move = engine.wait_for("bestmove").split()[1]
        slowest = max(slowest, time.perf_counter() - sent)
        board.push_uci(move)
    return {"low clock (100 ms + 10): slowest bestmove of 40": slowest}


def move_overhead(engine: Engine) -> dict[str, float]:
    engine.send("setoption name Move Overhead value 900")
    engine.send("position startpos")
    took = engine.ask("go movetime 1000", "bestmove")
    engine.send("setoption name Move Overhead value 50")
    return {"movetime 1000, Move Overhead 900 -> bestmove": took}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise click.ClickException("no VmRSS in /proc")


def memory_in_full_tree(engine: Engine) -> dict[str, float]:
    if not Path("/proc/self/status").exists():
        return {}
    engine.send("setoption name Hash value 1")
    engine.send("position startpos")
    engine.send("go infinite")
    engine.wait_for("info string tree full")
    time.sleep(1.0)
    before = rss_mb(engine.process.pid)
    time.sleep(5.0)
    grown = rss_mb(engine.process.pid) - before
    engine.ask("stop", "bestmove")
    return {"Hash 1: MB grown in 5 s of go infinite after the tree filled": grown}


MEASUREMENTS: list[Callable[[Engine], dict[str, float]]] = [
    start_up, stop_after_infinite, low_clock_game, move_overhead, memory_in_full_tree]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--launches", default=5, show_default=True, help="Engine processes started one after the other.")
@click.argument("engine_args", nargs=-1)
def cli(launches: int, engine_args: tuple[str, ...]) -> None:
    """Print the medians (and each launch's figures) of the engine's answers to a GUI (seconds, or MB)."""
    figures: dict[str, list[float]] = {}
    for _ in range(launches):
        engine = Engine(engine_args)
        try:
            for measure in MEASUREMENTS:
                for name, value in measure(engine).items():
                    figures.setdefault(name, []).append(value)
        finally:
            engine.close()
    for name, values in figures.items():
        click.echo(f"{name}: median {statistics.median(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    cli()
