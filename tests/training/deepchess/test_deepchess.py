"""DeepChess: 773-bit encoding, sibling pairs, held-out split, incremental accumulator, comparator and search."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
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
from tests.conftest import FIXTURES, ROOT  # noqa: E402
from tests.exported import assert_engine_plays_comparator, play_legal_moves  # noqa: E402
from evaluators.material import MaterialEvaluator, quiescence_cp  # noqa: E402
from training.deepchess import (DeepChessConfig, evaluate, load_network, prepare_data, read_games,  # noqa: E402
                                run_pipeline)
from training.deepchess.export import export_comparator  # noqa: E402
from training.deepchess.pairs import (SIBLING_FIELDS, position_key, read_labels, sibling_pairs,  # noqa: E402
                                      split_siblings, unpack)
from training.deepchess.valset import ValidationSet  # noqa: E402
from training.onnx_metadata import write_metadata  # noqa: E402

FIXTURE = FIXTURES / "games.pgn"


def toy_config(**settings) -> DeepChessConfig:
    """A run on the fixture games, encoding sibling children in this process (a pool costs more than it saves)."""
    return DeepChessConfig(pgn=[str(FIXTURE)], workers=1, **settings)


def write_multipv(path: Path, records: list[tuple[str, list[tuple[str, int | None, int | None]]]]) -> Path:
    """A MultiPV label file in the shared format: [(fen, [(uci, centipawns, mate), ...]), ...]."""
    with gzip.open(path, "wt") as handle:
        for fen, lines in records:
            handle.write(json.dumps({"fen": fen, "pv": [list(line) for line in lines]}) + "\n")
    return path


def toy_labels(path: Path, moves: int = 4) -> Path:
    """Every position of the fixture games, its first legal moves scored by material with quiescence."""
    import chess.pgn
    evaluator, records = MaterialEvaluator(), []
    with open(FIXTURE) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for played in game.mainline_moves():
                lines = []
                for move in list(board.legal_moves)[:moves]:
                    board.push(move)
                    lines.append((move.uci(), -quiescence_cp(evaluator, board), None))
                    board.pop()
                records.append((board.fen(), sorted(lines, key=lambda line: -line[1])))
                board.push(played)
    return write_multipv(path, records)


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
    data = read_games([pgn], per_game=10, skip_moves=5)
    positions = data.positions
    assert len(positions.bits) == 2 and data.decisive == 2
    assert not positions.white_won.any()
    side_to_move = unpack(positions.bits)[:, 768]
    assert (side_to_move == [1, 0]).all() or (side_to_move == [0, 1]).all()
    assert len(read_games([FIXTURE], per_game=3).positions.bits) <= 3 * 12


def test_sibling_pairs_share_a_parent_follow_the_scores_and_skip_ties(tmp_path):
    white = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    black = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    path = write_multipv(tmp_path / "labels.jsonl.gz", [
        (white, [("f1b5", 40, None), ("f1c4", 38, None), ("b1c3", 20, None), ("h2h4", -60, None)]),
        (black, [("b8c6", -25, None), ("g8f6", None, 2), ("d8h4", -300, None)]),  # not best first: sorted
        (white, [("f1b5", 40, None), ("h2h4", -60, None)]),  # the same position again: used once
    ])
    siblings, held_out, counts = split_siblings(read_labels(path), lambda key: False)
    assert len(held_out) == 0 and len(siblings) == 2 and counts["duplicates"] == 1
    pairs, labels = sibling_pairs(siblings, margin=0.05)
    parent_of = np.searchsorted(siblings.offset, np.arange(len(siblings.score)), side="right") - 1
    assert (parent_of[pairs[:, 0]] == parent_of[pairs[:, 1]]).all()  # both children of one parent
    for p in range(len(siblings)):  # each child is the parent after its move
        board = chess.Board(siblings.fen[p].decode())
        assert position_key(board) == siblings.key[p]
        for c in range(siblings.offset[p], siblings.offset[p + 1]):
            board.push_uci(siblings.move[c].decode())
            assert (unpack(siblings.children[c:c + 1])[0] == encode(board)).all()
            board.pop()
    named = {(siblings.move[a].decode(), siblings.move[b].decode()): int(label)
             for (a, b), label in zip(pairs, labels)}
    # White to move: 40, 38 and 20 cp are within 0.05 expected score of each other, so only h2h4 is clearly
    # worse; the better child for White comes first, label 0
    assert named == {("f1b5", "h2h4"): 0, ("f1c4", "h2h4"): 0, ("b1c3", "h2h4"): 0,
                     # Black to move: mate beats everything; the better child for Black is worse for White: 1
                     ("g8f6", "b8c6"): 1, ("g8f6", "d8h4"): 1, ("b8c6", "d8h4"): 1}
    assert len(sibling_pairs(siblings, margin=0.0)[0]) == 6 + 3  # without a margin, no pair is a tie


def test_quiet_siblings_are_encoded_after_their_exchange(tmp_path):
    # White's Nxd5 wins the queen and Black recaptures (c6xd5, then Rxd5); the quiet move h2h3 starts no exchange
    fen = "4k3/8/2p5/3q4/8/2N5/7P/3RK3 w - - 0 1"
    path = write_multipv(tmp_path / "labels.jsonl.gz", [(fen, [("c3d5", 500, None), ("h2h3", -700, None)])])
    raw, _, _ = split_siblings(read_labels(path), lambda key: False)
    quiet, _, _ = split_siblings(read_labels(path), lambda key: False, quiet=True)
    expected = {"c3d5": ["c3d5", "c6d5", "d1d5"], "h2h3": ["h2h3"]}
    for siblings, quiet_children in ((raw, False), (quiet, True)):
        assert [m.decode() for m in siblings.move] == ["c3d5", "h2h3"]  # moves and scores are the parent's
        for c, move in enumerate(("c3d5", "h2h3")):
            board = chess.Board(fen)
            for uci in expected[move] if quiet_children else [move]:
                board.push_uci(uci)
            assert (unpack(siblings.children[c:c + 1])[0] == encode(board)).all()


def test_sibling_children_encoded_by_worker_processes_are_the_same(tmp_path, monkeypatch):
    import training.deepchess.pairs
    monkeypatch.setattr(training.deepchess.pairs, "ENCODE_CHUNK", 1)  # one parent per unit of work: both get some
    path = write_multipv(tmp_path / "labels.jsonl.gz", [
        ("4k3/8/2p5/3q4/8/2N5/7P/3RK3 w - - 0 1", [("c3d5", 500, None), ("h2h3", -700, None)]),
        ("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3", [("f1b5", 40, None), ("h2h4", -60, None)]),
        ("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2", [("b8c6", -25, None), ("d8h4", -300, None)]),
    ])
    first = position_key(chess.Board("4k3/8/2p5/3q4/8/2N5/7P/3RK3 w - - 0 1"))
    alone = split_siblings(read_labels(path), lambda key: key == first, quiet=True)
    shared = split_siblings(read_labels(path), lambda key: key == first, quiet=True, workers=2)
    assert len(alone[0]) == 2 and len(alone[1]) == 1 and alone[2] == shared[2]
    for one, other in zip(alone[:2], shared[:2]):
        for name in SIBLING_FIELDS:
            assert np.array_equal(getattr(one, name), getattr(other, name)), name


def test_search_preferred_child_plays_the_scored_children_only(tmp_path):
    from search.alphabeta import AlphaBetaSearch
    from training.deepchess.valset import search_preferred_child
    fen = "4k3/8/2p5/3q4/8/2N5/7P/3RK3 w - - 0 1"  # Nxd5 wins the queen; Nb5 hangs the knight to it

    def share(lines: list[tuple[str, int, None]]) -> float | None:
        path = write_multipv(tmp_path / "labels.jsonl.gz", [(fen, lines)])
        siblings, _, _ = split_siblings(read_labels(path), lambda key: False)
        return search_preferred_child(AlphaBetaSearch(MaterialEvaluator()), siblings, 1, 10)

    assert share([("c3d5", 500, None), ("h2h3", -700, None)]) == 1.0  # material agrees with the engine
    assert share([("h2h3", 10, None), ("c3d5", -700, None)]) == 0.0  # it takes the queen all the same
    # allowed only h2h3 and Nb5, it keeps the knight rather than play the capture it was not given
    assert share([("h2h3", 10, None), ("c3b5", -300, None)]) == 1.0


def test_held_out_games_hold_out_their_sibling_parents(tmp_path):
    labels = toy_labels(tmp_path / "labels.jsonl.gz", moves=3)
    config = toy_config(out=str(tmp_path / "run"), labels=[str(labels)], validation=0.3)
    data = prepare_data(config, log=lambda _: None)
    held_out_keys = set(read_games([FIXTURE], validation=0.3).heldout_keys.tolist())
    assert len(data.validation.siblings) and len(data.siblings)
    assert set(data.validation.siblings.key.tolist()) <= held_out_keys  # every label position is from a game
    assert not set(data.siblings.key.tolist()) & held_out_keys
    assert not set(data.train.key.tolist()) & held_out_keys
    # a named validation set (here: another split) stays out of training, pairs and parents alike
    named = prepare_data(toy_config(out="", labels=[str(labels)], validation=0.5, seed=3),
                         name="named", training=False, log=lambda _: None).validation
    path = named.save(tmp_path / "named.npz")
    assert ValidationSet.load(path).info == named.info
    config.eval_sets = [str(path)]
    data = prepare_data(config, log=lambda _: None)
    excluded = set(named.heldout_keys.tolist())
    assert not set(data.siblings.key.tolist()) & excluded and not set(data.train.key.tolist()) & excluded
    assert data.eval_sets[0].name == "named"


def test_shard_labels_give_the_same_siblings_as_the_multipv_file(tmp_path):
    from evaluators.encoding import get_encoding
    from training.data.multipv import from_jsonl
    from training.data.shards import write_dir
    labels = toy_labels(tmp_path / "labels.jsonl.gz", moves=3)
    encoding = get_encoding("planes18")
    write_dir(from_jsonl(labels, encoding, progress=False), tmp_path / "shards", encoding, {}, "test")
    from_file, _, _ = split_siblings(read_labels(labels), lambda key: False)
    from_shards, _, _ = split_siblings(read_labels(tmp_path / "shards"), lambda key: False)
    # shards leave out positions whose moves all score alike (no label); everything else is the same
    scored = [p for p in range(len(from_file))
              if len(set(from_file.score[from_file.offset[p]:from_file.offset[p + 1]])) > 1]
    assert (from_shards.key == from_file.key[scored]).all()
    assert (from_shards.children == from_file.subset(np.array(scored)).children).all()


@pytest.fixture(scope="module")
def tiny_comparator(tmp_path_factory):
    """The whole pipeline at toy scale, with sibling pairs: labels -> train -> distil -> export."""
    root = tmp_path_factory.mktemp("deepchess")
    labels = toy_labels(root / "labels.jsonl.gz")
    config = toy_config(out=str(root / "run"), labels=[str(labels)], pretrain_epochs=1, epochs=1,
                        pairs_per_epoch=2000, distill_epochs=1, val_pairs=500, validation=0.3)
    report = run_pipeline(config, log=lambda _: None)
    onnx_path = export_comparator(root / "run" / "student.pt", root / "comparator.onnx", command="pytest")
    return onnx_path, report


def test_tiny_pipeline_reports_every_figure(tiny_comparator):
    onnx_path, report = tiny_comparator
    assert report["accuracy"] == {network: report["evaluation"]["validation"][network]["won_lost"]
                                  for network in ("full", "distilled", "small_from_scratch")}
    assert report["data"]["siblings"]["train_pairs"] > 0 and report["data"]["siblings"]["share"] == 0.5
    assert report["data"]["decisive_games"] == 6 and report["data"]["games"] == 12
    figures = report["evaluation"]["validation"]
    for network in ("full", "distilled", "small_from_scratch"):
        assert set(figures[network]) == {"won_lost", "sibling_pairs", "preferred_child"}
        assert all(0.0 <= value <= 1.0 for value in figures[network].values())
    assert 0.0 < figures["random"]["preferred_child"] < figures["material_quiescence"]["preferred_child"] <= 1.0
    # the exported comparator measures exactly as its checkpoint, on the saved validation set
    validation = ValidationSet.load(onnx_path.parent / "run" / "validation.npz")
    assert evaluate(load_network(onnx_path), validation) == pytest.approx(figures["distilled"])


def test_engine_plays_a_legal_game_with_the_trained_comparator(tiny_comparator, driver):
    """The engine process plays with the trained comparator; in process, the engine says which backend and weights
    it loaded (weights that did not load would have left the shipped network, or material, in their place), and the
    comparator it loaded prefers what the pipeline's PyTorch student prefers."""
    import chess.engine
    with chess.engine.SimpleEngine.popen_uci(
            [sys.executable, "-m", "engine", "--eval", "comparator", "--search", "comparison",
             "--weights", str(tiny_comparator[0])], cwd=ROOT, stderr=subprocess.DEVNULL) as engine:
        play_legal_moves(engine, chess.Board(), chess.engine.Limit(depth=1), 16)
    engine = driver("--eval", "comparator", "--search", "comparison", "--weights", str(tiny_comparator[0]))
    assert engine.go("go depth 1").split()[1] in {move.uci() for move in chess.Board().legal_moves}
    assert engine.engine.backend_names == ("comparator", "comparison")
    assert engine.engine.loaded_weights == {"comparator": str(tiny_comparator[0])}
    assert_engine_plays_comparator(driver, tiny_comparator[0], tiny_comparator[0].parent / "run" / "student.pt")


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
            # fixed-point integers: the update by a move's features is the recomputation, exactly
            assert np.array_equal(evaluator.accumulators[-1], evaluator.full_accumulator(board))
            if rng.random() < 0.3 and len(evaluator.accumulators) > 1:  # unmake and check again
                evaluator.pop(board)
                assert np.array_equal(evaluator.accumulators[-1], evaluator.full_accumulator(board))


