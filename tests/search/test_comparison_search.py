"""The comparison search's move ordering, best-move table, check extension, node budget and `stop`,
with a transparent comparator (material) and with the shipped network; the comparator's weights file refused
when it is not one. tests/hackmate_core/test_compiled_comparison.py checks that the compiled path searches the same nodes."""

from __future__ import annotations

import math
import shutil
import threading
from pathlib import Path
from typing import Callable

import chess
import numpy as np
import pytest

from engine.backends import build_evaluator
from evaluators.base import LoadError, unwrap
from evaluators.comparator import ComparatorEvaluator
from hackmate_weights import WEIGHTS_DIR
from search.base import SearchControl, SearchInfo
from search.comparison import (EXACT, LATE_MOVE_PRUNING_MOVES, LOWER, TRANSPOSITION_PV, UPPER, ComparisonSearch,
                               Leaf)
from hackmate_core import compiled
from hackmate_core.boards import transposition_key
from tests.search.test_comparison_quiescence import POISONED, MaterialComparator
from tests.search.test_search import HANGING_QUEEN, MATE_IN_ONE, MATE_IN_TWO
from tests.uci_inprocess import Driver

# White can promote on e8 (+800 for the comparator that counts material) or take a knight with the rook (+320).
PROMOTE_OR_TAKE = "6k1/4P3/8/8/3n4/8/8/3R2K1 w - - 0 1"
# Mate in two that starts with a check and ends with a quiet move: 1. Qg8+ Rxg8 2. Nf7#.
SMOTHERED = "3r3k/6pp/7N/8/2Q5/8/6PP/6K1 w - - 0 1"
# Knights and pawns: many quiet moves, and many cut-offs for the comparator that counts material.
KNIGHTS = "4k3/pp3ppp/2n5/8/8/2N5/PP3PPP/4K3 w - - 0 1"


class GradedMaterialComparator(MaterialComparator):
    """The more material White gains, the surer it is: a comparator whose order of children is known."""

    def prefers_first(self, first: float, second: float) -> float:
        return 1.0 / (1.0 + math.exp((second - first) / 200))


def ordered(search: ComparisonSearch, board: chess.Board) -> list[chess.Move]:
    """Every move in the search's order: those the comparator orders put in place too."""
    search.comparator.reset(board)
    moves, ready = search._ordered(board, list(board.legal_moves), transposition_key(board), 0)
    search._finish_order(board, moves, ready, None)
    return moves


@pytest.mark.parametrize("white", [True, False])
@pytest.mark.parametrize("ordering", ["comparator", "captures+comparator", "captures", "captures+history"])
def test_ordering_is_a_permutation_with_the_favourite_first(ordering, white):
    board = chess.Board(PROMOTE_OR_TAKE) if white else chess.Board(PROMOTE_OR_TAKE).mirror()  # Black to move
    promote, take = ("e7e8q", "d1d4") if white else ("e2e1q", "d8d5")
    search = ComparisonSearch(GradedMaterialComparator())
    search.set_option("MoveOrdering", ordering)
    moves = ordered(search, board)
    assert sorted(moves, key=chess.Move.uci) == sorted(board.legal_moves, key=chess.Move.uci)
    assert moves[0].uci() == (promote if ordering == "comparator" else take)
    if ordering == "captures+comparator":  # the comparator's favourite right after the captures
        assert moves[1].uci() == promote


def uci(moves: list[chess.Move]) -> list[str]:
    return [move.uci() for move in moves]


@pytest.mark.parametrize("ordering, place", [("captures+comparator", 1), ("comparator", 0), ("captures", 1),
                                             ("captures+history", 1)])
def test_killers_come_after_the_captures_newest_first(ordering, place):
    """d1d4 is the one capture (it keeps material); the ply's quiet moves that cut off follow it (come first with
    the comparator alone), the newest first; captures, promotions and repeats change no killer."""
    board = chess.Board(PROMOTE_OR_TAKE)
    search = ComparisonSearch(GradedMaterialComparator())
    search.set_option("MoveOrdering", ordering)
    for move in ("g1h2", "g1f1", "g1f1", "d1d4", "e7e8q"):
        search._cut_off(board, chess.Move.from_uci(move), 0, 1)
    assert uci(search.killers.at(0)) == ["g1f1", "g1h2"]
    search.history[chess.WHITE] = [0] * 4096  # the killers alone
    assert uci(ordered(search, board)[place:place + 2]) == ["g1f1", "g1h2"]
    search.set_option("KillerMoves", False)
    assert uci(ordered(search, board)[place:place + 2]) != ["g1f1", "g1h2"]
    search.killers.clear()
    search.killers.remember(1, chess.Move.from_uci("g1f1"))  # killers of another ply: not this one's
    search.set_option("KillerMoves", True)
    assert ordered(search, board)[place].uci() != "g1f1"


