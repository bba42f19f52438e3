"""A policy-value network teaches the comparator: its values of positions, value-labelled pairs, the pipeline's
`--value-network` and `deepchess-eval --value-network`."""

from __future__ import annotations

import chess
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES, ROOT  # noqa: E402
from tests.training.deepchess.test_deepchess_learning import no_siblings  # noqa: E402
from training.deepchess import DeepChessConfig, read_games, run_pipeline  # noqa: E402
from training.deepchess.accuracy import ordering_accuracy  # noqa: E402
from training.deepchess.model import STUDENT_HEAD, STUDENT_LAYERS, SiameseComparator, save_comparator  # noqa: E402
from training.deepchess.pairs import PairSampler, pack, value_pairs  # noqa: E402
from training.deepchess.valset import ValidationSet  # noqa: E402
from training.deepchess import values as values_module  # noqa: E402
from training.deepchess.values import white_values  # noqa: E402
from training.errors import TrainingError  # noqa: E402

NETWORK = ROOT / "weights" / "resnet.onnx"
FIXTURE = FIXTURES / "games.pgn"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HACKMATE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_values_are_for_white_and_come_back_from_the_cache(cache, monkeypatch):
    queens = [chess.Board("4k3/8/8/8/8/8/8/QQQ1K3 b - - 0 1"), chess.Board("4k3/8/8/8/8/8/8/QQQ1K3 w - - 0 1"),
              chess.Board("qqq1k3/8/8/8/8/8/8/4K3 w - - 0 1"), chess.Board("qqq1k3/8/8/8/8/8/8/4K3 b - - 0 1")]
    rows = np.array([pack(board) for board in queens])
    values = white_values(NETWORK, rows[[0, 1, 0, 2, 3]], log=lambda _: None)[[0, 1, 3, 4]]
    assert values.dtype == np.float32 and values[0] > 0.9 and values[1] > 0.9 and values[2] < -0.9 and values[3] < -0.9
    assert len(list((cache / "deepchess-values").glob("*.npy"))) == 1

    evaluated = []
    real = values_module.white_values_of

    def counted(network, chunk):
        evaluated.append(len(chunk))
        return real(network, chunk)
    monkeypatch.setattr(values_module, "white_values_of", counted)
    assert np.array_equal(white_values(NETWORK, rows, log=lambda _: None), values)
    assert np.array_equal(white_values(NETWORK, rows[[3, 1]], log=lambda _: None), values[[3, 1]])
    assert evaluated == []  # any of the positions, in any order: from the cache
    start = np.array([pack(chess.Board())])
    both = white_values(NETWORK, np.concatenate([rows[:2], start, start]), log=lambda _: None)
    assert evaluated == [1] and np.array_equal(both[:2], values[:2]) and both[2] == both[3] and abs(both[2]) < 0.3
    assert np.array_equal(white_values(NETWORK, start, log=lambda _: None), both[2:3]) and evaluated == [1]


def test_a_broken_cache_file_is_evaluated_again(cache):
    rows = np.array([pack(chess.Board())])
    values = white_values(NETWORK, rows, log=lambda _: None)
    (file,) = (cache / "deepchess-values").glob("*.npy")
    file.write_bytes(b"not a cache")
    assert np.array_equal(white_values(NETWORK, rows, log=lambda _: None), values)
    assert np.load(file)["hash"].shape == (1,)