def test_comparison_is_antisymmetric_and_matches_onnx(tiny_comparator):
    import onnxruntime as ort
    evaluator = ComparatorEvaluator(tiny_comparator[0])
    session = ort.InferenceSession(str(tiny_comparator[0]), providers=["CPUExecutionProvider"])
    a = chess.Board()
    b = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
    fa, fb = evaluator.features(a), evaluator.features(b)
    p = evaluator.prefers_first(fa, fb)
    assert p + evaluator.prefers_first(fb, fa) == pytest.approx(1.0, abs=1e-6)
    assert evaluator.prefers_first(fa, fa) == 0.5  # equal features: exactly even
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


def test_distilling_from_an_ensemble_of_trained_teachers(tiny_comparator, tmp_path):
    onnx_path, report = tiny_comparator
    run = onnx_path.parent / "run"
    labels = onnx_path.parent / "labels.jsonl.gz"
    config = toy_config(out=str(tmp_path / "again"), labels=[str(labels)], pairs_per_epoch=2000, distill_epochs=1,
                        val_pairs=500, validation=0.3, teachers=[str(run / "teacher.pt")] * 2,
                        student=str(run / "student.pt"))
    again = run_pipeline(config, log=lambda _: None)
    # two copies of one teacher judge as that teacher, on the same held-out pairs (their mean's rounding may break
    # a round robin's near tie otherwise: one parent's preferred child)
    parents = report["data"]["siblings"]["validation_parents_evaluated"]
    for name, value in report["evaluation"]["validation"]["full"].items():
        tolerance = 1.01 / parents if name == "preferred_child" else 1e-6
        assert again["evaluation"]["validation"]["full"][name] == pytest.approx(value, abs=tolerance), name
    assert again["history"]["full"] == [] and not (tmp_path / "again" / "teacher.pt").exists()
    assert (tmp_path / "again" / "student.pt").exists()
    with pytest.raises(ValueError, match="teacher.pt: a comparator of sizes"):
        run_pipeline(toy_config(out=str(tmp_path / "bad"), labels=[str(labels)], validation=0.3,
                                teachers=[str(run / "teacher.pt")], student=str(run / "teacher.pt")),
                     log=lambda _: None)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="junk.pt: not a PyTorch weights file"):
        run_pipeline(toy_config(out=str(tmp_path / "bad"), labels=[str(labels)], validation=0.3,
                                teachers=[str(tmp_path / "junk.pt")]), log=lambda _: None)


