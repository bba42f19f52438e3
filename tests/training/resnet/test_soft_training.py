"""Soft-target training on shards, weights files, export, test-set evaluation and the GPU recipe at toy scale."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES, ROOT, needs_stockfish, stockfish_path  # noqa: E402
from tests.exported import assert_engine_plays_resnet, play_legal_moves  # noqa: E402
from tests.training.uci.test_labelling import write_synthetic  # noqa: E402
from training.configs import TrainConfig  # noqa: E402
from training.data import shards  # noqa: E402
from training.device import uses_bf16  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.losses import gather_policy, soft_policy_loss  # noqa: E402
from training.resnet.metrics import evaluate_network  # noqa: E402
from training.resnet.train import load_data, mirror_half, run_finished, train  # noqa: E402
from training.resnet.weights import WeightsError, load_file, load_network, save_weights, weights_of  # noqa: E402


def test_sparse_soft_policy_loss_matches_the_dense_one():
    logits = torch.randn(3, 4672)
    offsets = torch.tensor([0, 2, 3, 6])
    index = torch.tensor([5, 70, 4000, 1, 2, 3], dtype=torch.int16)
    prob = torch.tensor([0.75, 0.25, 1.0, 0.5, 0.3, 0.2])
    batch = torch.tensor([2, 0])
    target = gather_policy(offsets, index, prob, batch)
    dense = torch.zeros(2, 4672)
    dense[0, [1, 2, 3]] = torch.tensor([0.5, 0.3, 0.2])
    dense[1, [5, 70]] = torch.tensor([0.75, 0.25])
    expected = -(dense * torch.log_softmax(logits[batch], 1)).sum(1).mean()
    assert soft_policy_loss(logits[batch], target).item() == pytest.approx(expected.item(), rel=1e-5)
    one_hot = gather_policy(offsets, index, prob, torch.tensor([1]))
    smoothed = torch.nn.functional.cross_entropy(logits[1:2], torch.tensor([4000]), label_smoothing=0.1)
    assert soft_policy_loss(logits[1:2], one_hot, 0.1).item() == pytest.approx(smoothed.item(), rel=1e-5)


def test_mirroring_flips_half_the_positions_without_castling_rights_with_their_targets():
    from evaluators.encoding import get_encoding
    from evaluators.moves import MIRROR_FILES, move_to_index
    encoding = get_encoding("planes18")
    fens = ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "6k1/5ppp/8/8/2N5/8/5PPP/6K1 b - - 3 40",
            "8/8/3k4/8/8/2PK4/8/8 w - - 0 60")
    boards = [chess.Board(fen) for fen in fens] * 20
    moves = [chess.Move.from_uci(uci) for uci in ("e1g1", "g8f8", "c3c4")] * 20
    x = torch.from_numpy(np.stack([encoding.encode(board) for board in boards]))
    index = torch.tensor([move_to_index(move, board.turn) for board, move in zip(boards, moves)])
    policy = gather_policy(torch.arange(61), index, torch.ones(60), torch.arange(60))
    torch.manual_seed(3)
    mirrored_x, mirrored = mirror_half(x, policy, encoding.castling_planes, torch.from_numpy(MIRROR_FILES))
    flipped = [not torch.equal(mirrored_x[i], x[i]) for i in range(60)]
    assert not any(flipped[0::3]) and 5 < sum(flipped) < 35  # castling rights: never mirrored
    for i in np.flatnonzero(flipped):
        board, move = boards[i].transform(chess.flip_horizontal), moves[i]
        image = chess.Move(move.from_square ^ 7, move.to_square ^ 7)
        assert torch.equal(mirrored_x[i], torch.from_numpy(encoding.encode(board)))
        assert mirrored.index[i] == move_to_index(image, board.turn) != index[i]
    assert torch.equal(mirrored.prob, policy.prob) and torch.equal(mirrored.row, policy.row)


def test_training_on_a_mix_stops_and_resumes(tiny_network, tmp_path):
    write_synthetic(tmp_path / "shards", 120)
    write_synthetic(tmp_path / "test", 20, start=100)  # overlaps the last 20 training positions
    multipv = tmp_path / "labels.jsonl.gz"
    with gzip.open(multipv, "wt") as handle:
        handle.write(json.dumps({"fen": chess.STARTING_FEN, "pv": [["e2e4", 35, None], ["d2d4", 30, None]]}) + "\n")
    prepared = tiny_network[0].parent.parent / "data"  # the shared fixture's old one-hot dataset
    config = TrainConfig(data=[str(tmp_path / "shards"), str(prepared), str(multipv)], out=str(tmp_path / "run"),
                         blocks=1, filters=8, epochs=1, batch_size=64, device="cpu", validation=0.2,
                         exclude=[str(tmp_path / "test")], max_minutes=1e-6, swa_every=1, swa_max_n=0, mirror=True)
    arrays, meta = load_data(config)
    assert not set(arrays["key"].tolist()) & shards.dir_keys(tmp_path / "test")
    assert len(arrays["key"]) == 100 + 1 + len(np.load(prepared / "move.npy"))
    assert [source.get("positions") for source in meta["sources"]] == [120, None, 1]
    config.max_samples = 320
    checkpoint = train(config, progress=False)  # stops after its first batch
    state = load_file(checkpoint)
    assert (state["epoch"], state["batch"]) == (0, 1) and not (tmp_path / "run" / "history.json").exists()
    config.max_minutes, config.resume = 0.0, True
    state = load_file(train(config, progress=False))
    assert state["epoch"] == 1 and state["batch"] == 0 and len(state["history"]) == 1
    steps = state["history"][0]["train_samples"] // 64
    assert state["swa"]["count"] == steps > 1  # the mean went on from the stop: a snapshot every step
    averaged, _ = load_network(tmp_path / "run" / "swa.pt", expect={"blocks": 1, "filters": 8})
    assert not torch.equal(averaged.stem[0].weight, load_network(checkpoint)[0].stem[0].weight)
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    last = history[-1]
    for prefix in ("val_", "swa_val_"):  # shares of the validation positions: whole counts, top-1 within top-3
        hits = [last[f"{prefix}top{k}"] * last["val_samples"] for k in (1, 3)]
        assert hits == pytest.approx([round(hit) for hit in hits], abs=1e-6) and hits[0] <= hits[1], (prefix, hits)
    # the KL is the cross-entropy less the targets' entropy, which soft targets (the shards') make positive
    assert 0 < history[-1]["val_policy_kl"] < history[-1]["val_policy_loss"]
    assert (tmp_path / "run" / "curves.png").stat().st_size > 0
    with pytest.raises(WeightsError, match=r"holds a 1x8 network .* not the requested 2x8"):
        train(TrainConfig(data=[str(tmp_path / "shards")], out=str(tmp_path / "other"), blocks=2, filters=8,
                          epochs=1, device="cpu", init=str(checkpoint)), progress=False)


def test_precision_bf16_autocasts_the_forward_pass_and_keeps_fp32_weights(tiny_network, tmp_path):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert uses_bf16("bf16", cpu) and not uses_bf16("fp32", cuda) and uses_bf16("auto", cuda)
    assert uses_bf16("auto", cpu) == (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    write_synthetic(tmp_path / "shards", 64)
    trained = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        train(TrainConfig(data=[str(tmp_path / "shards")], out=str(out), blocks=1, filters=8, epochs=1, batch_size=16,
                          device="cpu", validation=0.25, precision=precision, seed=3), progress=False)
        trained[precision] = load_file(out / "checkpoint.pt")["model"]["stem.0.weight"]
    assert trained["bf16"].dtype == torch.float32  # autocast computes in bf16; the weights stay fp32
    assert not torch.equal(trained["fp32"], trained["bf16"])  # the same data and seed: only the arithmetic differs


def test_a_time_budget_anneals_to_its_end_and_finishes_the_run_mid_epoch(tmp_path):
    write_synthetic(tmp_path / "shards", 200)
    config = TrainConfig(data=[str(tmp_path / "shards")], out=str(tmp_path / "run"), blocks=1, filters=8,
                         epochs=10000, batch_size=8, lr=1e-3, device="cpu", budget_minutes=0.05, max_minutes=1e-6)
    state = load_file(train(config, progress=False))  # the step limit comes first: one batch, resumable
    assert (state["epoch"], state["batch"]) == (0, 1) and not run_finished(state, config)
    config.max_minutes, config.resume = 0.0, True
    checkpoint = train(config, progress=False)
    state = load_file(checkpoint)
    assert run_finished(state, config) and 1 <= state["epoch"] < 10000 and state["run_seconds"] >= 3
    # annealed over the budget's time: past the cosine's middle (not to its end: on a loaded machine the steps
    # stop well before the budget's last validation does)
    assert state["optimizer"]["param_groups"][0]["lr"] < 0.5 * config.lr
    assert len(state["history"]) == state["epoch"] and state["history"][-1]["train_samples"] <= 200
    train(config, progress=False)  # a finished run stays as it is
    assert load_file(checkpoint)["epoch"] == state["epoch"]
    # the epochs' cap before the budget: the schedule ends with the last epoch
    capped = TrainConfig(data=config.data, out=str(tmp_path / "capped"), blocks=1, filters=8, epochs=2,
                         batch_size=8, lr=1e-3, device="cpu", budget_minutes=60)
    state = load_file(train(capped, progress=False))
    assert state["epoch"] == 2 and state["optimizer"]["param_groups"][0]["lr"] < 0.1 * capped.lr
    save_weights(weights_of(state), tmp_path / "capped" / "checkpoint.pt")  # a weights file where a run's should be
    capped.resume = True
    with pytest.raises(WeightsError, match="a weights file, not a training checkpoint"):
        train(capped, progress=False)


def test_validate_reproduces_the_runs_validation_figures(tiny_network, tmp_path):
    from training.__main__ import cli
    checkpoint, weights, _, _ = tiny_network
    data = checkpoint.parent.parent / "data"
    args = ["validate", str(checkpoint), str(weights), "--data", str(data), "--max-samples", "640",
            "--validation", "0.2", "--device", "cpu", "--out", str(tmp_path / "figures.json")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "figures.json").read_text())
    run = load_file(checkpoint)["history"][-1]
    assert [f["positions"] for f in figures] == [run["val_samples"]] * 2
    for f in figures:  # the checkpoint and its weights file: the figures train recorded for that split
        assert f["top1"] == pytest.approx(run["val_top1"]) and f["policy_loss"] == pytest.approx(run["val_policy_loss"])
    result = CliRunner().invoke(cli, args + ["--seed", "2"])  # another --max-samples subset than the run's
    assert result.exit_code == 0, result.output
    other = json.loads((tmp_path / "figures.json").read_text())[0]
    assert other["policy_loss"] != pytest.approx(run["val_policy_loss"])
    result = CliRunner().invoke(cli, args[:5] + ["--validation", "0", "--device", "cpu"])
    assert result.exit_code == 2 and "no validation positions" in result.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device, so --device cuda is valid here")
def test_a_device_this_machine_lacks_is_refused_before_any_work(tiny_network, tmp_path):
    from training.__main__ import cli
    checkpoint, weights, _, _ = tiny_network
    data = checkpoint.parent.parent / "data"
    for command in (["train", str(data), "--out", str(tmp_path / "run")],
                    ["distil", str(data), "--teacher", str(weights), "--out", str(tmp_path / "distilled")],
                    ["reinforce", "--checkpoint", str(weights), "--out", str(tmp_path / "selfplay")]):
        result = CliRunner().invoke(cli, command + ["--device", "cuda"])
        assert result.exit_code == 1, result.output
        assert "--device cuda: PyTorch sees no CUDA device here" in result.output and "Traceback" not in result.output
    for command in (["train", str(data), "--out", str(tmp_path / "run")],
                    ["distil", str(data), "--teacher", str(weights), "--out", str(tmp_path / "distilled")]):
        result = CliRunner().invoke(cli, command + ["--device", "gpu"])  # every command names the choices alike
        assert result.exit_code == 2 and "'gpu' is not one of 'auto', 'cpu', 'cuda'" in result.output, result.output
    assert list(tmp_path.iterdir()) == []  # nothing half-made


def test_weight_average_is_a_running_mean_that_forgets_after_max_n():
    from training.resnet.swa import WeightAverage
    layer = torch.nn.BatchNorm1d(1)
    plain, forgetting = WeightAverage(0), WeightAverage(1)
    for value in (1.0, 2.0, 3.0):
        layer.weight.data.fill_(value)
        layer.num_batches_tracked.fill_(int(value))
        plain.add(layer)
        forgetting.add(layer)
    assert plain.model_state(layer)["weight"].item() == pytest.approx(2.0)
    assert forgetting.model_state(layer)["weight"].item() == pytest.approx(2.25)  # 1, then (1+2)/2, then (1.5+3)/2
    resumed = WeightAverage.from_dict(plain.to_dict())
    assert resumed.count == 3 and resumed.model_state(layer)["num_batches_tracked"].item() == 3
    with pytest.raises(ValueError, match="no weights averaged"):
        WeightAverage(3).model_state(layer)


def test_average_of_networks_is_their_mean_and_refuses_other_shapes(tiny_network, tmp_path):
    from training.__main__ import cli
    _, weights, _, _ = tiny_network
    shifted = torch.load(weights, weights_only=True)
    shifted["model"] = {name: value + 1 if value.is_floating_point() else value
                        for name, value in shifted["model"].items()}
    torch.save(shifted, tmp_path / "shifted.pt")
    result = CliRunner().invoke(cli, ["average", str(weights), str(tmp_path / "shifted.pt"), "--share", "0.75",
                                      "--share", "0.25", "--out", str(tmp_path / "soup.pt")])
    assert result.exit_code == 0, result.output
    soup, original = load_file(tmp_path / "soup.pt"), load_file(weights)
    name = "stem.0.weight"
    assert torch.allclose(soup["model"][name], original["model"][name] + 0.25)
    assert [entry["share"] for entry in soup["meta"]["averaged"]] == [0.75, 0.25]
    load_network(tmp_path / "soup.pt")  # a weights file like any other
    result = CliRunner().invoke(cli, ["average", str(weights), "--out", str(tmp_path / "one.pt")])
    assert result.exit_code != 0 and "at least two networks" in result.output
    other = TrainConfig(data=[str(weights.parent / "data")], out=str(tmp_path / "other"), blocks=1,
                        filters=4, epochs=1, device="cpu", max_samples=64)
    narrower = train(other, progress=False)
    result = CliRunner().invoke(cli, ["average", str(weights), str(narrower), "--out", str(tmp_path / "bad.pt")])
    assert result.exit_code != 0 and "only networks of one shape" in result.output
    assert not (tmp_path / "bad.pt").exists()


def test_weights_file_export_and_evaluation(tiny_network, tmp_path):
    checkpoint, weights, onnx_path, _ = tiny_network
    plain = torch.load(weights, weights_only=True)
    assert plain["format"] == "hackmate-resnet" and plain["version"] == 1 and "optimizer" not in plain
    from_weights = export_resnet(weights, tmp_path / "from-weights.onnx", command="again")
    from evaluators.resnet import ResNetEvaluator
    first, second = ResNetEvaluator(onnx_path), ResNetEvaluator(from_weights)
    assert {k: v for k, v in first.metadata.items() if k != "command"} == \
        {k: v for k, v in second.metadata.items() if k != "command"}
    inputs = np.random.default_rng(1).integers(0, 2, (8, 18, 8, 8)).astype(np.float32)
    for a, b in zip(first.run(inputs), second.run(inputs)):
        np.testing.assert_allclose(a, b, atol=1e-5)
    write_synthetic(tmp_path / "test", 30)
    by_onnx, by_torch = evaluate_network(onnx_path, tmp_path / "test"), evaluate_network(weights, tmp_path / "test")
    assert by_onnx["positions"] == 30 and by_onnx["top1"] <= by_onnx["top3"]
    assert by_onnx["top1"] * 30 == pytest.approx(round(by_onnx["top1"] * 30), abs=1e-6)  # a count of positions
    for name in ("top1", "top3", "policy_kl", "value_loss", "value_mae"):
        assert by_onnx[name] == pytest.approx(by_torch[name], abs=1e-4), name


class Payload:
    """What a malicious .pt would smuggle in: unpickling it would run code (here: create a file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_files_that_are_not_weights_are_refused(tiny_network, tmp_path):
    marker = tmp_path / "code-ran"
    malicious = tmp_path / "malicious.pt"
    torch.save({"format": "hackmate-resnet", "version": 1, "model": Payload(marker)}, malicious)
    with pytest.raises(WeightsError, match="malicious.pt: not a PyTorch weights file"):
        load_file(malicious)
    assert not marker.exists()
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"definitely not a network")
    with pytest.raises(WeightsError, match="junk.pt: not a PyTorch weights file"):
        load_network(junk)
    state = load_file(tiny_network[1])
    torch.save({**state, "format": "someone-elses-net"}, tmp_path / "foreign.pt")
    with pytest.raises(WeightsError, match="foreign.pt: format 'someone-elses-net'"):
        load_network(tmp_path / "foreign.pt")
    torch.save({"model": {}}, tmp_path / "partial.pt")
    with pytest.raises(WeightsError, match="partial.pt: not a policy-value network file"):
        load_network(tmp_path / "partial.pt")


