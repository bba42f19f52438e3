"""Data pipeline, training runs that must learn, ONNX export and the engine playing the exported network."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import chess
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from evaluators.base import LoadError  # noqa: E402
from evaluators.moves import move_to_index  # noqa: E402
from evaluators.resnet import ResNetEvaluator  # noqa: E402
from search.base import SearchControl  # noqa: E402
from search.puct import PuctSearch  # noqa: E402
from tests.exported import assert_engine_plays_resnet, engine_network, fixed_boards  # noqa: E402
from tests.training.uci.test_labelling import write_synthetic  # noqa: E402
from training.configs import TrainConfig  # noqa: E402
from training.data import prepared as dataset  # noqa: E402
from training.data import shards  # noqa: E402
from training.data.pgn import DataError, ReadStats, iter_epd, iter_positions  # noqa: E402
from training.network_files import WeightsError  # noqa: E402
from training.onnx_metadata import write_metadata  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.train import train  # noqa: E402
from training.resnet.weights import load_file  # noqa: E402

PGN = """[Event "a"]
[White "x"]
[Black "y"]
[Result "1-0"]
[WhiteElo "2500"]
[BlackElo "2400"]

1. e4 { [%eval 0.30] } 1... e5 { [%eval 0.25] } 2. Qh5 { [%eval -0.5] } 2... Nc6 { [%eval #3] } 3. Bc4 Nf6 4. Qxf7# 1-0

[Event "b"]
[Result "0-1"]
[WhiteElo "1200"]

1. f3 e5 2. g4 Qh4# 0-1

[Event "c"]
[Result "1/2-1/2"]

1. e4 e5 2. Ke3 Ke7 3. Kxe5 1/2-1/2

[Event "d"]
[Result "*"]

1. d4 *
"""


@pytest.fixture
def pgn_file(tmp_path: Path) -> Path:
    path = tmp_path / "games.pgn"
    path.write_text(PGN)
    return path


def test_pgn_positions_results_and_evals(pgn_file):
    stats = ReadStats()
    positions = list(iter_positions(pgn_file, stats))
    first = positions[0]
    assert first.board.fen() == chess.STARTING_FEN and first.move.uci() == "e2e4"
    assert first.result == 1 and first.eval_q == pytest.approx(2 / (1 + math.exp(-0.00368208 * 30)) - 1)
    assert positions[1].result == -1  # Black to move in a game White won
    assert positions[1].eval_q < 0  # +0.25 for White is bad for Black
    assert positions[3].eval_q < -0.99  # mate for White, Black to move
    assert positions[4].eval_q is None
    assert stats.skipped["games with illegal or unreadable moves"] == 1  # Ke3 after e4 e5 is fine, Kxe5 is not
    assert any("games.pgn game 3" in e for e in stats.errors)
    assert stats.skipped["games without a result"] == 1


def test_pgn_filters(pgn_file):
    stats = ReadStats()
    rated = list(iter_positions(pgn_file, stats, min_rating=2000))
    assert {p.game for p in rated} == {0}
    assert stats.skipped["games below the minimum rating"] == 1
    evals = list(iter_positions(pgn_file, ReadStats(), require_eval=True))
    assert len(evals) == 4
    skipped = list(iter_positions(pgn_file, ReadStats(), skip_plies=2))
    assert all(p.board.ply() >= 2 for p in skipped)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        list(iter_positions(tmp_path / "nope.pgn", ReadStats()))


def test_epd_reader(tmp_path):
    epd = tmp_path / "s.epd"
    epd.write_text('6k1/5ppp/8/8/8/8/8/R5K1 w - - bm Ra8#; ce 32000; id "m1";\n'
                   'garbage line here\n'
                   '6k1/5ppp/8/8/8/8/8/R5K1 w - - id "no bm";\n')
    stats = ReadStats()
    positions = list(iter_epd(epd, stats))
    assert len(positions) == 1 and positions[0].move.uci() == "a1a8" and positions[0].eval_q > 0.99
    assert stats.skipped["bad EPD lines"] == 1 and stats.skipped["EPD lines without bm"] == 1


def test_dataset_roundtrip_and_dedupe(pgn_file, tmp_path):
    once, _ = dataset.build_samples([pgn_file], "planes18", {}, workers=1, progress=False)
    samples, stats = dataset.build_samples([pgn_file, pgn_file], "planes18", {}, workers=1, progress=False)
    assert len(samples) == len(once)  # the second file repeats the first
    assert stats.skipped["duplicate positions"] >= len(once)
    dataset.save(samples, tmp_path / "ds", {"encoding": "planes18"})
    arrays, meta = dataset.load(tmp_path / "ds")
    assert meta["samples"] == len(samples)
    inputs = shards.to_inputs(np.asarray(arrays["planes"][:1]), np.asarray(arrays["rule50"][:1]),
                               dataset.get_encoding("planes18"))
    from evaluators.encoding import get_encoding
    np.testing.assert_array_equal(inputs[0], get_encoding("planes18").encode(chess.Board()))


def test_value_targets_mix_result_and_eval():
    from training.resnet.losses import value_target
    wdl = torch.tensor([[np.nan] * 3, [0.2, 0.6, 0.2], [0.5, 0.5, 0.0], [np.nan] * 3])
    target, weight = value_target(wdl, torch.tensor([1, 0, -1, -128], dtype=torch.int8), 0.5)
    np.testing.assert_allclose(target[:3].sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(target[0], [1, 0, 0])  # no engine W/D/L: the result alone
    np.testing.assert_allclose(target[1], [0.1, 0.8, 0.1])
    np.testing.assert_allclose(target[2], [0.25, 0.25, 0.5])  # half the loss, half the engine's W/D/L
    np.testing.assert_allclose(weight, [1, 1, 1, 0])  # neither: no value loss


@pytest.fixture(scope="module")
def tiny_model(tiny_network):
    """The shared tiny network (tests/conftest.py): checkpoint, ONNX, samples."""
    checkpoint, _, onnx_path, count = tiny_network
    return checkpoint, onnx_path, count


def test_tiny_training_run_end_to_end(tiny_model):
    checkpoint, onnx_path, count = tiny_model
    assert count >= 200
    history = json.loads((checkpoint.parent / "history.json").read_text())
    assert history == load_file(checkpoint)["history"] and (checkpoint.parent / "curves.png").stat().st_size > 0
    assert [(h["epoch"], h["train_samples"] + h["val_samples"]) for h in history] == [(1, count)]
    evaluator = ResNetEvaluator(onnx_path)
    board = chess.Board()
    result = PuctSearch(evaluator).search(board, SearchControl(max_nodes=50), lambda info: None)
    assert result.best_move in board.legal_moves


def test_the_engine_plays_the_exported_network_with_pytorch_s_outputs(tiny_model, driver):
    checkpoint, onnx_path, _ = tiny_model
    rng = np.random.default_rng(3)
    boards = fixed_boards()
    board = chess.Board()
    for _ in range(12):  # and the positions of a random game
        board.push(list(board.legal_moves)[rng.integers(len(list(board.legal_moves)))])
        boards.append(board.copy())
    assert_engine_plays_resnet(driver, onnx_path, checkpoint, boards)


#: The set a network must fit: positions of the fixture games, each labelled with made-up scores of three legal
#: moves (tests/training/uci/test_labelling.py), the best one the first legal move in UCI order: a rule of the position alone.
FIT_POSITIONS = 64


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A 1x16 network trained on the FIT_POSITIONS alone, 5 epochs of 8 steps, and its ONNX export."""
    root = tmp_path_factory.mktemp("fit")
    write_synthetic(root / "data", FIT_POSITIONS)
    config = TrainConfig(data=[str(root / "data")], out=str(root / "run"), blocks=1, filters=16, epochs=5,
                         batch_size=8, lr=1e-2, device="cpu", validation=0.0, precision="fp32")
    checkpoint = train(config, progress=False)
    return config, checkpoint, export_resnet(checkpoint, root / "fitted.onnx", command="pytest")


def test_training_fits_a_small_set_and_the_engine_plays_what_it_learned(fitted, driver):
    """Learning, with margins about half of what a run shows (seeds 0-3: both losses fall 5 to 8 times, top-1
    0.75 to 0.84): the losses of the last epoch's first batch against those of the first batch (the untrained
    network's), and the exported network's top-1 on the set through the engine, where chance is about 1 in 30."""
    config, checkpoint, onnx = fitted
    history = load_file(checkpoint)["history"]
    first, last = history[0], history[-1]
    assert last["train_policy_loss"] <= first["train_policy_loss"] / 4, history
    assert last["train_value_loss"] <= first["train_value_loss"] / 3, history
    arrays, _ = shards.load_dir(Path(config.data[0]))
    boards = [chess.Board(fen.decode()) for fen in arrays["fen"]]
    network = engine_network(driver, "resnet", onnx)
    played = [move_to_index(max(e.priors, key=e.priors.__getitem__), board.turn)
              for board, e in zip(boards, network.evaluate_batch(boards))]
    top1 = float(np.mean(np.array(played) == shards.best_moves(arrays)))
    assert top1 >= 0.6, top1


def test_a_run_stopped_and_resumed_ends_with_the_network_of_one_that_ran_through(fitted, tmp_path):
    """Resuming restores everything a step depends on (weights, optimiser, schedule, data order), and a step
    depends on nothing else, e.g. on gradients left over from the step before."""
    config, through, _ = fitted
    stopped = replace(config, out=str(tmp_path / "run"), max_minutes=1e-6)
    state = load_file(train(stopped, progress=False))  # stops after the first step
    assert (state["epoch"], state["batch"]) == (0, 1)
    state = load_file(train(replace(stopped, max_minutes=0.0, resume=True), progress=False))
    expected = load_file(through)
    assert state["model"].keys() == expected["model"].keys()
    for name, tensor in expected["model"].items():
        assert torch.equal(state["model"][name], tensor), name
    losses = ("train_policy_loss", "train_value_loss")
    assert [[h[k] for k in losses] for h in state["history"]] == [[h[k] for k in losses] for h in expected["history"]]


def test_priors_cover_exactly_the_legal_moves(tiny_model):
    evaluator = ResNetEvaluator(tiny_model[1])
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    evaluation = evaluator.evaluate(board)
    assert set(evaluation.priors) == set(board.legal_moves)
    assert sum(evaluation.priors.values()) == pytest.approx(1.0, abs=1e-5)
    assert -1 <= evaluation.value <= 1
    batch = evaluator.evaluate_batch([board, chess.Board()])
    assert batch[0].value == pytest.approx(evaluation.value)


def test_wrong_encoding_or_kind_is_refused(tiny_model, tmp_path):
    import shutil
    bad = tmp_path / "bad.onnx"
    shutil.copy(tiny_model[1], bad)
    write_metadata(bad, {"hackmate.kind": "resnet-policy-value", "encoding": "planes42",
                         "policy_layout": "az-8x8x73", "value_head": "wdl"})
    with pytest.raises(LoadError, match="unknown board encoding 'planes42'"):
        ResNetEvaluator(bad)
    write_metadata(bad, {"hackmate.kind": "deepchess-comparator"})
    with pytest.raises(LoadError, match="not a resnet-policy-value"):
        ResNetEvaluator(bad)
    not_onnx = tmp_path / "junk.onnx"
    not_onnx.write_bytes(b"not a model")
    with pytest.raises(LoadError, match="cannot load"):
        ResNetEvaluator(not_onnx)


def test_frozen_blocks_keep_the_first_layer_and_blocks_as_they_started(fitted, tmp_path):
    """--frozen-blocks 1 of 2: the stem and the first block (weights and BatchNorm statistics) end as they began,
    the second block and the heads learn; more blocks than the network has is refused."""
    config, start, _ = fitted
    grown = replace(config, out=str(tmp_path / "run"), blocks=2, epochs=2, init=str(start), grow=True,
                    frozen_blocks=1)
    before = load_file(train(replace(grown, out=str(tmp_path / "start"), epochs=2, lr=0.0), progress=False))["model"]
    after = load_file(train(grown, progress=False))["model"]
    kept = [name for name in before if name.startswith(("stem.", "tower.0."))]
    learnt = [name for name in before if name.startswith(("tower.1.", "policy.", "value."))
              and before[name].is_floating_point()]
    assert kept and learnt
    assert all(torch.equal(after[name], before[name]) for name in kept)
    assert any("running_mean" in name for name in kept)
    assert all(not torch.equal(after[name], before[name]) for name in learnt if "num_batches" not in name)
    with pytest.raises(WeightsError, match="cannot freeze 3 residual blocks"):
        train(replace(grown, out=str(tmp_path / "too-many"), frozen_blocks=3), progress=False)