# --- won and lost positions by their [%eval] (issue 55) ------------------------------------------------------------

OPENING = "1. e4 d5 2. Nc3 Nf6 3. Nf3 Nc6 4. Bb5 Bd7 5. d3 e6 "  # ten plies: never a position used
#: an eval is of the position after its move: +3 (won), -3 (lost), +0.2 (neither at 0.5), White mates in 2 (won), 8.
#: Nxe5 is a capture, +4 (won); the position after 8...h6 is the game's last (no move played from it), and the
#: opening's +5 is in the first five moves; Black won all the same
ANNOTATED = ('[Result "0-1"]\n\n' + OPENING.replace("Bd7", "Bd7 { [%eval 5.0] }")
             + '{ [%eval 3.0] } 6. O-O { [%eval -3.0] } 6... Be7 { [%eval 0.2] } 7. a3 { [%eval #2] } '
             '7... e5 { [%eval 4.0] } 8. Nxe5 { [%eval 4.0] } 8... h6 { [%eval -9.0] } 0-1\n\n')
WITHOUT_EVALS = (f'[Result "1-0"]\n\n{OPENING}6. O-O Be7 7. a3 e5 8. Nxe5 h6 1-0\n\n'
                 f'[Result "1/2-1/2"]\n\n{OPENING}6. O-O Be7 1/2-1/2\n\n')


