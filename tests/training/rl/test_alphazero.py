"""training.rl.alphazero, AlphaZero-style `reinforce`: root noise, visit-count targets, resumable self-play, and a
toy run with its gate."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from click.testing import CliRunner  # noqa: E402

from evaluators.resnet import ResNetEvaluator  # noqa: E402
from search.base import SearchControl  # noqa: E402
from search.puct import PuctSearch  # noqa: E402
from tests.conftest import ROOT, engine_command  # noqa: E402
from tests.exported import assert_engine_plays_resnet, play_legal_moves  # noqa: E402
from training.__main__ import cli  # noqa: E402
from training.data import shards  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.model import PolicyValueNet  # noqa: E402
from training.resnet.weights import FORMAT, VERSION, save_weights  # noqa: E402
from training.rl.alphazero import AlphaZeroConfig, RootNoise, games_done, self_play, visit_distribution  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """A 1x8 policy-value network: its weights file and its ONNX export."""
    root = tmp_path_factory.mktemp("az")
    torch.manual_seed(0)
    model = PolicyValueNet(18, 1, 8)
    weights = save_weights({"format": FORMAT, "version": VERSION, "shape": model.shape, "model": model.state_dict(),
                            "meta": {"encoding": "planes18", "sources": []}, "config": {}, "history": []},
                           root / "tiny.pt")
    return weights, export_resnet(weights, root / "tiny.onnx")


def test_root_noise_changes_the_root_priors_once_and_visit_targets_sum_to_one(tiny):
    network = ResNetEvaluator(tiny[1])
    noisy = RootNoise(network, 0.3, 0.25, np.random.default_rng(0))
    board = chess.Board()
    noisy.arm(board)
    first, again = noisy.evaluate(board).priors, noisy.evaluate(board).priors
    plain = network.evaluate(board).priors
    assert sum(first.values()) == pytest.approx(1.0) and first != plain and again == plain
    search = PuctSearch(noisy)
    noisy.arm(board)
    search.search(board, SearchControl(max_nodes=40), lambda info: None)
    root_priors = {child.move: child.prior for child in search.root.children}
    assert root_priors != pytest.approx(plain)  # the search expanded its root with the noisy priors
    moves, probs = visit_distribution(search)
    assert set(moves) == set(board.legal_moves)
    visits = np.array([child.visits for child in search.root.children])
    assert visits.sum() == 40 and probs == pytest.approx(visits / visits.sum())  # the root's share of each move


def test_self_play_writes_one_shard_per_game_and_resumes(tiny, tmp_path):
    config = AlphaZeroConfig(str(tiny[0]), str(tmp_path), games=1, nodes=8, max_plies=12, workers=1)
    assert self_play(tiny[1], tmp_path / "games", config, 1) == 1
    assert self_play(tiny[1], tmp_path / "games", replace(config, games=2), 1) == 1  # only the missing game
    assert games_done(tmp_path / "games") == {0, 1}
    arrays, meta = shards.load_dir(tmp_path / "games")
    sums = np.add.reduceat(arrays["policy_prob"], arrays["policy_offset"][:-1])
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)  # visit counts normalised
    assert len(arrays["key"]) == 24 and set(arrays["result"].tolist()) == {0}  # 12-ply games are drawn
    assert np.isnan(arrays["wdl"]).all() and meta["labeller"]["nodes"] == 8


def test_reinforce_learns_gates_candidates_and_exports_a_network_the_engine_plays_with(tiny, tmp_path, driver):
    out = tmp_path / "rl"
    arguments = ["reinforce", "--checkpoint", str(tiny[0]), "--out", str(out), "--games", "2", "--nodes", "8",
                 "--max-plies", "16", "--gate-games", "2", "--gate-nodes", "8", "--workers", "1", "--device", "cpu"]
    result = CliRunner().invoke(cli, arguments + ["--iterations", "1", "--gate-threshold", "0", "--epochs", "10",
                                                  "--batch-size", "8", "--lr", "1e-2"])
    assert result.exit_code == 0, result.output
    state = json.loads((out / "state.json").read_text())
    record = state["history"][0]
    assert record["accepted"] and record["gate_wins"] + record["gate_draws"] + record["gate_losses"] == 2
    assert "gate_elo" in record and "best_elo" in record
    # learning from self-play: the candidate's losses on the iteration's games (visit counts; 16-ply games are
    # drawn) on the first batch of its last epoch against the first batch of its first, the starting network's
    # (seed 0: the policy loss 8.5 -> 4.2, the value loss 1.1 -> 0.0)
    training = json.loads((out / "iteration001" / "train" / "history.json").read_text())
    assert record["train_policy_loss"] == training[-1]["train_policy_loss"]
    assert training[-1]["train_policy_loss"] <= training[0]["train_policy_loss"] / 1.5, training
    assert training[-1]["train_value_loss"] <= training[0]["train_value_loss"] / 3, training
    assert (out / "best.onnx").read_bytes() == (out / "iteration001" / "candidate.onnx").read_bytes()
    assert_engine_plays_resnet(driver, out / "best.onnx", out / "best.pt")  # the accepted candidate
    assert (out / "curves.png").stat().st_size > 0
    result = CliRunner().invoke(cli, arguments + ["--iterations", "2", "--gate-threshold", "1.01"])
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output
    state = json.loads((out / "state.json").read_text())
    assert [r["iteration"] for r in state["history"]] == [1, 2] and not state["history"][1]["accepted"]
    assert state["trainee"].endswith("iteration002/train/checkpoint.pt")  # training goes on from the candidate
    with chess.engine.SimpleEngine.popen_uci(
            engine_command("--eval", "resnet", "--weights", str(out / "best.onnx")), cwd=ROOT) as engine:
        play_legal_moves(engine, chess.Board(), chess.engine.Limit(nodes=8), 40)
