"""PUCT at the speed of the network: the staged evaluator interface, the overlap, the lazy tree,
the fast rules and heuristics it relies on, lazy start-up and answers within the clock."""

from __future__ import annotations

import threading
import time

import chess
import pytest

from engine.backends import apply_hash, build_evaluator, build_search
from engine.timeman import GoParams, allocate
from evaluators.base import Evaluation, EvaluatorWrapper, unwrap
from evaluators.material import CHECK_BONUS_CP, PST, MaterialEvaluator, PstEvaluator
from hackmate_core.exchange import PIECE_VALUES
from hackmate_core.boards import state_stack
from hackmate_core.rules import checking_moves
from search.base import SearchControl
from search.puct import Node, PuctSearch
from tests.evaluators.test_encodings import random_positions
from tests.search.test_search import MATE_IN_ONE, MATE_IN_TWO
from tests.uci_inprocess import Driver

MIDDLEGAME = "r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10"


def network_search(threads: int, overlap: bool) -> PuctSearch:
    """The default engine's resnet + puct, as the engine builds it."""
    evaluator = build_evaluator("resnet", threads=threads)
    search = build_search("puct", evaluator)
    search.set_threads(threads)
    search.set_option("Overlap", overlap)
    apply_hash(16, search, evaluator)
    assert isinstance(search, PuctSearch)
    return search


def visits(node: Node) -> dict[str, int]:
    return {child.move.uci(): child.visits for child in node.children}  # type: ignore[union-attr]


def no_virtual_loss_left(node: Node) -> bool:
    return node.virtual == 0 and all(no_virtual_loss_left(child) for child in node.children)


# ------------------------------------------------------------ fast paths

def test_checking_moves_agrees_with_python_chess():
    checked = 0
    for board in random_positions(4000, seed=11, max_ply=150):
        moves = list(board.legal_moves)
        assert checking_moves(board, moves) == [board.gives_check(move) for move in moves], board.fen()
        checked += len(moves)
    assert checked > 80000


def reference_gain(board: chess.Board, move: chess.Move, pst: bool) -> float:
    """The heuristic's definition, move by move with python-chess (as it was computed before the fast path)."""
    gain = 0.0
    if board.is_capture(move):
        victim = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(move.to_square)
        gain += PIECE_VALUES[victim] - PIECE_VALUES[board.piece_type_at(move.from_square)] / 10.0
    if move.promotion:
        gain += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
    if board.gives_check(move):
        gain += CHECK_BONUS_CP
    if pst:
        table = PST[(board.turn, board.piece_type_at(move.from_square))]
        gain += table[move.to_square] - table[move.from_square]
    return gain


@pytest.mark.parametrize("evaluator", [MaterialEvaluator(), PstEvaluator()], ids=["material", "pst"])
def test_heuristic_priors_follow_their_definition(evaluator):
    for board in random_positions(1000, seed=5, max_ply=150):
        moves = list(board.legal_moves)
        gains = evaluator.move_gains(board, moves)
        assert gains == pytest.approx([reference_gain(board, move, isinstance(evaluator, PstEvaluator))
                                       for move in moves])
        assert sum(evaluator.priors(board, moves).values()) == pytest.approx(1.0)


def test_network_stages_match_a_plain_evaluation():
    network = unwrap(build_evaluator("resnet"))
    boards = [chess.Board(), chess.Board(MIDDLEGAME), chess.Board("8/8/8/8/8/5k2/8/5K1q w - - 0 1")]  # last: mated
    staged = network.evaluate_batch(boards)
    for board, evaluation in zip(boards, staged):
        alone = network.evaluate_batch([board])[0]
        assert evaluation.value == pytest.approx(alone.value, abs=1e-5)
        assert set(evaluation.priors) == set(board.legal_moves)
        for move, prior in (alone.priors or {}).items():
            assert evaluation.priors[move] == pytest.approx(prior, abs=1e-5)
    assert staged[2].priors == {}


class FavourFirstMove(EvaluatorWrapper):
    """A wrapper that changes evaluations by overriding evaluate_batch only (like training's RootNoise)."""

    calls = 0

    def evaluate_batch(self, boards, moves=None):
        FavourFirstMove.calls += 1
        evaluations = self.inner.evaluate_batch(boards, moves)
        out = []
        for board, evaluation in zip(boards, evaluations):
            first = min(evaluation.priors, key=lambda move: move.uci())
            out.append(Evaluation(evaluation.value, evaluation.draw,
                                  {move: 0.99 if move == first else 0.01 for move in evaluation.priors}))
        return out


