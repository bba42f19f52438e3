"""Policy distillation (`training distil`): teachers' moves mixed into the targets, written as shards, and a
student that learns them."""

from __future__ import annotations

import json

import chess
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from click.testing import CliRunner  # noqa: E402

from evaluators.moves import move_to_index  # noqa: E402
from tests.exported import assert_engine_plays_resnet, engine_network  # noqa: E402
from tests.training.uci.test_labelling import write_synthetic  # noqa: E402
from training.configs import DistilConfig, TrainConfig  # noqa: E402
from training.data import shards  # noqa: E402
from training.data.sources import read_source as load_source  # noqa: E402
from training.resnet import distil as distil_module  # noqa: E402
from training.resnet.distil import distil  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.metrics import legal_mask  # noqa: E402
from training.resnet.train import train  # noqa: E402
from evaluators.encoding import get_encoding  # noqa: E402


def test_distilled_targets_mix_the_played_move_with_the_teachers_legal_moves(tiny_network, tmp_path):
    _, weights, _, _ = tiny_network
    prepared = tiny_network[0].parent.parent / "data"  # one-hot `prepare` dataset of the fixture games
    out = distil(DistilConfig(sources=[str(prepared)], teachers=[str(weights), str(weights)], out=str(tmp_path / "d"),
                              share=0.25, top_k=3, batch_size=100, threads=1), progress=False)
    source, _, _ = load_source(prepared, None, 0.0)
    made, meta = shards.load_dir(out)
    n = len(source["key"])
    assert len(made["key"]) == n and "distilled" in meta["labeller"]["targets"]
    for name in ("planes", "rule50", "game", "result", "key"):
        assert np.array_equal(made[name], source[name]), name
    assert np.array_equal(np.isnan(made["wdl"]), np.isnan(source["wdl"]))
    offsets = made["policy_offset"]
    counts = np.diff(offsets)
    assert (counts >= 1).all() and (counts <= 4).all()  # the played move and at most 3 teacher moves
    assert np.allclose(np.add.reduceat(made["policy_prob"], offsets[:-1]), 1.0, atol=1e-5)
    legal = legal_mask(made["planes"], get_encoding("planes18")).numpy()
    rows = np.repeat(np.arange(n), counts)
    assert legal[rows, made["policy_index"]].all()
    for row in range(0, n, 97):  # the played move keeps its 75% plus whatever the teachers give it
        entries = slice(offsets[row], offsets[row + 1])
        played = made["policy_prob"][entries][made["policy_index"][entries] == source["policy_index"][row]]
        assert played.size == 1 and played[0] >= 0.75 - 1e-6
        assert made["policy_prob"][entries][0] == made["policy_prob"][entries].max()  # most likely first
    # training reads it like any other shard directory
    config = TrainConfig(data=[str(out)], out=str(tmp_path / "run"), blocks=1, filters=8, epochs=1, batch_size=64,
                         device="cpu", validation=0.2, max_samples=256, init=str(weights))
    assert train(config, progress=False).exists()


def test_a_student_trained_on_distilled_targets_plays_the_teachers_moves(tiny_network, tmp_path, driver):
    """Learning: distilled into one-hot targets (share 1 of the teacher's top move, without mirror views), 64
    positions train a new network (1x16, 40 steps) that plays the teacher's move, through the engine, in 95% of
    them (seeds 0 and 1; a network that learned nothing agrees by chance, about 1 in 30). The margin: 70%."""
    _, teacher_weights, teacher_onnx, _ = tiny_network
    write_synthetic(tmp_path / "positions", 64)
    targets = distil(DistilConfig(sources=[str(tmp_path / "positions")], teachers=[str(teacher_weights)],
                                  out=str(tmp_path / "distilled"), share=1.0, top_k=1, mirror=False, threads=1),
                     progress=False)
    checkpoint = train(TrainConfig(data=[str(targets)], out=str(tmp_path / "student"), blocks=1, filters=16,
                                   epochs=5, batch_size=8, lr=1e-2, device="cpu", validation=0.0, precision="fp32"),
                       progress=False)
    student = export_resnet(checkpoint, tmp_path / "student.onnx")
    arrays, _ = shards.load_dir(tmp_path / "positions")
    boards = [chess.Board(fen.decode()) for fen in arrays["fen"]]

    def top_moves(network) -> list[int]:
        return [move_to_index(max(e.priors, key=e.priors.__getitem__), board.turn)
                for board, e in zip(boards, network.evaluate_batch(boards))]

    taught = top_moves(engine_network(driver, "resnet", teacher_onnx))
    distilled = shards.best_moves(shards.load_dir(targets)[0])
    assert np.mean(distilled == np.array(taught)) >= 0.95  # the targets are the teacher's moves (up to near ties)
    assert np.mean(np.array(top_moves(engine_network(driver, "resnet", student))) == np.array(taught)) >= 0.7
    assert_engine_plays_resnet(driver, student, checkpoint)  # the student's export gives its PyTorch outputs


def test_an_interrupted_distillation_resumes_and_other_settings_are_refused(tiny_network, tmp_path, monkeypatch):
    from training.__main__ import cli
    _, weights, _, _ = tiny_network
    prepared = tiny_network[0].parent.parent / "data"
    monkeypatch.setattr(distil_module, "SHARD_SIZE", 200)
    args = ["distil", str(prepared), "--teacher", str(weights), "--threads", "1"]
    result = CliRunner().invoke(cli, args + ["--out", str(tmp_path / "whole")])
    assert result.exit_code == 0, result.output
    whole, _ = shards.load_dir(tmp_path / "whole")
    # an interruption after the first shard: meta.json lists only it, a later shard is half-written
    part = tmp_path / "part"
    result = CliRunner().invoke(cli, args + ["--out", str(part)])
    meta = json.loads((part / "meta.json").read_text())
    assert len(meta["shards"]) > 2
    meta["shards"], meta["runs"] = meta["shards"][:1], []
    (part / "meta.json").write_text(json.dumps(meta))
    (part / "shard-00001.npz").write_bytes(b"half")
    result = CliRunner().invoke(cli, args + ["--out", str(part)])
    assert result.exit_code == 0 and "200 of" in result.output, result.output
    resumed, _ = shards.load_dir(part)
    for name, array in whole.items():
        assert np.array_equal(resumed[name], array, equal_nan=array.dtype.kind == "f"), name
    result = CliRunner().invoke(cli, args + ["--out", str(part), "--share", "0.3"])
    assert result.exit_code == 1 and "holds labels made with" in result.output
    result = CliRunner().invoke(cli, args + ["--out", str(tmp_path / "x"), "--share", "0"])
    assert result.exit_code == 2
    (tmp_path / "broken.pt").write_bytes(b"not a network")
    result = CliRunner().invoke(cli, ["distil", str(prepared), "--teacher", str(tmp_path / "broken.pt"),
                                      "--out", str(tmp_path / "y")])
    assert result.exit_code == 1 and "broken.pt" in result.output
