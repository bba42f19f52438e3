"""PUCT's compiled leaves (hackmate_core._cpuct): each leaf agrees with the Python rules and heuristics it
replaces, both paths build the same tree, and Hash still bounds it. Without the compiled path (not built, or
HACKMATE_PURE_PYTHON=1) only the load test runs."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

import search.puct as puct
from engine.backends import apply_hash, build_evaluator, build_search
from evaluators.base import Evaluation, EvaluatorWrapper
from evaluators.encoding import unflipped_bitboards, unpack_unflipped
from evaluators.material import PRIOR_TEMPERATURE_CP, gain_softmax, normalised, tactical_gains
from evaluators.moves import PolicySlots
from hackmate_core import compiled
from hackmate_core.rules import checking_moves, game_result, legal_moves, mate_in_one
from search.base import SearchControl
from hackmate_core.compiled import move_code
from search.puct import Node, PuctSearch, _compiled_position

needs_compiled = pytest.mark.skipif(puct._cpuct is None, reason="the compiled path is not in use")


def test_the_compiled_leaves_load_with_the_compiled_board():
    """CI must not silently run only the fallback: where the compiled board loads, so do PUCT's leaves."""
    assert (puct._cpuct is not None) == compiled.ACTIVE


def network_search() -> PuctSearch:
    evaluator = build_evaluator("resnet", threads=1)
    search = build_search("puct", evaluator)
    search.set_threads(1)
    apply_hash(16, search, evaluator)
    assert isinstance(search, PuctSearch)
    return search


