"""The settings of every training command, each with its default and help: their one home.

The modules that run them take these dataclasses (``training.resnet.train.train(TrainConfig(...))``),
``python -m training`` makes its options from them (training.config_cli) and
training.recipes.gpu passes them on. This module imports no PyTorch, so that the
command line starts at once and commands without a network run without it. (The corpus's settings are its own,
training.data.corpus.config.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evaluators.encoding import ENCODINGS
from training.config_cli import ALL_CORES, device_setting, seed_setting, setting
from training.data.corpus.config import CorpusConfig
from training.data.shards import DEFAULT_ENCODING
from training.data.targets import DEFAULT_TEMPERATURE

EVERY_RANDOM_CHOICE = "Seed of every random choice (games, sampling, noise)."
#: ``--ray`` of the commands that run engines on a Ray cluster (training.uci.workers).
RAY_HELP = ("Run on a Ray cluster instead of --workers local processes: 'auto' (the cluster `ray start` runs here, or "
            "RAY_ADDRESS), HOST:PORT or ray://HOST:PORT (Ray's client), or 'local' (a Ray instance started here). "
            "Every node needs this package, the engine and any file named at the same path.")


@dataclass
class TrainConfig:
    """Supervised policy-value training (training.resnet.train)."""

    data: list[str] = setting(help="A joined corpus (e.g. ~/.cache/hackmate/corpus) or its pack (corpus-pack), "
                                   "label-shard directories, old `prepare` datasets and MultiPV .jsonl(.gz) files, "
                                   "in any mix; a corpus and a pack bring their own validation split.",
                              path="any", exists=True)
    out: str = setting(help="Run directory.", path="folder")
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
                                     "(repeatable).", path="folder", exists=True)
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
    frozen_blocks: int = setting(0, "Keep the first layer and the first N residual blocks as they start (weights "
                                    "and BatchNorm statistics): a fine-tune on few positions (a person's games) "
                                    "trains only the rest.", bounds=(0, None))


@dataclass
class LabelConfig:
    """Labelling positions with an engine's top moves (training.uci.label)."""

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
                                      "(repeatable).", path="folder", exists=True)
    encoding: str = setting(DEFAULT_ENCODING, "Board encoding of the shards.", choices=tuple(ENCODINGS))
    shard_size: int = setting(4096, "Positions per shard.")
    ray: Optional[str] = setting(None, RAY_HELP)
    max_minutes: float = setting(0.0, "Stop cleanly after this long (rerun to continue; 0: no limit).")


@dataclass(frozen=True)
class SelfPlayOptions:
    """What makes self-play games differ, and decided more often, beyond the engine and its node budget
    (training.uci.selfplay).

    The shared corpus's parts (../shared/data/SOURCES.md) are Stockfish with ``node_budgets`` (1000, 2000, 4000),
    a Polyglot ``book`` walked for 4 to 16 plies and one random ply in 30% of the games."""

    random_plies: int = setting(6, "Random moves after the book line (from the start without a book), for variety.")
    seed: int = seed_setting("Seed of the openings, the random plies and the node budgets (with the game's number).")
    node_ratio: float = setting(1.0, "Above 1: one side, alternating game by game, searches nodes / ratio (more "
                                     "decisive games).")
    book: Optional[str] = setting(None, "Openings: a Polyglot .bin book (weighted random walk) or a PGN (a random "
                                        "game's first plies); the random plies follow the book line.", path="file",
                                  exists=True)
    book_plies: int = setting(16, "Longest book line.")
    decisive_only: bool = setting(False, "Keep decisive games only; the game count counts those.")
    node_budgets: tuple[int, ...] = setting((), "Nodes a move, one of these chosen at random for each game "
                                                "(empty: the nodes given to selfplay).")
    random_share: float = setting(1.0, "Share of the games that get the random plies (the shared corpus: 1 random "
                                       "ply in 0.3).", bounds=(0, 1))
    book_min_plies: int = setting(0, "Shortest book line: each game's line is drawn between this and the longest "
                                     "(0: the longest, or until out of book).")


