"""The settings of every training command, each with its default and help: their one home.

The modules that run them take these dataclasses (``training.train.train(TrainConfig(...))``),
``python -m training`` makes its options from them (training.config_cli) and
training.gpu_recipe passes them on. This module imports no PyTorch, so that the
command line starts at once and commands without a network run without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evaluators.encoding import ENCODINGS
from training.config_cli import ALL_CORES, device_setting, seed_setting, setting
from training.shards import DEFAULT_TEMPERATURE

EVERY_RANDOM_CHOICE = "Seed of every random choice (games, sampling, noise)."


@dataclass
class TrainConfig:
    """Supervised policy-value training (training.train)."""

    data: list[str] = setting(help="A joined corpus (e.g. ~/.cache/hackmate/corpus) or its pack (corpus-pack), "
                                   "label-shard directories, old `prepare` datasets and MultiPV .jsonl(.gz) files, "
                                   "in any mix; a corpus and a pack bring their own validation split.")
    out: str = setting(help="Run directory.")
    blocks: int = setting(6, "Residual blocks of the network.")
    filters: int = setting(64, "Channels of every residual block.")
    epochs: int = setting(4, "Passes over the training data (with --budget-minutes: a cap).")
    batch_size: int = setting(512, "Positions per gradient step.")
    lr: float = setting(2e-3, "Peak learning rate (AdamW, after a linear warm-up).")
    weight_decay: float = setting(1e-4, "AdamW weight decay.")
    schedule: str = setting("cosine", "Learning-rate schedule after the warm-up: cosine annealing to zero, or step "
                                      "(divided by 10 at a third and at two thirds of the run).",
                            choices=("cosine", "step"))
    label_smoothing: float = setting(0.0, "Share of a uniform distribution over all 4672 move slots mixed into the "
                                          "policy target.")
    result_weight: float = setting(0.0, "Share of the game result in the value target; the rest is the engine's "
                                        "W/D/L (positions with only one of the two use that one).")
    temperature: float = setting(0.0, "If > 0: recompute engine-labelled soft policies from their scores at this "
                                      "temperature (cp).")
    value_loss_weight: float = setting(1.0, "Weight of the value loss beside the policy loss.")
    grad_clip: float = setting(5.0, "Gradient norm clip.")
    validation: float = setting(0.05, "Fraction held out: whole games where the game is known, else by position "
                                      "key.")
    max_samples: int = setting(0, "Use at most this many samples (0: all).")
    device: str = device_setting()
    precision: str = setting("auto", "Arithmetic of the forward pass: bf16 (bfloat16 autocast), fp32, or auto: bf16 on "
                                     "a GPU and on a CPU with native bfloat16 (AVX-512 BF16 or AMX), where it trains "
                                     "about 1.8 times as fast as fp32; fp32 elsewhere.",
                             choices=("auto", "bf16", "fp32"))
    seed: int = seed_setting("Seed of the --max-samples subset, the data order, the mirroring and a new network's "
                             "initial weights (the validation split does not depend on it): runs to average differ "
                             "by it.")
    resume: bool = setting(False, "Continue from the run directory's checkpoint (mid-epoch too).")
    init: str = setting("", "Start from this checkpoint's or weights file's network (fine-tuning), e.g. "
                            "weights/resnet.pt.")
    grow: bool = setting(False, "With --init: the network may be smaller than --blocks x --filters; it is embedded "
                                "in the larger network so that training starts from the same function (new blocks "
                                "as identities, new channels at zero).")
    squeeze: int = setting(0, "Squeeze-and-excitation units in every residual block, with a bottleneck of filters / "
                              "this many units (Lc0's SE-ResNet; 0: none). With --init --grow an SE-less network "
                              "gains them as identities.")
    exclude: list[str] = setting([], "Shard directory (e.g. the test set) whose positions are dropped from the data "
                                     "(repeatable).")
    max_minutes: float = setting(0.0, "Stop at a batch boundary after this long with a resumable checkpoint (0: no "
                                      "limit).")
    budget_minutes: float = setting(0.0, "Length of the run in minutes spent training and validating, summed over "
                                         "resumed steps: the learning-rate schedule runs over it (or over the "
                                         "epochs, if --epochs, then a cap, ends the run first) and the run ends "
                                         "there, mid-epoch if need be (0: the epochs' steps set the schedule).")
    swa_every: int = setting(0, "Every this many steps fold the weights into a running mean (stochastic weight "
                                "averaging, as Lc0's swa_steps), validated each epoch and written as OUT/swa.pt (0: "
                                "off).")
    swa_max_n: int = setting(10, "The newest snapshot weighs 1/(min(n, this)+1) in the mean (Lc0's swa_max_n); 0: a "
                                 "plain mean.")
    mirror: bool = setting(False, "Show a random half of the positions without castling rights mirrored a-file <-> "
                                  "h-file, with mirrored policy targets (the rules are symmetric there): more distinct "
                                  "positions per epoch.")


@dataclass
class LabelConfig:
    """Labelling positions with an engine's top moves (training.label)."""

    sources: list[Path] = setting(help="PGN/EPD files (plain, .gz, .bz2, .xz) whose positions are labelled.")
    out: Path = setting(help="Shard directory.")
    engine: str = setting("stockfish", "UCI engine command line.")
    nodes: int = setting(25000, "Nodes per position.")
    multipv: int = setting(6, "Moves labelled per position (K).")
    temperature: float = setting(DEFAULT_TEMPERATURE, "Soft-policy temperature in centipawns: softmax(score / T) "
                                                      "over the K moves.")
    workers: int = setting(ALL_CORES, "Engine processes (default: one per core).")
    seed: int = seed_setting("Seed of --per-game sampling and self-play openings.")
    min_ply: int = setting(0, "Skip positions before this ply.")
    per_game: int = setting(0, "Positions sampled per game (0: all).")
    max_positions: int = setting(0, "Select at most this many positions in all, those labelled by earlier runs "
                                    "included (0: all).")
    exclude: list[Path] = setting([], "Shard directory whose positions are never labelled here, e.g. the test set "
                                      "(repeatable).")
    encoding: str = setting("planes18", "Board encoding of the shards.", choices=tuple(ENCODINGS))
    shard_size: int = setting(4096, "Positions per shard.")
    ray: Optional[str] = setting(None, "Run the work units as Ray tasks: 'local' (a Ray instance here), 'auto' (the "
                                       "running cluster) or a cluster address.")
    max_minutes: float = setting(0.0, "Stop cleanly after this long (rerun to continue; 0: no limit).")


