"""The UCI front-end: most of it driven in-process (fast), a few end-to-end transcripts over pipes."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import chess
import pytest

from engine.uci import STRICT_EXIT_STATUS, fallback_move
from evaluators.base import unwrap
from hackmate_core.exchange import see
from search.base import SearchResult
from search.puct import BYTES_PER_NODE, MIN_TREE_NODES
from search.tt import TranspositionTable

INFO_LINE = re.compile(r"^info depth \d+ seldepth \d+ multipv \d+ score (cp|mate) -?\d+( (lower|upper)bound)?"
                       r"( wdl \d+ \d+ \d+)? nodes \d+ nps \d+ hashfull \d+ tbhits \d+ time \d+"
                       r"( pv( [a-h][1-8][a-h][1-8][qrbn]?)+)?$")
from tests.conftest import ROOT, engine_command

SYZYGY = Path(os.environ.get("SYZYGY_PATH", ROOT.parent / "shared/data/syzygy"))


# ------------------------------------------------------------------ in-process

def test_uci_lists_the_options(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("uci")
    options = [line for line in engine.lines if line.startswith("option")]
    assert f"option name Threads type spin default {min(2, os.cpu_count() or 1)} min 1 max 128" in options
    assert "option name UCI_Chess960 type check default false" in options
    assert any(line.startswith("option name Hash type spin default 256") for line in options)
    assert not any("NNThreads" in line for line in options)
    assert engine.lines[-1] == "uciok"


@pytest.mark.parametrize("evaluator,search,limit", [("material", "alphabeta", "depth 3"), ("pst", "puct", "nodes 300"),
                                                    ("resnet", "puct", "nodes 100"),
                                                    ("comparator", "comparison", "depth 2")])
def test_every_backend_prints_info_lines_of_one_form(driver, evaluator, search, limit):
    engine = driver("--eval", evaluator, "--search", search)
    engine.send("setoption name UCI_ShowWDL value true", "position startpos moves e2e4 e7e5")
    move = engine.go(f"go {limit}").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(move) in board.legal_moves
    assert not any("cannot load" in line for line in engine.strings())
    infos = engine.infos()
    assert infos and all(INFO_LINE.match(line) for line in infos), infos
    assert all(" wdl " in line for line in infos)


def test_go_without_limits_waits_for_stop(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("position fen 7k/8/8/8/8/8/8/K6Q w - - 0 1", "go")
    engine.out.wait_for("info depth")
    time.sleep(0.2)
    assert engine.engine.searching() and not any(line.startswith("bestmove") for line in engine.lines)
    engine.send("stop")
    engine.out.wait_for("bestmove", 30.0)  # a guard against a hang; how soon: tools/latency.py


def test_ponder_and_ponderhit(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name Ponder value true", "position startpos moves e2e4", "go ponder wtime 2000 btime 2000")
    engine.out.wait_for("info depth")
    assert not any(line.startswith("bestmove") for line in engine.lines)
    engine.send("ponderhit")
    control = engine.engine.control
    assert not control.pondering and control.hard_deadline - control.budget_start <= 2.0  # the clock runs now
    engine.out.wait_for("bestmove", 30.0)  # a guard against a hang


@pytest.mark.parametrize("bad", [
    "position startpos moves e2e4 e2e4",
    "position fen rnbqkbnr/pppppppp/8/8 w KQkq - 0 1",
    "position fen not a fen at all",
    "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
    "position banana",
    "setoption name NoSuchOption value 3",
    "setoption name Hash value 999999",
    "setoption name Hash value lots",
    "setoption name MultiPV",
    "setoption name Threads value 0",
    "setoption name SyzygyPath value /no/such/dir",
    "setoption name BookFile value /no/such/book.bin",
    "setoption name Evaluator value quantum",
    "setoption name CPuct value 5",
    "go wtime abc",
    "go searchmoves e2e5",
    "bench many",
    "frobnicate",
])
def test_bad_input_is_reported_and_survived(driver, bad):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send(bad, "isready")
    assert engine.lines[-1] == "readyok"
    assert any(line.startswith("info string") for line in engine.lines), engine.lines
    assert not any("error in" in line for line in engine.lines)
    assert engine.go("go depth 2").split()[1] != "0000"


def test_illegal_move_keeps_prefix(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("position startpos moves e2e4 e7e5 e1e3 g1f3", "d")
    fen = engine.out.wait_for("info string Fen:")
    assert "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w" in fen


def test_short_fen_accepted(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1")  # board only; mate in one Ra8#
    assert engine.go("go depth 3").split()[1] == "a1a8"


def test_multipv_reports_several_lines(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name MultiPV value 3")
    engine.go("go depth 3")
    assert {line.split(" multipv ")[1].split()[0] for line in engine.infos()} == {"1", "2", "3"}


def test_bench_command_prints_totals(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("bench 100")
    assert int(engine.out.wait_for("Nodes searched").split(":")[1]) == 1200
    engine.out.wait_for("Nodes/second")


def test_a_rejected_fen_is_quoted_as_sent_and_described_in_words(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w", "position fen 8/8/8/8/8/8/8/8 w - - 0 1")
    engine.send("isready")
    engine.out.wait_for("readyok")
    invalid, illegal = [line for line in engine.strings() if "FEN" in line]
    assert "'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w'" in invalid  # not completed with default fields
    assert illegal.endswith("'8/8/8/8/8/8/8/8 w - - 0 1': no white king, no black king, empty")


def test_stop_and_isready_are_answered_during_a_bench(driver):
    engine = driver("--eval", "pst", "--search", "puct")
    engine.send("bench 5000")  # seconds of work a position
    engine.out.wait_for("info string position 1/12", timeout=60)
    engine.send("isready")
    engine.out.wait_for("readyok")
    engine.send("stop")
    engine.out.wait_for("info string bench stopped", timeout=30)  # how soon: tools/latency.py
    assert not any(line.startswith("Nodes searched") for line in engine.out.lines)


@pytest.mark.parametrize("evaluator,search", [("material", "alphabeta"), ("pst", "puct"),
                                              ("comparator", "comparison")])
def test_go_searchmoves_is_honoured(driver, evaluator, search):
    engine = driver("--eval", evaluator, "--search", search)
    engine.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8# is not among the moves allowed
    best = engine.go("go depth 3 nodes 400 searchmoves h2h4 g1f1 a1a9")
    assert best.split()[1] == "g1f1"  # h2h4 is not legal here (no pawn), a1a9 is no move
    assert sum("searchmoves" in line for line in engine.strings()) == 2


def test_chess960_castling_in_and_out(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("setoption name UCI_Chess960 value true")
    engine.send("position fen bqnbrkr1/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEge - 0 1")
    assert engine.go("go depth 2 searchmoves f1h1").split()[1] == "f1h1"  # king takes rook
    engine.send("position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1h1", "d")
    assert "Fen: r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQ1RK1 b" in engine.strings()[-1]
    engine.send("setoption name UCI_Chess960 value false")
    engine.send("position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6")
    assert engine.go("go depth 2 searchmoves e1g1").split()[1] == "e1g1"


def test_tuning_option_during_a_search_applies_live_and_keeps_the_tree(driver):
    engine = driver("--eval", "material", "--search", "puct")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    search, evaluator, root = engine.engine.search, engine.engine.evaluator, engine.engine.search.root
    engine.send("setoption name CPuct value 300")
    assert engine.engine.searching() and search.cpuct == 3.0  # read by the running search
    assert not any("takes effect" in line for line in engine.strings())
    engine.send("stop")
    visits = root.visits
    engine.go("go nodes 200")
    assert engine.engine.search is search and engine.engine.evaluator is evaluator and not engine.engine.backend_dirty
    assert search.root is root and search.reused == visits > 0  # the same position again: the whole tree kept


def test_network_option_during_a_search_does_not_reload_it(driver):
    engine = driver("--eval", "resnet", "--search", "puct")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    network = unwrap(engine.engine.evaluator)
    session = network.session
    engine.send("setoption name PolicyTemperature value 150", "setoption name MaterialBlend value 20")
    assert network.softmax_temperature == 1.5 and engine.engine.evaluator.inner.material_blend == 0.2
    engine.send("stop", "isready")
    assert unwrap(engine.engine.evaluator) is network and network.session is session


def test_hash_during_a_search_is_applied_at_once(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    engine.send("setoption name Hash value 1")
    assert engine.engine.searching()
    assert engine.engine.search.tt.size == TranspositionTable(1).size
    engine.send("stop")

    engine = driver("--eval", "material", "--search", "puct")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    start = len(engine.lines)
    engine.send("setoption name Hash value 1")
    assert engine.engine.search.node_budget == max(MIN_TREE_NODES, 1024 * 1024 // BYTES_PER_NODE)
    engine.out.wait_for("info string tree full", 10.0, start)  # the running search grows no further
    assert engine.engine.searching()
    engine.send("stop")


def test_threads_is_the_total_and_sets_the_network_threads_live(driver):
    engine = driver("--eval", "resnet", "--search", "puct")
    engine.send("setoption name Threads value 2", "isready")
    network, search = unwrap(engine.engine.evaluator), engine.engine.search
    assert network.threads == 2
    assert network.session.get_session_options().intra_op_num_threads == 2
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    engine.send("setoption name Threads value 1")
    assert network.threads == 1 and network.session.get_session_options().intra_op_num_threads == 1
    engine.send("stop")
    assert engine.engine.search is search and not engine.engine.backend_dirty


def test_clear_hash_and_ucinewgame_during_a_search(driver):
    engine = driver("--eval", "pst", "--search", "puct")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    engine.send("setoption name Clear Hash")
    assert engine.engine.search.root is None
    engine.send("ucinewgame", "position startpos")
    assert engine.go("go nodes 100").split()[1] != "0000"
    assert not any("error" in line for line in engine.strings())


def test_backend_options_rebuild_after_the_search(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("go infinite")
    engine.out.wait_for("info depth")
    old = engine.engine.search
    engine.send("setoption name Evaluator value pst")
    assert engine.engine.search is old and any("takes effect after" in line for line in engine.strings())
    engine.send("stop", "isready")
    assert engine.engine.search is not old and engine.engine.evaluator.name == "pst"


@pytest.mark.skipif(not (SYZYGY / "KQvK.rtbw").is_file(), reason=f"no Syzygy tables in {SYZYGY}")
def test_syzygy_path_option(driver):
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send(f"setoption name SyzygyPath value {SYZYGY}")
    assert "Syzygy tables up to" in engine.strings()[-1]
    engine.send("position fen 8/8/8/4k3/8/8/8/R3K3 w - - 0 1")
    engine.go("go depth 3")
    assert int(engine.infos()[-1].split(" tbhits ")[1].split()[0]) > 0


# ------------------------------------------------------------------ end to end

def test_handshake_and_search_over_pipes(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("uci")
    engine.expect("uciok")
    engine.send("isready")
    engine.expect("readyok")
    engine.send("position startpos moves e2e4 e7e5")
    engine.send("go movetime 300")
    best = engine.expect("bestmove", timeout=10)
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(best.split()[1]) in board.legal_moves


def test_stop_and_isready_are_answered_during_infinite(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("uci")
    engine.expect("uciok")
    engine.send("position startpos")
    engine.send("go infinite")
    engine.expect("info depth", timeout=30)
    engine.send("isready")
    engine.expect("readyok", timeout=30)  # answered while searching
    assert not any(line.startswith("bestmove") for line in engine.lines)
    engine.send("stop")
    engine.expect("bestmove", timeout=30)  # how soon: tools/latency.py


def test_quit_during_search_exits(engine_factory):
    engine = engine_factory("--eval", "material", "--search", "alphabeta")
    engine.send("go infinite")
    engine.expect("info depth", timeout=30)  # searching
    engine.send("quit")
    assert engine.proc.wait(timeout=30) == 0  # a guard against a hang, not a measure: tools/latency.py


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _nodes(line: str) -> int:
    return int(line.split(" nodes ")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read the process size")
def test_infinite_analysis_stays_within_a_tiny_hash(engine_factory):
    """Unbounded, this tree grew about 25 MB a second; with Hash 1 it fills at once and stops growing: measured
    between two points of the search's own progress (playouts), not of the clock."""
    engine = engine_factory("--eval", "material", "--search", "puct")
    engine.send("setoption name Hash value 1")
    engine.send("position startpos")
    engine.send("go infinite")
    engine.expect("info string tree full", timeout=30)
    full = _nodes(engine.expect("info depth", timeout=30))
    while _nodes(engine.expect("info depth", timeout=30)) < full + 2000:
        pass
    before = _rss_mb(engine.proc.pid)
    while _nodes(line := engine.expect("info depth", timeout=60)) < full + 20000:
        pass
    after = _rss_mb(engine.proc.pid)
    engine.send("stop")
    engine.expect("bestmove", timeout=30)
    assert " hashfull 1000 " in line  # it kept searching inside the full tree
    assert after - before < 8, f"grew from {before:.0f} MB to {after:.0f} MB over 18,000 playouts"