@dataclass
class DistilConfig:
    """Policy distillation into training targets (training.resnet.distil)."""

    sources: list[str] = setting(help="Training data whose targets get the teachers' policy (a corpus or its pack, "
                                      "shard directories, `prepare` datasets, MultiPV files).")
    teachers: list[str] = setting(help="A network (.pt) whose policy goes into the targets; repeat for an ensemble "
                                       "(probabilities averaged).", path="file", exists=True)
    out: str = setting(help="Shard directory.", path="folder")
    share: float = setting(0.5, "The teachers' share of each new policy target.", bounds=(0, 1, True))
    top_k: int = setting(8, "Teacher moves kept per position (renormalised).", bounds=(1, None))
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

    pgn: list[str] = setting(help="PGN files whose games give the won and lost positions (--won-lost); their order "
                                  "numbers the games held out, so keep it when adding files.")
    out: str = setting(help="Run directory.", path="folder")
    labels: list[str] = setting([], "Engine-scored moves for sibling pairs: a MultiPV .jsonl(.gz) file or a "
                                    "label-shard directory (repeatable).", path="any", exists=True)
    eval_sets: list[str] = setting([], "Named validation set (deepchess-valset): its held-out positions stay out of "
                                       "training and every network is measured on it too (repeatable).",
                                   path="file", exists=True)
    per_game: int = setting(10, "Random positions per decisive game labelled by its result.")
    won_lost: str = setting("eval", "Where a position's won or lost label comes from. eval: in a game with [%eval] "
                                    "annotations, every annotated position whose expected score for White (W - L "
                                    "by the W/D/L model, -1..1) is beyond --eval-threshold, won above it, lost below "
                                    "minus it, the others left out; in a game without, its result (as with "
                                    "result). result: the game's result in every game (the paper's rule: "
                                    "--per-game positions of each decisive game; the comparators of November "
                                    "2026).", choices=("eval", "result"))
    eval_threshold: float = setting(0.5, "With --won-lost eval: the expected score (W - L) beyond which an annotated "
                                         "position is won or lost. 0.5 is a score of three quarters of a point "
                                         "(W + D/2 = 0.75), nearer a win than a draw: about a pawn (100 to 110 cp "
                                         "at any ply).", bounds=(0.0, 1.0))
    pretrain_epochs: int = setting(5, "Autoencoder epochs per layer.")
    tower_positions: int = setting(0, "Positions of the stages where a tower learns alone (Pos2Vec pretraining; the "
                                      "distilled tower regressing the teacher's features, without --student), drawn "
                                      "at random from the training positions and sibling children (0: all): with "
                                      "every annotated position they are millions, and each epoch of these stages "
                                      "passes over all of them.", bounds=(0, None))
    epochs: int = setting(20, "Siamese epochs (fresh pairs each).")
    pairs_per_epoch: int = setting(200_000, "Training pairs drawn for each epoch.")
    distill_epochs: int = setting(20, "Epochs of the distilled network and of the small network from scratch.")
    lr: float = setting(1e-3, "Adam learning rate of the comparators.")
    lr_decay: float = setting(0.99, "Learning rate factor per epoch of the Siamese, distilled and from-scratch "
                                    "training (below 1 anneals, so that the last epoch, the one kept, is a settled "
                                    "one).")
    teachers: list[str] = setting([], "Distil from this trained comparator (teacher.pt of a run on the same games) "
                                      "instead of pretraining and training one; repeated, their probabilities are "
                                      "averaged (an ensemble).", path="file", exists=True)
    student: Optional[str] = setting(None, "Continue distilling this small network (student.pt of a run, or "
                                           "weights/comparator.pt) instead of starting with its tower regressing the "
                                           "teacher's features; with --value-network, the network it teaches.",
                                     path="file", exists=True)
    value_network: Optional[str] = setting(None, "A policy-value network (an engine .onnx, e.g. weights/resnet.onnx) "
                                                 "that teaches --student directly: the won-vs-lost pairs become two "
                                                 "training positions drawn at random, the first the better for White "
                                                 "with probability sigmoid((v1 - v2) / --value-temperature), v its "
                                                 "value for White (cached for the run's positions); sibling pairs "
                                                 "keep their engine labels. No Pos2Vec, Siamese or from-scratch stage.",
                                           path="file", exists=True)
    value_temperature: float = setting(0.1, "With --value-network: how sharply a difference in value (expected "
                                            "score, -1..1) decides a pair's target.", bounds=(0, None, True))
    batch: int = setting(256, "Pairs per optimiser step of the comparators.", bounds=(1, None))
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
                            "resume.", path="folder")
    expert_pgn: list[str] = setting([], "PGN games whose moves pre-fill the replay buffer as expert transitions "
                                        "(repeatable).", path="file", exists=True)
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
                                   "import-onnx's output).", path="file", exists=True)
    out: str = setting(help="Run directory: checkpoint.pt, history.json, curves.png, ppo.onnx. Rerun to resume.",
                       path="folder")
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
                                            "PGN (a random game's first plies).", path="file", exists=True)
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

    checkpoint: str = setting(help="Policy-value weights to start from (a training checkpoint or weights file).",
                              path="file", exists=True)
    out: str = setting(help="Run directory: state.json, best.pt/best.onnx, iterationNNN/, history.json, curves.png. "
                            "Rerun to resume.", path="folder")
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
                                            "plies).", path="file", exists=True)
    opening_plies: int = setting(6, "Random plies of each gating opening, or with a PGN: plies of each game.")
    workers: int = setting(2, "Processes playing games.")
    device: str = device_setting("Training device: auto (CUDA where PyTorch sees a device, else the CPU), cpu or "
                                 "cuda.")
    seed: int = seed_setting(EVERY_RANDOM_CHOICE)


