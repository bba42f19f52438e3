"""The root's own evaluation (ResNet's MirrorRoot and RootPolicyTemperature) and how PUCT uses it."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from engine.backends import build_evaluator, build_search
from evaluators.base import unwrap
from evaluators.moves import mirror_move
from search.base import SearchControl
from hackmate_core.compiled import move_code
from search.puct import PuctSearch

# No castling rights: the position and its a<->h mirror image follow the same rules.
POSITIONS = ["r1bq1rk1/pp2b1pp/n1pp1n2/3P1p2/2P1p3/2N1P2N/PP2BPPP/R1BQ1RK1 b - - 2 10",
             "8/5pk1/6p1/3R4/1r5P/6P1/5PK1/8 w - - 0 40",
             "2r3k1/1P3pp1/4p2p/8/8/6P1/5PKP/3R4 w - - 0 33",
             "4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 2"]  # en passant, a file away from the centre


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
    mapped = [mirror_move(move) for move in moves]
    assert set(mapped) == set(mirrored.legal_moves)
    own = network.root_evaluation(board, moves)
    image = network.root_evaluation(mirrored, mapped)
    assert own is not None and image is not None
    assert own.value == pytest.approx(image.value, abs=1e-6)
    assert own.policy == pytest.approx(image.policy, abs=1e-6)  # the same order: moves mapped one to one
    plain, plain_image = network.evaluate(board, moves), network.evaluate(mirrored, mapped)
    assert own.value == pytest.approx((plain.value + plain_image.value) / 2, abs=1e-6)
    assert own.policy == pytest.approx([(a + b) / 2 for a, b in zip(plain.policy, plain_image.policy)], abs=1e-6)
    assert own.policy != pytest.approx(plain.policy, abs=1e-6)  # the image is another look


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
    network.set_option("RootPolicyTemperature", 2.0)  # set_option takes scaled values
    root = network.root_evaluation(board, moves)
    network.set_option("RootPolicyTemperature", 0)
    network.set_option("PolicyTemperature", 2.0)
    tree = network.evaluate(board, moves)
    network.set_option("PolicyTemperature", 1.0)
    assert root is not None and root.policy == pytest.approx(tree.policy, abs=1e-5)
    network.set_option("PolicyTemperature", 5.0)
    network.set_option("RootPolicyTemperature", 0.01)  # the tree's temperature does not matter at the root
    sharp = network.root_evaluation(board, moves)
    network.set_option("PolicyTemperature", 1.0)
    network.set_option("RootPolicyTemperature", 0)
    with np.errstate(divide="ignore"):  # priors that underflowed to 0 stay 0
        logits = np.log(np.asarray(network.evaluate(board, moves).policy)) / 0.01  # p ** 100, not 0 / 0
    expected = np.exp(logits - logits.max())
    # p ** 100 magnifies float32's rounding of p a hundredfold (100 x 1.2e-7): two near-equal top moves show it.
    assert sharp is not None and sharp.policy == pytest.approx(expected / expected.sum(), abs=2e-5)


def root_priors(evaluator, board: chess.Board) -> dict[int, float]:
    wanted = evaluator.root_evaluation(board, list(board.legal_moves))
    assert wanted is not None
    return {move_code(move): prior for move, prior in wanted.priors.items()}


def test_puct_expands_a_new_root_with_the_root_evaluation():
    evaluator = build_evaluator("resnet")
    evaluator.set_option("MirrorRoot", True)
    search = build_search("puct", evaluator)
    board = chess.Board(POSITIONS[1])
    search.search(board, SearchControl(max_nodes=1), lambda info: None)
    prior_of = root_priors(evaluator, board)
    assert list(search.root.priors) == pytest.approx(sorted(prior_of.values(), reverse=True), abs=1e-6)
    assert list(search.root.priors) == pytest.approx([prior_of[code] for code in search.root.moves], abs=1e-6)


def test_puct_reranks_a_kept_root_with_the_root_evaluation():
    evaluator = build_evaluator("resnet")
    search = build_search("puct", evaluator)
    assert isinstance(search, PuctSearch)
    board = chess.Board(POSITIONS[0])
    search.search(board, SearchControl(max_nodes=400), lambda info: None)
    reply = max(search.root.children, key=lambda child: child.visits)
    answer = max(reply.children, key=lambda child: child.visits)
    assert len(answer.children) < len(answer.moves)  # the kept root lacks some of its children
    board.push(reply.move)
    board.push(answer.move)
    visits_before = {child.move: child.visits for child in answer.children}
    evaluator.set_option("MirrorRoot", True)
    prior_of = root_priors(evaluator, board)
    search.search(board, SearchControl(max_nodes=1), lambda info: None)
    root = search.root
    assert root is answer  # the same tree, re-ranked
    assert list(root.moves) == [move_code(child.move) for child in root.children]  # every move has its child
    assert list(root.priors) == sorted(root.priors, reverse=True)
    assert list(root.priors) == pytest.approx([prior_of[code] for code in root.moves], abs=1e-6)
    assert [child.prior for child in root.children] == list(root.priors)
    assert root.visited_policy == pytest.approx(sum(child.prior for child in root.children if child.visits))
    assert all(child.visits >= visits_before.get(child.move, 0) for child in root.children)
    allowed = [root.children[-1].move, root.children[1].move]
    result = search.search(board, SearchControl(max_nodes=50, searchmoves=allowed), lambda info: None)
    assert result.best_move in allowed  # searchmoves narrows a re-ranked root


def test_the_engine_lists_and_plays_with_the_root_options(driver):
    engine = driver()
    engine.send("setoption name MirrorRoot value true", "setoption name RootPolicyTemperature value 150",
                "position fen " + POSITIONS[1])
    move = engine.go("go nodes 1").split()[1]
    assert chess.Move.from_uci(move) in chess.Board(POSITIONS[1]).legal_moves
    assert not [line for line in engine.strings() if "MirrorRoot" in line or "RootPolicy" in line]
