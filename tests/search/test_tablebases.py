"""Syzygy tablebases in every search: exact scores, the root filter, tbhits, and won endings converted to mate.

The tables live outside the repository (../shared/data/syzygy, or $SYZYGY_PATH). Where they are absent every test
here is skipped with the reason, except in CI, which has them and fails on such a skip (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import chess
import pytest

from engine.backends import apply_hash, build_evaluator, build_search
from evaluators.material import MaterialEvaluator
from hackmate_core.score import TB_WIN_CP
from hackmate_core.tablebase import Tablebase
from search.base import SearchControl
from search.puct import PuctSearch
from tests.conftest import ROOT

SYZYGY = Path(os.environ.get("SYZYGY_PATH", ROOT.parent / "shared" / "data" / "syzygy"))
pytestmark = pytest.mark.skipif(not (SYZYGY / "KQvK.rtbw").is_file(),
                                reason=f"no Syzygy tables in {SYZYGY} (set SYZYGY_PATH to a directory with them)")

#: The engine's backends, each with its natural search, and node budgets that keep the games quick.
BACKENDS = {"alphabeta": ("material", "alphabeta", dict(max_nodes=300)),
            "puct": ("resnet", "puct", dict(max_nodes=64)),
            "comparison": ("comparator", "comparison", dict(max_depth=2, max_nodes=300))}

KQVK = "8/8/8/3k4/8/8/8/KQ6 w - - 0 1"  # DTZ 17
KRVK = "8/8/8/4k3/8/8/8/R3K3 w - - 0 1"  # DTZ 27
DRAWN_KRVKR = "8/8/4k3/3r4/8/8/3R4/4K3 w - - 0 1"


@pytest.fixture(scope="module")
def tablebase() -> Tablebase:
    return Tablebase(str(SYZYGY))


def backend(name: str, tablebase: Tablebase):
    evaluator_name, search_name, limits = BACKENDS[name]
    evaluator = build_evaluator(evaluator_name)
    search = build_search(search_name, evaluator)
    apply_hash(16, search, evaluator)
    search.tablebase = tablebase
    return search, limits


def test_root_filter_keeps_the_fastest_winning_moves(tablebase):
    board = chess.Board(KRVK)
    result, kept = tablebase.root_moves(board, list(board.legal_moves))
    assert result == 1 and kept
    plies = {}
    for move in board.legal_moves:
        board.push(move)
        if tablebase.probe_wdl(board) == -2:
            plies[move] = -tablebase.probe_dtz(board) + 1
        board.pop()
    assert all(plies[move] == min(plies.values()) for move in kept)


def test_root_filter_keeps_drawing_moves_and_the_longest_defence(tablebase):
    drawn = chess.Board(DRAWN_KRVKR)
    result, kept = tablebase.root_moves(drawn, list(drawn.legal_moves))
    assert result == 0
    for move in drawn.legal_moves:  # every move that keeps the draw, none that loses
        drawn.push(move)
        keeps_draw = tablebase.probe_wdl(drawn) == 0
        drawn.pop()
        assert (move in kept) == keeps_draw
    losing = chess.Board("8/8/8/4k3/8/8/8/R3K3 b - - 0 1")
    result, kept = tablebase.root_moves(losing, list(losing.legal_moves))
    assert result == -1 and kept


def test_fifty_move_clock_turns_a_slow_win_into_a_draw(tablebase):
    late = chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 90 100")  # 27 plies to mate, 10 left before the rule
    assert tablebase.root_moves(late, list(late.legal_moves))[0] == 0
    assert tablebase.probe_result(chess.Board(KRVK)) == 1


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("start", [KQVK, KRVK])
def test_every_search_mates_with_queen_or_rook_within_the_fifty_move_rule(name, start, tablebase):
    search, limits = backend(name, tablebase)
    board = chess.Board(start)
    first_infos = []
    while not board.is_game_over(claim_draw=True):
        infos = []
        result = search.search(board, SearchControl(**limits), infos.append)
        first_infos = first_infos or infos
        assert result.best_move in board.legal_moves
        board.push(result.best_move)
    assert board.is_checkmate() and board.turn == chess.BLACK, board.fen()
    assert board.ply() <= 60  # DTZ-optimal play: well within the hundred half-moves
    report = first_infos[-1]
    assert report.tbhits > 0
    assert report.wdl == (1000, 0, 0)
    assert (report.mate or 0) > 0 or report.score_cp >= TB_WIN_CP - 100  # reported as a win


@pytest.mark.parametrize("name", BACKENDS)
def test_every_search_scores_a_drawn_ending_zero(name, tablebase):
    search, limits = backend(name, tablebase)
    infos = []
    board = chess.Board(DRAWN_KRVKR)
    result = search.search(board, SearchControl(**limits), infos.append)
    assert infos[-1].score_cp == 0 and infos[-1].wdl == (0, 1000, 0)
    board.push(result.best_move)
    assert tablebase.probe_wdl(board) == 0  # it kept the draw


@pytest.mark.parametrize("name", BACKENDS)
def test_every_search_probes_inside_its_tree(name, tablebase):
    # Five pieces: the root is not covered, but after Qxd4 the tables know KQvKN is won.
    board = chess.Board("4k2n/8/8/8/3r4/8/8/3QK3 w - - 0 1")
    after = board.copy()
    after.push_uci("d1d4")
    assert tablebase.probe_wdl(after) == -2
    search, limits = backend(name, tablebase)
    infos = []
    result = search.search(board, SearchControl(**limits), infos.append)
    assert result.best_move.uci() == "d1d4"
    assert infos[-1].tbhits > 0
    assert infos[-1].score_cp >= TB_WIN_CP - 100 or name == "puct"  # PUCT averages: its Q stays below 1


def test_puct_stopped_at_once_at_a_tablebase_root_reports_the_tables_result(tablebase):
    for fen, sign in ((DRAWN_KRVKR, 0), ("8/8/8/4k3/8/8/8/R3K3 b - - 0 1", -1)):
        search = PuctSearch(MaterialEvaluator())  # its value says equal material, or a rook down: not the tables'
        search.tablebase = tablebase
        control = SearchControl(infinite=True)
        control.stop()
        infos = []
        search.search(chess.Board(fen), control, infos.append)
        assert infos[-1].nodes == 1
        assert infos[-1].score * sign > 1000 if sign else infos[-1].score == 0