@dataclass
class QuantizeConfig:
    """An int8 copy of a policy-value network and its comparison with fp32 (training.resnet.quantize)."""

    network: Path = setting(help="The fp32 ONNX network.", path="file", exists=True)
    out: Path = setting(help="The int8 ONNX file.", path="file")
    calibration: Path = setting(help="PGN whose positions calibrate the activation ranges (training-like games).",
                                path="file", exists=True)
    positions: Path = setting(help="PGN of held-out games for the agreement measurement.", path="file", exists=True)
    calibration_count: int = setting(1024, "Calibration positions (whole batches of 64).")
    count: int = setting(10000, "Positions compared.")
    keep_heads: bool = setting(True, "Keep the policy and value heads' last layers in fp32.")
    #: onnxruntime's activation-range calibration: the 99.999th percentile of what is seen leaves out the rare
    #: outliers that widen a min/max range (96.4% top-move agreement against 95.3% on the shipped network).
    method: str = setting("percentile", "Activation-range calibration.", choices=("percentile", "minmax"))


# --- commands that pass a few values on ---------------------------------------------------------------------

@dataclass
class PrepareConfig:
    """`prepare`: PGN and EPD files into an old one-hot dataset (training.data.prepared)."""

    out: Path = setting(help="Dataset directory.", path="folder")
    encoding: str = setting(DEFAULT_ENCODING, "Board encoding.", choices=tuple(ENCODINGS))
    skip_plies: int = setting(8, "Skip the first N plies of every game.")
    min_rating: int = setting(0, "Skip games with a player rated below this.")
    require_eval: bool = setting(False, "Keep only moves annotated with [%eval] (engine moves).")
    workers: int = setting(2, "Parallel reader processes.")
    no_dedupe: bool = setting(False, "Keep duplicate positions.")