def test_a_failing_search_is_reported_and_forgotten(driver, monkeypatch, lenient):
    """A search that raises still ends in a legal bestmove, says why, and the next search starts afresh."""
    engine = driver("--eval", "material", "--search", "puct")
    engine.send("uci", "isready", "position startpos")
    search = engine.engine.search
    forgotten = []
    monkeypatch.setattr(search, "search", lambda *args: 1 / 0)
    monkeypatch.setattr(search, "new_game", lambda: forgotten.append(True))
    bestmove = engine.go("go nodes 50")
    assert chess.Move.from_uci(bestmove.split()[1]) in chess.Board().legal_moves
    assert any(f"search failed: ZeroDivisionError: division by zero; playing {bestmove.split()[1]} instead" in line
               for line in engine.strings())
    assert forgotten


@pytest.mark.parametrize("answer", [chess.Move.from_uci("e2e5"), None])
def test_an_illegal_answer_is_replaced_and_said(driver, monkeypatch, lenient, answer):
    """A search that answers an illegal move (or none) still ends in a legal bestmove, and says which it replaced."""
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("isready", "position startpos")
    monkeypatch.setattr(engine.engine.search, "search", lambda *args: SearchResult(answer))
    played = engine.go("go depth 1").split()[1]
    assert chess.Move.from_uci(played) in chess.Board().legal_moves
    said = f"the search answered {answer.uci() if answer else 'no move'}, not a legal move in {chess.STARTING_FEN}"
    assert any(said in line and f"playing {played} instead" in line for line in engine.strings())


