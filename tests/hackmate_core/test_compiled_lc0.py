"""Leela networks (lc0-112) on PUCT's compiled leaves (hackmate_core._cpuct): a leaf's planes, policy slots and cache
key agree with the Python encoder's on random games, and both paths build the same tree. The networks are the small
random-weight files of tests/leela_files.py; one check plays maia-1900 where ../shared has it."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

import search.puct as puct
from engine.backends import apply_hash, build_evaluator, build_search
from evaluators.moves import KING_TAKES_ROOK, KING_TWO_SQUARES, OWN_SLOT, PUSH_SLOT, PolicySlots
from evaluators.resnet import ResNetEvaluator
from hackmate_core.compiled import code_move, move_code
from hackmate_core.user_cache import ENVIRONMENT
from search.base import SearchControl
from search.puct import Node, PuctSearch
from tests.conftest import ROOT
from tests.leela_files import Spec, write_network
from tests.hackmate_core.test_compiled_puct import tree_of

needs_compiled = pytest.mark.skipif(puct._cpuct is None, reason="the compiled path is not in use")
MAIA = ROOT.parent / "shared" / "data" / "lc0" / "maia-1900.pb.gz"

#: Roots of the random games: the start (no history fill), FENs with an en-passant square a pawn can take and
#: one none can (the fill moves the pawn back), castling rights, promotions, Black to move, Chess960.
ROOTS = [
    chess.Board(),
    chess.Board("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3"),
    chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"),
    chess.Board("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"),
    chess.Board("r1n5/1P5R/8/8/8/8/5k2/7K w - - 0 1"),
    chess.Board("7k/5K2/8/8/8/8/1p5r/R1N5 b - - 0 1"),
    chess.Board.from_chess960_pos(100),
    chess.Board("bqnbrkr1/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEge - 0 1", chess960=True),
]
CONVENTIONS = [(castling, queen) for castling in (KING_TWO_SQUARES, KING_TAKES_ROOK) for queen in (PUSH_SLOT, OWN_SLOT)]


@pytest.fixture(scope="module")
def leela(tmp_path_factory) -> ResNetEvaluator:
    """A small random-weight Leela network (lc0-112, king-takes-rook castling, own queen-promotion slots),
    converted into a cache of this module's."""
    folder = tmp_path_factory.mktemp("leela")
    write_network(folder / "net.pb.gz", Spec(seed=11))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENVIRONMENT, str(folder / "cache"))
        evaluator = ResNetEvaluator(folder / "net.pb.gz")
        evaluator.set_option("Precision", "fp32")
        return evaluator


def shuffle(board: chess.Board, rng: random.Random, plies: int) -> chess.Board:
    """``board`` after up to ``plies`` random moves, half of them taking back the mover's last move where it can
    (repetitions), the moves on its stack."""
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        last = board.move_stack[-2] if len(board.move_stack) >= 2 else None
        back = [m for m in moves if last is not None and (m.from_square, m.to_square) == (last.to_square,
                                                                                              last.from_square)]
        board.push(back[0] if back and rng.random() < 0.5 else rng.choice(moves))
    return board


def step_down(path: list, move: chess.Move, game, board: chess.Board):
    """The compiled leaf of ``move`` from the last node of ``path``, which gains the move's node (its state set);
    ``board`` plays the move too."""
    node = Node(move, 0.0)
    path.append(node)
    leaf = puct._cpuct.leaf(path, move_code(move), game)
    board.push(move)
    node.state = leaf.state
    return leaf


def leaves(search: PuctSearch, board: chess.Board, rng: random.Random, depth: int):
    """(leaf, python-chess board) from the root ``board`` down a random walk of the tree, the root first."""
    root, game = root_of(search, board)
    yield puct._cpuct.leaf([root], -1, game), board
    path, board = [root], board.copy()
    for _ in range(depth):
        move = shuffle(board.copy(), rng, 1).move_stack[-1] if not board.is_game_over() else None
        if move is None:
            return
        leaf = step_down(path, move, game, board)
        if leaf.result is not None:
            return
        yield leaf, board.copy()


@needs_compiled
def test_a_leaf_encodes_as_the_python_encoder(leela):
    """Planes, slots under every convention, the evaluator's request and the cache key, at roots after random
    games and deep in a tree below them."""
    search = build_search("puct", leela)
    rng = random.Random(5)
    python_keys: dict = {}
    compiled_keys: dict = {}
    repeated = checked = 0
    for root in ROOTS:
        for _ in range(6):
            board = shuffle(root.copy(), rng, rng.randrange(0, 24))
            if board.is_game_over():
                continue
            for leaf, position in [*leaves(search, board, rng, depth=10), *leaves(search, board, rng, depth=4)]:
                moves = [code_move(code) for code in leaf.moves]
                planes = leela.encoding.binary(position)
                assert leaf.lc0_planes == planes.astype(np.uint8).tobytes(), position.fen()
                repeated += int(planes[12::13].any())
                for castling, queen in CONVENTIONS:
                    slots = PolicySlots(castling, queen)
                    assert (np.frombuffer(leaf.slots(slots.king_takes_rook, slots.own_queen_slot), dtype=np.int16)
                            .tolist() == slots.slots(position, moves)), (position.fen(), castling, queen)
                assert np.array_equal(leela.collate([leela.prepare_leaf(leaf)]),
                                      leela.collate([leela.prepare(position, moves)]))
                # one cache entry per Python key: equal compiled keys exactly where the Python keys are equal
                python_key, compiled_key = leela.cache_key(position), leaf.cache_key
                assert python_keys.setdefault(python_key, compiled_key) == compiled_key
                assert compiled_keys.setdefault(compiled_key, python_key) == python_key
                checked += 1
    assert checked > 300 and repeated > 20
    assert len(python_keys) < checked  # the same leaves were met again