@dataclass
class ImportLabelsConfig:
    """`import-labels`: a MultiPV file or an old one-hot dataset as a shard directory."""

    out: Path = setting(help="Shard directory.", path="folder")
    encoding: str = setting(DEFAULT_ENCODING, "Board encoding (MultiPV files).", choices=tuple(ENCODINGS))
    temperature: float = setting(DEFAULT_TEMPERATURE, "Soft-policy temperature in centipawns (MultiPV files).")


@dataclass
class CorpusCommandConfig:
    """What `corpus` does instead of preparing and joining, and which corpus `corpus-pack` packs."""

    info: bool = setting(False, "Print what the cache holds and its size on disk; prepare nothing.")
    prune: bool = setting(False, "Remove the joined corpora other than the current one (about 70 MiB each, rebuilt "
                                 "from the parts if asked for again) and the parts it does not join; prepare nothing. "
                                 "Refused while another corpus run holds the cache.")
    directory: Optional[Path] = setting(None, "The joined corpus to pack (default: the cache's current one, "
                                              "ROOT/corpus).", path="folder", exists=True)


@dataclass
class NetworkFileConfig:
    """Where a command that turns one network file into another writes it (`export`, `weights`, `average`,
    `export-comparator`)."""

    out: Path = setting(help="The file written.", path="file")


@dataclass
class AverageConfig:
    """`average`: networks of one shape averaged tensor by tensor (training.resnet.swa)."""

    shares: tuple[float, ...] = setting((), "Each network's share of the mean, in order (repeat once per network; "
                                            "default: equal shares).")


@dataclass
class FiguresConfig:
    """Where a measuring command finds its test set and writes its figures besides printing them."""

    test: Path = setting(help="Labelled shard directory, e.g. testset/.", path="folder", exists=True)
    out: Optional[Path] = setting(None, "Also write the figures here (JSON).", path="file")


@dataclass
class ImportOnnxConfig:
    """`import-onnx` and `import-leela`: PyTorch weights rebuilt from an exported policy-value network or a Leela
    network, their batch norm statistics measured on real positions (training.resnet.onnx_import, leela_import)."""

    calibration: Path = setting(help="PGN whose positions give the BatchNorm statistics (e.g. the games it was "
                                     "trained on, or will be fine-tuned on).", path="file", exists=True)
    positions: int = setting(4096, "Calibration positions.")


@dataclass
class EngineCeilingConfig:
    """`evaluate-engine`: a UCI engine at a labelling setting on the test set (training.uci.label)."""

    engine: str = setting("stockfish", "UCI engine command line.")
    nodes: int = setting(5000, "Nodes per position.")
    multipv: int = setting(4, "MultiPV lines, as the labeller's --multipv.")
    positions: int = setting(1000, "Test positions sampled (0: all).")
    seed: int = seed_setting("Seed of the sample.")


@dataclass
class AgreementConfig:
    """`agreement`: how often the engine's move at `go nodes 1` is Stockfish's or the game's (training.uci.agreement);
    `policy-agreement`: networks' policies on the same positions (training.resnet.played)."""

    command: str = setting("", "UCI engine command line (default: this engine, run by the Python that runs this "
                               "command).")
    options: list[str] = setting([], "A UCI option of the engine (repeatable), over the defaults TacticalPriors=0 and "
                                     "MaterialBlend=0.", metavar="NAME=VALUE")
    weights: Optional[str] = setting(None, "The engine's Weights option: a network file, or a shipped file's name.")
    from_ply: int = setting(16, "Positions from this ply of each game on.", bounds=(0, None))
    played: bool = setting(False, "Every move played from --from-ply on (games without [%eval], e.g. a person's), not "
                                  "only Stockfish's [%eval] moves.")
    count: int = setting(3000, "Positions sampled (0: every eligible one).", bounds=(0, None))
    seed: int = seed_setting("Seed of the sample.")
    validation_period: int = setting(CorpusConfig.validation_period, "The corpus's validation split: games whose "
                                     "identity (a hash of the moves) is a multiple of this.", bounds=(2, None))
    all_games: bool = setting(False, "Take every game, not only the corpus's validation split.")
    player: str = setting("", "Only the moves of the player whose name (White or Black header) contains this, "
                              "case-insensitively (the corpus's --player).")
    workers: int = setting(1, "Engines asked at once, each about its share of the positions (the figures do not "
                              "depend on it).", bounds=(1, None))
    as_json: bool = setting(False, "Print the figures as JSON.")


