"""DQN after Narang, Mirza and Dast Parvadeh, "Hybrid Chess AI: Learning from Humans and Self-Play".

A Q-network (the ResNet trunk of training.resnet.model and one Q-value per move slot
of the 4672 layout) learns from a replay buffer pre-filled with expert
transitions from PGN games and then filled by epsilon-greedy self-play
(epsilon falling linearly from 1.0 to 0.01). Illegal moves are masked when a
move is chosen and in the max of the TD target; the target network is synced
every ``target_sync`` updates. Every few thousand plies the greedy network
plays a few games against a random mover, so the curves show whether it
learns. Rerunning the command resumes from the run directory's checkpoint and
replay buffer; the exported ONNX file is what ``--eval dqn`` plays with.

Beyond the paper, as in DQfD (Hester et al. 2018, "Deep Q-learning from
Demonstrations"), the expert transitions can stay in the buffer for good and
add a large-margin loss, max_a [Q(s, a) + margin * (a != a_E)] - Q(s, a_E),
which makes the expert's move the greedy one where the TD targets alone say
nothing about the moves the expert did not play, and the network first learns
from the expert transitions alone for ``pretrain_updates`` gradient steps
before self-play begins (``expert_weight`` 0 and no pre-training is the
paper's DQN). The hinge only moves two Q-values a row (the expert's and the
strongest other), and a 4x64 network pre-trained with it for 8,000 updates
still ranked the expert's move first by a hair (loss 0.795 of 0.8), so
``expert_loss`` "cross-entropy" offers the supervised alternative: the
cross-entropy of softmax(Q / T) over the legal moves against the expert's move,
which moves every legal move's Q-value at once and leaves their common level to
the TD loss (T as the engine's ``QTemperature`` reads the Q-values).
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import asdict
from pathlib import Path

import chess
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from evaluators.dqn import KIND
from evaluators.encoding import Encoding, get_encoding
from evaluators.moves import POLICY_SIZE
from hackmate_core.games import Mover, play_game
from training.configs import DQNConfig
from training.data.shards import DEFAULT_ENCODING
from training.device import unpack_bits, unpack_planes
from training.network_files import WeightsError, export_module, read_torch_file
from training.onnx_metadata import move_network_metadata
from training.readable import record_line
from training.resnet.model import ResidualBlock
from training.rl.arena import RandomMover
from training.rl.buffer import ReplayBuffer, State, expert_transitions, game_transitions, observe, white_material
from training.rl.history import save_history
from training.rl.run import RunTrainer

FORMAT = "hackmate-dqn"
ENCODING = DEFAULT_ENCODING


class QNetwork(nn.Module):
    """Stem, residual blocks and a convolutional head of 73 planes x 64 squares = one Q-value per move slot."""

    def __init__(self, planes: int, blocks: int = 2, filters: int = 32) -> None:
        super().__init__()
        self.shape = {"planes": planes, "blocks": blocks, "filters": filters}
        self.stem = nn.Sequential(nn.Conv2d(planes, filters, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(filters), nn.ReLU())
        self.tower = nn.Sequential(*(ResidualBlock(filters) for _ in range(blocks)))
        self.q = nn.Sequential(nn.Conv2d(filters, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters),
                               nn.ReLU(), nn.Conv2d(filters, 73, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values (N, 4672) from the side to move's point of view."""
        return self.q(self.tower(self.stem(x))).flatten(1)


def td_targets(next_q: torch.Tensor, next_legal: torch.Tensor, reward: torch.Tensor, done: torch.Tensor,
               gamma: float) -> torch.Tensor:
    """r + gamma * max over the next state's legal moves of the target network's Q (r alone when done)."""
    best = next_q.masked_fill(~next_legal, -torch.inf).max(dim=1).values
    best = torch.where(done | ~next_legal.any(dim=1), torch.zeros_like(best), best)
    return reward + gamma * best