def test_a_wrapper_that_overrides_evaluate_batch_is_honoured_by_the_search():
    search = PuctSearch(FavourFirstMove(build_evaluator("resnet")))
    search.search(chess.Board(), SearchControl(max_nodes=40), lambda info: None)
    assert FavourFirstMove.calls > 1
    assert search.root.children[0].move == min(chess.Board().legal_moves, key=lambda move: move.uci())


# ------------------------------------------------------------ the overlap

def test_node_counts_are_deterministic_with_the_overlap_off():
    first, second = network_search(2, overlap=False), network_search(2, overlap=False)
    results = [search.search(chess.Board(MIDDLEGAME), SearchControl(max_nodes=300), lambda info: None)
               for search in (first, second)]
    assert first.nodes == second.nodes == 300
    assert results[0].best_move == results[1].best_move and visits(first.root) == visits(second.root)


def test_an_overlapped_search_visits_exactly_its_node_budget():
    search = network_search(2, overlap=True)
    assert search.overlapping
    board = chess.Board(MIDDLEGAME)
    result = search.search(board, SearchControl(max_nodes=300), lambda info: None)
    assert search.nodes == 300 and result.best_move in board.legal_moves
    assert search.root.visits == 300  # every playout went through the root and was backed up
    assert no_virtual_loss_left(search.root)
    again = network_search(2, overlap=True)  # results are backed up in a fixed order: the same tree again
    again.search(board, SearchControl(max_nodes=300), lambda info: None)
    assert visits(again.root) == visits(search.root)


def test_an_overlapped_search_collates_on_its_own_thread_and_only_runs_the_network_elsewhere():
    search = network_search(2, overlap=True)
    network = unwrap(search.evaluator)
    threads: dict[str, set[str]] = {"collate": set(), "infer": set()}
    collate, infer = network.collate, network.infer

    def recording_collate(requests):
        threads["collate"].add(threading.current_thread().name)
        return collate(requests)

    def recording_infer(requests, inputs):
        threads["infer"].add(threading.current_thread().name)
        assert inputs is not None and len(inputs) == len(requests)  # planes made on the search thread
        infer(requests, inputs)

    network.collate, network.infer = recording_collate, recording_infer
    search.search(chess.Board(MIDDLEGAME), SearchControl(max_nodes=100), lambda info: None)
    assert threads["collate"] == {threading.current_thread().name}
    # the root is evaluated on the search thread before the playouts; the minibatches run in the inference thread
    assert any(name.startswith("inference") for name in threads["infer"])


def test_an_overlapped_search_reuses_its_tree():
    search = network_search(2, overlap=True)
    board = chess.Board()
    result = search.search(board, SearchControl(max_nodes=200), lambda info: None)
    board.push(result.best_move)
    board.push(result.ponder_move)
    search.search(board, SearchControl(max_nodes=200), lambda info: None)
    assert search.reused > 0 and search.nodes == 200 and no_virtual_loss_left(search.root)


def test_the_early_stop_waits_for_two_minibatches_of_its_own_speed():
    """A reused tree's lead does not end a timed search before it has measured its own speed."""
    search = network_search(1, overlap=False)
    board = chess.Board()
    search.search(board, SearchControl(max_nodes=64), lambda info: None)
    root = search.root
    ranked = search._ranked(root)
    ranked[0].visits, ranked[1].visits = 500, 20  # a lead no playout of this search can close
    search.control = SearchControl(start=time.monotonic() - 0.1)  # 320 playouts a second: 64 to come
    search.nodes = 2 * search.batch_size - 1
    assert not search._decided(root, 0.2)
    search.nodes = 2 * search.batch_size
    assert search._decided(root, 0.2)


@pytest.mark.parametrize("fen,best", MATE_IN_ONE + MATE_IN_TWO)
def test_an_overlapped_search_finds_mates(fen, best):
    search = network_search(2, overlap=True)
    infos = []
    result = search.search(chess.Board(fen), SearchControl(max_nodes=1500), infos.append)
    assert result.best_move.uci() == best
    assert infos[-1].mate is not None and infos[-1].mate > 0


def test_stop_during_an_overlapped_infinite_search_is_answered_at_once():
    engine = Driver()
    engine.send("setoption name Threads value 2", "isready", "position startpos")
    assert engine.engine.search.overlapping
    engine.send("go infinite")
    engine.out.wait_for("info depth", 30.0)
    start = len(engine.lines)
    engine.send("stop")  # how soon it answers: tools/latency.py
    engine.out.wait_for("bestmove", 30.0, start)
    assert no_virtual_loss_left(engine.engine.search.root)  # the batch abandoned on its way left no trace
    assert engine.go("go nodes 100").split()[1] != "0000"
    engine.close()


