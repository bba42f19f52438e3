"""The compiled comparator and comparison search (hackmate_core._ccomparison) compute and search exactly as the
Python ones do.

The network's arithmetic is defined so that C and numpy give the same bits (evaluators/comparator.py), so the
features and probabilities are compared for equality, not closeness; the searches must then visit the same nodes:
each position is searched on every path in this process and the node counts, moves and reports must be equal.
With two threads (the root split, Threads 2) the compiled search is a race and no longer node for node: its
tests check what must hold whichever thread searches which move.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from engine.backends import build_evaluator
from engine.bench import BENCH_FENS
from evaluators.base import unwrap
from evaluators.comparator import LANES, _dense, _dot
from hackmate_core import compiled
from hackmate_core.tablebase import Tablebase
from search.base import SearchControl
from search.comparison import ComparisonSearch
from tests.search.test_comparison_search import RULES_POSITIONS, SMOTHERED, rules_board
from tests.search.test_tablebases import SYZYGY
from tests.uci_inprocess import Driver

needs_compiled = pytest.mark.skipif(compiled.ccomparison is None,
                                    reason="the compiled comparison search is not in use")

#: Starting points of random games: castling both ways, en passant and promotions for both sides, Chess960.
GAME_STARTS = [chess.STARTING_FEN, "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
               "8/P1k5/8/3pP3/8/8/5p2/4K3 w - d6 0 1", "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"]


@pytest.fixture(scope="module")
def network():
    """The shipped comparator inside its feature cache, as the engine builds it."""
    return build_evaluator("comparator")


def start_board(fen: str) -> chess.Board:
    return chess.Board(fen, chess960=any(right not in "KQkq-" for right in fen.split()[2]))


def random_positions(count: int, seed: int) -> list[chess.Board]:
    """Positions of random games from GAME_STARTS."""
    rng = random.Random(seed)
    boards = []
    while len(boards) < count:
        board = start_board(rng.choice(GAME_STARTS))
        for _ in range(rng.randrange(1, 60)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def state(board: chess.Board) -> tuple:
    return compiled.cboard.Board.from_board(board, history=False).state()


def compiled_features(network, board: chess.Board) -> np.ndarray:
    return np.frombuffer(unwrap(network).compiled.features(state(board), board.chess960), np.float32).reshape(2, -1)


def test_numpy_sums_in_the_defined_order():
    """The reference's sums are the ones C computes: each output input by input, then the bias; the head's last
    layer in LANES lanes, then the lanes in order. A plain loop in float32 is the definition."""
    rng = np.random.default_rng(3)
    x = np.maximum(rng.standard_normal((5, 100)), 0).astype(np.float32)
    weight, bias = rng.standard_normal((100, 37)).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    expected = np.zeros((5, 37), np.float32)
    for i in range(100):
        expected = expected + x[:, i:i + 1] * weight[i]
    assert np.array_equal(_dense(x, weight, bias), expected + bias)
    pairs, out = x.reshape(5, 1, 100).repeat(2, axis=1), weight[:, 0].copy()
    lanes = np.zeros((5, 2, LANES), np.float32)
    for i in range(100):
        lanes[..., i % LANES] = lanes[..., i % LANES] + pairs[..., i] * out[i]
    total = lanes[..., 0]
    for lane in range(1, LANES):
        total = total + lanes[..., lane]
    assert np.array_equal(_dot(pairs, out), total)


@needs_compiled
def test_the_compiled_comparator_computes_numpy_s_numbers(network):
    bare = unwrap(network)
    boards = random_positions(60, seed=1)
    features = []
    for board in boards:
        expected = bare.features_from_accumulators(bare.full_accumulator(board)[None])[0]
        assert np.array_equal(compiled_features(network, board), expected), board.fen()
        features.append(expected)
    pairs = list(zip(features, features[1:] + features[:1])) + [(features[0], features[0])]
    for first, second in pairs:
        assert bare.compiled.prefers_first(first.tobytes(), second.tobytes()) == bare.prefers_first(first, second)
    assert bare.prefers_first(features[0], features[0]) == 0.5  # equal features: exactly even
    many = bare.prefers_first_many(features, features[7])
    assert many == [bare.compiled.prefers_first(f.tobytes(), features[7].tobytes()) for f in features]


@needs_compiled
@pytest.mark.parametrize("start", GAME_STARTS)
def test_the_compiled_accumulator_never_drifts(network, start):
    """Long random walks of moves made and unmade: the first layer updated move by move is the one computed from
    scratch, bit for bit, and so are the features."""
    bare = unwrap(network)
    rng = random.Random(start)
    board = start_board(start)
    walker = compiled.ccomparison.Accumulator(bare.compiled, state(board), board.chess960)
    for step in range(400):
        moves = list(board.legal_moves)
        if board.move_stack and (not moves or rng.random() < 0.4):
            board.pop()
            walker.pop()
        else:
            move = rng.choice(moves)
            board.push(move)
            walker.push(compiled.move_code(move))
        assert walker.values() == bare.full_accumulator(board).tolist(), (step, board.fen())
        if step % 25 == 0:
            expected = bare.features_from_accumulators(bare.full_accumulator(board)[None])[0]
            assert np.array_equal(np.frombuffer(walker.features(), np.float32).reshape(2, -1), expected)


def search_lines(network, monkeypatch, board: chess.Board, path: str, options: dict | None = None,
                 tablebase: Tablebase | None = None, hash_mb: float = 16, **limits) -> list:
    """A search's move, ponder move, nodes and reports on ``path``: compiled (C), board (Python on the compiled
    board) or pure (python-chess)."""
    with monkeypatch.context() as patch:
        if path == "pure":
            patch.setattr(compiled, "cboard", None)
        network.new_game()
        search = ComparisonSearch(network)
        search.set_hash(hash_mb)
        search.tablebase = tablebase
        if path == "board":
            patch.setattr(search, "_compiled_network", lambda: None)
        for name, value in (options or {}).items():
            search.set_option(name, value)
        infos = []
        result = search.search(board, SearchControl(**limits), infos.append)
        assert search.searched_compiled == (path == "compiled")
    return [result.best_move, result.ponder_move, search.nodes] + [
        (info.depth, info.seldepth, info.nodes, info.score, info.pv, info.tbhits) for info in infos]


@needs_compiled
@pytest.mark.parametrize("options", [{}, {"KillerMoves": False}, {"MoveOrdering": "captures+history"},
                                     {"NullMove": False}, {"DeeperReductions": False}, {"LateMovePruning": False},
                                     {"HistoryNearLeaves": False}, {"TranspositionTable": False}],
                         ids=["defaults", "no-killers", "history", "no-null-move", "no-deeper-reductions",
                              "no-late-move-pruning", "no-history-near-leaves", "no-transposition-table"])
@pytest.mark.parametrize("fen", BENCH_FENS)
def test_both_paths_search_the_bench_positions_alike_to_depth_4(network, monkeypatch, fen, options):
    """Depth 4 reports depths 1 to 4 on the way: each iteration's nodes, score and line must be equal, with the
    killers (kept across iterations) and the history of cut-offs as well as without, and with null moves (the
    default) as well as without, with the latest quiet moves reduced one ply, not two (the default), with
    the latest quiet moves near the leaves searched, not pruned (the default), with the comparator ordering
    the moves there, not the history (the default), and without the transposition table."""
    lines = search_lines(network, monkeypatch, chess.Board(fen), "compiled", options, max_depth=4)
    assert [info[0] for info in lines[3:]] == [1, 2, 3, 4]
    assert search_lines(network, monkeypatch, chess.Board(fen), "board", options, max_depth=4) == lines


@needs_compiled
@pytest.mark.parametrize("fen, moves", RULES_POSITIONS)
@pytest.mark.parametrize("limits, options", [({"max_depth": 3}, {}), ({"max_nodes": 300}, {}),
                                             ({"max_depth": 4, "max_nodes": 2500}, {})],
                         ids=["depth-3", "nodes-300", "null-move-depth-4"])
def test_every_path_searches_the_rules_positions_alike(network, monkeypatch, fen, moves, limits, options):
    """Checks, promotions, en passant, castling, Chess960, repetitions in the game's history, the fifty-move rule
    and insufficient material; a node budget stops an iteration halfway (its first move's best leaf is kept); null
    moves, tried from depth 4 on (the first where a node below the root has 3 plies to go), on each board."""
    lines = [search_lines(network, monkeypatch, rules_board(fen, moves), path, options, **limits)
             for path in ("compiled", "board", "pure")]
    assert lines[0] == lines[1] == lines[2]


@needs_compiled
@pytest.mark.parametrize("options", [{"Quiescence": False}, {"MoveOrdering": "comparator"},
                                     {"MoveOrdering": "captures"}, {"MoveOrdering": "captures+history"},
                                     {"MoveOrdering": "captures+history", "KillerMoves": False},
                                     {"MoveOrdering": "comparator", "KillerMoves": False}, {"KillerMoves": False},
                                     {"HashMove": False}, {"CheckExtension": False},
                                     {"LateMoveReductions": False}, {"IncrementalAccumulator": False},
                                     {"NullMove": False}, {"DeeperReductions": False}, {"LateMovePruning": False},
                                     {"HistoryNearLeaves": False}, {"TranspositionTable": False}])
def test_both_paths_honour_every_option_alike(network, monkeypatch, options):
    board = chess.Board(BENCH_FENS[1])
    lines = search_lines(network, monkeypatch, board, "compiled", options, max_depth=3)
    assert search_lines(network, monkeypatch, board, "board", options, max_depth=3) == lines


@needs_compiled
def test_both_paths_evict_from_a_full_best_move_table_alike(network, monkeypatch):
    """A tiny Hash: the best-move and transposition tables (64 entries each) evict throughout, least recently used
    first, on both."""
    board = chess.Board(BENCH_FENS[7])
    lines = search_lines(network, monkeypatch, board, "compiled", hash_mb=0.001, max_depth=4)
    assert search_lines(network, monkeypatch, board, "board", hash_mb=0.001, max_depth=4) == lines


@needs_compiled
@pytest.mark.parametrize("ordering", ["captures+comparator", "captures+history"])
def test_both_paths_keep_and_shrink_the_best_move_table_alike(network, monkeypatch, ordering):
    """The table outlives a search: the next one (another position, the same game) starts from it, after Hash
    shrank it to its 64 most recent entries (and emptied the transposition table); the killers and the history
    start anew with each search."""
    def two_searches(path: str) -> list:
        with monkeypatch.context() as patch:
            network.new_game()
            search = ComparisonSearch(network)
            search.set_option("MoveOrdering", ordering)
            if path == "board":
                patch.setattr(search, "_compiled_network", lambda: None)
            board = chess.Board(BENCH_FENS[2])
            search.search(board, SearchControl(max_depth=3), lambda info: None)
            search.set_hash(0.001)
            board.push(search.search(board, SearchControl(max_depth=3), lambda info: None).best_move)
            result = search.search(board, SearchControl(max_depth=4), lambda info: None)
            return [result.best_move, search.nodes]
    assert two_searches("compiled") == two_searches("board")


@needs_compiled
def test_both_paths_start_from_the_last_search_s_transpositions_alike(network, monkeypatch):
    """The transposition table outlives a search: after a move and its answer the next search finds the last one's
    deeper results (fewer nodes than from an empty table), on both paths alike."""
    def searches(path: str, keep: bool) -> list:
        with monkeypatch.context() as patch:
            network.new_game()
            search = ComparisonSearch(network)
            if path == "board":
                patch.setattr(search, "_compiled_network", lambda: None)
            board = chess.Board(BENCH_FENS[4])
            result = search.search(board, SearchControl(max_depth=5), lambda info: None)
            board.push(result.best_move)
            board.push(result.ponder_move)
            if not keep:
                search.new_game()
            result = search.search(board, SearchControl(max_depth=4), lambda info: None)
            return [result.best_move, search.nodes]
    kept = searches("compiled", True)
    assert searches("board", True) == kept
    assert kept[1] < searches("compiled", False)[1]


@needs_compiled
def test_both_paths_search_moves_alike(network, monkeypatch):
    searchmoves = [chess.Move.from_uci(uci) for uci in ("c4g8", "h2h3", "g1f1")]
    board = chess.Board(SMOTHERED)
    lines = search_lines(network, monkeypatch, board, "compiled", max_depth=3, searchmoves=searchmoves)
    assert lines[0] in searchmoves
    assert search_lines(network, monkeypatch, board, "board", max_depth=3, searchmoves=searchmoves) == lines


@needs_compiled
@pytest.mark.skipif(not (SYZYGY / "KRvK.rtbw").is_file(), reason="no Syzygy tables")
@pytest.mark.parametrize("fen", ["8/8/4k3/8/8/3K4/7R/8 w - - 0 1", "8/2k5/8/8/3PK3/8/8/8 w - - 0 1"])
def test_both_paths_use_the_tablebases_alike(network, monkeypatch, fen):
    tablebase = Tablebase(str(SYZYGY))
    lines = search_lines(network, monkeypatch, chess.Board(fen), "compiled", tablebase=tablebase, max_depth=3)
    assert lines[-1][5] > 0  # the tables were probed inside the tree
    assert search_lines(network, monkeypatch, chess.Board(fen), "board", tablebase=tablebase, max_depth=3) == lines


@needs_compiled
def test_stop_during_go_infinite_is_answered_on_the_compiled_path():
    driver = Driver("--eval", "comparator", "--search", "comparison")
    driver.send("position startpos moves e2e4 e7e5", "go infinite")
    driver.out.wait_for("info depth", timeout=60)  # a guard against a hang, not a time limit
    start = len(driver.lines)
    driver.send("stop")
    best = driver.out.wait_for("bestmove", timeout=60, start=start).split()[1]
    assert driver.engine.search.searched_compiled
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(best) in board.legal_moves


@needs_compiled
def test_a_fuzzed_exchange_stays_clean_on_the_compiled_path(lenient, monkeypatch):
    """tests/engine/test_uci_fuzz.py's random, broken and mutated lines, the backend left alone (no Evaluator,
    Search or Weights lines): no internal error, a legal bestmove for every search, the compiled search searching."""
    import tests.engine.test_uci_fuzz as fuzz
    options = {name: values for name, values in fuzz.OPTIONS.items() if name not in ("Evaluator", "Search", "Weights")}
    options.update({"MoveOrdering": ["captures+comparator", "comparator", "captures", "captures+history", "none"],
                    "HashMove": ["true", "false"], "CheckExtension": ["true", "false"],
                    "LateMoveReductions": ["true", "false"], "KillerMoves": ["true", "false"],
                    "NullMove": ["true", "false", "maybe"], "DeeperReductions": ["true", "false"],
                    "LateMovePruning": ["true", "false"], "HistoryNearLeaves": ["true", "false"],
                    "TranspositionTable": ["true", "false"]})
    monkeypatch.setattr(fuzz, "OPTIONS", options)
    rng = random.Random(fuzz.SEED)
    driver = Driver("--eval", "comparator", "--search", "comparison")
    engine = driver.engine
    searched = fuzz.fuzz(driver, rng, 600, 60)
    engine.handle("position startpos moves e2e4")
    best = driver.go("go depth 2", timeout=60)
    searched.append(engine.board.copy())
    assert engine.search.searched_compiled
    problems = [line for line in driver.lines
                if "error in" in line or "search failed" in line or "not a legal move in" in line]
    assert not problems, problems[:5]
    bestmoves = [line.split()[1] for line in driver.lines if line.startswith("bestmove")]
    assert len(bestmoves) == len(searched) and bestmoves[-1] == best.split()[1]
    for board, move in zip(searched, bestmoves):
        assert move != "0000" or not any(board.legal_moves)
        if move != "0000":
            assert board.parse_uci(move) in board.legal_moves, (board.fen(), move)


# ---------------------------------------------------------------------------------------------- two threads


def threaded_search(network, board: chess.Board, **limits) -> tuple[ComparisonSearch, chess.Move, list]:
    network.new_game()
    search = ComparisonSearch(network)
    search.set_threads(2)
    infos = []
    result = search.search(board, SearchControl(**limits), infos.append)
    assert search.searched_compiled
    return search, result.best_move, infos


@needs_compiled
@pytest.mark.parametrize("fen", BENCH_FENS)
def test_two_threads_share_the_root_s_moves_and_report_a_legal_line(network, fen):
    """To depth 8: enough work that the second thread has started before the first runs out of root moves (with
    the transposition table the start position's depth 6 took 4,000 nodes, a few milliseconds)."""
    board = chess.Board(fen)
    search, best, infos = threaded_search(network, board, max_depth=8)
    assert search.searcher.helper_nodes > 0
    assert search.nodes == search.searcher.nodes == infos[-1].nodes
    assert [info.depth for info in infos] == list(range(1, 9))
    for info in infos:
        line = board.copy()
        for move in info.pv:
            assert move in line.legal_moves
            line.push(move)
    assert infos[-1].pv[0] == best


@needs_compiled
@pytest.mark.parametrize("fen, moves", RULES_POSITIONS)
def test_two_threads_search_the_rules_positions_to_a_legal_move(network, fen, moves):
    board = rules_board(fen, moves)
    search, best, infos = threaded_search(network, board, max_depth=5)
    assert best in board.legal_moves


@needs_compiled
def test_two_threads_find_the_mate_one_finds():
    """Depth 4, the first the root is split at: the smothered mate in 4 plies whichever thread finds it."""
    network = build_evaluator("comparator")
    search, best, infos = threaded_search(network, chess.Board(SMOTHERED), max_depth=4)
    assert best.uci() == "c4g8" and infos[-1].mate > 0


@needs_compiled
def test_two_threads_stop_at_the_node_budget(network):
    """The first thread asks the stoppers every CHECK_NODES_EVERY nodes of its own, with both threads' count: the
    budget is passed only by what the second searches meanwhile (a few dozen nodes, more when the first waits for a
    core)."""
    search, best, infos = threaded_search(network, chess.Board(BENCH_FENS[2]), max_nodes=20_000)
    assert search.searcher.helper_nodes > 0
    assert 20_000 <= search.nodes < 21_000


@needs_compiled
def test_two_threads_search_only_the_searchmoves(network):
    searchmoves = [chess.Move.from_uci(uci) for uci in ("c4g8", "h2h3", "g1f1", "c4f7")]
    search, best, infos = threaded_search(network, chess.Board(SMOTHERED), max_depth=5, searchmoves=searchmoves)
    assert best in searchmoves and all(info.pv[0] in searchmoves for info in infos)


@needs_compiled
@pytest.mark.skipif(not (SYZYGY / "KRvK.rtbw").is_file(), reason="no Syzygy tables")
def test_two_threads_probe_the_tablebases_on_the_first(network):
    """Five pieces at the root (Kxc4 leaves four): the first thread probes inside the tree, the second searches."""
    network.new_game()
    search = ComparisonSearch(network)
    search.set_threads(2)
    search.tablebase = Tablebase(str(SYZYGY))
    infos = []
    # depth 8: about 3,000 nodes for the second thread (at depth 5 it had 2, none on a loaded machine)
    search.search(chess.Board("8/8/4k3/8/2r5/3K4/6PR/8 w - - 0 1"), SearchControl(max_depth=8), infos.append)
    assert search.searcher.helper_nodes > 0 and infos[-1].tbhits > 0


@needs_compiled
def test_two_threads_survive_the_tables_resized_and_cleared_mid_search(network):
    """A `setoption Hash` or `ucinewgame` handled while the second thread runs (here from the stop callback): the
    second thread's tables are made anew before its next search, its node count kept."""
    network.new_game()
    search = ComparisonSearch(network)
    search.set_threads(2)
    calls = 0

    def stopped(nodes: int) -> bool:
        nonlocal calls
        calls += 1
        if calls % 50 == 0:
            search.searcher.resize(1000 + calls, 1.0, 500 + calls)
        if calls % 70 == 0:
            search.searcher.clear()
        return False

    control = SearchControl(max_depth=6)
    control.stopped = stopped
    for fen in BENCH_FENS[:4]:
        infos = []
        result = search.search(chess.Board(fen), control, infos.append)
        assert result.best_move in chess.Board(fen).legal_moves
        assert all(before.nodes < after.nodes for before, after in zip(infos, infos[1:]))  # none lost
    assert calls > 140 and search.searcher.helper_nodes > 0


@needs_compiled
def test_two_threads_survive_a_resize_mid_search_then_a_clear_between_searches(network):
    """`setoption Hash` during a search marks the second thread's tables outdated; a `ucinewgame` after that search
    must leave the next search a second thread to start from (it once found none, and crashed)."""
    network.new_game()
    search = ComparisonSearch(network)
    search.set_threads(2)

    def stopped(nodes: int) -> bool:
        if search.iteration_depth == 7 and search.searcher.helper_nodes:  # in the last iteration
            search.searcher.resize(2000, 1.0, 1000)
        return False

    control = SearchControl(max_depth=7)
    control.stopped = stopped
    board = chess.Board(BENCH_FENS[2])
    search.search(board, control, lambda info: None)
    search.new_game()
    infos = []
    result = search.search(board, SearchControl(max_depth=7), infos.append)
    assert result.best_move in board.legal_moves and search.searcher.helper_nodes > 0