def test_a_killer_from_one_sibling_is_tried_early_in_the_next():
    """Without the hash move only captures come before the quiet moves: with KillerMoves a quiet move that cut
    off at a sibling comes right after them, and the search needs fewer nodes (the comparator ordering the rest
    everywhere: the moves it orders are those after the killers)."""
    nodes = {}
    for killer_moves in (True, False):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("HashMove", False)
        search.set_option("HistoryNearLeaves", False)
        search.set_option("KillerMoves", killer_moves)
        early = []
        plain = search._ordered

        def spy(board: chess.Board, moves: list[chess.Move], key, ply: int,
                near_leaves: bool = False) -> tuple[list[chess.Move], int]:
            killer = search.killers.at(ply)[0]
            order, ready = plain(board, moves, key, ply, near_leaves)
            if killer in order[:ready] and not board.is_capture(killer):
                captures = sum(1 for move in order[:ready] if board.is_capture(move))
                early.append(order.index(killer) == captures)
            return order, ready
        search._ordered = spy  # type: ignore[method-assign]
        search.search(chess.Board(KNIGHTS), SearchControl(max_depth=3), lambda info: None)
        nodes[killer_moves] = search.nodes
        assert all(early) and bool(early) == killer_moves
    assert nodes[True] < nodes[False]


def test_history_orders_the_quiet_moves_by_their_cut_offs():
    """captures+history: the captures that keep material, then the other moves by depth squared summed over their
    cut-offs, for the side to move only (ties as generated)."""
    board = chess.Board(PROMOTE_OR_TAKE)
    search = ComparisonSearch(GradedMaterialComparator())
    search.set_option("MoveOrdering", "captures+history")
    search.set_option("KillerMoves", False)
    generated = [move for move in board.legal_moves if move.uci() != "d1d4"]
    assert ordered(search, board) == [chess.Move.from_uci("d1d4")] + generated
    search._cut_off(board, chess.Move.from_uci("g1h2"), 3, 2)  # 4
    search._cut_off(board, chess.Move.from_uci("g1f1"), 5, 3)  # 9
    search._cut_off(board, chess.Move.from_uci("d1d4"), 5, 9)  # a capture: no history
    assert uci(ordered(search, board)[:3]) == ["d1d4", "g1f1", "g1h2"]
    search._cut_off(board, chess.Move.from_uci("g1h2"), 3, 3)  # 4 + 9
    assert uci(ordered(search, board)[:3]) == ["d1d4", "g1h2", "g1f1"]
    black = board.mirror()
    assert ordered(search, black)[1:] == [move for move in black.legal_moves if move.uci() != "d8d5"]


def test_history_ordering_changes_the_search():
    """The same captures first, the quiet moves as generated or by their history: fewer nodes with it."""
    nodes = {}
    for ordering in ("captures", "captures+history"):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("MoveOrdering", ordering)
        search.set_option("KillerMoves", False)
        search.search(chess.Board(KNIGHTS), SearchControl(max_depth=3), lambda info: None)
        assert any(search.history[chess.WHITE]) and any(search.history[chess.BLACK])
        nodes[ordering] = search.nodes
    assert nodes["captures+history"] < nodes["captures"]


@pytest.mark.parametrize("ordering", ["captures+comparator", "captures+history"])
def test_each_search_starts_without_killers_or_history(ordering):
    """Another position's cut-offs leave the next search as a new one would find it (no best-move or transposition
    table)."""
    def nodes(search: ComparisonSearch, fen: str) -> int:
        search.search(chess.Board(fen), SearchControl(max_depth=3), lambda info: None)
        return search.nodes
    search = ComparisonSearch(MaterialComparator())
    search.set_option("MoveOrdering", ordering)
    search.set_option("HashMove", False)
    search.set_option("TranspositionTable", False)
    first = nodes(search, KNIGHTS)
    nodes(search, "4k3/pp3ppp/8/3n4/8/2N5/PP3PPP/4K3 w - - 0 1")
    assert nodes(search, KNIGHTS) == first


