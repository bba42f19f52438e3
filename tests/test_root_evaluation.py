"""The root's own evaluation (ResNet's MirrorRoot and RootPolicyTemperature) and how PUCT uses it."""

from __future__ import annotations

import chess
import pytest

from engine.backends import build_evaluator, build_search
from evaluators.base import unwrap
from evaluators.moves import mirror_move
from search.base import SearchControl
from search.puct import PuctSearch, move_code

# No castling rights: the position and its a<->h mirror image follow the same rules.
POSITIONS = ["r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10",
             "8/5pk1/6p1/3R4/1r5P/6P1/5PK1/8 w - - 0 40",
             "2r3k1/1P3pp1/4p2p/8/8/6P1/5PKP/3R4 w - - 0 33"]


@pytest.fixture(scope="module")
def network():
    evaluator = unwrap(build_evaluator("resnet"))
    evaluator.set_option("Precision", "fp32")  # one network for both images: no per-row precision switch
    return evaluator


@pytest.mark.parametrize("fen", POSITIONS)
def test_mirror_averaging_gives_the_mirror_image_the_same_value_and_mapped_priors(network, fen):
    network.set_option("MirrorRoot", True)
    board = chess.Board(fen)
    mirrored = board.transform(chess.flip_horizontal)
    moves = list(board.legal_moves)
    own = network.root_evaluation(board, moves)
    image = network.root_evaluation(mirrored, [mirror_move(move) for move in moves])
    assert own is not None and image is not None
    assert own.value == pytest.approx(image.value, abs=1e-6)
    assert own.policy == pytest.approx(image.policy, abs=1e-6)  # the same order: moves mapped one to one
    plain = network.evaluate(board, moves)
    assert own.policy != pytest.approx(plain.policy, abs=1e-6)  # two looks differ from one
    assert sum(own.policy) == pytest.approx(1.0, abs=1e-5)


def test_no_root_evaluation_of_its_own_by_default_or_with_castling_rights(network):
    network.set_option("MirrorRoot", False)
    board = chess.Board(POSITIONS[0])
    assert network.root_evaluation(board, list(board.legal_moves)) is None
    network.set_option("MirrorRoot", True)
    board = chess.Board()  # castling rights: the mirror image would be another position
    assert network.root_evaluation(board, list(board.legal_moves)) is None


def test_root_policy_temperature_is_the_tree_temperature_applied_at_the_root(network):
    network.set_option("MirrorRoot", False)
    board = chess.Board(POSITIONS[1])
    moves = list(board.legal_moves)
    network.set_option("RootPolicyTemperature", 200)
    root = network.root_evaluation(board, moves)
    network.set_option("RootPolicyTemperature", 0)
    network.set_option("PolicyTemperature", 200)
    tree = network.evaluate(board, moves)
    network.set_option("PolicyTemperature", 100)
    assert root is not None and root.policy == pytest.approx(tree.policy, abs=1e-5)


def test_puct_expands_and_reranks_the_root_with_the_root_evaluation():
    evaluator = build_evaluator("resnet")
    search = build_search("puct", evaluator)
    assert isinstance(search, PuctSearch)
    board = chess.Board(POSITIONS[0])
    search.search(board, SearchControl(max_nodes=200), lambda info: None)
    kept = search.root
    evaluator.set_option("MirrorRoot", True)
    wanted = evaluator.root_evaluation(board, list(board.legal_moves))
    assert wanted is not None
    prior_of = {move_code(move): prior for move, prior in zip(wanted.moves, wanted.policy)}
    visits_before = {child.move: child.visits for child in kept.children}
    search.search(board, SearchControl(max_nodes=1), lambda info: None)
    root = search.root
    assert root is kept  # the same tree, re-ranked
    assert list(root.moves) == [move_code(child.move) for child in root.children]  # every move has its child
    assert list(root.priors) == sorted(root.priors, reverse=True)
    assert list(root.priors) == pytest.approx([prior_of[code] for code in root.moves], abs=1e-6)
    assert all(child.visits >= visits_before.get(child.move, 0) for child in root.children)
    evaluator.set_option("MirrorRoot", False)


def test_the_engine_lists_and_plays_with_the_root_options(driver):
    engine = driver()
    engine.send("setoption name MirrorRoot value true", "setoption name RootPolicyTemperature value 150",
                "position fen " + POSITIONS[1])
    move = engine.go("go nodes 1").split()[1]
    assert chess.Move.from_uci(move) in chess.Board(POSITIONS[1]).legal_moves
    assert not [line for line in engine.strings() if "MirrorRoot" in line or "RootPolicy" in line]
