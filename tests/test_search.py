"""Searches find mates, respect limits and score draws by rule."""

from __future__ import annotations

import chess
import chess.polyglot
import pytest

from evaluators.base import Evaluation
from evaluators.material import MaterialEvaluator, PstEvaluator
from evaluators.score import cp_to_q
from search.alphabeta import AlphaBetaSearch
from search.base import SearchControl
from search.puct import PuctSearch

MATE_IN_ONE = [("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"),
               ("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "f3f7")]
MATE_IN_TWO = [("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1", "d5f6"),
               ("6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1", "g2g1")]


def run(search, fen: str, **limits):
    infos = []
    result = search.search(chess.Board(fen), SearchControl(**limits), infos.append)
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


def test_repetition_is_detected_from_game_history():
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    search = AlphaBetaSearch(MaterialEvaluator())
    search.keys = search._history_keys(board)

    assert search._is_draw(board, chess.polyglot.zobrist_hash(board))
    assert not search._is_draw(chess.Board(), chess.polyglot.zobrist_hash(chess.Board()))


def test_puct_reuses_tree():
    search = PuctSearch(PstEvaluator())
    board = chess.Board()
    result = search.search(board, SearchControl(max_nodes=600), lambda info: None)
    board.push(result.best_move)
    board.push(result.ponder_move)
    search.search(board, SearchControl(max_nodes=600), lambda info: None)
    assert search.reused > 0


def test_puct_stops_on_stop_event():
    search = PuctSearch(MaterialEvaluator())
    control = SearchControl(infinite=True)
    control.stop()
    result = search.search(chess.Board(), control, lambda info: None)
    assert result.best_move in chess.Board().legal_moves


def test_mate_in_one_detection():
    from search.puct import mate_in_one
    assert mate_in_one(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")) == chess.Move.from_uci("a1a8")
    assert mate_in_one(chess.Board("4r1k1/3R1ppp/8/8/8/8/5PPP/6K1 b - - 0 1")) == chess.Move.from_uci("e8e1")
    assert mate_in_one(chess.Board()) is None
    assert mate_in_one(chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 b - - 0 1")) is None


class CaptureHungryEvaluator(MaterialEvaluator):
    """Material value, but priors that almost only look at captures (checks get no bonus)."""

    def evaluate(self, board: chess.Board) -> Evaluation:
        moves = list(board.legal_moves)
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
