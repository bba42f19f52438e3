"""Searches find mates, respect limits, honour searchmoves and Chess960, score draws by rule, bound their memory."""

from __future__ import annotations

import chess
import chess.polyglot
import pytest

from evaluators.base import Evaluation
from evaluators.material import MaterialEvaluator, PstEvaluator
from hackmate_core.score import cp_to_q, q_to_cp
from search.alphabeta import AlphaBetaSearch
from search.base import SearchControl
from search.comparison import ComparisonSearch
from search.puct import PuctSearch
from tests.search.test_comparison_quiescence import MaterialComparator

MATE_IN_ONE = [("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"),
               ("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "f3f7")]
MATE_IN_TWO = [("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1", "d5f6"),
               ("6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1", "g2g1")]

SEARCHES = {"alphabeta": lambda: AlphaBetaSearch(MaterialEvaluator()),
            "puct": lambda: PuctSearch(PstEvaluator()),
            "comparison": lambda: ComparisonSearch(MaterialComparator())}


def run(search, fen, **limits):
    infos = []
    board = fen if isinstance(fen, chess.Board) else chess.Board(fen)
    result = search.search(board, SearchControl(**limits), infos.append)
    return result, infos


@pytest.mark.parametrize("fen,best", MATE_IN_ONE + MATE_IN_TWO)
def test_alphabeta_finds_mates(fen, best):
    result, infos = run(AlphaBetaSearch(MaterialEvaluator()), fen, max_depth=5)
    assert result.best_move.uci() == best
    assert infos[-1].mate is not None and infos[-1].mate > 0


@pytest.mark.parametrize("fen,best", MATE_IN_ONE + MATE_IN_TWO)
def test_puct_finds_mates(fen, best):
    result, infos = run(PuctSearch(PstEvaluator()), fen, max_nodes=4000)
    assert result.best_move.uci() == best
    assert infos[-1].mate is not None and infos[-1].mate > 0


def test_node_limit_is_deterministic():
    fen = "r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10"
    first = AlphaBetaSearch(PstEvaluator())
    second = AlphaBetaSearch(PstEvaluator())
    run(first, fen, max_nodes=3000)
    run(second, fen, max_nodes=3000)
    assert first.nodes == second.nodes and first.nodes >= 3000


def test_fifty_move_rule_scores_zero():
    # A queen up, but every move reaches the hundredth half-move without mate: a draw.
    result, infos = run(AlphaBetaSearch(MaterialEvaluator()), "7k/8/8/8/8/8/8/K6Q w - - 99 80", max_depth=3)
    assert infos[-1].score_cp == 0


def test_repetition_against_game_history_follows_the_usual_rule():
    board = chess.Board()
    dance = ("g1f3", "g8f6", "f3g1", "f6g8")
    for uci in dance:
        board.push_uci(uci)
    search = AlphaBetaSearch(MaterialEvaluator())
    search.keys = search._history_keys(board)
    search.root_index = len(search.keys)
    assert not search._is_draw(board, chess.polyglot.zobrist_hash(board))  # second occurrence: play on
    for uci in dance:
        board.push_uci(uci)
    search.keys = search._history_keys(board)
    search.root_index = len(search.keys)
    assert search._is_draw(board, chess.polyglot.zobrist_hash(board))  # third occurrence


def test_puct_and_comparison_score_a_repetition_in_their_tree_as_a_draw():
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    moves = list(board.legal_moves)
    puct = PuctSearch(MaterialEvaluator())
    assert puct._terminal_value(board, moves, tree_plies=4) == (0.0, 1.0, 0)  # the root repeats in the tree
    assert puct._terminal_value(board, moves, tree_plies=2) is None  # a second occurrence in the game: play on
    comparison = ComparisonSearch(MaterialComparator())
    assert comparison._terminal(board, 4, moves).draw
    assert comparison._terminal(board, 2, moves) is None


@pytest.mark.parametrize("name", SEARCHES)
def test_every_search_honours_searchmoves(name):
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8# is excluded
    allowed = [chess.Move.from_uci("g1f1"), chess.Move.from_uci("h2h3")]
    search = SEARCHES[name]()
    infos = []
    control = SearchControl(max_depth=3, max_nodes=500, searchmoves=allowed)
    result = search.search(board, control, infos.append)
    assert result.best_move in allowed
    assert all(info.pv[0] in allowed for info in infos if info.pv)


def test_puct_reuses_tree_and_refilters_after_searchmoves():
    search = PuctSearch(PstEvaluator())
    board = chess.Board()
    result = search.search(board, SearchControl(max_nodes=600), lambda info: None)
    board.push(result.best_move)
    board.push(result.ponder_move)
    search.search(board, SearchControl(max_nodes=600), lambda info: None)
    assert search.reused > 0
    only = [chess.Move.from_uci("a2a3")]
    assert search.search(board, SearchControl(max_nodes=100, searchmoves=only), lambda i: None).best_move == only[0]
    result = search.search(board, SearchControl(max_nodes=300), lambda info: None)
    assert len(search.root.children) == board.legal_moves.count()  # the filtered root was not reused


def test_puct_stopped_before_any_leaf_reports_the_roots_own_evaluation():
    # a `stop` before the first leaf came back: the one node is the root's evaluation, not a made-up score of 0
    evaluator = MaterialEvaluator()
    board = chess.Board("rnbqkb1r/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")  # Black lacks a knight
    control = SearchControl(infinite=True)
    control.stop()
    infos = []
    result = PuctSearch(evaluator).search(board, control, infos.append)
    assert result.best_move in board.legal_moves
    last = infos[-1]
    assert last.nodes == 1 and last.depth <= last.seldepth
    assert last.score == q_to_cp(evaluator.evaluate(board).value) > 100


class CaptureHungryEvaluator(MaterialEvaluator):
    """Material value, but priors that almost only look at captures (checks get no bonus)."""

    def evaluate(self, board: chess.Board, moves=None) -> Evaluation:
        moves = list(board.legal_moves) if moves is None else moves
        weights = [1000.0 if board.is_capture(move) else 1.0 for move in moves]
        total = sum(weights)
        return Evaluation(value=cp_to_q(self.centipawns(board)),
                          priors={move: w / total for move, w in zip(moves, weights)})


def test_puct_does_not_take_a_piece_that_allows_mate_in_one():
    # Rxd7 wins a knight but leaves the back rank: ...Re1#. With 20 playouts the
    # reply is never visited; the mate-in-one check at the leaf proves the loss.
    board = chess.Board("4r1k1/3n1ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    search = PuctSearch(CaptureHungryEvaluator())
    result = search.search(board, SearchControl(max_nodes=20), lambda info: None)
    assert result.best_move != chess.Move.from_uci("d1d7")


def test_puct_tree_stops_growing_at_its_budget_and_says_so():
    search = PuctSearch(MaterialEvaluator())
    search.set_hash(0.3)  # ~1000 nodes
    notes = []
    control = SearchControl(max_nodes=3000, note=notes.append)
    infos = []
    result = search.search(chess.Board(), control, infos.append)
    assert result.best_move in chess.Board().legal_moves
    assert search.nodes >= 3000  # the search went on inside the full tree
    counted = _count(search.root)
    assert search.node_budget <= counted <= search.node_budget + 218  # at most one expansion past the budget
    assert search.tree_nodes == counted
    assert infos[-1].hashfull == 1000
    assert len(notes) == 1 and "tree full" in notes[0]


def _count(node) -> int:
    return 1 + sum(_count(child) for child in node.children or [])


def test_hashfull_reported_by_alphabeta_and_puct():
    alphabeta = AlphaBetaSearch(PstEvaluator())
    alphabeta.set_hash(1)
    _, infos = run(alphabeta, chess.Board(), max_depth=4)
    assert 0 < infos[-1].hashfull < 1000
    search = PuctSearch(PstEvaluator())
    search.set_hash(4)
    _, infos = run(search, chess.Board(), max_nodes=200)
    assert 0 < infos[-1].hashfull < 1000


#: Nxh4 wins the queen; f3g5 comes first among the legal moves.
HANGING_QUEEN = "r1b1kb1r/pppp1ppp/2n2n2/4p3/4P2q/2N2N2/PPPP1PPP/R1BQKB1R w KQkq - 0 1"


@pytest.mark.parametrize("name", ["alphabeta", "alphabeta in Python", "comparison"])
def test_a_search_stopped_in_its_first_iteration_plays_and_reports_the_best_root_move_it_finished(name):
    # 16 nodes end the first iteration after the capture, searched first, and a few more root moves (a `go
    # movetime 1`); the search used to answer with the first legal move, unsearched and unreported.
    search = SEARCHES[name.split()[0]]()
    if name == "alphabeta in Python":
        search.evaluation_table = None
    infos = []
    result = search.search(chess.Board(HANGING_QUEEN), SearchControl(max_nodes=16), infos.append)
    assert search.nodes == 16
    assert result.best_move.uci() == "f3h4"
    assert [(info.depth, info.pv[0].uci()) for info in infos] == [(1, "f3h4")]
    if name != "comparison":
        assert infos[0].score == 900


@pytest.mark.parametrize("name", SEARCHES)
def test_every_search_plays_chess960_castling(name):
    # Shredder-FEN start of Chess960 position 'BQNBRKRN'-like: castling is king takes rook
    board = chess.Board("bqnbrkr1/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEge - 0 1", chess960=True)
    castle = [m for m in board.legal_moves if board.is_castling(m)]
    assert [m.uci() for m in castle] == ["f1h1"]
    result = SEARCHES[name]().search(board, SearchControl(max_depth=2, max_nodes=200, searchmoves=castle),
                                     lambda i: None)
    assert result.best_move == castle[0]
    board.push(result.best_move)
    assert board.king(chess.WHITE) == chess.G1 and board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)
