"""Labelling speed: positions per second per core for MultiPV K at several node budgets.

One engine with one thread is one core, and each position is labelled exactly
as ``python -m training label`` labels it (training.label.analyse: ``ucinewgame``,
then a MultiPV search to the node budget), so ``--workers W`` labels about W
times the figure printed here. Run it on a quiet machine: it is a benchmark.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import click

from hackmate_core.uci_engines import engine_command
from training.errors import clear_errors


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--engine", default="stockfish", show_default=True, help="UCI engine command line.")
@click.option("--positions", default=100, show_default=True, help="Positions per measurement.")
@click.option("--nodes", "budgets", multiple=True, type=int, default=(5000, 25000), show_default=True,
              help="Node budget (repeatable).")
@click.option("--multipv", "ks", multiple=True, type=int, default=(1, 4, 8), show_default=True,
              help="MultiPV K (repeatable).")
@click.option("--min-ply", default=8, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the table as JSON.")
def main(source: Path, engine: str, positions: int, budgets: tuple[int, ...], ks: tuple[int, ...], min_ply: int,
         out: Optional[Path]) -> None:
    """Measure labelling speed on positions of SOURCE (PGN/EPD), two per game from ply --min-ply on."""
    with clear_errors():
        measure(source, engine_command(engine, must_exist=True), positions, budgets, ks, min_ply, out)


def measure(source: Path, engine: str, positions: int, budgets: tuple[int, ...], ks: tuple[int, ...],
            min_ply: int, out: Optional[Path]) -> None:
    """Label ``positions`` positions of ``source`` once for every node budget and K; print and write the table."""
    from training.label import LabelConfig, Summary, analyse, open_engine, select_positions
    config = LabelConfig(sources=[source], out=Path("unused"), per_game=2, min_ply=min_ply, max_positions=positions)
    fens = [candidate.board.fen() for candidate in select_positions(config, Summary(), set())]
    labeller = open_engine(engine)
    name = labeller.id.get("name", engine)  # read now: the engine is gone when the table is written
    rows = []
    try:
        click.echo(f"{name}, {len(fens)} positions of {source.name}, one thread")
        click.echo("| nodes | K | positions/s per core | ms per position |\n|---|---|---|---|")
        for nodes in budgets:
            for k in ks:
                started = time.perf_counter()
                for fen in fens:
                    analyse(labeller, fen, nodes, k)
                seconds = time.perf_counter() - started
                rows.append({"nodes": nodes, "multipv": k, "positions": len(fens), "seconds": round(seconds, 3),
                             "positions_per_second": round(len(fens) / seconds, 2)})
                click.echo(f"| {nodes} | {k} | {len(fens) / seconds:.1f} | {1000 * seconds / len(fens):.1f} |")
    finally:
        labeller.quit()
    if out:
        out.write_text(json.dumps({"engine": name, "source": str(source),
                                   "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