def test_the_best_move_table_is_filled_and_read():
    board = chess.Board(PROMOTE_OR_TAKE)
    search = ComparisonSearch(MaterialComparator())
    result = search.search(board, SearchControl(max_depth=3), lambda info: None)
    assert search.best_moves.get(transposition_key(board)) == result.best_move
    stored = chess.Move.from_uci("g1h2")  # any legal move: the table's move is tried first
    search.best_moves.put(transposition_key(board), stored)
    assert ordered(search, board)[0] == stored
    search.set_option("HashMove", False)
    assert ordered(search, board)[0] != stored
    search.new_game()
    assert search.best_moves.get(transposition_key(board)) is None


@pytest.mark.parametrize("white", [True, False])
def test_a_transposition_decides_a_node_only_when_deep_enough_and_beyond_the_bound_on_its_side(white):
    """For the side to move between alpha_pos 100 and beta_pos 300 (White's material): an exact leaf decides the
    node; a lower bound (the side has at least that) only at or beyond the opponent's bound, an upper bound (at most
    that) only at or behind the side's own; never a leaf searched shallower than the node is to be."""
    search = ComparisonSearch(MaterialComparator())
    alpha, beta = Leaf(100.0), Leaf(300.0)
    ahead, within, behind = (400.0, 200.0, 50.0) if white else (50.0, 200.0, 400.0)  # for the side to move
    theirs, own = (300.0, 100.0) if white else (100.0, 300.0)  # the opponent's bound and the side's

    def decides(kind: int, value: float, depth: int = 3) -> bool:
        search.transpositions.put("key", (depth, kind, Leaf(value, pv=(chess.Move.from_uci("e2e4"),))))
        found = search._transposition("key", 3, white, alpha, beta)
        assert found is None or (found.features, found.pv) == (value, (chess.Move.from_uci("e2e4"),))
        return found is not None

    assert decides(EXACT, within) and decides(EXACT, within, depth=4) and not decides(EXACT, within, depth=2)
    assert decides(LOWER, ahead) and decides(LOWER, theirs) and not decides(LOWER, within)
    assert decides(UPPER, behind) and decides(UPPER, own) and not decides(UPPER, within)
    assert search._transposition("another key", 3, white, alpha, beta) is None


@pytest.mark.parametrize("white", [True, False])
def test_a_node_s_best_leaf_is_stored_with_how_it_compares_with_the_node_s_bounds(white):
    """Within the bounds: exact; at or beyond the opponent's: lower (the node was cut); at or behind the side's
    own: upper (no move raised it). Mates, draws and tablebase results are not stored: their plies count from the
    root, and a draw may come from the path."""
    search = ComparisonSearch(MaterialComparator())
    alpha, beta = Leaf(100.0), Leaf(300.0)
    ahead, behind = (400.0, 50.0) if white else (50.0, 400.0)
    line = tuple(chess.Move.from_uci(uci) for uci in ["e2e4", "e7e5"] * 8)
    for value, kind in ((200.0, EXACT), (ahead, LOWER), (300.0 if white else 100.0, LOWER), (behind, UPPER),
                        (100.0 if white else 300.0, UPPER)):
        search._store_transposition("key", 5, white, alpha, beta, Leaf(value, pv=line))
        depth, stored_kind, leaf = search.transpositions.get("key")
        assert (depth, stored_kind, leaf.features, leaf.pv) == (5, kind, value, line[:TRANSPOSITION_PV])
    for unstored in (Leaf(None, mate_ply=3), Leaf(None, draw=True), Leaf(None, tablebase_ply=-4), Leaf(None, bound=1)):
        search._store_transposition("other", 5, white, alpha, beta, unstored)
        assert search.transpositions.get("other") is None


def test_the_transposition_table_spares_nodes_and_outlives_a_search_until_a_new_game():
    """Depth 5 from a position with many transpositions takes fewer nodes with the table, which is then filled;
    the next search of the same position finds its iterations' nodes there and searches fewer still; a new game
    empties it."""
    board = chess.Board(KNIGHTS)

    def nodes(search: ComparisonSearch) -> int:
        search.search(board, SearchControl(max_depth=5), lambda info: None)
        return search.nodes
    without = ComparisonSearch(MaterialComparator())
    without.set_option("TranspositionTable", False)
    search = ComparisonSearch(MaterialComparator())
    first, plain = nodes(search), nodes(without)
    assert first < plain and len(search.transpositions) and not len(without.transpositions)
    assert nodes(search) < first
    search.new_game()
    assert not len(search.transpositions) and nodes(search) == first