@dataclass
class DistilConfig:
    """Policy distillation into training targets (training.distil)."""

    sources: list[str] = setting(help="Training data whose targets get the teachers' policy (a corpus or its pack, "
                                      "shard directories, `prepare` datasets, MultiPV files).")
    teachers: list[str] = setting(help="A network (.pt) whose policy goes into the targets; repeat for an ensemble "
                                       "(probabilities averaged).")
    out: str = setting(help="Shard directory.")
    share: float = setting(0.5, "The teachers' share of each new policy target.")
    top_k: int = setting(8, "Teacher moves kept per position (renormalised).")
    mirror: bool = setting(True, "Also ask each teacher about the board mirrored a-file <-> h-file where there are no "
                                 "castling rights, half each.")
    temperature: float = setting(0.0, "Soft-policy temperature of MultiPV sources in centipawns, as `train "
                                      "--temperature` (0: as stored).")
    batch_size: int = setting(1024, "Positions per teacher evaluation.")
    threads: int = setting(2, "PyTorch CPU threads.")
    device: str = device_setting("Where the teachers run: auto (CUDA where PyTorch sees a device, else the CPU), cpu "
                                 "or cuda.")


@dataclass
class DeepChessConfig:
    """The DeepChess pipeline: data, held-out games and the three training stages (training.deepchess)."""

    pgn: list[str] = setting(help="PGN files whose decisive games give the positions.")
    out: str = setting(help="Run directory.")
    labels: list[str] = setting([], "Engine-scored moves for sibling pairs: a MultiPV .jsonl(.gz) file or a "
                                    "label-shard directory (repeatable).")
    eval_sets: list[str] = setting([], "Named validation set (deepchess-valset): its held-out positions stay out of "
                                       "training and every network is measured on it too (repeatable).")
    per_game: int = setting(10, "Random positions per decisive game.")
    pretrain_epochs: int = setting(5, "Autoencoder epochs per layer.")
    epochs: int = setting(20, "Siamese epochs (fresh pairs each).")
    pairs_per_epoch: int = setting(200_000, "Training pairs drawn for each epoch.")
    distill_epochs: int = setting(20, "Epochs of the distilled network and of the small network from scratch.")
    lr: float = setting(1e-3, "Adam learning rate of the comparators.")
    lr_decay: float = setting(0.99, "Learning rate factor per epoch of the Siamese, distilled and from-scratch "
                                    "training (below 1 anneals, so that the last epoch, the one kept, is a settled "
                                    "one).")
    teachers: list[str] = setting([], "Distil from this trained comparator (teacher.pt of a run on the same games) "
                                      "instead of pretraining and training one; repeated, their probabilities are "
                                      "averaged (an ensemble).")
    student: Optional[str] = setting(None, "Continue distilling this small network (student.pt of a run) instead of "
                                           "starting with its tower regressing the teacher's features.")
    sibling_share: float = setting(0.5, "Share of sibling pairs among the training pairs (with --labels).")
    sibling_margin: float = setting(0.05, "Siblings whose expected scores (-1..1) differ by less count as tied and "
                                          "are skipped.")
    sibling_quiet: bool = setting(False, "Encode each sibling child after the captures material with capture "
                                         "quiescence expects (the quiet position the comparison search judges), not "
                                         "right after its move.")
    validation: float = setting(0.1, "Fraction of games held out.")
    val_pairs: int = setting(20_000, "Held-out won-vs-lost pairs.")
    val_parents: int = setting(10_000, "Held-out sibling parents kept.")
    seed: int = seed_setting("Seed of the sampled positions, the pairs and the networks' first weights (the held-out "
                             "games do not depend on it).")
    workers: int = setting(ALL_CORES, "Processes encoding the sibling children (the same data for any number; "
                                      "default: one per core).")
    device: str = device_setting()