def boards_before(pgn_text: str, plies: list[int]) -> list[chess.Board]:
    import io
    import chess.pgn
    game = chess.pgn.read_game(io.StringIO(pgn_text))
    board, boards = game.board(), []
    for ply, move in enumerate(game.mainline_moves()):
        if ply in plies:
            boards.append(board.copy())
        board.push(move)
    return boards


def test_annotated_positions_are_won_or_lost_by_their_eval(tmp_path):
    pgn = tmp_path / "annotated.pgn"
    pgn.write_text(ANNOTATED + WITHOUT_EVALS)
    data = read_games([pgn], eval_threshold=0.5)
    positions = data.positions
    by_game = {int(game): positions.white_won[positions.game == game].tolist() for game in np.unique(positions.game)}
    # the drawn game without evals gives nothing; a decisive one without evals is labelled by its result
    assert by_game == {0: [True, False, True, True], 1: [True] * 5} and data.annotated == 1 and data.decisive == 2
    won_lost = unpack(positions.bits[positions.game == 0])
    expected = [encode(board) for board in boards_before(ANNOTATED, [10, 11, 13, 15])]  # 12: neither, 14: capture
    assert (won_lost == np.array(expected)).all()
    # nearer equality the threshold decides: +0.2 is W - L = 0.017 at ply 12, won at 0 and left out at 0.5
    assert read_games([pgn], eval_threshold=0.0).positions.white_won[:5].tolist() == [True, False, True, True, True]
    # without a threshold every game is labelled by its result: the annotated one, which Black won, too
    result_rule = read_games([pgn]).positions
    assert result_rule.white_won[result_rule.game == 0].tolist() == [False] * 5