@needs_stockfish
def test_gpu_recipe_at_toy_scale_then_the_engine_plays_with_its_network(tmp_path, driver):
    from training.__main__ import cli
    write_synthetic(tmp_path / "test", 10, start=200)
    arguments = ["gpu-recipe", str(FIXTURES / "games.pgn"), "--out", str(tmp_path / "out"),
                 "--engine", stockfish_path(), "--nodes", "60", "--multipv", "3", "--per-game", "3", "--min-ply", "8",
                 "--workers", "2",
                 "--blocks", "1", "--filters", "8", "--epochs", "2", "--batch-size", "8",
                 "--temperature", "10", "--device", "cpu",
                 "--test", str(tmp_path / "test"), "--deliver", str(tmp_path / "delivered"), "--minutes", "0.04"]
    for _ in range(20):  # resumable steps of a few seconds each, until done
        result = CliRunner().invoke(cli, arguments)
        assert result.exit_code == 0, result.output
        if "recipe: done" in result.output:
            break
    assert "recipe: done" in result.output
    report = json.loads((tmp_path / "delivered" / "report.json").read_text())
    assert report["test"]["positions"] == 10 and len(report["history"]) == 2
    assert report["labelling"][0]["summary"]["labelled now"] > 0
    assert {p.name for p in (tmp_path / "delivered").iterdir()} == {"resnet.onnx", "resnet.pt", "report.json",
                                                                    "curves.png"}
    assert_engine_plays_resnet(driver, tmp_path / "delivered" / "resnet.onnx", tmp_path / "delivered" / "resnet.pt")
    with chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "engine", "--eval", "resnet", "--weights",
                                              str(tmp_path / "delivered" / "resnet.onnx")], cwd=ROOT) as engine:
        play_legal_moves(engine, chess.Board(), chess.engine.Limit(nodes=30), 40)


def test_gpu_recipe_trains_on_carried_data_alone_without_an_engine(tiny_network, tmp_path):
    from training.__main__ import cli
    write_synthetic(tmp_path / "shards", 40)
    write_synthetic(tmp_path / "test", 10, start=200)
    prepared = tiny_network[0].parent.parent / "data"  # a one-hot `prepare` dataset, trained on beside the labels
    arguments = ["gpu-recipe", "--out", str(tmp_path / "out"), "--engine", str(tmp_path / "no-such-engine"),
                 "--data", str(tmp_path / "shards"), "--data", str(prepared), "--test", str(tmp_path / "test"),
                 "--blocks", "1", "--filters", "8", "--epochs", "1", "--batch-size", "8", "--device", "cpu",
                 "--swa-every", "2", "--mirror"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0 and "recipe: done" in result.output, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["test"]["positions"] == 10 and len(report["data"]) == 2
    assert report["test_swa"]["positions"] == 10 and (tmp_path / "out" / "swa.pt").exists()
