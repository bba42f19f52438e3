"""The compiled alpha-beta search (hackmate_core._calphabeta) searches exactly as search/alphabeta.py does.

Each position is searched twice in this process, compiled and in Python (an AlphaBetaSearch without its
evaluation table searches in Python), with a node budget: the node counts, scores, principal variations and
reports must be equal.
"""

from __future__ import annotations

import threading

import chess
import pytest

from evaluators.material import MaterialEvaluator, PstEvaluator
from hackmate_core import compiled
from hackmate_core.tablebase import Tablebase
from search.alphabeta import AlphaBetaSearch
from search.base import SearchControl
from tests.search.test_tablebases import SYZYGY

needs_compiled = pytest.mark.skipif(compiled.calphabeta is None, reason="the compiled alpha-beta search is not in use")

#: (FEN or moves from the start, what it exercises)
POSITIONS = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "start"),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", "castling, many captures"),
    ("6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1", "mate in two"),
    ("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "mate in one"),
    ("8/1P6/8/8/8/8/5k1p/7K w - - 0 1", "promotions for both sides"),
    ("2r3k1/1P6/8/8/8/8/6K1/8 w - - 0 1", "promotion by capture, underpromotion"),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "en passant"),
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", "Chess960 castling"),
    ("7k/8/8/8/8/8/8/K5Q1 w - - 99 80", "fifty-move rule"),
    ("r3k3/8/8/8/8/8/8/4K2R w KQkq - 0 1", "castling rights without their rooks"),
    ("8/8/4k3/8/8/3NK3/8/8 w - - 0 1", "insufficient material"),
    ("k7/8/1Q6/8/8/8/8/7K w - - 0 1", "stalemate in the tree"),
    ("r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10", "middlegame, null moves"),
]
#: Moves from the start: the knights dance twice, so the game's history holds repetitions.
REPETITIONS = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8", "b1c3"]


def board_of(fen: str) -> chess.Board:
    return chess.Board(fen, chess960=" HFhf " in fen)


def search_both(board: chess.Board, evaluator_class: type, tablebase: Tablebase | None = None,
                **limits) -> list[tuple]:
    """What the compiled and the Python search report for ``board``: [(nodes, best, ponder, infos)] of each."""
    results = []
    for compiled_path in (True, False):
        search = AlphaBetaSearch(evaluator_class())
        search.tablebase = tablebase
        if not compiled_path:
            search.evaluation_table = None
        infos = []
        result = search.search(board, SearchControl(**limits), infos.append)
        assert search.searched_compiled == compiled_path
        results.append((search.nodes, result.best_move, result.ponder_move,
                        [(i.depth, i.seldepth, i.nodes, i.score, i.pv, i.multipv, i.hashfull, i.tbhits)
                         for i in infos]))
    return results


@needs_compiled
@pytest.mark.parametrize("fen", [fen for fen, _ in POSITIONS], ids=[what for _, what in POSITIONS])
@pytest.mark.parametrize("evaluator_class", [MaterialEvaluator, PstEvaluator])
def test_compiled_search_equals_python_search(fen, evaluator_class):
    compiled_result, python_result = search_both(board_of(fen), evaluator_class, max_nodes=1500)
    assert compiled_result == python_result


@needs_compiled
def test_repetitions_of_the_game_history_are_seen_alike():
    board = chess.Board()
    for uci in REPETITIONS:
        board.push_uci(uci)
    compiled_result, python_result = search_both(board, PstEvaluator, max_nodes=3000)
    assert compiled_result == python_result


@needs_compiled
@pytest.mark.skipif(not (SYZYGY / "KQvKN.rtbw").is_file(), reason=f"no Syzygy tables in {SYZYGY}")
def test_tablebases_inside_the_tree_are_probed_alike():
    tablebase = Tablebase(str(SYZYGY))
    for fen in ("4k2n/8/8/8/3r4/8/8/3QK3 w - - 0 1", "8/8/4k3/3r4/8/8/3R4/4K3 w - - 0 1"):
        compiled_result, python_result = search_both(chess.Board(fen), MaterialEvaluator, tablebase, max_nodes=800)
        assert compiled_result == python_result and compiled_result[3][-1][-1] > 0