def test_games_without_evals_are_labelled_and_held_out_as_before(tmp_path):
    """Without evals the eval rule is the paper's rule, the same positions; and whatever the rule, the held-out
    games are training.data.split's numbered games (file * 10,000,000 + index), every position of them held out."""
    import chess.pgn
    from training.data.split import numbered_game_held_out, period_of
    pgn = tmp_path / "plain.pgn"
    pgn.write_text(WITHOUT_EVALS * 3)
    by_eval, by_result = read_games([pgn], per_game=3, eval_threshold=0.5), read_games([pgn], per_game=3)
    for name in ("bits", "white_won", "game", "key"):
        assert np.array_equal(getattr(by_eval.positions, name), getattr(by_result.positions, name)), name
    files = [pgn, FIXTURE]
    expected = set()
    for number, path in enumerate(files):
        with open(path) as handle:
            index = 0
            while (game := chess.pgn.read_game(handle)) is not None:
                if numbered_game_held_out(number * 10_000_000 + index, period_of(0.3)):
                    board = game.board()
                    expected.add(position_key(board))
                    for move in game.mainline_moves():
                        board.push(move)
                        expected.add(position_key(board))
                index += 1
    by_eval, by_result = (read_games(files, validation=0.3, eval_threshold=threshold) for threshold in (0.5, None))
    assert by_eval.annotated == 12 and by_result.annotated == 0
    assert set(by_eval.heldout_keys.tolist()) == set(by_result.heldout_keys.tolist()) == expected
    assert np.array_equal(by_eval.known_keys, by_result.known_keys)


