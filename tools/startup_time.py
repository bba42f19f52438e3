"""How fast the engine answers a GUI at start: `uci` -> `uciok` and `isready` -> `readyok`, medians of N launches.

`python -m tools.startup_time [--launches 5] [-- ENGINE ARGS]`. Each launch starts `python -m engine` afresh,
sends `uci` at once (so the first figure includes Python's start and the imports), then `isready`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import click


def launch(args: tuple[str, ...]) -> tuple[float, float]:
    """Seconds from `uci` to `uciok` and from `isready` to `readyok` of one fresh engine process."""
    process = subprocess.Popen([sys.executable, "-m", "engine", *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, bufsize=1)
    assert process.stdin is not None and process.stdout is not None

    def ask(command: str, answer: str) -> float:
        started = time.perf_counter()
        process.stdin.write(command + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        for line in process.stdout:  # type: ignore[union-attr]
            if line.startswith(answer):
                return time.perf_counter() - started
        raise click.ClickException(f"the engine ended before answering {command!r} with {answer!r}")

    try:
        return ask("uci", "uciok"), ask("isready", "readyok")
    finally:
        process.communicate("quit\n", timeout=30)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--launches", default=5, show_default=True, help="Engine processes started one after the other.")
@click.argument("engine_args", nargs=-1)
def cli(launches: int, engine_args: tuple[str, ...]) -> None:
    """Print the medians (and each launch's figures) of `uci` -> `uciok` and `isready` -> `readyok`."""
    times = [launch(engine_args) for _ in range(launches)]
    for index, name in enumerate(("uci -> uciok", "isready -> readyok")):
        figures = [t[index] for t in times]
        click.echo(f"{name}: median {statistics.median(figures):.3f} s "
                   f"({', '.join(f'{f:.3f}' for f in figures)})")


if __name__ == "__main__":
    cli()
