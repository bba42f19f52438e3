"""`bench`: fixed positions searched to a fixed node budget, like Stockfish's bench.

The node totals are deterministic for a given backend and budget (no time
limit is involved; PUCT's overlap backs results up in a fixed order; the
comparison search with one thread: two split its root moves in a race), so they
double as a quick regression signature; the nps figures are what the README
quotes. For a network evaluator, bench also measures the bare network in the
same run (fresh sessions with 1 and 2 threads, at the search's minibatch size)
and prints the search's nodes per second as a share of the better of the two:
how much of the network's speed the search keeps. docs/bench.md has the method.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Callable, Optional

import chess
import numpy as np

from engine.backends import apply_hash, registry
from engine.options import ENGINE_OPTIONS
from evaluators.base import unwrap
from evaluators.comparator import ComparatorEvaluator
from evaluators.onnx_model import KIND_KEY, open_session
from evaluators.resnet import ResNetEvaluator
from hackmate_core import compiled
from hackmate_core.options import OptionError
from search.base import SearchControl
from search.comparison import ComparisonSearch
from search.puct import PuctSearch

#: A spread of openings, middlegames and endgames (the first ones of Stockfish's bench set).
BENCH_FENS = [
    chess.STARTING_FEN,
    "r3k2r/2pb1ppp/2pp1q2/p7/1nP1B3/1P2P3/P2N1PPP/R2QK2R w KQkq a6 0 14",
    "4rrk1/2p1b1p1/p1p3q1/4p3/2P2n1p/1P1NR2P/PB3PP1/3R1QK1 b - - 2 24",
    "r3qbrk/6p1/2b2pPp/p3pP1Q/PpPpP2P/3P1B2/2PB3K/R5R1 w - - 16 42",
    "6k1/1R3p2/6p1/2Bp3p/3P2q1/P7/1P2rQ1K/5R2 b - - 4 44",
    "8/8/1p2k1p1/3p3p/1p1P1P1P/1P2PK2/8/8 w - - 3 54",
    "7r/2p3k1/1p1p1qp1/1P1Bp3/p1P2r1P/P7/4R3/Q4RK1 w - - 0 36",
    "r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10",
    "3r3k/2r4p/1p1b3q/p4P2/P2Pp3/1B2P3/3BQ1RP/6K1 w - - 3 87",
    "2r4r/1p4k1/1Pnp4/3Qb1pq/8/4BpPp/5P2/2RR1BK1 w - - 0 42",
    "4q1bk/6b1/7p/p1p4p/PNPpP2P/KN4P1/3Q4/4R3 b - - 0 37",
    "8/8/2p5/1p1k4/1P1Pp3/2K1P3/8/8 w - - 0 1",
]

#: The engine's default Hash, which bench runs with.
DEFAULT_HASH_MB = next(option.default for option in ENGINE_OPTIONS if option.name == "Hash")


def run_bench(evaluator_name: str, search_name: Optional[str] = None, weights: Optional[str] = None,
              nodes: Optional[int] = None, out: Callable[[str], None] = print, threads: int = 1,
              options: Optional[dict[str, str]] = None, stop: Optional[threading.Event] = None,
              depth: Optional[int] = None) -> tuple[int, float]:
    """Search every bench position; prints per-position lines and a summary; returns (nodes, seconds).

    ``options``: tuning options of the evaluator or search, UCI name to UCI value (as `setoption` has them).
    ``nodes``: per position; by default the search's ``BENCH_NODES`` (nodes are not comparable across searches).
    ``depth``: instead of a node budget, each position searched as `go depth` does (for the deepening searches,
    the time to a depth).
    ``stop``: set from another thread (the UCI `stop` or `quit` during a `bench`), it ends the bench at once,
    with a line that says so and no summary.
    """
    stop = stop or threading.Event()
    backends = registry()
    search_name = search_name or backends.natural_search(evaluator_name)
    evaluator = backends.build_evaluator(evaluator_name, weights, threads)
    search = backends.build_search(search_name, evaluator)
    search.set_threads(threads)
    apply_hash(DEFAULT_HASH_MB, search, evaluator)
    declared = {option.name.lower(): option for option in evaluator.options() + search.options()}
    for name, raw in (options or {}).items():
        option = declared.get(name.lower())
        if option is None:
            raise OptionError(f"{evaluator_name}+{search_name} has no option {name!r}")
        value = option.parse(raw)
        if not evaluator.set_option(option.name, value):
            search.set_option(option.name, value)
    budget = None if depth else nodes or type(search).BENCH_NODES
    total_nodes, total_time = 0, 0.0
    for index, fen in enumerate(BENCH_FENS, 1):
        search.new_game()
        evaluator.new_game()
        control = SearchControl(max_nodes=budget, max_depth=depth, stop_event=stop)
        started = time.perf_counter()
        result = search.search(chess.Board(fen), control, lambda info: None)
        if stop.is_set():
            out(f"info string bench stopped at position {index}/{len(BENCH_FENS)}")
            return total_nodes, total_time
        elapsed = time.perf_counter() - started
        total_nodes += search.nodes
        total_time += elapsed
        out(f"info string position {index}/{len(BENCH_FENS)} nodes {search.nodes} "
            f"bestmove {result.best_move.uci() if result.best_move else '0000'}")
    nps = int(total_nodes / total_time) if total_time else 0
    network = unwrap(evaluator)
    batches = isinstance(search, PuctSearch)  # a search that batches its leaves for the network
    if isinstance(network, ResNetEvaluator):
        batch = search.batch_size if batches else 1
        rates = {count: network_rate(network, count, batch, stop=stop) for count in (1, 2)}
        if stop.is_set():
            out("info string bench stopped while measuring the network")
            return total_nodes, total_time
        best = max(rates.values())
        precision = f", {network.precision}: {'int8' if network.runs_int8 else 'fp32'} file"
        out(f"info string network raw throughput (batch {batch}{precision}, Backend {network.backend} on "
            f"{network.provider}): " +
            ", ".join(f"{int(rate)} positions/second with {count} thread{'s' if count > 1 else ''}"
                      for count, rate in rates.items()) + f"; best {int(best)}")
        if batches:
            out(f"info string {search_name} nodes/second {nps} = {100 * nps / best:.0f}% of the best raw "
                f"throughput")
    if isinstance(search, ComparisonSearch):  # which of its two paths searched
        out("info string comparison search: " + ("compiled (hackmate_core._ccomparison)" if search.searched_compiled
                                                 else f"Python ({compiled.why_not or 'a comparator C does not compute'})"))
    if isinstance(network, ComparatorEvaluator):
        for incremental in (True, False):
            out(f"info string comparator features/second {'with' if incremental else 'without'} incremental "
                f"accumulator: {int(feature_rate(network, incremental))}")
    settings = "".join(f" {name} {raw}" for name, raw in (options or {}).items())
    limit = f"depth {depth}" if depth else f"nodes-per-position {budget}"
    out(f"info string bench {evaluator_name}+{search_name} {limit} threads {threads}{settings}" +
        (f" overlap {'on' if search.overlapping else 'off'}" if batches else ""))
    out("===========================")
    out(f"Total time (ms) : {int(total_time * 1000)}")
    out(f"Nodes searched  : {total_nodes}")
    out(f"Nodes/second    : {nps}")
    return total_nodes, total_time


def network_rate(network: ResNetEvaluator, threads: int, batch: int, seconds: float = 3.0,
                 stop: Optional[threading.Event] = None) -> float:
    """Positions per second of the bare network (a fresh session with ``threads`` threads, no search, no
    cache) on batches of ``batch`` bench positions, inputs prepared once: the int8 copy where the evaluator runs
    it (``Precision`` int8 or mixed; mixed also asks fp32 about some positions, so its search can fall short)."""
    path = network.int8_path if network.runs_int8 else network.path
    session, _ = open_session(path, network.metadata[KIND_KEY], threads, network.backend)
    boards = [chess.Board(fen) for fen in BENCH_FENS]
    inputs = np.stack([network.encoding.encode(board) for board in (boards * (batch // len(boards) + 1))[:batch]])
    session.run(["policy", "wdl"], {"planes": inputs})
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds and not (stop is not None and stop.is_set()):
        session.run(["policy", "wdl"], {"planes": inputs})
        done += batch
    return done / (time.perf_counter() - started)


def feature_rate(comparator: ComparatorEvaluator, incremental: bool, plies: int = 2000) -> float:
    """Features per second of the bare comparator along deterministic pseudo-random move sequences
    (make a move, extract features)."""
    rng = random.Random(1)
    comparator.set_option("IncrementalAccumulator", incremental)
    done, started = 0, time.perf_counter()
    for fen in BENCH_FENS:
        board = chess.Board(fen)
        comparator.reset(board)
        for _ in range(plies // len(BENCH_FENS)):
            moves = list(board.legal_moves)
            if not moves:
                break
            comparator.push(board, rng.choice(moves))
            comparator.features(board)
            done += 1
    comparator.set_option("IncrementalAccumulator", True)
    return done / (time.perf_counter() - started)
