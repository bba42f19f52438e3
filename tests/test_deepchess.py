"""DeepChess: 773-bit encoding, incremental accumulator, comparator and comparison search."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import pytest

from evaluators.bits773 import INPUT_SIZE, active_features, encode

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from evaluators.base import LoadError  # noqa: E402
from evaluators.comparator import ComparatorEvaluator  # noqa: E402
from search.base import SearchControl  # noqa: E402
from search.comparison import ComparisonSearch  # noqa: E402
from training.deepchess import DeepChessConfig, collect_positions, run_pipeline  # noqa: E402
from training.export import export_comparator, write_metadata  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "games.pgn"


def test_773_bit_encoding():
    bits = encode(chess.Board())
    assert bits.shape == (INPUT_SIZE,)
    assert bits.sum() == 32 + 1 + 4  # pieces, White to move, four castling rights
    assert bits[0 * 64 + chess.E2] == 1  # white pawn e2
    assert bits[384 + 5 * 64 + chess.E8] == 1  # black king e8
    black_to_move = chess.Board("4k3/8/8/8/8/8/8/4K3 b - - 0 1")
    assert encode(black_to_move)[768] == 0 and encode(black_to_move).sum() == 2


def test_positions_follow_the_paper_rules(tmp_path):
    opening = "1. e4 d5 2. Nc3 Nf6 3. Nf3 Nc6 4. Bb5 Bd7 5. d3 e6 "
    pgn = tmp_path / "rules.pgn"
    pgn.write_text(f'[Result "1-0"]\n\n{opening}6. exd5 exd5 1-0\n\n'  # only captures after move 5
                   f'[Result "0-1"]\n\n{opening}6. O-O Be7 0-1\n\n'  # two quiet moves after move 5
                   f'[Result "1/2-1/2"]\n\n{opening}6. O-O Be7 1/2-1/2\n')  # drawn: never used
    positions = collect_positions([pgn], per_game=10, skip_moves=5)
    assert len(positions.bits) == 2
    assert not positions.white_won.any()
    assert (positions.bits[:, 768] == [1, 0]).all() or (positions.bits[:, 768] == [0, 1]).all()
    assert len(collect_positions([FIXTURE], per_game=3).bits) <= 3 * 12


@pytest.fixture(scope="module")
def tiny_comparator(tmp_path_factory):
    root = tmp_path_factory.mktemp("deepchess")
    config = DeepChessConfig(pgn=[str(FIXTURE)], out=str(root / "run"), pretrain_epochs=1, epochs=1,
                             pairs_per_epoch=2000, distill_epochs=1, val_pairs=500, validation=0.3)
    report = run_pipeline(config, log=lambda _: None)
    onnx_path = export_comparator(root / "run" / "student.pt", root / "comparator.onnx", command="pytest")
    return onnx_path, report


def test_tiny_pipeline_reports_three_accuracies(tiny_comparator):
    _, report = tiny_comparator
    assert set(report["accuracy"]) == {"full", "distilled", "small_from_scratch"}
    assert all(0.0 <= a <= 1.0 for a in report["accuracy"].values())


def test_incremental_accumulator_matches_full_recomputation(tiny_comparator):
    evaluator = ComparatorEvaluator(tiny_comparator[0])
    rng = random.Random(5)
    for start in (chess.STARTING_FEN, "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
                  "8/P1k5/8/3pP3/8/8/5p2/4K3 w - d6 0 1"):
        board = chess.Board(start)
        evaluator.reset(board)
        for _ in range(60):
            moves = list(board.legal_moves)
            if not moves:
                break
            evaluator.push(board, rng.choice(moves))
            np.testing.assert_allclose(evaluator.accumulators[-1], evaluator.full_accumulator(board), atol=1e-4)
            if rng.random() < 0.3 and len(evaluator.accumulators) > 1:  # unmake and check again
                evaluator.pop(board)
                np.testing.assert_allclose(evaluator.accumulators[-1], evaluator.full_accumulator(board),
                                           atol=1e-4)


def test_comparison_is_antisymmetric_and_matches_onnx(tiny_comparator):
    import onnxruntime as ort
    evaluator = ComparatorEvaluator(tiny_comparator[0])
    session = ort.InferenceSession(str(tiny_comparator[0]), providers=["CPUExecutionProvider"])
    a = chess.Board()
    b = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
    fa, fb = evaluator.features(a), evaluator.features(b)
    p = evaluator.prefers_first(fa, fb)
    assert p + evaluator.prefers_first(fb, fa) == pytest.approx(1.0, abs=1e-6)
    assert evaluator.prefers_first(fa, fa) == pytest.approx(0.5, abs=1e-6)
    ab = session.run(None, {"first": encode(a)[None], "second": encode(b)[None]})[0][0][0]
    ba = session.run(None, {"first": encode(b)[None], "second": encode(a)[None]})[0][0][0]
    assert p == pytest.approx(0.5 * (ab + 1 - ba), abs=1e-4)


@pytest.mark.parametrize("fen,best", [
    ("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1", "d5f6"),
    ("6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1", "g2g1"),
])
def test_comparison_search_finds_mate_in_two(tiny_comparator, fen, best):
    search = ComparisonSearch(ComparatorEvaluator(tiny_comparator[0]))
    infos = []
    result = search.search(chess.Board(fen), SearchControl(max_depth=4), infos.append)
    assert result.best_move.uci() == best
    assert infos[-1].mate == 2


def test_comparator_refuses_other_networks(tiny_comparator, tmp_path):
    import shutil
    bad = tmp_path / "c.onnx"
    shutil.copy(tiny_comparator[0], bad)
    shutil.copy(tiny_comparator[0].with_suffix(".npz"), bad.with_suffix(".npz"))
    write_metadata(bad, {"hackmate.kind": "resnet-policy-value"})
    with pytest.raises(LoadError, match="not a deepchess-comparator"):
        ComparatorEvaluator(bad)
    good = tmp_path / "d.onnx"
    shutil.copy(tiny_comparator[0], good)
    with pytest.raises(LoadError, match="npz not found"):
        ComparatorEvaluator(good)


def test_active_features_agree_with_encoding():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1")
    assert sorted(active_features(board)) == sorted(np.flatnonzero(encode(board)).tolist())