def td_loss(q: torch.Tensor, action: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Huber loss between Q(s, a) of the moves played and their TD targets."""
    return F.smooth_l1_loss(q.gather(1, action.unsqueeze(1)).squeeze(1), target)


def expert_margin_loss(q: torch.Tensor, legal: torch.Tensor, action: torch.Tensor, margin: float) -> torch.Tensor:
    """DQfD's large-margin loss for expert transitions: the mean over rows of
    max over the legal moves a of [Q(s, a) + margin if a is not the expert's move] - Q(s, a_E)."""
    expert_q = q.gather(1, action.unsqueeze(1)).squeeze(1)
    margins = torch.full_like(q, margin).scatter(1, action.unsqueeze(1), 0.0)
    return ((q + margins).masked_fill(~legal, -torch.inf).max(dim=1).values - expert_q).mean()


def expert_cross_entropy(q: torch.Tensor, legal: torch.Tensor, action: torch.Tensor,
                         temperature: float) -> torch.Tensor:
    """Mean cross-entropy of softmax(Q / temperature) over the legal moves against the expert's move."""
    logp = torch.log_softmax((q / temperature).masked_fill(~legal, -torch.inf), dim=1)
    return -logp.gather(1, action.unsqueeze(1)).mean()


def epsilon_at(step: int, config: DQNConfig) -> float:
    """Linear decay from epsilon_start to epsilon_end over epsilon_steps self-play plies."""
    fraction = min(1.0, step / max(1, config.epsilon_steps))
    return config.epsilon_start + fraction * (config.epsilon_end - config.epsilon_start)


class EpsilonGreedyMover(Mover):
    """The training network in self-play, both sides: a random move for the first ``random_plies`` plies and with
    probability epsilon after, else the legal move of highest Q. Keeps each position's state and the slot of the
    move played there, the game's transitions."""

    name = "dqn-self-play"

    def __init__(self, trainer: "Trainer") -> None:
        self.trainer = trainer
        self.states: list[State] = []
        self.actions: list[int] = []

    def choose(self, board: chess.Board) -> chess.Move:
        trainer, config = self.trainer, self.trainer.config
        state = observe(board, trainer.encoding)
        explore = len(self.actions) < config.random_plies or trainer.random.random() < epsilon_at(
            trainer.counters["step"], config)
        choice = (trainer.random.randrange(len(state.moves)) if explore
                  else best_legal(trainer.model, state, trainer.device))
        self.states.append(state)
        self.actions.append(int(state.indices[choice]))
        return state.moves[choice]


class GreedyQMover(Mover):
    """The training network alone: the legal move with the highest Q-value."""

    def __init__(self, model: QNetwork, encoding: Encoding, device: torch.device) -> None:
        self.model, self.encoding, self.device, self.name = model, encoding, device, "dqn"

    def choose(self, board: chess.Board) -> chess.Move:
        state = observe(board, self.encoding)
        return state.moves[best_legal(self.model, state, self.device)]


@torch.no_grad()
def best_legal(model: QNetwork, state: State, device: torch.device) -> int:
    """Index into ``state.moves`` of the legal move with the highest Q-value."""
    model.eval()
    planes = torch.from_numpy(state.planes[None]).to(device)
    rule50 = torch.tensor([state.rule50], dtype=torch.uint8, device=device)
    q = model(unpack_planes(planes, rule50, len(state.planes) // 8))[0]
    return int(q[torch.from_numpy(state.indices).to(device)].argmax())


class Trainer(RunTrainer):
    """The state of a run: networks, optimiser, buffer, counters and history, saved and resumed together."""

    config: DQNConfig

    def __init__(self, config: DQNConfig) -> None:
        super().__init__(config)
        self.encoding = get_encoding(ENCODING)
        torch.manual_seed(config.seed)
        self.model = QNetwork(self.encoding.planes, config.blocks, config.filters).to(self.device)
        self.target = copy.deepcopy(self.model).eval()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.counters = {"step": 0, "updates": 0, "pretrain_updates": 0, "games": 0, "seconds": 0.0}
        self.history: list[dict] = []
        self.losses: list[float] = []
        self.expert_losses: list[float] = []
        self.buffer = ReplayBuffer(config.buffer, self.encoding.binary_planes * 8)
        self.rng = np.random.default_rng(config.seed)
        self.random = random.Random(config.seed)

    def resume(self) -> bool:
        """Load the run directory's checkpoint and buffer if there are both; True if so."""
        replay = self.out / "replay.npz"
        if not (self.checkpoint.exists() and replay.exists()):
            return False
        state = read_checkpoint(self.checkpoint, self.device)
        if state["shape"] != self.model.shape:
            raise WeightsError(f"{self.checkpoint}: a checkpoint of shape {state['shape']}, not of the requested "
                               f"{self.model.shape}: use another --out or the same sizes")
        self.model.load_state_dict(state["model"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.counters, self.history = {"pretrain_updates": 0, **state["counters"]}, state["history"]
        self.buffer = ReplayBuffer.load(replay, self.config.buffer)
        self.rng = np.random.default_rng(self.config.seed + self.counters["step"])
        self.random = random.Random(self.config.seed + self.counters["step"])
        return True

    def prefill(self, progress: bool) -> None:
        """Put the expert transitions of the PGN files into the buffer."""
        if not self.config.expert_pgn or not self.config.expert_transitions:
            return
        from tqdm import tqdm
        limit = min(self.config.expert_transitions, self.config.buffer)
        with tqdm(total=limit, desc="expert transitions", unit="move", disable=not progress) as bar:
            for transitions in expert_transitions([Path(p) for p in self.config.expert_pgn], self.encoding, limit,
                                                  self.config.reward == "material"):
                self.buffer.add(transitions, expert=True, keep=self.config.expert_weight > 0)
                bar.update(len(transitions["action"]))

    def update(self) -> None:
        """One gradient step on a batch from the buffer; syncs the target network every target_sync steps."""
        config = self.config
        sample = self.buffer.sample(config.batch_size, self.rng)
        batch = {name: torch.from_numpy(values).to(self.device) for name, values in sample.items()}
        planes = self.encoding.binary_planes
        with torch.no_grad():
            next_q = self.target(unpack_planes(batch["next_state"], batch["next_rule50"], planes))
            targets = td_targets(next_q, unpack_bits(batch["next_legal"], POLICY_SIZE), batch["reward"],
                                 batch["done"], config.gamma)
        self.model.train()
        q = self.model(unpack_planes(batch["state"], batch["rule50"], planes))
        action = batch["action"].long()
        loss = td_loss(q, action, targets)
        self.losses.append(loss.item())
        expert = batch["expert"]
        if config.expert_weight and expert.any():
            legal = unpack_bits(batch["legal"][expert], POLICY_SIZE)
            expert_loss = (expert_margin_loss(q[expert], legal, action[expert], config.expert_margin)
                           if config.expert_loss == "margin" else
                           expert_cross_entropy(q[expert], legal, action[expert], config.expert_temperature))
            self.expert_losses.append(expert_loss.item())
            loss = loss + config.expert_weight * expert_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 10.0)
        self.optimizer.step()
        self.counters["updates"] += 1
        if self.counters["updates"] % config.target_sync == 0:
            self.target.load_state_dict(self.model.state_dict())

    def pretrain(self, started: float, command: str, progress: bool) -> None:
        """Gradient steps on the buffer before any self-play (it holds the expert transitions alone then),
        logged like self-play's and saved at the end (an interrupted pre-training resumes from its start's
        checkpoint)."""
        from tqdm import tqdm
        todo = self.config.pretrain_updates - self.counters["pretrain_updates"]
        if todo <= 0 or len(self.buffer) < self.config.batch_size or self.counters["step"]:
            return
        with tqdm(total=todo, desc="pre-training on the expert transitions", unit="update",
                  disable=not progress) as bar:
            for done in range(1, todo + 1):
                self.update()
                self.counters["pretrain_updates"] += 1
                bar.update()
                if done % 1000 == 0 or done == todo:
                    record = self.log(started, evaluate=done == todo)
                    bar.set_postfix_str(f"expert loss {record['expert_loss'] or 0:.3f}")
        tqdm.write(record_line(self.history[-1]))
        self.save(started, command)

    def self_play_game(self) -> None:
        """One epsilon-greedy game of the network against itself (learning as it goes, :meth:`after_move`); its
        transitions go into the buffer."""
        mover = EpsilonGreedyMover(self)
        record = play_game(mover, mover, chess.Board(), self.config.max_plies, on_move=self.after_move)
        final = record.opening.copy()
        for move in record.moves:
            final.push(move)
        self.buffer.add(game_transitions(mover.states, mover.actions, white_material(final), record.white_score,
                                         self.config.reward == "material"))
        self.counters["games"] += 1

    def after_move(self, board: chess.Board, move: chess.Move) -> None:
        """A self-play ply played: counted, and every ``train_every`` plies a gradient step once the buffer holds
        a batch."""
        self.counters["step"] += 1
        if len(self.buffer) >= self.config.batch_size and self.counters["step"] % self.config.train_every == 0:
            self.update()

    def evaluate(self, games: int) -> dict:
        """The greedy network against a random mover, colours alternating: its wins, draws and losses."""
        mover = GreedyQMover(self.model, self.encoding, self.device)
        tally = {"eval_wins": 0, "eval_draws": 0, "eval_losses": 0}
        for game in range(games):
            opponent = RandomMover(self.config.seed * 7919 + self.counters["step"] + game)
            white, black = (mover, opponent) if game % 2 == 0 else (opponent, mover)
            score = play_game(white, black, chess.Board(), self.config.max_plies).white_score
            score = score if game % 2 == 0 else 1 - score
            tally[{1.0: "eval_wins", 0.5: "eval_draws", 0.0: "eval_losses"}[score]] += 1
        return tally

    def log(self, started: float, evaluate: bool) -> dict:
        record = {"step": self.counters["step"], "updates": self.counters["updates"],
                  "pretrain_updates": self.counters["pretrain_updates"], "games": self.counters["games"],
                  "epsilon": epsilon_at(self.counters["step"], self.config),
                  "td_loss": float(np.mean(self.losses)) if self.losses else None,
                  "expert_loss": float(np.mean(self.expert_losses)) if self.expert_losses else None,
                  "buffer": len(self.buffer), "expert_share": self.buffer.expert_share(),
                  "seconds": self.counters["seconds"] + time.time() - started}
        if evaluate and self.config.eval_games:
            record.update(self.evaluate(self.config.eval_games))
            record["eval_score"] = (record["eval_wins"] + 0.5 * record["eval_draws"]) / self.config.eval_games
        self.losses, self.expert_losses = [], []
        self.history.append(record)
        return record

    def save(self, started: float, command: str) -> Path:
        """Checkpoint, buffer, history, curves and the ONNX export, all for the same moment."""
        counters = {**self.counters, "seconds": self.counters["seconds"] + time.time() - started}
        temporary = self.checkpoint.with_name("checkpoint.pt.tmp")
        torch.save({"format": FORMAT, "version": 1, "model": self.model.state_dict(),
                    "target": self.target.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "shape": self.model.shape, "encoding": ENCODING, "counters": counters,
                    "history": self.history, "config": asdict(self.config)}, temporary)
        temporary.replace(self.checkpoint)
        self.buffer.save(self.out / "replay.npz")
        save_history(self.history, self.out, "step", {"losses": ["td_loss", "expert_loss"],
                                                      "exploration": ["epsilon", "expert_share"],
                                                      "greedy vs random mover": ["eval_score"]})
        return export_dqn(self.checkpoint, self.out / "dqn.onnx", command)


def train_dqn(config: DQNConfig, progress: bool = True, command: str = "") -> Path:
    """Run (or resume) DQN training; returns the exported ONNX file (also written at every checkpoint)."""
    from tqdm import tqdm
    trainer = Trainer(config)
    if trainer.resume():
        print(f"resuming {trainer.checkpoint} at self-play ply {trainer.counters['step']}")
    else:
        trainer.prefill(progress)
    started = time.time()
    trainer.pretrain(started, command, progress)
    step = trainer.counters["step"]
    next_log = (step // 1000 + 1) * 1000
    next_eval = (step // config.eval_every + 1) * config.eval_every if config.eval_every else None
    next_save = (step // config.checkpoint_every + 1) * config.checkpoint_every
    with tqdm(total=config.steps, initial=step, desc="self-play plies", unit="ply", disable=not progress) as bar:
        while trainer.counters["step"] < config.steps:
            trainer.self_play_game()
            step = trainer.counters["step"]
            bar.update(step - bar.n)
            if step >= next_log or step >= config.steps:
                evaluate = next_eval is not None and (step >= next_eval or step >= config.steps)
                record = trainer.log(started, evaluate)
                bar.set_postfix_str(f"loss {record['td_loss'] or 0:.4f} eps {record['epsilon']:.2f}"
                                    + (f" vs random {record['eval_score']:.2f}" if evaluate else ""))
                next_log = (step // 1000 + 1) * 1000
                if evaluate:
                    tqdm.write(record_line(record))
                    next_eval = (step // config.eval_every + 1) * config.eval_every
            if step >= next_save and step < config.steps:
                trainer.save(started, command)
                next_save = (step // config.checkpoint_every + 1) * config.checkpoint_every
    return trainer.save(started, command)


def read_checkpoint(path: Path, device: str | torch.device = "cpu") -> dict:
    """The DQN checkpoint dictionary in ``path``, read by the checked loader of all network files."""
    state = read_torch_file(path, device)
    if not isinstance(state, dict) or state.get("format") != FORMAT or "shape" not in state or "model" not in state:
        raise WeightsError(f"{path}: not a DQN checkpoint (format {FORMAT})")
    return state


def load_q_network(path: Path) -> tuple[QNetwork, dict]:
    """(network in eval mode, checkpoint dictionary) of a DQN checkpoint."""
    state = read_checkpoint(path)
    try:
        model = QNetwork(**state["shape"])
        model.load_state_dict(state["model"])
    except (TypeError, RuntimeError) as error:
        raise WeightsError(f"{path}: its weights do not fit its declared shape {state['shape']} ({error})") from None
    return model.eval(), state


def export_dqn(checkpoint: Path, out: Path, command: str = "") -> Path:
    """DQN checkpoint -> ONNX Q-network with the metadata evaluators.dqn checks."""
    model, state = load_q_network(checkpoint)
    encoding = get_encoding(state["encoding"])
    last_eval = next((h for h in reversed(state["history"]) if "eval_score" in h), {})
    metadata = move_network_metadata(KIND, encoding.name, "q", state["shape"], state["config"], command,
                                     training={**state["counters"], **last_eval})
    return export_module(model, (torch.zeros(1, encoding.planes, 8, 8),), out, ["planes"], ["q"], metadata)
