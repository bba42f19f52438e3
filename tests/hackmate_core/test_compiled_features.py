"""The features36 encoding on PUCT's compiled leaves (hackmate_core._cpuct): a leaf's planes and cache key agree with
the Python encoder's on random games, the shipped network grown with zero weights for the new planes computes what
it computed, and both paths build the same tree with it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import chess
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import search.puct as puct
from engine.backends import build_evaluator, build_search
from evaluators.encoding import get_encoding
from evaluators.resnet import ResNetEvaluator
from hackmate_core.compiled import move_code
from search.puct import Node
from tests.conftest import ROOT
from tests.hackmate_core.test_compiled_lc0 import both_paths, leaves, root_of, shuffle
from tests.hackmate_core.test_compiled_puct import SEARCHED as PLANES18_SEARCHED

needs_compiled = pytest.mark.skipif(puct._cpuct is None, reason="the compiled path is not in use")
FEATURES = get_encoding("features36")

#: Roots of the random games, as FENs without moves: the start, en passant, castling rights both sides, promotions
#: for both colours, a double check, a single check, opposite-coloured bishops, Chess960 (the king's one-file
#: castling step among its moves).
ROOTS = [
    chess.STARTING_FEN,
    "rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
    "r1n5/1P5R/8/8/8/8/5k2/7K w - - 0 1",
    "7k/5K2/8/8/8/8/1p5r/R1N5 b - - 0 1",
    "4r1k1/8/3b4/8/8/3n4/3B4/4K3 w - - 0 1",
    "4k3/pp6/8/8/8/8/PP6/4K2r w - - 0 1",
    "6k1/pp3p2/3b4/8/8/8/PP2BP2/4K3 w - - 0 1",
]
CHESS960_ROOT = "bqnbrk1r/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEhe - 0 1"


def root_boards(rng: random.Random):
    for fen in ROOTS:
        yield chess.Board(fen)
    yield chess.Board(CHESS960_ROOT, chess960=True)
    yield chess.Board.from_chess960_pos(rng.randrange(960))


def grown_network(source: Path, target: Path) -> Path:
    """``source`` (a planes18 network) as a features36 one: the first convolution's weights with zeros for the new
    planes, between planes18's binary planes and the fifty-move plane."""
    model = onnx.load(source)
    conv = next(node for node in model.graph.node if node.op_type == "Conv" and node.input[0] == "planes")
    initializer = next(i for i in model.graph.initializer if i.name == conv.input[1])
    weight = numpy_helper.to_array(initializer)
    grown = np.zeros((weight.shape[0], FEATURES.planes, *weight.shape[2:]), dtype=weight.dtype)
    grown[:, :17], grown[:, -1] = weight[:, :17], weight[:, 17]
    initializer.CopyFrom(numpy_helper.from_array(grown, initializer.name))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = FEATURES.planes
    for entry in model.metadata_props:
        if entry.key == "encoding":
            entry.value = FEATURES.name
        elif entry.key == "network":
            entry.value = json.dumps({**json.loads(entry.value), "planes": FEATURES.planes})
    onnx.save(model, target)
    return target


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> Path:
    """The shipped network grown into features36 (fp32, without an int8 copy)."""
    return grown_network(ROOT / "weights" / "resnet.onnx", tmp_path_factory.mktemp("features36") / "grown.onnx")


@pytest.fixture(scope="module")
def network(grown) -> ResNetEvaluator:
    return ResNetEvaluator(grown)


def test_the_grown_network_computes_the_shipped_networks_function(network):
    shipped = ResNetEvaluator(ROOT / "weights" / "resnet.onnx")
    shipped.set_option("Precision", "fp32")
    assert network.encoding is FEATURES and not network.runs_int8
    rng = random.Random(9)
    boards = [shuffle(board, rng, rng.randrange(0, 30)) for board in root_boards(rng) for _ in range(4)]
    boards = [board for board in boards if not board.is_game_over()]
    old, new = shipped.evaluate_batch(boards), network.evaluate_batch(boards)
    assert any(FEATURES.encode(board)[17:35].any() for board in boards)  # the new planes are not all empty
    for board, before, after in zip(boards, old, new):
        assert after.value == pytest.approx(before.value, abs=1e-5) and after.draw == pytest.approx(before.draw,
                                                                                                 abs=1e-5)
        assert after.moves == before.moves
        np.testing.assert_allclose(after.policy, before.policy, atol=1e-5, err_msg=board.fen())


