"""Labelling speed: positions per second per core for MultiPV K at several node budgets.

One engine with one thread is one core, and each position is labelled exactly
as ``python -m training label`` labels it (training.uci.label.analyse: ``ucinewgame``,
then a MultiPV search to the node budget), so ``--workers W`` labels about W
times the figure measured here (``python -m training label-speed``). Run it on a quiet machine: it is a
benchmark.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

from training.configs import LabelConfig
from training.uci.label import Summary, analyse, open_engine, select_positions


def measure(source: Path, engine: str, positions: int, budgets: tuple[int, ...], ks: tuple[int, ...],
            min_ply: int, out: Optional[Path], say: Callable[[str], None] = print) -> None:
    """Label ``positions`` positions of ``source`` (two a game from ``min_ply`` on) once for every node budget and
    K; ``say`` the table a row at a time and write it to ``out`` as JSON."""
    config = LabelConfig(sources=[source], out=Path("unused"), per_game=2, min_ply=min_ply, max_positions=positions)
    fens = [candidate.board.fen() for candidate in select_positions(config, Summary(), set())]
    labeller = open_engine(engine)
    name = labeller.id.get("name", engine)  # read now: the engine is gone when the table is written
    rows = []
    try:
        say(f"{name}, {len(fens)} positions of {source.name}, one thread")
        say("| nodes | K | positions/s per core | ms per position |\n|---|---|---|---|")
        for nodes in budgets:
            for k in ks:
                started = time.perf_counter()
                for fen in fens:
                    analyse(labeller, fen, nodes, k)
                seconds = time.perf_counter() - started
                rows.append({"nodes": nodes, "multipv": k, "positions": len(fens), "seconds": round(seconds, 3),
                             "positions_per_second": round(len(fens) / seconds, 2)})
                say(f"| {nodes} | {k} | {len(fens) / seconds:.1f} | {1000 * seconds / len(fens):.1f} |")
    finally:
        labeller.quit()
    if out:
        out.write_text(json.dumps({"engine": name, "source": str(source),
                                   "rows": rows}, indent=1))