def test_strict_mode_fails_on_a_fallback(driver, monkeypatch):
    """Under strict mode (the suite's) the same fallback is recorded and fails the in-process driver."""
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send("isready", "position startpos")
    monkeypatch.setattr(engine.engine.search, "search", lambda *args: SearchResult(chess.Move.from_uci("e2e5")))
    with pytest.raises(AssertionError, match="fell back under strict mode.*answered e2e5"):
        engine.go("go depth 1")
    engine.engine.strict_failures.clear()  # the fixture's close checks them again


def test_strict_mode_ends_the_engine_process(tmp_path):
    """An engine process under strict mode exits with its own status on a fallback (weights that do not load), so a
    harness that plays it fails instead of going on with the shipped network."""
    process = subprocess.run(engine_command("--weights", str(tmp_path / "missing.onnx")), cwd=ROOT, text=True,
                             input="uci\nisready\n", capture_output=True, timeout=60)
    assert process.returncode == STRICT_EXIT_STATUS
    assert "cannot load Weights" in process.stdout and "readyok" not in process.stdout


@pytest.mark.parametrize("fen, expected", [
    ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8"),          # mate in one first
    ("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", "d2d5"),             # then the capture that wins most
    ("4k3/8/2p5/3r4/8/8/3Q4/4K3 w - - 0 1", None),            # Qxd5 cxd5 loses the queen: a safe quiet move instead
])
def test_fallback_move_plays_one_ply_of_sense(fen, expected):
    board = chess.Board(fen)
    move = fallback_move(board)
    assert move in board.legal_moves
    if expected is not None:
        assert move.uci() == expected
    else:
        assert not board.is_capture(move) and see(board, move) >= 0
    assert fallback_move(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")) is None  # stalemate: no move