@needs_compiled
def test_a_leaf_encodes_as_the_python_encoder(network):
    """Planes, the evaluator's request and the cache key (equal compiled keys exactly where the Python keys are
    equal), at roots after 0 to 20 moves of random games from FENs (a root without moves, with one, with more) and
    deep in a tree below them."""
    search = build_search("puct", network)
    rng = random.Random(5)
    python_keys: dict = {}
    compiled_keys: dict = {}
    checked = 0
    seen = np.zeros(FEATURES.binary_planes, dtype=bool)
    for root in root_boards(rng):
        for plies in (0, 1, 2, 6, 20):
            board = shuffle(root.copy(), rng, plies)
            if board.is_game_over():
                continue
            for leaf, position in leaves(search, board, rng, depth=6):
                planes = FEATURES.binary(position)
                assert leaf.feature_planes == planes.astype(np.uint8).tobytes(), (position.fen(), position.move_stack)
                seen |= planes.any(axis=(1, 2))
                assert np.array_equal(network.collate([network.prepare_leaf(leaf)]),
                                      network.collate([network.prepare(position, list(position.legal_moves))]))
                # one cache entry per Python key: equal compiled keys exactly where the Python keys are equal
                python_key, compiled_key = network.cache_key(position), leaf.cache_key
                assert python_keys.setdefault(python_key, compiled_key) == compiled_key
                assert compiled_keys.setdefault(compiled_key, python_key) == python_key
                checked += 1
    assert checked > 300 and seen.all()  # every plane was set somewhere


@needs_compiled
def test_the_cache_key_leaves_the_last_moves_out(network):
    """One position and clock after other last moves: one key on each path (Lc0's CacheHistoryLength 0), different
    planes."""
    search = build_search("puct", network)
    boards = [from_moves("g1f3 g8f6 b1c3 b8c6 e2e3 e7e6"), from_moves("g1f3 g8f6 e2e3 b8c6 b1c3 e7e6")]
    assert boards[0].fen() == boards[1].fen()
    roots = [puct._cpuct.leaf([root], -1, game) for root, game in (root_of(search, board) for board in boards)]
    assert roots[0].cache_key == roots[1].cache_key and roots[0].feature_planes != roots[1].feature_planes
    assert network.cache_key(boards[0]) == network.cache_key(boards[1])


def from_moves(ucis: str) -> chess.Board:
    board = chess.Board()
    for uci in ucis.split():
        board.push_uci(uci)
    return board


SEARCHED = [
    *PLANES18_SEARCHED,
    chess.Board(ROOTS[3]),  # a FEN without moves: promotions
    shuffle(chess.Board(ROOTS[1]), random.Random(2), 1),  # a FEN and one move
    shuffle(chess.Board(CHESS960_ROOT, chess960=True), random.Random(4), 3),
]


@needs_compiled
@pytest.mark.parametrize("board", SEARCHED, ids=range(len(SEARCHED)))
def test_both_paths_build_the_same_tree_with_a_features36_network(grown, monkeypatch, board):
    both_paths(build_evaluator("resnet", str(grown)), board, 128, monkeypatch)  # cache(blend(network))


@needs_compiled
def test_the_compiled_calls_refuse_bad_last_moves():
    cpuct = puct._cpuct
    with pytest.raises(ValueError):
        cpuct.game([], True, bytes([64, 0, 0, 0]))  # a square off the board
    with pytest.raises(ValueError):
        cpuct.game([], True, b"\xfe\x00\x00\x00")  # -2
    root = Node(None, 1.0)
    root.state = puct._compiled_position(chess.Board())
    with pytest.raises(ValueError):
        cpuct.leaf([root], -1, cpuct.game([], True, None)).feature_planes  # a game without the root's last moves
    game = cpuct.game([], True, bytes([0xff] * 4))
    e4, e5 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")
    child, grandchild = Node(e4, 0.0), Node(e5, 0.0)
    child.state = puct._compiled_position(chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"))
    with pytest.raises(ValueError, match="last move"):  # a position below the root that no move made
        cpuct.leaf([root, child, grandchild], move_code(e5), game)
    child.state = cpuct.leaf([root, child], move_code(e4), game).state
    assert len(cpuct.leaf([root, child, grandchild], move_code(e5), game).feature_planes) == FEATURES.binary_planes * 64
