"""training.rl.ppo, PPO: GAE and the clipped objective against hand-computed values, the curriculum, learning from
rewards, and a toy run vs Stockfish."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES, ROOT, engine_command, needs_stockfish  # noqa: E402
from tests.exported import assert_engine_plays_resnet, play_legal_moves  # noqa: E402
from training.resnet.model import PolicyValueNet  # noqa: E402
from training.rl.ppo import (Curriculum, PPOConfig, central_control, gae, masked_policy, ppo_loss,  # noqa: E402
                             reset_value_head, tempered, train_ppo, update_batch)
from training.resnet.weights import FORMAT, VERSION, save_weights  # noqa: E402


def test_gae_matches_hand_computed_values_and_stops_at_episode_ends():
    advantages, returns = gae(np.array([0.0, 0.0, 1.0, 1.0, 0.0, -1.0]), np.array([0.5, 0.2, -0.1, 0.3, 0.1, 0.0]),
                              np.array([False, False, True, True, False, True]), gamma=0.9, lam=0.8)
    # episode 1: d2 = 1 + 0.1 = 1.1; d1 = 0.9 * -0.1 - 0.2 = -0.29, A1 = -0.29 + 0.72 * 1.1 = 0.502;
    #            d0 = 0.9 * 0.2 - 0.5 = -0.32, A0 = -0.32 + 0.72 * 0.502 = 0.04144
    # episode 2: A3 = 1 - 0.3 = 0.7; episode 3: A5 = -1, A4 = (0 - 0.1) + 0.72 * -1 = -0.82
    np.testing.assert_allclose(advantages, [0.04144, 0.502, 1.1, 0.7, -0.82, -1.0], rtol=1e-5)
    np.testing.assert_allclose(returns, advantages + [0.5, 0.2, -0.1, 0.3, 0.1, 0.0], rtol=1e-5)


def test_clipped_objective_matches_hand_computed_values():
    ratios = torch.tensor([1.5, 0.5, 1.1, 0.5])
    old = torch.zeros(4)
    loss, parts = ppo_loss(torch.log(ratios), old, torch.tensor([1.0, 1.0, -1.0, -1.0]),
                           torch.tensor([0.5, 0.0, 0.0, 0.0]), torch.tensor([1.0, 0.0, 0.0, 0.0]),
                           torch.tensor([1.0, 2.0, 3.0, 4.0]), clip=0.2, value_weight=0.5, entropy_weight=0.01)
    # surrogates min(r A, clip(r) A): 1.2 (clipped), 0.5, -1.1, -0.8 (clipped); mean -0.05
    assert parts["policy_loss"].item() == pytest.approx(0.05)
    assert parts["value_loss"].item() == pytest.approx(0.0625)
    assert parts["clip_fraction"].item() == pytest.approx(0.75)
    assert loss.item() == pytest.approx(0.05 + 0.5 * 0.0625 - 0.01 * 2.5)


def test_masked_policy_ignores_illegal_moves_without_nan_gradients():
    logits = torch.zeros(2, 5, requires_grad=True)
    legal = torch.tensor([[True, True, False, False, True], [False, True, False, False, False]])
    logp, entropy = masked_policy(logits, legal)
    torch.testing.assert_close(logp.exp()[legal], torch.tensor([1 / 3, 1 / 3, 1 / 3, 1.0]))
    torch.testing.assert_close(entropy, torch.tensor([np.log(3), 0.0], dtype=torch.float32))
    (entropy.sum() + logp[legal].sum()).backward()
    assert torch.isfinite(logits.grad).all()


def test_the_tempered_policy_played_is_the_one_trained():
    """Rollouts temper the engine's softmax priors; updates temper the logits: the same policy, ratio 1."""
    logits = torch.tensor([[2.0, -1.0, 0.5, 3.0, 0.0]])
    legal = torch.tensor([[True, True, False, True, True]])
    priors = torch.softmax(logits[legal], dim=0).numpy().astype(np.float64)
    for temperature in (1.0, 0.5, 0.2):
        trained = masked_policy(logits / temperature, legal)[0].exp()[legal].numpy()
        np.testing.assert_allclose(tempered(priors, temperature), trained, rtol=1e-5)
    assert tempered(priors, 0.2).max() > tempered(priors, 1.0).max()