# ------------------------------------------------------------ start-up and the clock

def test_uci_answers_before_the_network_is_read():
    engine = Driver()
    engine.send("uci")
    assert engine.lines[-1] == "uciok"
    assert any(line.startswith("option name TacticalPriors") for line in engine.lines)  # the backend's options
    assert engine.engine.evaluator is None  # declared by the registry, not built
    engine.send("isready")
    assert engine.lines[-1] == "readyok" and unwrap(engine.engine.evaluator)._session is not None
    engine.close()


def test_low_clock_moves_answer_after_the_first_minibatches():
    """`go wtime 100 ... winc 10`: low-clock mode, so every search gets half the increment at most and ends after
    its first minibatches, whatever the machine's speed (the replies' milliseconds: tools/latency.py)."""
    engine = Driver()
    engine.send("uci", "isready", "ucinewgame")
    moves: list[str] = []
    for _ in range(40):
        engine.send("position startpos moves " + " ".join(moves))
        start = len(engine.lines)
        engine.send("go wtime 100 btime 100 winc 10 binc 10")
        move = engine.out.wait_for("bestmove", 30.0, start).split()[1]
        engine.engine.wait()
        control, search = engine.engine.control, engine.engine.search
        assert control.hard_deadline - control.start <= 0.005
        assert search.nodes <= 2 * search.batch_size, f"{search.nodes} playouts with no time to spend"
        moves.append(move)
        board = chess.Board()
        for uci in moves:
            board.push_uci(uci)
        if board.is_game_over():
            break
    engine.close()


def test_low_clock_mode_spends_at_most_half_the_increment():
    soft, hard = allocate(GoParams(wtime=250, btime=250, winc=10, binc=10), True, 50)
    assert soft == hard <= 0.005
    assert allocate(GoParams(wtime=40, btime=40), True, 50) == (0.0, 0.0)  # past the overhead: answer at once
    soft, hard = allocate(GoParams(wtime=400, btime=400, winc=10, binc=10), True, 50)
    assert 0.005 < soft < hard  # above the reserve: the usual budget


def test_move_overhead_is_kept_back():
    engine = Driver()
    engine.send("setoption name Move Overhead value 900", "isready", "position startpos")
    engine.go("go movetime 1000", timeout=30.0)
    control = engine.engine.control
    assert control.soft_deadline - control.start == control.hard_deadline - control.start == pytest.approx(0.1)
    engine.close()


def test_a_hash_cut_below_the_reused_tree_is_reported():
    """With the tree already over a new, smaller budget no leaf is ever expanded: the note must still come."""
    search = build_search("puct", build_evaluator("material"))
    assert isinstance(search, PuctSearch)
    board = chess.Board(MIDDLEGAME)
    search.search(board, SearchControl(max_nodes=4000), lambda info: None)
    search.set_hash(1)
    assert search.tree_nodes > search.node_budget
    notes: list[str] = []
    search.search(board, SearchControl(max_nodes=200, note=notes.append), lambda info: None)
    assert search.reused > 0 and any(note.startswith("tree full") for note in notes)


def test_a_leaf_board_set_from_stored_states_is_the_board_pushing_the_path_gives():
    """The leaf's position, history (for the repetition rule) and move list equal those of making every move of
    the path; the board is back at the root after each leaf; a search from a reused tree does the same."""
    checked: list[int] = []
    root: dict = {}

    class Checked(PuctSearch):
        def _set_board(self, board, path):
            assert board.fen() == root["fen"] and len(board.move_stack) == len(board._stack) == root["plies"]
            reference = board.copy()
            for node in path[1:]:
                reference.push(node.move)
            super()._set_board(board, path)
            assert board.move_stack == reference.move_stack and board.fen() == reference.fen()
            assert [vars(s) for s in state_stack(board)] == [vars(s) for s in state_stack(reference)]
            checked.append(len(path))

    search = Checked(MaterialEvaluator())
    board = chess.Board(MIDDLEGAME)
    for uci in ("f6g4", "h3g5", "g4f6", "g5h3", "f6g4"):  # history with repetitions before the root
        board.push_uci(uci)
    root.update(fen=board.fen(), plies=5)
    search.search(board, SearchControl(max_nodes=400), lambda info: None)
    assert max(checked) >= 4
    best = search._best_child(search.root)
    board.push(best.move)
    board.push(search._best_child(best).move)
    root.update(fen=board.fen(), plies=7)
    first = len(checked)
    search.search(board, SearchControl(max_nodes=800), lambda info: None)
    assert search.reused and max(checked[first:]) >= 3