@pytest.mark.parametrize("extension,mate", [(True, 2), (False, None)])
def test_check_extension_finds_a_mate_a_plain_search_misses(extension, mate):
    search = ComparisonSearch(MaterialComparator())
    search.set_option("CheckExtension", extension)
    infos = []
    result = search.search(chess.Board(SMOTHERED), SearchControl(max_depth=2), infos.append)
    assert infos[-1].mate == mate
    assert (result.best_move.uci() == "c4g8") == extension


@pytest.mark.parametrize("fen,best", MATE_IN_ONE + MATE_IN_TWO)
def test_mates_are_found_with_every_feature_on(fen, best):
    search = ComparisonSearch(MaterialComparator())
    infos = []
    result = search.search(chess.Board(fen), SearchControl(max_depth=3), infos.append)
    assert result.best_move.uci() == best
    assert infos[-1].mate is not None and infos[-1].mate > 0


def test_late_move_reductions_search_fewer_nodes_to_the_same_depth():
    board = chess.Board("4k3/pp3ppp/2n5/8/8/2N5/PP3PPP/4K3 w - - 0 1")
    counts = {}
    for reductions in (True, False):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("LateMoveReductions", reductions)
        search.search(board, SearchControl(max_depth=3), lambda info: None)
        counts[reductions] = search.nodes
    assert counts[True] < counts[False]


def test_deeper_reductions_search_the_latest_quiet_moves_two_plies_shallower():
    """At the root of depth 4, the least depth they need, moves from the seventh on first go to depth 1 with
    DeeperReductions, and no move below depth 2 without; the first six never below depth 2."""
    board = chess.Board("4k3/pp3ppp/2n5/8/8/2N5/PP3PPP/4K3 w - - 0 1")
    for deeper in (False, True):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("DeeperReductions", deeper)
        children: list[tuple[chess.Move, int]] = []
        search_child = search._alphabeta

        def spy(board: chess.Board, depth: int, ply: int, *rest) -> Leaf:
            if ply == 1 and search.iteration_depth == 4:
                children.append((board.peek(), depth))
            return search_child(board, depth, ply, *rest)

        search._alphabeta = spy
        search.search(board, SearchControl(max_depth=4), lambda info: None)
        assert min(depth for _, depth in children[:6]) >= 2
        shallowest = [move for move, depth in children if depth == 1]
        assert bool(shallowest) == deeper
        assert all(not board.is_capture(move) and move.promotion is None for move in shallowest)


def test_late_move_pruning_skips_the_latest_quiet_moves_one_or_two_plies_from_the_leaves():
    """With LateMovePruning, a node with 1 or 2 plies to go searches, from index LATE_MOVE_PRUNING_MOVES[depth]
    move on, only captures, promotions and checks, and some quiet move is skipped before a later move is searched;
    without it nothing is skipped that way."""
    board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")  # late captures, checks
    for pruning in (False, True):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("LateMovePruning", pruning)
        skipped = 0
        expand = search._expand

        def spy(board: chess.Board, moves: list[chess.Move], child_features, alpha, beta, best, reducible, depth,
                child, **kwargs) -> Leaf:
            nonlocal skipped
            searched: list[chess.Move] = []

            def counting(*args) -> Leaf:
                if board.peek() not in searched:
                    searched.append(board.peek())
                return child(*args)

            leaf = expand(board, moves, child_features, alpha, beta, best, reducible, depth, counting, **kwargs)
            prune_from = kwargs.get("prune_from", 0)
            assert not prune_from or (pruning and prune_from == LATE_MOVE_PRUNING_MOVES[depth])
            if searched:
                for index, move in enumerate(moves[:moves.index(searched[-1]) + 1]):
                    pruned = (prune_from and index >= prune_from and not board.is_capture(move)
                              and move.promotion is None and not board.gives_check(move))
                    assert (move in searched) != bool(pruned)
                    skipped += bool(pruned)
            return leaf

        search._expand = spy
        search.search(board, SearchControl(max_depth=4), lambda info: None)
        assert bool(skipped) == pruning