@dataclass
class PolicyAgreementConfig:
    """`policy-agreement`: networks' policies on the positions `agreement` asks about (training.resnet.played)."""

    networks: list[Path] = setting(help="A network file the engine plays: ONNX (e.g. an export) or a Leela network "
                                        "(.pb.gz, .pb) (repeatable: each on the same positions, the first the "
                                        "reference of the others' gain).", path="file", exists=True)
    threads: int = setting(ALL_CORES, "Threads of each network.", bounds=(1, None))


@dataclass
class LabelCommandConfig:
    """What `label` writes besides LabelConfig's settings, and the fresh self-play games it may label too."""

    out: Optional[Path] = setting(None, "Shard directory.", path="folder")
    select_only: Optional[Path] = setting(None, "Write the positions this run would label (sampled, deduplicated, "
                                                "not excluded) to this EPD file (.xz/.gz: compressed) instead of "
                                                "labelling: a compact source to carry to many cores.", path="file")
    selfplay_games: int = setting(0, "Also label this many fresh self-play games (played first, resumable).")
    selfplay_engine: str = setting("", "Engine of the self-play games (default: --engine).")
    selfplay_nodes: int = setting(4000, "Nodes per self-play move.")
    selfplay_random_plies: int = setting(SelfPlayOptions.random_plies, "Random plies after the book line.")
    selfplay_book: Optional[str] = setting(None, "Self-play openings: a Polyglot .bin book or a PGN.", path="file",
                                           exists=True)


@dataclass
class LabelSpeedConfig:
    """`label-speed`: positions labelled per second per core (training.uci.speed)."""

    engine: str = setting("stockfish", "UCI engine command line.")
    positions: int = setting(100, "Positions per measurement.")
    budgets: tuple[int, ...] = setting((5000, 25000), "Node budget (repeatable).")
    ks: tuple[int, ...] = setting((1, 4, 8), "MultiPV K (repeatable).")
    min_ply: int = setting(8, "Positions from this ply of each game on.")
    out: Optional[Path] = setting(None, "Also write the table as JSON.", path="file")


@dataclass
class AnnotateConfig:
    """`annotate`: an engine's [%eval] on every move of a PGN (training.uci.selfplay)."""

    out: Path = setting(help="The annotated PGN.", path="file")
    command: str = setting("stockfish", "UCI engine command line.")
    nodes: int = setting(5000, "Nodes per analysed position.")
    workers: int = setting(2, "Parallel engine processes.")


@dataclass
class SelfPlayConfig:
    """`selfplay`: the games, the engine and its node budget; SelfPlayOptions make the games differ."""

    out: Path = setting(help="The PGN file of the games (.pgn.xz, .pgn.gz: compressed, as the shared corpus's "
                             "parts).", path="file")
    command: str = setting("", "UCI engine command line (default: this engine with its shipped network, run by the "
                               "Python that runs this command).")
    games: int = setting(100, "Games to play (rerun the same command to resume).")
    nodes: str = setting("400", "Nodes per move; several, comma-separated (1000,2000,4000): one chosen at random per "
                                "game.")
    workers: int = setting(2, "Games played at once (an engine process each).")
    ray: Optional[str] = setting(None, RAY_HELP)