@needs_compiled
def test_the_repetitions_of_a_fen_with_en_passant_split_between_game_and_tree(leela):
    """Knights out and back from a FEN whose en-passant square no pawn can take: its first position keeps the
    square (the same pieces four plies later are no repetition of it), later ones drop it (repetitions from the
    fifth ply on), wherever the root stands in the line."""
    search = build_search("puct", leela)
    line = [chess.Move.from_uci(uci) for uci in "g8f6 g1f3 f6g8 f3g1 g8f6 g1f3 f6g8 f3g1 g8f6".split()]
    compared = set()
    for plies_before_root in range(len(line)):
        board = ROOTS[2].copy()
        for move in line[:plies_before_root]:
            board.push(move)
        root, game = root_of(search, board)
        path = [root]
        for move in line[plies_before_root:]:
            leaf = step_down(path, move, game, board)
            if leaf.result is not None:
                continue  # drawn by a repetition inside the tree: never evaluated (its children may be)
            planes = leela.encoding.binary(board)
            assert leaf.lc0_planes == planes.astype(np.uint8).tobytes(), (plies_before_root, board.ply())
            plies = len(board.move_stack)
            assert planes[12].any() == (plies >= 5), plies_before_root  # the fourth ply's is no repetition
            compared.add(plies)
    assert compared == set(range(1, 8))  # the eighth and ninth positions occurred twice before: drawn by rule


@needs_compiled
def test_the_cache_key_tells_histories_apart_as_the_python_key_does(leela):
    """One position after the same last eight positions (equal keys on both paths, whatever came before them)
    and after others (keys that differ on both)."""
    search = build_search("puct", leela)
    knights = "g1f3 g8f6 b1c3 b8c6 f3g5 f6g4 c3b5 c6b4"
    boards = [from_moves("a2a3 a7a6 a3a4 a6a5 " + knights), from_moves("a2a4 a7a5 " + knights),
              from_moves("a2a4 a7a5 b1c3 b8c6 g1f3 g8f6 c3b5 c6b4 f3g5 f6g4")]
    assert len({(board.epd(), board.halfmove_clock) for board in boards}) == 1
    compiled = [puct._cpuct.leaf([root_of(search, board)[0]], -1, root_of(search, board)[1]).cache_key
                for board in boards]
    python = [leela.cache_key(board) for board in boards]
    assert python[0] == python[1] != python[2] and compiled[0] == compiled[1] != compiled[2]


def from_moves(ucis: str) -> chess.Board:
    board = chess.Board()
    for uci in ucis.split():
        board.push_uci(uci)
    return board


def root_of(search: PuctSearch, board: chess.Board) -> tuple[Node, object]:
    """A root node of ``board``'s compiled position and the Game of its leaves."""
    position, game = search._compiled_root(board)
    root = Node(None, 1.0)
    root.state = position
    return root, game


def tree_search(evaluator, board: chess.Board, nodes: int) -> tuple:
    """A search of ``nodes`` from ``board`` as bench makes it, from a fresh tree and cache: whether the leaves
    were compiled, the node count, the best move and the whole tree."""
    search = build_search("puct", evaluator)
    search.set_threads(1)
    apply_hash(16, search, evaluator)
    evaluator.new_game()
    result = search.search(board.copy(), SearchControl(max_nodes=nodes), lambda info: None)
    return search.compiled_tree, search.nodes, result.best_move, tree_of(search.root)


def both_paths(evaluator, board: chess.Board, nodes: int, monkeypatch) -> None:
    compiled_tree, *compiled_result = tree_search(evaluator, board, nodes)
    with monkeypatch.context() as patch:
        patch.setattr(puct, "_cpuct", None)
        pure_tree, *pure_result = tree_search(evaluator, board, nodes)
    assert compiled_tree and not pure_tree
    assert compiled_result == pure_result


SEARCHED = [
    shuffle(chess.Board(), random.Random(1), 14),
    shuffle(ROOTS[1].copy(), random.Random(2), 3),
    ROOTS[2],
    ROOTS[3],
    ROOTS[5],
    shuffle(ROOTS[7].copy(), random.Random(3), 6),
]


@needs_compiled
@pytest.mark.parametrize("board", SEARCHED, ids=range(len(SEARCHED)))
def test_both_paths_build_the_same_tree_with_a_leela_network(tmp_path, monkeypatch, board):
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "cache"))
    write_network(tmp_path / "net.pb.gz", Spec(seed=12))
    evaluator = build_evaluator("resnet", str(tmp_path / "net.pb.gz"))  # cache(blend(network)), as the engine plays
    both_paths(evaluator, board, 160, monkeypatch)


@needs_compiled
@pytest.mark.skipif(not MAIA.is_file(), reason=f"maia-1900 is not in {MAIA.parent} (../shared/data/lc0 beside the "
                                               "repository)")
def test_both_paths_build_the_same_tree_with_maia(tmp_path, monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "cache"))
    evaluator = build_evaluator("resnet", str(MAIA))
    both_paths(evaluator, SEARCHED[0], 300, monkeypatch)