@needs_compiled
def test_multipv_and_searchmoves_are_searched_alike():
    board = board_of(POSITIONS[1][0])
    for evaluator_class in (MaterialEvaluator, PstEvaluator):
        compiled_search, python_search = AlphaBetaSearch(evaluator_class()), AlphaBetaSearch(evaluator_class())
        python_search.evaluation_table = None
        reports = []
        for search in (compiled_search, python_search):
            search.multipv = 3
            infos = []
            control = SearchControl(max_depth=2, searchmoves=[chess.Move.from_uci(u) for u in
                                                                 ("e2a6", "d5e6", "e5f7", "g2h3", "a2a3")])
            search.search(board, control, infos.append)
            reports.append([(i.depth, i.nodes, i.score, i.pv, i.multipv) for i in infos])
        assert reports[0] == reports[1] and {info[4] for info in reports[0]} == {1, 2, 3}


@needs_compiled
def test_a_second_search_reuses_the_table_and_history_alike():
    board = board_of(POSITIONS[11][0])
    compiled_search, python_search = AlphaBetaSearch(PstEvaluator()), AlphaBetaSearch(PstEvaluator())
    python_search.evaluation_table = None
    for search in (compiled_search, python_search):
        search.set_hash(0.1)  # the smallest table: hashfull samples its first 1000 slots
    for _ in range(2):
        for search in (compiled_search, python_search):
            search.search(board, SearchControl(max_nodes=1000), lambda info: None)
        assert compiled_search.nodes == python_search.nodes and compiled_search.history == python_search.history
        assert compiled_search.hashfull() == python_search.hashfull() > 0


@needs_compiled
def test_a_position_the_compiled_board_refuses_is_searched_in_python():
    board = chess.Board("4k3/8/8/8/8/8/8/4K2P w - - 0 1")  # a pawn on the back rank
    search = AlphaBetaSearch(MaterialEvaluator())
    assert search.search(board, SearchControl(max_depth=2), lambda info: None).best_move in board.legal_moves
    assert not search.searched_compiled


@needs_compiled
def test_stop_ends_a_compiled_search():
    search = AlphaBetaSearch(PstEvaluator())
    control = SearchControl(infinite=True)
    timer = threading.Timer(0.2, control.stop)
    timer.start()
    board = board_of(POSITIONS[1][0])
    result = search.search(board, control, lambda info: None)  # it returned: the stop was seen
    timer.join()
    assert search.searched_compiled and result.best_move in board.legal_moves


@needs_compiled
def test_the_searcher_checks_its_arguments():
    searcher = compiled.calphabeta.Searcher(1024)
    with pytest.raises(RuntimeError):
        searcher.search(3, [], None, lambda nodes: False, None)  # no root yet
    root = compiled.cboard.Board.from_board(chess.Board(), history=False)
    table = [0] * (2 * 7 * 64)
    with pytest.raises(ValueError):
        searcher.start(root.state(), False, [], table[:-1], [0] * 4096, None, 0)
    with pytest.raises(ValueError):
        searcher.start(root.state()[:-1], False, [], table, [0] * 4096, None, 0)
    searcher.start(root.state(), False, [1, 2, 3], table, [0] * 4096, 100, 0)
    with pytest.raises(ValueError):
        searcher.search(0, [], None, lambda nodes: False, None)
    with pytest.raises(ValueError):
        searcher.search(2, [70000], None, lambda nodes: False, None)
    with pytest.raises(ZeroDivisionError):
        searcher.search(5, [], None, lambda nodes: 1 / 0, None)
    assert searcher.search(5, [], None, lambda nodes: False, None) is None  # the 100-node budget
    assert searcher.nodes == 100


def test_the_compiled_search_is_built_with_the_compiled_board():
    # CI must not silently search in Python: where the board loads, the search it is built with loads too
    assert (compiled.calphabeta is None) == (compiled.cboard is None)