def random_boards(count: int, seed: int):
    """Boards of random games (with their move stacks), standard and Chess960."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(count):
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board.from_chess960_pos(rng.randrange(960)) if rng.random() < 0.3 else chess.Board()
            continue
        yield board
        board.push(rng.choice(moves))


def root_node(board: chess.Board) -> Node:
    node = Node(None, 1.0)
    node.state = _compiled_position(board)
    return node


def no_game():
    """A Game of no positions before the root and no history."""
    return puct._cpuct.game([], True, None)


@needs_compiled
def test_a_leaf_agrees_with_the_python_rules_and_heuristics():
    checked = 0
    for board in random_boards(1500, seed=3):
        moves = legal_moves(board)
        leaf = puct._cpuct.leaf([root_node(board)], -1, no_game())
        assert leaf.moves == [move_code(move) for move in moves], board.fen()
        assert leaf.result == game_result(board, moves, 0)
        assert leaf.mate_in_one == (mate_in_one(board, moves) is not None)
        assert leaf.gains == tactical_gains(board, moves, checking_moves(board, moves))[0]  # exactly
        assert normalised(leaf.gain_weights(PRIOR_TEMPERATURE_CP)) == gain_softmax(leaf.gains)  # exactly
        black = np.array([board.turn == chess.BLACK])
        planes = unpack_unflipped(np.array([unflipped_bitboards(board)], dtype=np.uint64), black)
        assert leaf.planes == planes.astype(np.uint8).tobytes()  # what collate unpacks, one byte a square
        assert (np.frombuffer(leaf.slots(False, False), dtype=np.int16).tolist()
                == [PolicySlots().slot(board, move) for move in moves])
        assert leaf.rule50 == board.halfmove_clock
        assert leaf.board().fen() == board.fen()
        checked += len(moves)
    assert checked > 30000


@needs_compiled
def test_a_leaf_applies_the_repetition_policy_to_the_game_and_the_tree():
    """Knights out and back: repetitions before the root need two earlier occurrences, inside the tree one."""
    search = network_search()
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    for plies_before_root in range(len(shuffle) * 2 + 1):
        game = chess.Board()
        for uci in (shuffle * 3)[:plies_before_root]:
            game.push_uci(uci)
        position, leaves_game = search._compiled_root(game)
        path, board = [Node(None, 1.0)], game.copy()
        path[0].state = position
        for uci in (shuffle * 3)[plies_before_root:plies_before_root + 6]:
            move = chess.Move.from_uci(uci)
            node = Node(move, 0.0)
            path.append(node)
            leaf = puct._cpuct.leaf(path, move_code(move), leaves_game)
            board.push(move)
            assert leaf.result == game_result(board, legal_moves(board), len(path) - 1), (plies_before_root, uci)
            node.state = leaf.state


def tree_of(node: Node) -> tuple:
    """Everything selection and the report read, for the whole tree."""
    return (node.move, node.visits, node.value_sum, node.draw_sum, node.terminal, node.plies,
            tuple(node.moves or ()), tuple(node.priors), tuple(tree_of(child) for child in node.children))


def bench_style(board: chess.Board, nodes: int) -> tuple:
    search = network_search()
    search.new_game()
    search.evaluator.new_game()
    result = search.search(board, SearchControl(max_nodes=nodes), lambda info: None)
    return search.compiled_tree, search.nodes, result.best_move, tree_of(search.root)


def played(fen: str, ucis: str, chess960: bool = False) -> chess.Board:
    board = chess.Board(fen, chess960=chess960)
    for uci in ucis.split():
        board.push_uci(uci)
    return board


SEARCHED = [
    chess.Board("r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10"),
    chess.Board("8/8/2p5/1p1k4/1P1Pp3/2K1P3/8/8 w - - 0 1"),
    chess.Board("4r1k1/3n1ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"),  # hanging pieces, checks, mates near
    played(chess.STARTING_FEN, "g1f3 g8f6 f3g1 f6g8 e2e4 e7e5 g1f3 b8c6"),  # a history to repeat
    played("bqnbrkr1/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEge - 0 1", "d2d4 d7d5", chess960=True),
]


@needs_compiled
@pytest.mark.parametrize("board", SEARCHED, ids=range(len(SEARCHED)))
def test_both_paths_build_the_same_tree(board, monkeypatch):
    compiled_tree, *compiled_result = bench_style(board.copy(), 96)
    monkeypatch.setattr(puct, "_cpuct", None)
    pure_tree, *pure_result = bench_style(board.copy(), 96)
    assert compiled_tree and not pure_tree
    assert compiled_result == pure_result


@needs_compiled
def test_hash_bounds_the_compiled_tree():
    search = network_search()
    search.set_hash(0.5)
    notes: list[str] = []
    search.search(chess.Board(), SearchControl(max_nodes=search.node_budget + 160, note=notes.append),
                  lambda info: None)
    assert search.compiled_tree
    assert search.node_budget <= search.tree_nodes <= search.node_budget + 218
    assert any(note.startswith("tree full") for note in notes)


@needs_compiled
def test_the_compiled_calls_refuse_bad_input():
    """Errors, never a crash: whatever Python hands over is checked."""
    cpuct = puct._cpuct
    root = root_node(chess.Board())
    e4 = move_code(chess.Move.from_uci("e2e4"))
    with pytest.raises(ValueError):
        cpuct.leaf([root, Node(None, 0.0)], move_code(chess.Move.from_uci("e2e5")), no_game())  # not a legal move
    with pytest.raises(TypeError):
        cpuct.leaf([root], -1, b"")  # a game is a Game
    with pytest.raises(ValueError):
        cpuct.game([], True, b"123")  # the history is 8 x 13 uint64s or 4 squares
    with pytest.raises(TypeError):
        cpuct.game([object()], True, None)  # positions are Positions
    with pytest.raises(ValueError):
        cpuct.leaf([root], -1, no_game()).lc0_planes  # a game without history has no lc0-112 planes
    with pytest.raises(TypeError):
        cpuct.leaf([root], -1, no_game()).slots(True)  # both conventions
    with pytest.raises(TypeError):
        cpuct.leaf([Node(None, 1.0), Node(None, 0.0)], e4, no_game())  # a node without a compiled position
    with pytest.raises(ValueError):
        cpuct.position(*([0] * 6), 1 << 4, 1 << 60, True, 0, -1, 0, 1, False)  # no kings
    with pytest.raises(ValueError):
        cpuct.position(0, 0, 0, 0, 0, 1 << 4 | 1 << 60, 1 << 4, 1 << 60, True, 0, 70, 0, 1, False)  # ep off the board
    with pytest.raises(ValueError):
        cpuct.leaf([root], -1, no_game()).state.make(0)
    with pytest.raises(TypeError):
        cpuct.leaf([root], -1, no_game()).gain_weights("150")  # the temperature is a number
    with pytest.raises(TypeError):
        cpuct.select(object(), False, 2.0, 0.3, lambda node, index: node)
    with pytest.raises(TypeError):
        cpuct.backup([root, object()], 0.5, 0.0)
    with pytest.raises(ValueError):
        cpuct.expand(Node(None, 1.0), [e4, e4], [0.5])
    parent = Node(None, 1.0)
    cpuct.expand(parent, [e4], [1.0])
    with pytest.raises(TypeError):
        cpuct.select(parent, False, 2.0, 0.3, lambda node, index: "not a node")
    with pytest.raises(ValueError):
        cpuct.settle([[parent]], [], 1, True)  # an evaluation per path
    with pytest.raises(TypeError):
        cpuct.settle([[parent, object()]], [Evaluation(0.0, 0.0, moves=[], policy=[])], 1, True)
    with pytest.raises(AttributeError):
        cpuct.settle([[Node(None, 1.0)]], [object()], 1, True)  # not an evaluation
    with pytest.raises(ValueError):
        cpuct.settle([[Node(None, 1.0)]], [Evaluation(0.0, 0.0, moves=[e4], policy=[])], 1, True)
    with pytest.raises(TypeError):
        cpuct.add_virtual([parent, "not a node"], 1)


@pytest.mark.parametrize("tactical, material", [(0.5, 0.0), (0.0, 0.0), (0.5, 0.6)])
def test_the_blend_mixes_a_batch_as_it_mixes_each_evaluation(tactical, material):
    """The blend's one numpy pass over a network run gives each evaluation exactly as mixing it alone does."""
    blend = network_search().evaluator.inner
    network = blend.inner
    blend.tactical_priors, blend.material_blend = tactical, material
    boards = list(random_boards(40, seed=5))[::2]
    requests = [blend.prepare(board, legal_moves(board)) for board in boards]
    network.infer(requests, network.collate(requests))
    assert blend._blend_run(requests, network.finish_priors) is not None  # the one pass applies
    batched = blend.finish(requests)
    alone = [blend.blend(request, evaluation) for request, evaluation in zip(requests, network.finish(requests))]
    assert [(e.value, e.draw, e.moves, e.policy) for e in batched] == \
        [(e.value, e.draw, e.moves, e.policy) for e in alone]
    assert all(type(prior) is float for e in batched for prior in e.policy)


class PreparesItself(EvaluatorWrapper):
    """A wrapper that takes something from the board in ``prepare`` and has no ``prepare_leaf``."""

    def prepare(self, board, moves):
        return self.inner.prepare(board, moves)


def test_only_evaluators_that_say_so_take_compiled_leaves():
    network = build_evaluator("resnet", threads=1)
    assert network.takes_leaves()  # cache(blend(resnet)) with planes18
    assert not PreparesItself(network).takes_leaves()
    assert not build_evaluator("material").takes_leaves()