def test_history_near_leaves_orders_the_late_moves_by_history_where_late_move_pruning_applies():
    """With HistoryNearLeaves, a node that late-move pruning thins hands every move to the search in order at once
    (the comparator orders none: no child's features are computed for it), the quiet moves other than the hash
    move and the killers by their history, highest first; without it the comparator orders them there."""
    root = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    for near_leaves in (False, True):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("HistoryNearLeaves", near_leaves)
        thinned = by_comparator = 0
        expand = search._expand

        def spy(board: chess.Board, moves: list[chess.Move], *args, **kwargs) -> Leaf:
            nonlocal thinned, by_comparator
            if kwargs.get("prune_from"):
                thinned += 1
                ready = kwargs["unordered"][0]
                by_comparator += ready < len(moves)
                if near_leaves:
                    assert ready == len(moves)
                    first = {search.best_moves.get(transposition_key(board)),
                             *search.killers.at(board.ply() - root.ply())}
                    history = search.history[board.turn]
                    keys = [history[move.from_square * 64 + move.to_square] for move in moves
                            if not board.is_capture(move) and move not in first]
                    assert keys == sorted(keys, reverse=True)
            return expand(board, moves, *args, **kwargs)

        search._expand = spy  # type: ignore[method-assign]
        search.search(root, SearchControl(max_depth=4), lambda info: None)
        assert thinned and bool(by_comparator) != near_leaves
        assert any(any(row) for row in search.history)


# White a queen up: passing is good enough for White in most lines, and Black's knight may pass too.
QUEEN_UP = "4k3/pp3ppp/2n5/8/8/2N5/PP3PPP/3QK3 w - - 0 1"
# Kings and pawns only: a pass would find zugzwang no longer one.
PAWN_ENDING = "8/5pk1/6p1/7p/7P/6P1/5PK1/8 w - - 0 1"


def spy_null_moves(search: ComparisonSearch) -> list[chess.Board]:
    """The boards on which the search passes (before the pass), in order; every leaf a node returns is checked
    to carry no null move in its line."""
    passes: list[chess.Board] = []
    push, alphabeta = search._push, search._alphabeta

    def spy_push(board: chess.Board, move: chess.Move) -> None:
        if not move:
            passes.append(board.copy())
        push(board, move)

    def spy_alphabeta(*args, **kwargs):
        leaf = alphabeta(*args, **kwargs)
        assert chess.Move.null() not in leaf.pv
        return leaf
    search._push = spy_push  # type: ignore[method-assign]
    search._alphabeta = spy_alphabeta  # type: ignore[method-assign]
    return passes


@pytest.mark.parametrize("fen", [QUEEN_UP, QUEEN_UP.replace(" w ", " b ")])
def test_null_moves_cut_where_one_side_is_far_ahead(fen):
    """Fewer nodes to depth 4 and the same move: the node where the side a queen up passes fails high (late-move
    pruning off: at depth 4 it leaves a pass little to save)."""
    board = chess.Board(fen)
    nodes, moves = {}, {}
    for null_move in (False, True):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("LateMovePruning", False)
        search.set_option("NullMove", null_move)
        passes = spy_null_moves(search)
        moves[null_move] = search.search(board, SearchControl(max_depth=4), lambda info: None).best_move
        nodes[null_move] = search.nodes
        assert bool(passes) == null_move
    assert nodes[True] < nodes[False] and moves[True] == moves[False]


def test_null_moves_keep_to_their_rule():
    """Never at the root, in check, right after a pass, with only pawns and the king, or less than 3 plies from
    the leaves (the last is seen through the pass's child searched at depth 0, a leaf: no node below it)."""
    root = chess.Board(QUEEN_UP)
    search = ComparisonSearch(MaterialComparator())
    search.set_option("NullMove", True)
    passes = spy_null_moves(search)
    search.search(root, SearchControl(max_depth=5), lambda info: None)
    assert len(passes) > 10
    assert any(board.turn == chess.BLACK for board in passes)  # the side behind passes too
    for board in passes:
        assert len(board.move_stack) > len(root.move_stack) and board.peek()
        assert not board.is_check()
        assert board.occupied_co[board.turn] & ~(board.pawns | board.kings)


@pytest.mark.parametrize("case", ["root", "in check", "after a pass", "pawns only", "initial bound", "shallow",
                                  "allowed"])