def test_positions_differing_in_one_bit_hash_apart():
    rows = np.zeros((98 * 8, 97), dtype=np.uint8)
    for bit in range(97 * 8):
        rows[bit + 1, bit // 8] = 1 << (bit % 8)
    hashes = values_module.row_hashes(rows[:97 * 8 + 1])
    assert len(np.unique(hashes)) == 97 * 8 + 1 and hashes.dtype == np.uint64


def test_value_pairs_prefer_the_higher_value_by_the_temperature():
    values = np.array([0.5, -0.5, 0.5, 0.45], dtype=np.float32)
    first, second, target = value_pairs(values, 4000, 0.1, np.random.default_rng(1))
    expected = 1.0 / (1.0 + np.exp(-(values[first] - values[second]) / 0.1))
    assert np.allclose(target, expected, atol=1e-6) and target.dtype == np.float32
    assert np.unique(np.round(target, 3)).tolist() == pytest.approx([0.0, 0.378, 0.5, 0.622, 1.0], abs=1e-6)
    ones = np.flatnonzero((first == 0) & (second == 1))
    assert len(ones) and (target[ones] > 0.9999).all()


def test_the_sampler_draws_value_pairs_in_place_of_won_and_lost_ones():
    positions = read_games([FIXTURE]).positions
    values = np.linspace(-1, 1, len(positions.bits), dtype=np.float32)
    by_row = {row.tobytes(): value for row, value in zip(positions.bits, values)}
    first, second, target = PairSampler(positions, no_siblings(), 0.05, 0.0, values, 0.2).sample(
        500, np.random.default_rng(3))
    difference = np.array([by_row[a.tobytes()] - by_row[b.tobytes()] for a, b in zip(first, second)])
    assert np.allclose(target, 1.0 / (1.0 + np.exp(-difference / 0.2)), atol=1e-5)
    # without values: won against lost, the target 1 where the first is the won one
    first, _, target = PairSampler(positions, no_siblings(), 0.05, 0.0).sample(500, np.random.default_rng(3))
    won = {row.tobytes() for row in positions.bits[positions.white_won]}
    assert set(np.unique(target)) == {0.0, 1.0}
    assert all((row.tobytes() in won) == bool(t) for row, t in zip(first, target))


def test_sibling_pairs_keep_their_engine_labels_beside_value_pairs(tmp_path):
    """With a share of sibling pairs, in either mode each sibling pair's target is 1 where its first child is the
    better one for White by the engine's scores (a parent's better child first when White moves there)."""
    from tests.training.deepchess.test_deepchess import toy_labels
    from training.deepchess.pairs import read_labels, sibling_pairs, split_siblings
    positions = read_games([FIXTURE]).positions
    siblings = split_siblings(read_labels(toy_labels(tmp_path / "labels.jsonl.gz")), lambda key: False)[0]
    pairs, labels = sibling_pairs(siblings, 0.05)
    better = {}  # (first child, second child) -> target
    for (a, b), label in zip(pairs, labels):
        first, second = siblings.children[a].tobytes(), siblings.children[b].tobytes()
        if first != second:
            better[first, second], better[second, first] = float(label == 0), float(label == 1)
    values = np.zeros(len(positions.bits), dtype=np.float32)
    for sampler_values in (None, values):
        sampler = PairSampler(positions, siblings, 0.05, 0.5, sampler_values, 0.1)
        first, second, target = sampler.sample(2000, np.random.default_rng(5))
        checked = [(better[a.tobytes(), b.tobytes()], t) for a, b, t in zip(first, second, target)
                   if (a.tobytes(), b.tobytes()) in better]
        assert len(checked) > 500 and all(expected == t for expected, t in checked)
        if sampler_values is not None:  # the value pairs: equal values, no preference
            assert (target == 0.5).sum() == 2000 - len(checked)


def test_a_student_learns_the_value_networks_order(cache):
    """Learning: the engine's comparator, from scratch, on value pairs of the fixture games' 60 decisive positions
    (the shipped ResNet's values), orders 400 pairs of them as the values do (seed 0: 98% after one epoch of 4,000
    pairs; untrained 50%). The margin: 90%."""
    from training.deepchess.train import train_comparator
    positions = read_games([FIXTURE]).positions
    values = white_values(NETWORK, positions.bits, log=lambda _: None)
    i, j, target = value_pairs(values, 400, 0.1, np.random.default_rng(7))
    fit = ValidationSet("fit", positions.bits[i], positions.bits[j], (target < 0.5).astype(np.int64), no_siblings(),
                        np.zeros(0, np.uint64), 0.05)
    torch.manual_seed(0)
    model = SiameseComparator(STUDENT_LAYERS, STUDENT_HEAD)
    history = train_comparator(model, PairSampler(positions, no_siblings(), 0.05, 0.0, values, 0.1), fit, epochs=2,
                               pairs_per_epoch=4000, lr=1e-3, seed=0, batch=64, log=lambda line: None)
    assert history[-1]["won_lost"] >= 0.9, history


def test_the_pipeline_teaches_only_the_student_and_measures_the_network_beside_it(cache, tmp_path):
    """The pipeline's --value-network: only the student trains, on value pairs; the network that taught it ranks the
    run's held-out pairs by its values (deepchess-eval --value-network), the figure a test recomputes."""
    from click.testing import CliRunner
    from training.__main__ import cli
    torch.manual_seed(0)
    start = tmp_path / "start.pt"
    save_comparator(SiameseComparator(STUDENT_LAYERS, STUDENT_HEAD), start, {})
    config = DeepChessConfig(pgn=[str(FIXTURE)], workers=1, out=str(tmp_path / "run"), value_network=str(NETWORK),
                             student=str(start), pairs_per_epoch=2000, distill_epochs=1, val_pairs=300,
                             validation=0.3, batch=64)
    report = run_pipeline(config, log=lambda _: None)
    assert set(report["accuracy"]) == set(report["history"]) == {"distilled"}
    assert (tmp_path / "run" / "student.pt").exists()
    assert not (tmp_path / "run" / "teacher.pt").exists() and not (tmp_path / "run" / "scratch.pt").exists()
    validation = ValidationSet.load(tmp_path / "run" / "validation.npz")
    rows, inverse = np.unique(np.concatenate([validation.first, validation.second]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    values = white_values(NETWORK, rows, log=lambda _: None)
    count = len(validation.label)
    expected = ordering_accuracy(values[inverse[:count]], values[inverse[count:]], validation.label)
    result = CliRunner().invoke(cli, ["deepchess-eval", "--value-network", str(NETWORK), "--eval-set",
                                      str(tmp_path / "run" / "validation.npz"), "--out", str(tmp_path / "eval.json")])
    assert result.exit_code == 0, result.output
    import json
    figures = json.loads((tmp_path / "eval.json").read_text())
    assert figures[validation.name][f"{NETWORK} value"]["won_lost"] == pytest.approx(expected)
    assert report["evaluation"]["validation"][f"{NETWORK} value"]["won_lost"] == pytest.approx(expected)
    assert expected > 0.7  # the fixture's decisive games: a real network tells won from lost
    # a student is what it teaches, and only without a --teacher
    for wrong in ({"student": None}, {"teachers": [str(start)]}):
        with pytest.raises(TrainingError, match="--value-network teaches a --student"):
            run_pipeline(DeepChessConfig(**{**config.__dict__, **wrong}), log=lambda _: None)


def test_a_file_that_is_no_policy_value_network_is_refused_by_name(cache, tmp_path):
    from click.testing import CliRunner
    from training.__main__ import cli
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a network")
    runner = CliRunner()
    for network in (junk, ROOT / "weights" / "comparator.onnx"):
        result = runner.invoke(cli, ["deepchess", str(FIXTURE), "--value-network", str(network), "--student",
                                     str(ROOT / "weights" / "comparator.pt"), "--out", str(tmp_path / "run")])
        assert result.exit_code == 1 and network.name in result.output and "Traceback" not in result.output, \
            result.output
        assert not (tmp_path / "run" / "validation.npz").exists()  # refused before the data
    from training.deepchess.pairs import won_lost_pairs
    pairs = ValidationSet("pairs", *won_lost_pairs(read_games([FIXTURE]).positions, 50, np.random.default_rng(1)),
                          no_siblings(), np.zeros(0, np.uint64), 0.05, {"baselines": {}})
    pairs.save(tmp_path / "pairs.npz")
    result = runner.invoke(cli, ["deepchess-eval", "--value-network", str(junk), "--eval-set",
                                 str(tmp_path / "pairs.npz")])
    assert result.exit_code == 1 and "junk.onnx" in result.output and "Traceback" not in result.output, result.output