@dataclass
class DQNConfig:
    """DQN on self-play after expert transitions (training.rl.dqn)."""

    out: str = setting(help="Run directory: checkpoint.pt, replay.npz, history.json, curves.png, dqn.onnx. Rerun to "
                            "resume.")
    expert_pgn: list[str] = setting([], "PGN games whose moves pre-fill the replay buffer as expert transitions "
                                        "(repeatable).")
    expert_transitions: int = setting(50_000, "Expert transitions to pre-fill.")
    steps: int = setting(100_000, "Self-play plies in all.")
    epsilon_start: float = setting(1.0, "Exploration rate at the first self-play ply.")
    epsilon_end: float = setting(0.01, "Exploration rate after --epsilon-steps.")
    epsilon_steps: int = setting(50_000, "Plies of linear epsilon decay.")
    buffer: int = setting(100_000, "Replay buffer size (transitions).")
    batch_size: int = setting(64, "Transitions per gradient update.")
    lr: float = setting(1e-4, "Adam learning rate.")
    gamma: float = setting(0.99, "Discount per own move.")
    target_sync: int = setting(500, "Updates between target-network syncs.")
    train_every: int = setting(4, "Self-play plies per gradient update.")
    reward: str = setting("result", "result: +1/0/-1 at the end of the game; material: also the mover's material "
                                    "change after the opponent's reply (1/3/3/5/9, a pawn worth 0.1).",
                          choices=("result", "material"))
    expert_weight: float = setting(0.0, "Weight of the expert loss (--expert-loss) on the expert transitions, which "
                                        "then stay in the buffer for good (0: the paper's DQN, whose expert "
                                        "transitions self-play overwrites in time).")
    expert_margin: float = setting(0.8, "Margin by which the expert's move must beat every other legal move's "
                                        "Q-value (margin loss).")
    expert_loss: str = setting("margin", "margin: DQfD's large-margin loss; cross-entropy: softmax(Q / "
                                         "--expert-temperature) over the legal moves against the expert's move (moves "
                                         "every legal Q-value at once).", choices=("margin", "cross-entropy"))
    expert_temperature: float = setting(0.1, "Temperature of the cross-entropy expert loss (the engine reads Q-values "
                                             "at QTemperature 0.1).")
    pretrain_updates: int = setting(0, "Gradient steps on the expert transitions alone before self-play begins "
                                       "(DQfD's pre-training).")
    blocks: int = setting(2, "Residual blocks of the Q-network.")
    filters: int = setting(32, "Channels of the Q-network.")
    random_plies: int = setting(4, "Random plies opening every self-play game.")
    max_plies: int = setting(300, "Self-play and evaluation games are drawn here.")
    eval_every: int = setting(10_000, "Plies between evaluations of the greedy network against a random mover (0: "
                                      "never).")
    eval_games: int = setting(10, "Games per evaluation.")
    checkpoint_every: int = setting(10_000, "Plies between checkpoints (and exports).")
    device: str = device_setting()
    threads: int = setting(1, "PyTorch CPU threads (the network acts one position at a time: more threads rarely "
                              "help).")
    seed: int = seed_setting(EVERY_RANDOM_CHOICE)