def test_the_null_move_rule(case):
    """ComparisonSearch._null_move on one node: it passes only when every condition holds."""
    board = chess.Board(PAWN_ENDING if case == "pawns only" else QUEEN_UP.replace(" w ", " b "))
    board.push(chess.Move.from_uci("g7g6"))  # White to move after a move of Black's
    if case == "after a pass":  # White to move again, after a move and Black's pass
        board.push(chess.Move.from_uci("d1d2"))
        board.push(chess.Move.null())
    search = ComparisonSearch(MaterialComparator())
    search.set_option("NullMove", True)
    passes = spy_null_moves(search)
    search.comparator.reset(board)
    search.even = search.comparator.features(chess.Board())
    beta = Leaf(None, bound=1) if case == "initial bound" else Leaf(search.comparator.features(board) - 100)
    passed = search._null_move(board, 2 if case == "shallow" else 3, 0 if case == "root" else 2,
                               case == "in check", Leaf(None, bound=-1), beta)
    assert len(passes) == (case == "allowed")
    if case == "allowed":  # a queen up, passing still beats a bound 100 below the position: cut, without a line
        assert passed is not None and passed.pv == () and not passed.mate_ply
    else:
        assert passed is None


def test_a_mate_after_a_pass_does_not_cut():
    """White passes and still mates (1... Kg8 2. Qb8#), the only leaf as good for White as Black's bound (a
    position a queen better still): a mate two moves later than the pass, not a cut."""
    board = chess.Board("6k1/8/6K1/8/8/8/8/1Q6 b - - 0 1")
    board.push(chess.Move.from_uci("g8h8"))
    search = ComparisonSearch(MaterialComparator())
    passes = spy_null_moves(search)
    search.comparator.reset(board)
    search.even = search.comparator.features(chess.Board())
    beta = Leaf(search.comparator.features(board) + 900)
    assert search._null_move(board, 5, 2, False, Leaf(None, bound=-1), beta) is None and len(passes) == 1


def test_null_moves_leave_pawn_endings_alone():
    nodes = []
    for null_move in (False, True):
        search = ComparisonSearch(MaterialComparator())
        search.set_option("NullMove", null_move)
        passes = spy_null_moves(search)
        search.search(chess.Board(PAWN_ENDING), SearchControl(max_depth=5), lambda info: None)
        assert not passes
        nodes.append(search.nodes)
    assert nodes[0] == nodes[1]


@pytest.fixture(scope="module")
def network():
    """The shipped comparator inside its feature cache, as the engine builds it."""
    return build_evaluator("comparator")


def test_batched_children_match_one_at_a_time(network):
    board = chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1")
    network.reset(board)
    moves = list(board.legal_moves)
    children = network.child_features(board, moves)
    parent = network.features(board)
    batched = network.prefers_first_many(children, parent)
    bare = unwrap(network)
    for move, features, p in zip(moves, children, batched):
        network.push(board, move)  # reuses the accumulator child_features made
        assert np.array_equal(bare.accumulators[-1], bare.full_accumulator(board))  # integers: exact
        from_scratch = bare.features_from_accumulators(bare.full_accumulator(board)[None])[0]
        network.pop(board)
        assert np.array_equal(features, from_scratch)  # the same sums in the same order
        assert p == network.prefers_first(features, parent)


def test_a_pass_flips_only_the_side_to_move_in_the_accumulator(network):
    """The comparator's incremental first layer after chess.Move.null() is the one computed from scratch, for a
    pass by either side, and popping the pass restores the position's."""
    board = chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq e6 0 1")
    bare = unwrap(network)
    network.reset(board)
    before = bare.accumulators[-1]
    line = [chess.Move.null(), chess.Move.from_uci("a7a6"), chess.Move.from_uci("a2a3"), chess.Move.null()]
    for move in line:  # White passes, then Black
        network.push(board, move)
        assert np.array_equal(bare.accumulators[-1], bare.full_accumulator(board))
    for _ in line:
        network.pop(board)
    assert np.array_equal(bare.accumulators[-1], before) and board.ep_square == chess.E6


def test_node_budget_gives_deterministic_nodes_and_move(network):
    fen = "r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10"
    outcomes = []
    for _ in range(2):
        network.new_game()
        search = ComparisonSearch(network)
        result = search.search(chess.Board(fen), SearchControl(max_nodes=800), lambda info: None)
        outcomes.append((search.nodes, result.best_move))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] >= 800


