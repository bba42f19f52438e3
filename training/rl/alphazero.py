"""AlphaZero-style reinforcement learning: self-play with visit-count targets, training, and a gate.

Each iteration:

1. **Self-play** with the best network so far: PUCT at ``nodes`` nodes a move
   from a fresh tree (as AlphaZero's pseudocode does), Dirichlet noise (alpha
   0.3, weight 0.25) on the root's priors, moves sampled in proportion to the
   visit counts for the first ``temperature_plies`` plies and the search's best
   move after (games played by hackmate_core.games). Every position is written to a label shard
   (training.data.shards)
   with the root's visit counts, normalised, as its policy target and the game
   result as its value target (W/D/L unknown: NaN).
2. **Training** (training.resnet.train, its soft-target cross-entropy and W/D/L loss)
   continues from the latest candidate on the last ``window`` iterations' games.
3. **Gating**: the candidate plays the best network ``gate_games`` games at
   ``gate_nodes`` nodes a move, without noise, with paired openings (each
   opening twice, colours swapped); it becomes the best network, the one that
   plays the self-play games and is exported as best.onnx, only if it scores at
   least ``gate_threshold``. Training itself goes on from the candidate either
   way, as in AlphaGo Zero.

Every iteration logs the training losses, the gating score and its Elo with a
95% interval, and the best network's Elo over the first one (the sum of the
accepted gates), to history.json and curves.png. Each step leaves its result on
disk (shards per game, the training checkpoint, gate.json), so rerunning the
command resumes where it stopped.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

import chess
import numpy as np

from evaluators.base import Evaluation, Evaluator, EvaluatorWrapper, MoveLists
from hackmate_core.games import Mover, play_game
from search.base import SearchControl
from training.configs import AlphaZeroConfig
from training.processes import process_pool
from training.readable import record_line
from training.rl.arena import MoverSpec, load_openings, play_match
from training.rl.history import save_history

if TYPE_CHECKING:
    from search.puct import PuctSearch

#: The shard labeller's description of these targets (a directory never mixes label kinds).
TARGETS = "alphazero self-play: root visit counts, game result"


class RootNoise(EvaluatorWrapper):
    """Dirichlet noise on the priors of one position, the search root (AlphaZero's exploration at the root).

    The search asks the evaluator for the root's priors when it expands a fresh
    tree; :meth:`arm` names the position that gets the noise, once.
    """

    def __init__(self, inner: Evaluator, alpha: float, weight: float, rng: np.random.Generator) -> None:
        super().__init__(inner)
        self.alpha, self.weight, self.rng = alpha, weight, rng
        self.root: Optional[object] = None

    def arm(self, board: chess.Board) -> None:
        self.root = self.cache_key(board)

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        evaluations = self.inner.evaluate_batch(boards, moves)
        for i, board in enumerate(boards):
            priors = evaluations[i].priors
            if self.root is not None and priors and self.cache_key(board) == self.root:
                self.root = None
                noise = self.rng.dirichlet([self.alpha] * len(priors))
                noisy = {move: (1 - self.weight) * p + self.weight * n for (move, p), n in zip(priors.items(), noise)}
                evaluations[i] = Evaluation(evaluations[i].value, evaluations[i].draw, noisy)
        return evaluations


def visit_distribution(search: "PuctSearch") -> tuple[list[chess.Move], np.ndarray]:
    """The root's moves and their visit counts normalised to sum to 1 (the policy target)."""
    children = search.root.children or []
    moves = [child.move for child in children]
    visits = np.array([child.visits for child in children], dtype=np.float64)
    if visits.sum() == 0:
        raise ValueError("the search visited no root move")
    return moves, (visits / visits.sum()).astype(np.float32)


class SelfPlayMover(Mover):
    """Both sides of a self-play game: PUCT from a fresh tree with root noise each move, the move sampled by visit
    counts for the first ``temperature_plies`` plies and the search's best after. Keeps each position with its
    root's moves and visit distribution (the policy targets)."""

    name = "alphazero-self-play"

    def __init__(self, network: Evaluator, config: AlphaZeroConfig, rng: np.random.Generator) -> None:
        from search.puct import PuctSearch
        self.config, self.rng = config, rng
        self.noisy = RootNoise(network, config.dirichlet_alpha, config.dirichlet_weight, rng)
        self.search = PuctSearch(self.noisy)
        self.positions: list[tuple[chess.Board, list[chess.Move], np.ndarray]] = []

    def choose(self, board: chess.Board) -> chess.Move:
        self.search.new_game()  # a fresh tree, whose root the evaluator sees (and noises) first
        self.noisy.arm(board)
        best = self.search.search(board, SearchControl(max_nodes=self.config.nodes), lambda info: None).best_move
        moves, probs = visit_distribution(self.search)
        self.positions.append((board.copy(), moves, probs))
        if len(self.positions) <= self.config.temperature_plies:
            sampling = probs.astype(np.float64)
            best = moves[int(self.rng.choice(len(moves), p=sampling / sampling.sum()))]
        return best


def self_play_game(job: tuple) -> tuple[int, list]:
    """One self-play game (run in a worker): its index and a shard record per position."""
    from evaluators.encoding import get_encoding
    from evaluators.resnet import ResNetEvaluator
    from training.data.shards import make_record
    weights, config, index, game_id = job
    rng = np.random.default_rng([config.seed, game_id])
    network = ResNetEvaluator(Path(weights))
    encoding = get_encoding(network.metadata["encoding"])
    mover = SelfPlayMover(network, config, rng)
    white = play_game(mover, mover, chess.Board(), config.max_plies).white_score
    nan = np.full(3, np.nan, dtype=np.float32)
    records = []
    for position, moves, probs in mover.positions:
        result = int(round(2 * white - 1)) * (1 if position.turn == chess.WHITE else -1)
        records.append(make_record(position, encoding, moves, probs, np.zeros(len(moves), np.int32), nan, result,
                                   game_id))
    return index, records


def games_done(directory: Path) -> set[int]:
    """Indices of the self-play games already written to ``directory`` (one shard per game)."""
    from training.data.shards import read_meta
    if not (directory / "meta.json").exists():
        return set()
    return {int(source.split()[-1]) for entry in read_meta(directory)["shards"] for source in entry["sources"]}


def self_play(weights: Path, directory: Path, config: AlphaZeroConfig, iteration: int) -> int:
    """Play the iteration's missing self-play games into ``directory``; returns how many were played now."""
    from tqdm import tqdm
    from evaluators.encoding import get_encoding
    from evaluators.resnet import ResNetEvaluator
    from training.data.shards import ShardWriter
    encoding = get_encoding(ResNetEvaluator(weights).metadata["encoding"])
    labeller = {"targets": TARGETS, "engine": f"hackmate puct + {weights.name}", "nodes": config.nodes,
                "temperature": config.temperature_plies,
                "dirichlet": [config.dirichlet_alpha, config.dirichlet_weight]}
    writer = ShardWriter(directory, encoding, labeller, shard_size=1 << 30)
    done = games_done(directory)
    jobs = [(str(weights), config, index, iteration * 100_000 + index) for index in range(config.games)
            if index not in done]
    pool = (process_pool(config.workers)
            if config.workers > 1 and len(jobs) > 1 else None)
    results: Iterable[tuple[int, list]]
    if pool is None:
        results = map(self_play_game, jobs)
    else:  # each game is written as soon as it ends, whatever the order
        results = (future.result() for future in as_completed([pool.submit(self_play_game, job) for job in jobs]))
    try:
        for index, records in tqdm(results, total=len(jobs), desc=f"self-play {iteration}", unit="game"):
            for record in records:
                writer.add(record, f"game {index}")
            writer.flush()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    writer.record_run({"iteration": iteration, "games": config.games, "weights": str(weights)})
    return len(jobs)


class Run:
    """The run directory: state.json (iteration, best and trainee networks, history) and per-iteration folders."""

    def __init__(self, config: AlphaZeroConfig) -> None:
        self.config = config
        self.out = Path(config.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.state_path = self.out / "state.json"
        if self.state_path.exists():
            self.state = json.loads(self.state_path.read_text())
        else:
            best = self.out / "best.pt"
            shutil.copyfile(config.checkpoint, best)
            self.state = {"iteration": 0, "best": str(best), "trainee": str(best), "elo": 0.0, "history": []}
            self.export(best, self.out / "best.onnx")
            self.save()

    def save(self) -> None:
        temporary = self.state_path.with_name("state.json.tmp")
        temporary.write_text(json.dumps(self.state, indent=2))
        temporary.replace(self.state_path)
        if self.state["history"]:
            save_history(self.state["history"], self.out, "iteration", {
                "training losses": ["train_policy_loss", "train_value_loss", "val_policy_loss", "val_value_loss"],
                "gating score": ["gate_score", "gate_threshold"],
                "Elo": ["gate_elo", "gate_elo_low", "gate_elo_high", "best_elo"]})

    @staticmethod
    def export(weights: Path, onnx: Path) -> Path:
        from training.resnet.export import export_resnet
        return export_resnet(weights, onnx, command="reinforce")

    def folder(self, iteration: int) -> Path:
        return self.out / f"iteration{iteration:03d}"

    def train(self, iteration: int) -> Path:
        """Train the candidate (resumable: a finished run returns at once)."""
        from training.configs import TrainConfig
        from training.resnet.model import full_shape
        from training.resnet.train import train
        from training.resnet.weights import load_file
        config = self.config
        shape = load_file(Path(self.state["trainee"]))["shape"]
        data = [str(self.folder(i) / "games") for i in range(max(1, iteration - config.window + 1), iteration + 1)]
        return train(TrainConfig(data=data, out=str(self.folder(iteration) / "train"), blocks=shape["blocks"],
                                 filters=shape["filters"], squeeze=full_shape(shape)["squeeze"], epochs=config.epochs,
                                 batch_size=config.batch_size, lr=config.lr, device=config.device,
                                 seed=config.seed + iteration,
                                 init=self.state["trainee"], resume=True))

    def gate(self, iteration: int, candidate: Path) -> dict:
        """Candidate against the best network (resumable: a finished gate is read back from gate.json)."""
        config = self.config
        path = self.folder(iteration) / "gate.json"
        if path.exists():
            return json.loads(path.read_text())
        openings = load_openings(Path(config.openings) if config.openings else None, max(1, config.gate_games // 2),
                                 config.opening_plies, config.seed + iteration)
        stats = play_match(MoverSpec("network", str(candidate), nodes=config.gate_nodes),
                           MoverSpec("network", str(self.out / "best.onnx"), nodes=config.gate_nodes),
                           openings, config.gate_games, config.max_plies, config.workers, config.seed + iteration,
                           pgn=self.folder(iteration) / "gate.pgn", desc=f"gate {iteration}")
        low, high = stats.elo_interval()
        result = {"gate_wins": stats.wins, "gate_draws": stats.draws, "gate_losses": stats.losses,
                  "gate_score": stats.score, "gate_elo": _finite(stats.elo()), "gate_elo_low": _finite(low),
                  "gate_elo_high": _finite(high), "accepted": stats.score >= config.gate_threshold}
        path.write_text(json.dumps(result, indent=2))
        return result

    def iterate(self) -> dict:
        """One iteration (or the rest of an interrupted one); returns its log record."""
        config = self.config
        iteration = self.state["iteration"] + 1
        folder = self.folder(iteration)
        folder.mkdir(exist_ok=True)
        played = self_play(self.out / "best.onnx", folder / "games", config, iteration)
        checkpoint = self.train(iteration)
        candidate = self.export(checkpoint, folder / "candidate.onnx")
        gate = self.gate(iteration, candidate)
        from training.resnet.weights import load_file
        losses = load_file(checkpoint)["history"][-1]
        if gate["accepted"]:
            shutil.copyfile(candidate, self.out / "best.onnx")
            shutil.copyfile(checkpoint, self.out / "best.pt")
            self.state["best"] = str(self.out / "best.pt")
            self.state["elo"] += gate["gate_elo"] or 0.0
        record = {"iteration": iteration, "games_played": played,
                  **{k: losses.get(k) for k in ("train_policy_loss", "train_value_loss", "val_policy_loss",
                                                "val_value_loss", "train_samples")},
                  **gate, "gate_threshold": config.gate_threshold, "best_elo": self.state["elo"]}
        self.state.update(iteration=iteration, trainee=str(checkpoint))
        self.state["history"].append(record)
        self.save()
        return record


def _finite(value: float) -> Optional[float]:
    """JSON has no infinity: an Elo of +-inf (every game won or lost) is logged as None."""
    return value if np.isfinite(value) else None


def train_alphazero(config: AlphaZeroConfig) -> Path:
    """Run (or resume) the iterations; returns best.onnx, the best network so far."""
    from training.device import pick_device
    pick_device(config.device)  # a device this machine lacks is refused now, not after the first self-play
    run = Run(config)
    if run.state["iteration"]:
        print(f"resuming {run.out} after iteration {run.state['iteration']}")
    while run.state["iteration"] < config.iterations:
        record = run.iterate()
        print(record_line(record))
        verdict = "accepted" if record["accepted"] else "rejected"
        print(f"iteration {record['iteration']}: candidate scored {100 * record['gate_score']:.1f}% "
              f"({record['gate_wins']}/{record['gate_draws']}/{record['gate_losses']}): {verdict}; "
              f"best network {record['best_elo']:+.0f} Elo over the first")
    return run.out / "best.onnx"
