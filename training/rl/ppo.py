"""PPO with MCTS, after Sai, "Building an AI Chess Engine with PPO and MCTS" (2025).

The policy-value network is fine-tuned with clipped PPO on games against
Stockfish whose `Skill Level` rises as a curriculum: the level goes up when the
win rate over the last ``window`` games at the current level reaches
``promote_win_rate``. A share of the games starts from injected openings (a
Polyglot book or a PGN, through hackmate_core.openings' book). Our moves
are sampled from the network's policy, or, from ``mcts_level`` on, from the
blend pi = alpha pi_PPO + (1 - alpha) pi_MCTS of the policy and the visit
distribution of a small PUCT search (sharpened by ``mcts_temperature``); the ratio of PPO is
always taken against the network's own policy. That policy may be tempered,
softmax(logits / T) with ``policy_temperature`` T < 1: a 6x64 network's raw
policy sampled at T = 1 blunders too often to ever beat the curriculum's first
level, so PPO trains the sharper policy that actually plays.

Rewards: the result (+1/0/-1) on our last move, and optionally a shaping term
for central control (the side's pieces attacking or occupying d4, e4, d5 and e5
minus the opponent's, over their sum, so in [-1, 1]). The shaping is
potential-based (Ng, Harada and Russell, 1999): a move earns
``shaping * (gamma * C(next) - C(now))``, C being 0 once the game is over, which
rewards gaining the centre, keeps the best policy the one that wins, and moves a
game's return by at most ``shaping``. Advantages are GAE (gamma, lambda); the loss is the clipped
surrogate + ``value_weight`` x the squared error of W - L against the return -
``entropy_weight`` x the policy's entropy over the legal moves (with
``value_trains_trunk`` off, the value loss trains the value head alone); an update's
passes stop early once the approximate KL divergence from the rollout's policy
passes 1.5 x ``target_kl``. BatchNorm keeps its statistics during the updates
(the network is in eval mode), so that the first PPO ratio of an update is
exactly 1.

Every update writes a resumable checkpoint (a policy-value weights file that
``train --init`` and ``export`` accept), history.json, curves.png and the ONNX
export the engine plays with (``--eval resnet --weights OUT/ppo.onnx``).
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import chess
import numpy as np
import torch
from torch.nn import functional as F

from evaluators.base import Evaluation, Evaluator, MoveLists, value_centipawns
from evaluators.encoding import Encoding, get_encoding
from evaluators.moves import POLICY_SIZE, move_to_index
from hackmate_core.games import Mover, play_game
from hackmate_core.openings import OpeningBook
from search.base import SearchControl
from training.configs import PPOConfig
from training.device import unpack_bits, unpack_planes
from training.readable import record_line
from training.resnet.model import PolicyValueNet
from training.rl.arena import EngineMover, stockfish
from training.rl.buffer import observe, pack_mask
from training.rl.history import save_history
from training.rl.run import RunTrainer

if TYPE_CHECKING:
    from tqdm import tqdm

    from search.puct import PuctSearch

CENTER = (chess.D4, chess.E4, chess.D5, chess.E5)
ILLEGAL_LOGIT = -1e9


def central_control(board: chess.Board, color: chess.Color) -> float:
    """(ours - theirs) / (ours + theirs) of the pieces attacking or occupying d4, e4, d5, e5; 0 when none."""
    counts = {chess.WHITE: 0, chess.BLACK: 0}
    for square in CENTER:
        for side in counts:
            counts[side] += chess.popcount(board.attackers_mask(side, square)) + (board.color_at(square) == side)
    ours, theirs = counts[color], counts[not color]
    return (ours - theirs) / (ours + theirs) if ours + theirs else 0.0


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
        ) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns of consecutive steps (``dones`` ends an episode)."""
    advantages = np.zeros(len(rewards), dtype=np.float32)
    running = 0.0
    for t in reversed(range(len(rewards))):
        following = 0.0 if dones[t] else values[t + 1]
        delta = rewards[t] + gamma * following - values[t]
        running = delta + (0.0 if dones[t] else gamma * lam * running)
        advantages[t] = running
    return advantages, advantages + values.astype(np.float32)