@pytest.mark.parametrize("path", ["compiled", "python"] if compiled.ccomparison is not None else ["python"])
def test_stop_ends_an_infinite_search(network, monkeypatch, path):
    """`stop` after the first report: the search returns (the waits guard against a hang, they are no time limit)
    with a move it has reported."""
    search = ComparisonSearch(network)
    if path == "python":
        monkeypatch.setattr(search, "_compiled_network", lambda: None)
    control = SearchControl(infinite=True)
    reported = threading.Event()
    infos: list[SearchInfo] = []
    results = []

    def report(info: SearchInfo) -> None:
        infos.append(info)
        reported.set()

    thread = threading.Thread(target=lambda: results.append(search.search(chess.Board(), control, report)))
    thread.start()
    assert reported.wait(60)
    control.stop()
    thread.join(60)
    assert not thread.is_alive() and search.searched_compiled == (path == "compiled")
    assert results[0].best_move in {info.pv[0] for info in infos}


@pytest.mark.parametrize("path", ["compiled", "python"] if compiled.ccomparison is not None else ["python"])
def test_no_null_move_reaches_the_uci_lines(monkeypatch, path):
    """`go depth 4` with NullMove on a bench position where passes cut: every `info ... pv` line and the bestmove
    are legal moves from the position, none a null move; a value that is no boolean gets an info string."""
    fen = "3r3k/2r4p/1p1b3q/p4P2/P2Pp3/1B2P3/3BQ1RP/6K1 w - - 3 87"
    driver = Driver("--eval", "comparator", "--search", "comparison")
    driver.engine.ensure_backend()
    if path == "python":
        monkeypatch.setattr(driver.engine.search, "_compiled_network", lambda: None)
    driver.send("setoption name NullMove value maybe")
    assert driver.strings()[-1] == "info string option NullMove takes true or false, not 'maybe'"
    driver.send("setoption name NullMove value true", f"position fen {fen}")
    best = driver.go("go depth 4", timeout=120).split()
    assert driver.engine.search.null_move and driver.engine.search.searched_compiled == (path == "compiled")
    lines = [line.split(" pv ")[1].split() for line in driver.infos()] + [[best[1], best[3]]]
    assert len(lines) == 5
    for line in lines:
        board = chess.Board(fen)
        for uci in line:
            move = chess.Move.from_uci(uci)
            assert move and move in board.legal_moves, (line, uci)
            board.push(move)


@pytest.mark.parametrize("path", ["compiled", "python"] if compiled.ccomparison is not None else ["python"])
def test_a_stopped_first_iteration_plays_the_best_root_move_it_finished(network, monkeypatch, path):
    network.new_game()
    search = ComparisonSearch(network)
    if path == "python":
        monkeypatch.setattr(search, "_compiled_network", lambda: None)
    infos = []
    result = search.search(chess.Board(HANGING_QUEEN), SearchControl(max_nodes=16), infos.append)
    assert search.nodes == 16 and search.searched_compiled == (path == "compiled")
    assert result.best_move.uci() == "f3h4"  # the capture, searched first; f3g5 is the first legal move
    assert [(info.depth, info.pv[0].uci()) for info in infos] == [(1, "f3h4")]


def test_a_stopped_iteration_plays_the_move_that_beat_the_last_choice():
    # Without quiescence depth 1 takes the defended pawn; depth 2, stopped after the next root move (48 of its
    # 80 nodes), has seen the recapture and a move that keeps the queen.
    search = ComparisonSearch(MaterialComparator())
    search.set_option("Quiescence", False)
    infos = []
    result = search.search(chess.Board(POISONED), SearchControl(max_nodes=48), infos.append)
    assert [info.depth for info in infos] == [1, 2] and infos[0].pv[0].uci() == "d2d5"
    assert result.best_move.uci() != "d2d5" and result.best_move == infos[-1].pv[0]