def test_the_label_rule_reaches_the_named_validation_set(tmp_path):
    from click.testing import CliRunner
    from training.__main__ import cli
    from training.deepchess.data import held_out
    pgn = tmp_path / "annotated.pgn"
    pgn.write_text((ANNOTATED + WITHOUT_EVALS) * 8)
    sets = {}
    for rule in ("eval", "result"):
        out = tmp_path / f"{rule}.npz"
        result = CliRunner().invoke(cli, ["deepchess-valset", str(pgn), "--won-lost", rule, "--eval-threshold",
                                          "0.5", "--validation", "0.5", "--val-pairs", "50", "--out", str(out)])
        assert result.exit_code == 0, result.output
        sets[rule] = ValidationSet.load(out)
    assert sets["eval"].info["won_lost"] == "eval" and sets["eval"].info["eval_threshold"] == 0.5
    assert sets["result"].info["eval_threshold"] is None
    assert np.array_equal(sets["eval"].heldout_keys, sets["result"].heldout_keys)  # the same games held out
    for rule, threshold in (("eval", 0.5), ("result", None)):
        positions = read_games([pgn], validation=0.5, eval_threshold=threshold).positions
        assert sets[rule].info["won_lost_positions"] == held_out(positions.game, 0.5).sum() > 0, rule
    assert len(sets["eval"].label) == 50


def test_the_towers_learn_alone_on_a_share_of_the_positions(tiny_comparator, tmp_path):
    onnx_path, report = tiny_comparator
    run, labels = onnx_path.parent / "run", onnx_path.parent / "labels.jsonl.gz"
    # by default every training position and as many sibling children
    assert report["data"]["tower_positions"] > report["data"]["train_positions"] > 40
    config = toy_config(out=str(tmp_path / "few"), labels=[str(labels)], pairs_per_epoch=500, distill_epochs=1,
                        val_pairs=100, validation=0.3, teachers=[str(run / "teacher.pt")], tower_positions=40)
    assert run_pipeline(config, log=lambda _: None)["data"]["tower_positions"] == 40