@dataclass
class PPOConfig:
    """PPO with MCTS against a Stockfish curriculum (training.rl.ppo)."""

    checkpoint: str = setting(help="Policy-value weights to fine-tune (a training checkpoint, weights/resnet.pt, or "
                                   "import-onnx's output).")
    out: str = setting(help="Run directory: checkpoint.pt, history.json, curves.png, ppo.onnx. Rerun to resume.")
    updates: int = setting(50, "PPO updates in all.")
    games_per_update: int = setting(8, "Games against Stockfish per update.")
    epochs: int = setting(4, "Passes over each update's moves.")
    minibatch: int = setting(128, "Moves per gradient step.")
    lr: float = setting(2e-5, "Adam learning rate.")
    gamma: float = setting(0.99, "Discount per own move.")
    lam: float = setting(0.95, "GAE lambda.")
    clip: float = setting(0.2, "PPO ratio clip.")
    value_weight: float = setting(0.5, "Weight of the value loss.")
    entropy_weight: float = setting(0.01, "Weight of the entropy bonus.")
    grad_clip: float = setting(0.5, "Gradient norm clip.")
    target_kl: float = setting(0.02, "Stop an update's passes once the approximate KL from the rollout policy passes "
                                     "1.5 x this (0: never).")
    start_level: int = setting(0, "Stockfish Skill Level of the first games.")
    max_level: int = setting(20, "Highest Skill Level of the curriculum.")
    window: int = setting(20, "Games of the current level the win rate is taken over.")
    promote_win_rate: float = setting(0.55, "Win rate (wins / games over the window) that promotes to the next "
                                            "level.")
    stockfish_nodes: int = setting(10_000, "Stockfish's nodes a move.")
    openings: Optional[str] = setting(None, "Injected openings: a Polyglot .bin book (a weighted random walk) or a "
                                            "PGN (a random game's first plies).")
    opening_share: float = setting(0.5, "Share of games started from --openings.")
    opening_plies: int = setting(8, "Longest opening line from --openings.")
    shaping: float = setting(0.0, "Weight of the potential-based central-control reward (the paper's 0.1; 0: result "
                                  "only).")
    policy_temperature: float = setting(1.0, "The policy PPO samples and trains is softmax(logits / T); below 1 it "
                                             "plays sharper (the raw policy of a small network, sampled, rarely beats "
                                             "Stockfish at Skill Level 0).")
    mcts_level: int = setting(4, "From this Skill Level on, moves come from alpha pi_PPO + (1 - alpha) pi_MCTS.")
    mcts_nodes: int = setting(64, "PUCT nodes of pi_MCTS.")
    alpha: float = setting(0.5, "Share of the network's policy in the blend.")
    mcts_temperature: float = setting(1.0, "pi_MCTS is the visit counts ** (1 / T), renormalised: below 1 it leans to "
                                           "the most visited move (raw 64-node visit counts sampled as they are lost "
                                           "25 of 32 games at Skill Level 0).")
    max_plies: int = setting(300, "Games are drawn here.")
    reset_value_head: bool = setting(False, "Start from the checkpoint's trunk and policy with a freshly initialised "
                                            "value head (a deliberately weak start, to see what PPO's value learning "
                                            "is worth in play).")
    value_trains_trunk: bool = setting(True, "Whether the value loss also trains the shared trunk; with "
                                             "--value-head-only the trunk learns from the policy loss alone, so a "
                                             "value head still learning cannot pull it away from the policy.")
    device: str = device_setting()
    threads: int = setting(1, "PyTorch CPU threads.")
    seed: int = seed_setting(EVERY_RANDOM_CHOICE)


@dataclass
class AlphaZeroConfig:
    """AlphaZero-style self-play, training and gating (training.rl.alphazero)."""

    checkpoint: str = setting(help="Policy-value weights to start from (a training checkpoint or weights file).")
    out: str = setting(help="Run directory: state.json, best.pt/best.onnx, iterationNNN/, history.json, curves.png. "
                            "Rerun to resume.")
    iterations: int = setting(10, "Iterations of self-play, training and gate.")
    games: int = setting(40, "Self-play games per iteration.")
    nodes: int = setting(100, "PUCT nodes per self-play move.")
    dirichlet_alpha: float = setting(0.3, "Dirichlet noise at the root: alpha.")
    dirichlet_weight: float = setting(0.25, "Dirichlet noise at the root: weight.")
    temperature_plies: int = setting(30, "Plies at the start of a game whose move is sampled by visit counts (then "
                                         "the best move).")
    max_plies: int = setting(300, "Games are drawn here.")
    window: int = setting(4, "Iterations of games the candidate trains on.")
    epochs: int = setting(1, "Training epochs per iteration.")
    batch_size: int = setting(256, "Training batch size.")
    lr: float = setting(3e-4, "Peak learning rate of each training (AdamW, cosine).")
    gate_games: int = setting(40, "Games of each gating match.")
    gate_nodes: int = setting(200, "PUCT nodes per move in gating games.")
    gate_threshold: float = setting(0.55, "Score the candidate needs to replace the best network.")
    openings: Optional[str] = setting(None, "PGN or EPD file of gating openings (default: --opening-plies random "
                                            "plies).")
    opening_plies: int = setting(6, "Random plies of each gating opening, or with a PGN: plies of each game.")
    workers: int = setting(2, "Processes playing games.")
    device: str = device_setting("Training device: auto (CUDA where PyTorch sees a device, else the CPU), cpu or "
                                 "cuda.")
    seed: int = seed_setting(EVERY_RANDOM_CHOICE)