# Positions whose rules the compiled board must answer as python-chess does: en passant (a legal one and one that
# would expose the king), promotions with and without capture, castling, a draw by repetition in the game's history.
RULES_POSITIONS = (
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", ()),
    ("8/8/8/K2pP2r/8/8/8/7k w - d6 0 2", ()),
    ("r1b1k2r/1P4P1/8/8/8/8/1p4p1/R1B1K2R w KQkq - 0 1", ()),
    ("r1b1k2r/1P4P1/8/8/8/8/1p4p1/R1B1K2R b KQkq - 0 1", ()),
    (chess.STARTING_FEN, ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1")),
    (SMOTHERED, ()),
    (PROMOTE_OR_TAKE, ()),
    ("8/8/4k3/8/8/3K4/7R/8 w - - 99 80", ()),  # the next move ends the game by the fifty-move rule
    ("8/8/4k3/8/3n4/3KB3/8/8 w - - 0 60", ()),  # Kxd4 leaves too little material to mate
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", ()),  # Chess960 castling rights
)


def rules_board(fen: str, moves: tuple[str, ...]) -> chess.Board:
    board = chess.Board(fen, chess960=any(right not in "KQkq-" for right in fen.split()[2]))
    for uci in moves:
        board.push_uci(uci)
    return board


@pytest.mark.skipif(compiled.cboard is None, reason="the compiled board is not in use")
@pytest.mark.parametrize("fen, moves", RULES_POSITIONS)
def test_compiled_moves_and_captures_are_python_chess_s(fen, moves):
    board = rules_board(fen, moves)
    search = ComparisonSearch(MaterialComparator())
    search.cboard = compiled.cboard.Board.from_board(board)
    assert search._legal_moves(board) == list(board.generate_legal_moves())
    if not board.is_check():
        assert search._legal_captures(board) == list(board.generate_legal_captures())


@pytest.mark.parametrize("use_compiled", [True, False] if compiled.cboard is not None else [False])
def test_a_repetition_inside_the_tree_is_a_draw_and_one_before_the_root_is_not(use_compiled):
    board = chess.Board()
    search = ComparisonSearch(MaterialComparator())
    search.comparator.reset(board)
    search.cboard = compiled.cboard.Board.from_board(board) if use_compiled else None
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        search._push(board, chess.Move.from_uci(uci))
    assert search._terminal(board, 4, None).draw  # the root's position again, four plies into the tree
    assert search._terminal(board, 1, None) is None  # as if only the last move were the tree's: seen once before


def comparator_files(tmp_path: Path, change: Callable[[dict], object]) -> Path:
    """The shipped comparator's ONNX file beside a copy of its weights that ``change`` altered."""
    with np.load(WEIGHTS_DIR / "comparator.npz") as data:
        arrays = {name: data[name] for name in data.files}
    change(arrays)
    path = tmp_path / "altered.onnx"
    shutil.copy(WEIGHTS_DIR / "comparator.onnx", path)
    np.savez(path.with_suffix(".npz"), **arrays)
    return path


def poisoned(arrays: dict) -> None:
    arrays["w2"] = arrays["w2"].copy()
    arrays["w2"][3, 4] = np.nan


@pytest.mark.parametrize("change, message", [
    (lambda arrays: arrays.update(kind=np.array("resnet-policy-value")), "is not a comparator weights file"),
    (lambda arrays: arrays.pop("b2"), r"incomplete comparator weights \(missing b2\)"),
    (lambda arrays: arrays.update(tower_layers=np.array(5)), "cannot make a tower of 5"),
    (lambda arrays: arrays.update(w1=arrays["w1"][:60]), r"layer 1 has weights \(60, 100\)"),
    (lambda arrays: arrays.update(b3=arrays["b3"][:7]), r"layer 3 has weights \(200, 100\) float32 and bias \(7,\)"),
    (lambda arrays: arrays.update(w0=arrays["w0"].astype(np.int32)), "layer 0 has weights .* int32"),
    (lambda arrays: arrays.update(w4=np.zeros((100, 3), np.float32), b4=np.zeros(3, np.float32)), "3 outputs, not 2"),
    (poisoned, "layer 2 holds a weight that is not a finite number"),
])
def test_comparator_weights_of_the_wrong_shape_or_kind_are_refused(tmp_path, change, message):
    with pytest.raises(LoadError, match=message):
        ComparatorEvaluator(comparator_files(tmp_path, change))


def test_a_comparator_weights_file_that_is_no_npz_is_refused(tmp_path):
    path = comparator_files(tmp_path, lambda arrays: None)
    path.with_suffix(".npz").write_text("not an archive")
    with pytest.raises(LoadError, match="not a readable .npz file"):
        ComparatorEvaluator(path)


def test_the_engine_keeps_its_comparator_when_weights_are_refused(lenient, tmp_path):
    """`setoption name Weights` with a broken comparator: an info string says why, the shipped network plays on."""
    bad = comparator_files(tmp_path, lambda arrays: arrays.update(w1=arrays["w1"][:60]))
    driver = Driver("--eval", "comparator", "--search", "comparison")
    driver.send(f"setoption name Weights value {bad}")
    driver.go("go depth 1")
    assert any(f"cannot load Weights '{bad}'" in line and "layer 1 has weights" in line for line in driver.strings())
    assert driver.engine.backend_names == ("comparator", "comparison")
    assert driver.engine.loaded_weights["comparator"] == ""