@dataclass
class DeepChessEvalConfig:
    """`deepchess-valset` and `deepchess-eval`: a named validation set, and comparators measured on such sets."""

    out: Path = setting(help="Validation set .npz.", path="file")
    eval_sets: list[Path] = setting(help="Validation set (repeatable).", path="file", exists=True)
    search_depth: Optional[int] = setting(None, "Also pick each held-out parent's child by the engine's own search to "
                                                "this depth, restricted to the scored children (`go searchmoves`): the "
                                                "comparison search for .onnx comparators, material alpha-beta as the "
                                                "baseline.", bounds=(1, 4))
    parents: int = setting(2000, "Held-out parents searched with --search-depth.")
    engine: Optional[str] = setting(None, "A reference UCI engine (a command, e.g. stockfish or its path): its "
                                          "won-vs-lost accuracy, ranking each pair by its scores from White's side.")
    engine_nodes: str = setting("1", "The reference engine's nodes per position; several, comma-separated "
                                     "(1,20000): a figure each.")
    value_networks: list[Path] = setting([], "A policy-value network (an engine .onnx, e.g. weights/resnet.onnx): its "
                                             "won-vs-lost accuracy, ranking each pair by its values for White with no "
                                             "search (repeatable).", path="file", exists=True)


@dataclass
class ArenaConfig:
    """`rl-eval`: networks against a random mover and Stockfish at a Skill Level (training.rl.arena)."""

    players: list[str] = setting(help="An engine evaluator, EVAL or EVAL:WEIGHTS (e.g. dqn:runs/dqn/dqn.onnx, "
                                      "resnet); repeatable: every player meets the same opponents.")
    nodes: int = setting(0, "0: players play alone (their policy's best move, a DQN's greedy move); N: through PUCT, "
                            "N nodes.")
    opponents: list[str] = setting(["random", "stockfish"], "Opponents (repeatable): a uniformly random mover, "
                                                            "Stockfish at --skill.", choices=("random", "stockfish"))
    skill: int = setting(0, "Stockfish's Skill Level.")
    stockfish_nodes: int = setting(20_000, "Stockfish's nodes a move.")
    games: int = setting(100, "Games per player and opponent, colours alternating.")
    openings: Optional[Path] = setting(None, "PGN or EPD openings, each played twice (default: the start position).",
                                       path="file", exists=True)
    opening_plies: int = setting(8, "With a PGN: plies of each game.")
    max_plies: int = setting(400, "Games are drawn here.")
    workers: int = setting(2, "Processes playing games.")
    pgn_dir: Optional[Path] = setting(None, "Write each pairing's games to a PGN here.", path="folder")
    seed: int = seed_setting(EVERY_RANDOM_CHOICE)


@dataclass
class GpuRecipeConfig:
    """The GPU recipe's own settings (training.recipes.gpu); the labelling and training ones are LabelConfig's and
    TrainConfig's."""

    out: Path = setting(help="Work and result folder.", path="folder")
    engine: str = setting("stockfish", "Labelling engine: a command, or a path such as .carry/stockfish (or "
                                       ".carry/stockfish.xz).")
    minutes: float = setting(8.0, "Time budget of this step.")
    deliver: Optional[Path] = setting(None, "Copy the deliverables here after this step (e.g. $OUT).", path="folder")
    selfplay_games: int = setting(0, "Fresh Stockfish self-play games to label.")
    selfplay_nodes: int = setting(2000, "Stockfish's nodes per self-play move.")
    selfplay_random_plies: int = setting(8, "Random plies opening every self-play game.")
    extra_data: list[Path] = setting([], "More training data already labelled (shard directory, MultiPV file; "
                                         "repeatable).", path="any", exists=True)
    test_dir: Optional[Path] = setting(None, "Test set (shard directory): excluded from labelling and training, "
                                             "evaluated at the end.", path="folder", exists=True)
    gpus: int = setting(0, "GPUs that train, one process each: above 1 the training runs under torchrun "
                           "(DistributedDataParallel, --batch-size the batch of all of them); 0: every GPU PyTorch "
                           "sees.", bounds=(0, None))