def test_central_control_counts_attackers_and_occupants_of_the_centre():
    board = chess.Board()
    assert central_control(board, chess.WHITE) == 0.0
    board.push_san("e4")  # the pawn occupies e4 and attacks d5; Black reaches no central square
    assert central_control(board, chess.WHITE) == 1.0 and central_control(board, chess.BLACK) == -1.0


def test_curriculum_promotes_when_the_window_win_rate_passes_the_threshold():
    curriculum = Curriculum(0, PPOConfig("", "", window=4, promote_win_rate=0.5, max_level=1))
    assert not any(curriculum.record(score) for score in (1.0, 0.0, 0.5))  # window not full yet
    assert curriculum.record(1.0) and curriculum.level == 1 and not curriculum.recent
    assert not any(curriculum.record(1.0) for _ in range(8))  # the top level stays


def test_curriculum_holds_its_level_below_the_threshold_and_draws_are_no_wins():
    curriculum = Curriculum(3, PPOConfig("", "", window=4, promote_win_rate=0.5, max_level=20))
    assert not any(curriculum.record(score) for score in (1.0, 0.5, 0.5, 0.0, 0.5, 0.5, 0.5))  # at most 1 win in 4
    assert curriculum.level == 3 and curriculum.win_rate() == 0.0 and len(curriculum.recent) == 4
    assert not curriculum.record(1.0) and curriculum.win_rate() == 0.25  # the window slides: 0.5 0.5 0.5 1
    assert curriculum.record(1.0) and curriculum.level == 4  # 0.5 0.5 1 1: half of the window won


def tiny_weights(path: Path) -> Path:
    torch.manual_seed(0)
    model = PolicyValueNet(18, 1, 8)
    return save_weights({"format": FORMAT, "version": VERSION, "shape": model.shape, "model": model.state_dict(),
                         "meta": {"encoding": "planes18", "sources": []}, "config": {}, "history": []}, path)