def ppo_loss(new_logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, values: torch.Tensor,
             returns: torch.Tensor, entropy: torch.Tensor, clip: float, value_weight: float, entropy_weight: float
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate + value_weight x value MSE - entropy_weight x entropy, and the parts."""
    ratio = torch.exp(new_logp - old_logp)
    surrogate = torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages)
    policy_loss = -surrogate.mean()
    value_loss = F.mse_loss(values, returns)
    entropy_mean = entropy.mean()
    parts = {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy_mean,
             "approx_kl": ((ratio - 1) - (new_logp - old_logp)).mean(),  # the k3 estimator: never negative
             "clip_fraction": ((ratio - 1).abs() > clip).float().mean()}
    return policy_loss + value_weight * value_loss - entropy_weight * entropy_mean, parts


def tempered(policy: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T) from softmax(logits) over the same moves: policy ** (1 / T), renormalised."""
    if temperature == 1.0:
        return policy
    logs = np.log(np.maximum(policy, 1e-300)) / temperature
    weights = np.exp(logs - logs.max())
    return weights / weights.sum()


def masked_policy(logits: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities over the legal moves, entropy) of policy logits (B, 4672) and legal masks (B, 4672).

    Illegal slots get a large finite negative logit, not -inf, whose 0 * -inf would make the gradient NaN.
    """
    logp = F.log_softmax(logits.masked_fill(~legal, ILLEGAL_LOGIT), dim=1)
    entropy = -torch.where(legal, logp.exp() * logp, torch.zeros_like(logp)).sum(dim=1)
    return logp, entropy


def reset_value_head(model: PolicyValueNet, seed: int) -> None:
    """Re-initialise the value head (PyTorch's default initialisation, seeded, without touching the global
    generator), keeping the trunk and the policy head: a start whose search has priors but no judgement of
    positions. Its BatchNorm statistics become mean 0, variance 1 and stay so: PPO trains in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in model.value.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()


class NetworkEvaluator(Evaluator):
    """The network being trained as an evaluator (torch, no export between updates): the bare policy and W/D/L."""

    name = "network"
    has_policy = True

    def __init__(self, model: PolicyValueNet, encoding: Encoding, device: torch.device) -> None:
        super().__init__()
        self.model, self.encoding, self.device = model, encoding, device

    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        return self.evaluate_batch([board], None if moves is None else [moves])[0]

    @torch.no_grad()
    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        if not boards:
            return []
        self.model.eval()
        x = torch.from_numpy(np.stack([self.encoding.encode(board) for board in boards])).to(self.device)
        logits, wdl = self.model(x)
        logits, wdl = logits.float().cpu().numpy(), torch.softmax(wdl.float(), dim=1).cpu().numpy()
        evaluations = []
        for i, board in enumerate(boards):
            legal = list(board.legal_moves) if moves is None else list(moves[i])
            row = logits[i][[move_to_index(m, board.turn) for m in legal]] if legal else np.zeros(0)
            priors = np.exp(row - row.max()) if legal else row
            priors = priors / priors.sum() if legal else priors
            evaluations.append(Evaluation(value=float(wdl[i, 0] - wdl[i, 2]), draw=float(wdl[i, 1]),
                                          priors=dict(zip(legal, priors.tolist()))))
        return evaluations

    def centipawns(self, board: chess.Board) -> int:
        return value_centipawns(self, board)


@dataclass
class Step:
    """One of our moves, as PPO trains on it."""

    planes: np.ndarray
    rule50: int
    legal: np.ndarray  # packed mask
    action: int
    logp: float
    value: float
    control: float  # central control before the move


def update_batch(steps: list[Step], advantages: np.ndarray, returns: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays :meth:`Trainer.update` trains on: the steps' inputs, legal masks, actions and log-probabilities
    beside their advantages and returns."""
    return {"planes": np.stack([s.planes for s in steps]), "rule50": np.array([s.rule50 for s in steps], np.uint8),
            "legal": np.stack([s.legal for s in steps]), "action": np.array([s.action for s in steps], np.int64),
            "logp": np.array([s.logp for s in steps], np.float32), "advantage": advantages, "return": returns}


class LearnerMover(Mover):
    """Our side of a game against Stockfish: the move :meth:`Trainer.act` samples, its step kept for PPO."""

    name = "ppo"

    def __init__(self, trainer: "Trainer", search: Optional["PuctSearch"]) -> None:
        self.trainer, self.search = trainer, search
        self.steps: list[Step] = []

    def choose(self, board: chess.Board) -> chess.Move:
        step, move = self.trainer.act(board, self.search)
        self.steps.append(step)
        return move


class Curriculum:
    """Stockfish's Skill Level, raised when the win rate over the last ``window`` games reaches the threshold."""

    def __init__(self, level: int, config: PPOConfig, recent: Sequence[float] = ()) -> None:
        self.level, self.config = level, config
        self.recent: deque[float] = deque(recent, maxlen=config.window)

    def win_rate(self) -> float:
        return sum(score == 1.0 for score in self.recent) / len(self.recent) if self.recent else 0.0

    def record(self, score: float) -> bool:
        """Add a game's score (1, 0.5, 0); True when it promotes to the next level."""
        self.recent.append(score)
        if (len(self.recent) == self.config.window and self.win_rate() >= self.config.promote_win_rate
                and self.level < self.config.max_level):
            self.level += 1
            self.recent.clear()
            return True
        return False


class Trainer(RunTrainer):
    """A run: the network, its optimiser, the curriculum and the Stockfish opponent, saved and resumed together."""

    config: PPOConfig

    def __init__(self, config: PPOConfig) -> None:
        from training.resnet.weights import load_network
        super().__init__(config)
        resuming = self.checkpoint.exists()
        self.model, state = load_network(self.checkpoint if resuming else Path(config.checkpoint), device=self.device)
        self.encoding = get_encoding(state["meta"]["encoding"])
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        if resuming:
            self.optimizer.load_state_dict(state["optimizer"])
            self.meta, self.history, progress = state["meta"], state["history"], state["ppo"]
        else:
            start = config.checkpoint + (" with a fresh value head" if config.reset_value_head else "")
            self.meta = {**state["meta"], "sources": list(state["meta"].get("sources", []))
                         + [{"files": [f"PPO games against Stockfish, from {start}"]}]}
            if config.reset_value_head:
                reset_value_head(self.model, config.seed)
            self.history, progress = [], {"update": 0, "games": 0, "level": config.start_level, "recent": []}
        self.update_index, self.games = progress["update"], progress["games"]
        self.curriculum = Curriculum(progress["level"], config, progress["recent"])
        self.resumed = resuming
        self.evaluator = NetworkEvaluator(self.model, self.encoding, self.device)
        self.rng = np.random.default_rng(config.seed + self.update_index)
        self.random = random.Random(config.seed + self.update_index)
        self.book = OpeningBook(config.openings, config.opening_plies) if config.openings else None
        self.opponent: Optional[EngineMover] = None
        self.opponent_level = -1

    def stockfish(self) -> EngineMover:
        if self.opponent is None or self.opponent_level != self.curriculum.level:
            if self.opponent is not None:
                self.opponent.close()
            self.opponent = stockfish(self.curriculum.level, self.config.stockfish_nodes)
            self.opponent_level = self.curriculum.level
        return self.opponent

    def act(self, board: chess.Board, search: Optional["PuctSearch"]) -> tuple[Step, chess.Move]:
        """Sample our move (policy, or the PPO/MCTS blend with a search) and record what PPO needs."""
        state = observe(board, self.encoding)
        evaluation = self.evaluator.evaluate(board, state.moves)
        priors = evaluation.priors or {}
        policy = tempered(np.array([priors[m] for m in state.moves], dtype=np.float64),
                          self.config.policy_temperature)
        blend = policy
        if search is not None:
            search.search(board, SearchControl(max_nodes=self.config.mcts_nodes), lambda info: None)
            visits = {child.move: child.visits for child in search.root.children or []}
            counts = np.array([visits.get(m, 0) for m in state.moves], dtype=np.float64)
            if counts.sum() > 0:
                searched = tempered(counts / counts.sum(), self.config.mcts_temperature)
                blend = self.config.alpha * policy + (1 - self.config.alpha) * searched
        choice = int(self.rng.choice(len(state.moves), p=blend / blend.sum()))
        return Step(state.planes, state.rule50, pack_mask(state.indices), int(state.indices[choice]),
                    float(np.log(max(policy[choice], 1e-12))), evaluation.value,
                    central_control(board, board.turn)), state.moves[choice]

    def play(self, game_number: int) -> tuple[list[Step], float]:
        """One game against Stockfish: our steps and our score (1, 0.5, 0)."""
        from search.puct import PuctSearch
        config = self.config
        ours = chess.WHITE if game_number % 2 == 0 else chess.BLACK
        board = chess.Board()
        if self.book is not None and self.random.random() < config.opening_share:
            for move in self.book.line(self.random):
                board.push(move)
        mover = LearnerMover(self, PuctSearch(self.evaluator) if self.curriculum.level >= config.mcts_level else None)
        opponent = self.stockfish()
        white, black = (mover, opponent) if ours == chess.WHITE else (opponent, mover)
        white_score = play_game(white, black, board, config.max_plies).white_score
        return mover.steps, white_score if ours == chess.WHITE else 1.0 - white_score

    def rollout(self, progress: "tqdm") -> tuple[dict[str, np.ndarray], dict]:
        """Games of one update: the arrays PPO trains on and what happened (W/D/L, promotions)."""
        config = self.config
        parts: list[dict[str, np.ndarray]] = []
        tally = {"wins": 0, "draws": 0, "losses": 0, "promoted": 0, "level_played": self.curriculum.level}
        for _ in range(config.games_per_update):
            steps, score = self.play(self.games)
            self.games += 1
            tally[{1.0: "wins", 0.5: "draws", 0.0: "losses"}[score]] += 1
            tally["promoted"] += self.curriculum.record(score)
            progress.set_postfix_str(f"level {self.curriculum.level} win rate {self.curriculum.win_rate():.2f}")
            if not steps:
                continue
            rewards = np.zeros(len(steps), dtype=np.float32)
            rewards[-1] = 2 * score - 1
            if config.shaping:
                control = np.array([s.control for s in steps] + [0.0], dtype=np.float32)  # 0 once it is over
                rewards += config.shaping * (config.gamma * control[1:] - control[:-1])
            values = np.array([s.value for s in steps], dtype=np.float32)
            dones = np.zeros(len(steps), dtype=bool)
            dones[-1] = True
            advantages, returns = gae(rewards, values, dones, config.gamma, config.lam)
            parts.append(update_batch(steps, advantages, returns))
        if not parts:
            return {}, tally
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, tally

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """Up to ``epochs`` passes of clipped PPO over the rollout in minibatches; the mean of each loss part.

        The update stops early when a minibatch's approximate KL divergence from
        the rollout's policy passes 1.5 x ``target_kl`` (its step is not taken).
        """
        config = self.config
        data = {k: torch.from_numpy(v).to(self.device) for k, v in batch.items()}
        advantages = data["advantage"]
        data["advantage"] = (advantages - advantages.mean()) / (advantages.std(unbiased=False) + 1e-8)
        n = len(data["action"])
        sums: dict[str, float] = {}
        count = 0
        self.model.eval()  # BatchNorm keeps its statistics: the first ratio is exactly 1
        stop = False
        for _ in range(config.epochs):
            if stop:
                break
            order = torch.from_numpy(self.rng.permutation(n)).to(self.device)
            for start in range(0, n, config.minibatch):
                rows = order[start:start + config.minibatch]
                logits, wdl = self.model.policy_and_value(
                    unpack_planes(data["planes"][rows], data["rule50"][rows], self.encoding.binary_planes),
                    value_trains_trunk=config.value_trains_trunk)
                logp, entropy = masked_policy(logits.float() / config.policy_temperature,
                                              unpack_bits(data["legal"][rows], POLICY_SIZE))
                probabilities = torch.softmax(wdl.float(), dim=1)
                loss, parts = ppo_loss(logp.gather(1, data["action"][rows, None]).squeeze(1), data["logp"][rows],
                                       data["advantage"][rows], probabilities[:, 0] - probabilities[:, 2],
                                       data["return"][rows], entropy, config.clip, config.value_weight,
                                       config.entropy_weight)
                if config.target_kl and parts["approx_kl"].item() > 1.5 * config.target_kl:
                    stop = True
                    break
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
                self.optimizer.step()
                for name, value in parts.items():
                    sums[name] = sums.get(name, 0.0) + value.item()
                count += 1
        return {**{name: total / count for name, total in sums.items()}, "minibatches": count}

    def save(self, command: str) -> Path:
        """The checkpoint (a weights file plus optimiser and curriculum), history, curves and the ONNX export."""
        from training.resnet.export import export_resnet
        from training.resnet.weights import FORMAT, VERSION
        temporary = self.checkpoint.with_name("checkpoint.pt.tmp")
        torch.save({"format": FORMAT, "version": VERSION, "shape": self.model.shape, "model": self.model.state_dict(),
                    "meta": self.meta, "config": asdict(self.config), "history": self.history,
                    "optimizer": self.optimizer.state_dict(),
                    "ppo": {"update": self.update_index, "games": self.games, "level": self.curriculum.level,
                            "recent": list(self.curriculum.recent)}}, temporary)
        temporary.replace(self.checkpoint)
        save_history(self.history, self.out, "update", {
            "curriculum": ["level", "win_rate"], "losses": ["policy_loss", "value_loss"],
            "policy": ["entropy", "approx_kl", "clip_fraction"]})
        return export_resnet(self.checkpoint, self.out / "ppo.onnx", command)

    def close(self) -> None:
        if self.opponent is not None:
            self.opponent.close()


def train_ppo(config: PPOConfig, progress: bool = True, command: str = "") -> Path:
    """Run (or resume) PPO fine-tuning; returns the ONNX export of the latest network."""
    from tqdm import tqdm
    trainer = Trainer(config)
    if trainer.resumed:
        print(f"resuming {trainer.checkpoint} at update {trainer.update_index}, Skill Level {trainer.curriculum.level}")
    onnx = trainer.out / "ppo.onnx"
    try:
        with tqdm(total=config.updates, initial=trainer.update_index, desc="PPO updates", unit="update",
                  disable=not progress) as bar:
            while trainer.update_index < config.updates:
                started = time.time()
                batch, tally = trainer.rollout(bar)
                losses = trainer.update(batch) if batch else {}
                trainer.update_index += 1
                record = {"update": trainer.update_index, "games": trainer.games, "level": trainer.curriculum.level,
                          "win_rate": trainer.curriculum.win_rate(), "plies": int(len(batch.get("action", []))),
                          **tally, **losses, "seconds": time.time() - started}
                trainer.history.append(record)
                tqdm.write(record_line(record))
                onnx = trainer.save(command)
                bar.update(1)
        if not onnx.exists():
            onnx = trainer.save(command)
    finally:
        trainer.close()
    return onnx
