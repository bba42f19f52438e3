"""training.rl.dqn, DQN: the masked TD target, transitions and the replay buffer (training.rl.buffer), learning the
expert's moves, and a toy run the engine then plays with."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES, ROOT, engine_command  # noqa: E402
from tests.exported import assert_engine_plays_dqn, engine_network, play_legal_moves  # noqa: E402
from evaluators.base import LoadError  # noqa: E402
from evaluators.dqn import DQNEvaluator  # noqa: E402
from evaluators.encoding import get_encoding  # noqa: E402
from search.base import SearchControl  # noqa: E402
from search.puct import PuctSearch  # noqa: E402
from training.rl.dqn import (DQNConfig, expert_cross_entropy, expert_margin_loss, td_loss, td_targets,  # noqa: E402
                             train_dqn)
from training.device import unpack_bits  # noqa: E402
from training.network_files import WeightsError  # noqa: E402
from training.rl.buffer import ReplayBuffer, game_transitions, observe, white_material  # noqa: E402

ENCODING = get_encoding("planes18")


def test_td_target_masks_illegal_moves_and_stops_at_the_end():
    next_q = torch.tensor([[0.5, 0.9, -0.2], [0.1, 0.2, 0.3], [0.4, 0.7, -0.3]])
    legal = torch.tensor([[True, False, True], [False, False, False], [False, False, True]])
    reward = torch.tensor([0.0, 1.0, 0.2])
    done = torch.tensor([False, True, False])
    targets = td_targets(next_q, legal, reward, done, gamma=0.99)
    # row 0: the illegal 0.9 is ignored, max is 0.5; row 1: done, the reward alone; row 2: only -0.3 is legal
    torch.testing.assert_close(targets, torch.tensor([0.99 * 0.5, 1.0, 0.2 - 0.99 * 0.3]))
    q = torch.tensor([[0.0, 0.3, 0.0], [0.6, 0.0, 0.0], [0.0, 0.0, 0.0]])
    loss = td_loss(q, torch.tensor([1, 0, 2]), targets)
    errors = torch.tensor([0.3 - 0.495, 0.6 - 1.0, 0.0 - (0.2 - 0.297)])
    torch.testing.assert_close(loss, (0.5 * errors ** 2).mean())  # Huber: quadratic below 1


def _play(moves: list[str]) -> tuple[list, list[int], chess.Board]:
    board, states, actions = chess.Board(), [], []
    for san in moves:
        state = observe(board, ENCODING)
        move = board.parse_san(san)
        states.append(state)
        actions.append(int(state.indices[state.moves.index(move)]))
        board.push(move)
    return states, actions, board


def test_transitions_reach_the_players_next_turn_and_end_with_the_result():
    states, actions, board = _play(["f3", "e5", "g4", "Qh4#"])
    t = game_transitions(states, actions, white_material(board), 0.0, material_rewards=False)
    assert t["done"].tolist() == [False, False, True, True]
    assert t["reward"].tolist() == [0.0, 0.0, -1.0, 1.0]  # White lost, Black mated
    np.testing.assert_array_equal(t["next_state"][0], states[2].planes)  # after the opponent's reply
    legal_next = unpack_bits(torch.from_numpy(t["next_legal"][:1]), 4672)[0]
    assert sorted(torch.nonzero(legal_next).flatten().tolist()) == sorted(states[2].indices.tolist())


def test_material_reward_counts_the_change_after_the_opponents_reply():
    states, actions, board = _play(["e4", "d5", "exd5", "Qxd5", "Nc3", "Qa5"])
    t = game_transitions(states, actions, white_material(board), 0.5, material_rewards=True)
    # Black's d5 loses a pawn before Black moves again, Qxd5 wins it back; exd5 gains nothing once Black recaptures
    np.testing.assert_allclose(t["reward"], [0.0, -0.1, 0.0, 0.1, 0.0, 0.0], atol=1e-7)
    assert t["done"].tolist() == [False] * 4 + [True] * 2


def test_replay_buffer_overwrites_the_oldest_and_survives_a_save(tmp_path):
    states, actions, board = _play(["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4"])
    transitions = game_transitions(states, actions, white_material(board), 0.5, False)
    buffer = ReplayBuffer(5, ENCODING.binary_planes * 8)
    buffer.add({k: v[:3] for k, v in transitions.items()}, expert=True)
    buffer.add({k: v[3:] for k, v in transitions.items()})
    assert len(buffer) == 5 and buffer.expert_share() == pytest.approx(0.2)  # two of three experts overwritten
    buffer.save(tmp_path / "replay.npz")
    again = ReplayBuffer.load(tmp_path / "replay.npz")
    assert again.expert_share() == pytest.approx(0.2)
    assert sorted(again.arrays["action"].tolist()) == sorted(buffer.arrays["action"].tolist())
    newest = ReplayBuffer.load(tmp_path / "replay.npz", capacity=2)
    assert newest.arrays["action"].tolist() == transitions["action"][-2:].tolist()
    batch = again.sample(8, np.random.default_rng(0))
    assert batch["state"].shape == (8, ENCODING.binary_planes * 8)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dqn") / "run"
    config = DQNConfig(str(out), [str(FIXTURES / "games.pgn")], expert_transitions=200, steps=240, epsilon_steps=120,
                       buffer=1000, batch_size=16, blocks=1, filters=8, max_plies=40, eval_every=120, eval_games=2,
                       checkpoint_every=120, device="cpu", expert_weight=1.0, pretrain_updates=20,
                       expert_loss="cross-entropy")  # the shipped recipe; the margin loss has its own test
    return config, train_dqn(config, progress=False)


def test_dqn_toy_run_exports_a_network_the_engine_plays_with(toy_run, driver):
    config, onnx = toy_run
    assert_engine_plays_dqn(driver, onnx, Path(config.out) / "checkpoint.pt")
    history = json.loads((Path(config.out) / "history.json").read_text())
    assert history[-1]["step"] >= config.steps and history[-1]["td_loss"] > 0
    pretrained = [h for h in history if h["step"] == 0]
    assert pretrained[-1]["pretrain_updates"] == 20 and pretrained[-1]["expert_loss"] > 0  # DQfD before self-play
    assert history[-1]["expert_share"] * history[-1]["buffer"] == pytest.approx(200)  # experts kept for good
    assert {"eval_wins", "eval_draws", "eval_losses"} <= set(history[-1])
    assert (Path(config.out) / "curves.png").stat().st_size > 0
    evaluator = DQNEvaluator(onnx)
    board = chess.Board()
    evaluation = evaluator.evaluate(board)
    assert set(evaluation.priors) == set(board.legal_moves)
    assert sum(evaluation.priors.values()) == pytest.approx(1.0) and -1 <= evaluation.value <= 1
    assert PuctSearch(evaluator).search(board, SearchControl(max_nodes=30), lambda info: None).best_move in \
        board.legal_moves
    command = engine_command("--eval", "dqn", "--weights", str(onnx))
    with chess.engine.SimpleEngine.popen_uci(command, cwd=ROOT) as engine:
        # one node: the greedy move, the legal move of highest Q
        assert engine.play(board, chess.engine.Limit(nodes=1)).move == max(evaluation.priors,
                                                                           key=evaluation.priors.__getitem__)
        play_legal_moves(engine, board, chess.engine.Limit(nodes=8), 40)


def expert_moves(limit: int) -> tuple[list[chess.Board], list[chess.Move]]:
    """The first ``limit`` expert transitions' positions and moves: every move of the fixture games that have a
    result, in order (training.rl.buffer.expert_transitions)."""
    from training.data.pgn import RESULT_WHITE, ReadStats, iter_games
    boards, moves = [], []
    for _, game in iter_games(FIXTURES / "games.pgn", ReadStats()):
        if RESULT_WHITE.get(game.headers.get("Result", "*")) is None:
            continue
        board = game.board()
        for move in game.mainline_moves():
            boards.append(board.copy())
            moves.append(move)
            board.push(move)
    return boards[:limit], moves[:limit]


def test_dqn_pretraining_fits_the_expert_moves_and_the_engine_plays_them(tmp_path, driver):
    """Learning: 100 updates on 64 expert transitions make the expert's move the greedy one, through the engine
    (seeds 0 and 1: 95% and 97% of the positions; before any update: none of them). The margin: 70%."""
    config = DQNConfig(str(tmp_path / "run"), [str(FIXTURES / "games.pgn")], expert_transitions=64, steps=0,
                       buffer=1000, batch_size=16, blocks=1, filters=16, lr=1e-3, eval_games=0, device="cpu",
                       expert_weight=1.0, pretrain_updates=100, expert_loss="cross-entropy")
    network = engine_network(driver, "dqn", train_dqn(config, progress=False))
    boards, moves = expert_moves(64)
    greedy = [max(e.priors, key=e.priors.__getitem__) for e in network.evaluate_batch(boards)]
    assert np.mean([move == expert for move, expert in zip(greedy, moves)]) >= 0.7


def test_dqn_evaluator_refuses_other_networks():
    with pytest.raises(LoadError, match="not a dqn-q-network"):
        DQNEvaluator(ROOT / "weights" / "resnet.onnx")


def test_dqn_resumes_where_it_stopped(toy_run):
    config, _ = toy_run
    resumed = DQNConfig(**{**config.__dict__, "steps": config.steps + 60})
    train_dqn(resumed, progress=False)
    state = torch.load(Path(config.out) / "checkpoint.pt", weights_only=True)
    history = json.loads((Path(config.out) / "history.json").read_text())
    assert state["counters"]["step"] >= resumed.steps and history[0]["step"] < config.steps + 60
    assert state["counters"]["updates"] > 0


def test_a_run_directory_holding_another_file_is_refused_by_name(toy_run, tmp_path):
    config, _ = toy_run
    out = tmp_path / "other"
    out.mkdir()
    shutil.copy(Path(config.out) / "replay.npz", out / "replay.npz")
    (out / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(WeightsError, match="checkpoint.pt: not a PyTorch weights file"):
        train_dqn(DQNConfig(**{**config.__dict__, "out": str(out)}), progress=False)
    torch.save({"format": "something-else"}, out / "checkpoint.pt")
    with pytest.raises(WeightsError, match="checkpoint.pt: not a DQN checkpoint"):
        train_dqn(DQNConfig(**{**config.__dict__, "out": str(out)}), progress=False)


def test_expert_margin_loss_against_hand_computed_values():
    q = torch.tensor([[0.2, 0.5, 0.1], [1.0, 0.0, 0.9]])
    legal = torch.tensor([[True, True, False], [True, True, True]])
    action = torch.tensor([0, 0])
    # row 0: max(0.2 + 0, 0.5 + 0.8) - 0.2 = 1.1 (the illegal third move does not count)
    # row 1: max(1.0, 0.0 + 0.8, 0.9 + 0.8) - 1.0 = 0.7
    torch.testing.assert_close(expert_margin_loss(q, legal, action, 0.8), torch.tensor((1.1 + 0.7) / 2))
    # once the expert's move leads by the margin, the loss is zero
    assert expert_margin_loss(torch.tensor([[2.0, 1.0, 1.2]]), torch.ones(1, 3, dtype=torch.bool),
                              torch.tensor([0]), 0.8).item() == 0.0


def test_replay_buffer_keeps_expert_transitions_for_good(tmp_path):
    states, actions, board = _play(["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4"])
    transitions = game_transitions(states, actions, white_material(board), 0.5, False)
    buffer = ReplayBuffer(5, ENCODING.binary_planes * 8)
    buffer.add({k: v[:2] for k, v in transitions.items()}, expert=True, keep=True)
    for start in range(2, 7):  # five self-play transitions into three free slots: the ring wraps
        buffer.add({k: v[start:start + 1] for k, v in transitions.items()})
    assert buffer.kept == 2 and len(buffer) == 5 and buffer.expert_share() == pytest.approx(0.4)
    assert buffer.arrays["action"][:2].tolist() == transitions["action"][:2].tolist()
    assert sorted(buffer.arrays["action"][2:].tolist()) == sorted(transitions["action"][4:].tolist())
    buffer.save(tmp_path / "replay.npz")
    again = ReplayBuffer.load(tmp_path / "replay.npz")
    assert again.kept == 2 and again.arrays["action"].tolist()[:2] == transitions["action"][:2].tolist()
    assert again.arrays["action"][2:].tolist() == transitions["action"][4:].tolist()  # oldest first
    again.add({k: v[:1] for k, v in transitions.items()})
    assert again.arrays["action"][:2].tolist() == transitions["action"][:2].tolist()  # still kept
    with pytest.raises(ValueError, match="before any other"):
        again.add({k: v[:1] for k, v in transitions.items()}, expert=True, keep=True)
    legal = unpack_bits(torch.from_numpy(transitions["legal"][:1]), 4672)[0]
    assert sorted(torch.nonzero(legal).flatten().tolist()) == sorted(states[0].indices.tolist())


def test_expert_cross_entropy_against_hand_computed_values():
    q = torch.tensor([[0.2, 0.5, 9.0], [1.0, 0.0, 0.9]])
    legal = torch.tensor([[True, True, False], [True, True, True]])
    action = torch.tensor([0, 2])
    # softmax(Q / 0.1) over the legal moves only: row 0 over (2, 5), row 1 over (10, 0, 9)
    row0 = -(2.0 - math.log(math.exp(2.0) + math.exp(5.0)))
    row1 = -(9.0 - math.log(math.exp(10.0) + math.exp(0.0) + math.exp(9.0)))
    torch.testing.assert_close(expert_cross_entropy(q, legal, action, 0.1), torch.tensor((row0 + row1) / 2))