def capture_positions(count: int) -> list[chess.Board]:
    """Positions of the fixture games where some legal moves capture and some do not."""
    import chess.pgn
    boards = []
    with open(FIXTURES / "games.pgn") as handle:
        while len(boards) < count and (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for move in game.mainline_moves():
                if len({board.is_capture(legal) for legal in board.legal_moves}) == 2:
                    boards.append(board.copy())
                board.push(move)
    return boards[:count]


def test_ppo_updates_raise_the_probability_of_the_moves_that_earn_rewards(tmp_path):
    """Learning: the trainer acts on 32 fixed positions (sampling its policy, as in a game) and earns +1 for a
    capture and -1 for any other move; 20 rounds of acting and updating raise the policy's share of captures from
    6% to 65% (seed 0; 60% to 84% for seeds 1 and 2). The margin: three times the start."""
    from evaluators.moves import move_to_index
    from training.rl.ppo import Trainer
    trainer = Trainer(PPOConfig(str(tiny_weights(tmp_path / "tiny.pt")), str(tmp_path / "ppo"), lr=3e-3,
                                minibatch=32, target_kl=0.0, device="cpu"))
    boards = capture_positions(32)

    def capture_share() -> float:
        return float(np.mean([sum(p for move, p in trainer.evaluator.evaluate(board).priors.items()
                                  if board.is_capture(move)) for board in boards]))

    start = capture_share()
    for _ in range(20):
        steps = [trainer.act(board, None)[0] for board in boards]
        reward = np.array([1.0 if step.action in {move_to_index(move, board.turn) for move in board.legal_moves
                                                  if board.is_capture(move)} else -1.0
                           for board, step in zip(boards, steps)], dtype=np.float32)
        trainer.update(update_batch(steps, reward, reward))
    assert capture_share() >= 3 * start, (start, capture_share())


@needs_stockfish
def test_ppo_toy_run_holds_its_level_and_exports_a_network_the_engine_plays_with(tmp_path, driver):
    """A real promotion threshold: the toy network wins none of its games against Stockfish, so the curriculum
    holds its level (the promotion itself: the Curriculum tests above)."""
    config = PPOConfig(str(tiny_weights(tmp_path / "tiny.pt")), str(tmp_path / "ppo"), updates=2, games_per_update=2,
                       minibatch=16, max_plies=30, stockfish_nodes=200, window=2, promote_win_rate=0.5,
                       openings=str(FIXTURES / "games.pgn"), shaping=0.1, mcts_level=0, mcts_nodes=8,
                       mcts_temperature=0.5, device="cpu")
    onnx = train_ppo(config, progress=False)
    history = json.loads((tmp_path / "ppo" / "history.json").read_text())
    assert [(h["level"], h["wins"], h["promoted"], h["win_rate"]) for h in history] == [(0, 0, 0, 0.0)] * 2
    assert [h["wins"] + h["draws"] + h["losses"] for h in history] == [2, 2]
    assert all(np.isfinite(h[k]) for h in history for k in ("policy_loss", "value_loss", "entropy"))
    assert (tmp_path / "ppo" / "curves.png").stat().st_size > 0
    assert_engine_plays_resnet(driver, onnx, tmp_path / "ppo" / "checkpoint.pt")
    command = engine_command("--eval", "resnet", "--weights", str(onnx))
    with chess.engine.SimpleEngine.popen_uci(command, cwd=ROOT) as engine:
        play_legal_moves(engine, chess.Board(), chess.engine.Limit(nodes=8), 40)
    train_ppo(PPOConfig(**{**config.__dict__, "updates": 3}), progress=False)  # resumes at update 2
    history = json.loads((tmp_path / "ppo" / "history.json").read_text())
    assert [h["update"] for h in history] == [1, 2, 3] and history[-1]["level"] == 0


def test_a_reset_value_head_keeps_trunk_and_policy_and_is_reproducible(tmp_path):
    weights = tiny_weights(tmp_path / "tiny.pt")
    model = PolicyValueNet(18, 1, 8)
    model.load_state_dict(torch.load(weights, weights_only=True)["model"])
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    reset_value_head(model, seed=3)
    after = model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before if not name.startswith("value."))
    assert not torch.equal(before["value.4.weight"], after["value.4.weight"])
    again = PolicyValueNet(18, 1, 8)
    again.load_state_dict(before)
    reset_value_head(again, seed=3)
    assert all(torch.equal(after[name], again.state_dict()[name]) for name in after)


def test_the_ppo_command_runs_without_openings(tmp_path):
    from click.testing import CliRunner

    from training.__main__ import cli
    result = CliRunner().invoke(cli, ["ppo", "--checkpoint", str(tiny_weights(tmp_path / "tiny.pt")), "--out",
                                      str(tmp_path / "start"), "--updates", "0", "--reset-value-head"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "start" / "ppo.onnx").exists()


def test_with_the_value_head_only_the_value_loss_leaves_the_trunk_alone():
    torch.manual_seed(0)
    model = PolicyValueNet(18, 1, 8)
    x = torch.randn(4, 18, 8, 8)
    for trains_trunk in (True, False):
        model.zero_grad()
        model.policy_and_value(x, value_trains_trunk=trains_trunk)[1].sum().backward()
        trunk = model.stem[0].weight.grad
        assert (trunk is not None and trunk.abs().sum() > 0) == trains_trunk
        assert model.value[-1].weight.grad.abs().sum() > 0
