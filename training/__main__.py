"""Command line of the training package: `python -m training COMMAND --help`.

Every command is here, and only here. Its options come from the settings dataclasses of training.configs (and the
corpus's, training.data.corpus.config) through training.config_cli, so that each option's default, help and kind
are written once; a command passes what it is given on to the module that does the work.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import click

from hackmate_core.uci_engines import engine_command as _engine_command
from training.config_cli import options_from
from training.configs import (AgreementConfig, AlphaZeroConfig, AnnotateConfig, ArenaConfig, AverageConfig,
                              CorpusCommandConfig, DeepChessConfig, DeepChessEvalConfig, DistilConfig, DQNConfig,
                              EngineCeilingConfig, FiguresConfig, GpuRecipeConfig, ImportLabelsConfig,
                              ImportOnnxConfig, LabelCommandConfig, LabelConfig, LabelSpeedConfig, NetworkFileConfig,
                              PPOConfig, PolicyAgreementConfig, PrepareConfig, QuantizeConfig, SelfPlayConfig,
                              SelfPlayOptions, TrainConfig)
from training.data import cache, corpus
from training.data.corpus import CorpusConfig
from training.errors import clear_errors
from training.readable import figures_text
from training.engines import OWN_ENGINE
from training.recipes.gpu import LABEL_SETTINGS, RECIPE_DEFAULTS, TRAIN_SETTINGS

#: What a command's arguments name: checked by click before the command starts.
EXISTING = click.Path(exists=True)
EXISTING_FILE = click.Path(exists=True, dir_okay=False)
EXISTING_FILES = click.Path(exists=True, dir_okay=False, path_type=Path)


def _version() -> str:
    """The installed distribution's version, else pyproject.toml's (a source tree run without installing)."""
    from importlib import metadata
    try:
        return metadata.version("hackmate")
    except metadata.PackageNotFoundError:
        import re
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        found = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.M) if pyproject.exists() else None
        return found.group(1) if found else "unknown (not installed)"


def _command_line() -> str:
    """This command as it was typed, recorded in what it writes."""
    return " ".join(shlex.quote(a) for a in sys.argv)


def _out_help(text: str) -> dict:
    """NetworkFileConfig's ``--out`` with the help of the command it writes for."""
    return {"out": {"help": text}}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version())
def cli() -> None:
    """Data preparation, training and export for the engine's networks."""


# --- data --------------------------------------------------------------------------------------------------

@cli.command()
@click.argument("files", nargs=-1, required=True, type=EXISTING_FILES)
@options_from(PrepareConfig)
def prepare(files: tuple[Path, ...], out: Path, encoding: str, skip_plies: int, min_rating: int,
            require_eval: bool, workers: int, no_dedupe: bool) -> None:
    """Turn PGN (plain or .gz/.bz2/.xz) and EPD files into a training dataset."""
    from training.data.prepared import build_samples, save
    filters = {"skip_plies": skip_plies, "min_rating": min_rating, "require_eval": require_eval}
    samples, stats = build_samples(list(files), encoding, filters, workers, dedupe=not no_dedupe)
    save(samples, out, {"encoding": encoding, "files": [str(f) for f in files], "filters": filters,
                        "read": stats.summary()})
    click.echo(f"{out}: {len(samples)} samples ({stats.summary()})")


@cli.command("corpus")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@options_from(CorpusConfig, skip=("files",))
@options_from(CorpusCommandConfig, only=("info", "prune"))
def corpus_command(info: bool, prune: bool, files: tuple[str, ...], **kwargs) -> None:
    """Prepare every game and MultiPV file into the cache (each file once, reused after) and join them into the
    training corpus: one record per position, the test set left out, whole games held out for validation.
    Train on it with `python -m training train $HACKMATE_CACHE/corpus` (default ~/.cache/hackmate/corpus)."""
    from training.data.pgn import DataError
    if prune and (info or files):
        raise click.UsageError("--prune takes no FILES and no --info")
    if info:
        click.echo(corpus.info_text())
        return
    try:
        with cache.exclusive("corpus --prune" if prune else "corpus"):
            if prune:
                kept, removed = corpus.prune_stale()
            else:
                built = corpus.build(CorpusConfig(files=list(files), **kwargs), say=click.echo)
    except (DataError, cache.CacheBusy) as error:
        raise click.ClickException(str(error)) from None
    if prune:
        click.echo(f"kept the current corpus, {corpus.JOINS}/{kept.name}, and the parts it joins")
        for path, size in removed:
            click.echo(f"removed {path.relative_to(cache.root())}: {size / 2**20:,.1f} MiB")
        click.echo(f"freed {sum(size for _, size in removed) / 2**20:,.1f} MiB" if removed else
                   "nothing to prune: the cache holds only the current corpus and its parts")
        return
    click.echo(built.text())
    click.echo(f"train with: python -m training train {cache.root() / corpus.CURRENT} --out runs/NAME ...")


@cli.command("corpus-pack")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@options_from(CorpusCommandConfig, only=("directory",), rename={"directory": "--corpus"})
def corpus_pack_command(out: Path, directory: Optional[Path]) -> None:
    """Write the corpus's training columns and validation split as one compressed file OUT, which `train` reads as
    it reads the corpus (to train on a machine without the cache, e.g. a GPU rental)."""
    from training.data.pack import write
    with clear_errors():
        directory = directory or cache.root() / corpus.CURRENT
        if not corpus.is_corpus(directory):
            raise click.ClickException(f"{directory} is not a joined corpus: run `python -m training corpus` first")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            manifest = write(directory, out)
        except OSError as error:
            raise click.ClickException(f"{out}: cannot write the pack ({error})") from None
    click.echo(f"{out}: {manifest['positions']:,} positions ({manifest['validation']:,} in the validation split "
               f"{manifest['split']!r}), {out.stat().st_size / 1e6:.1f} MB")


@cli.command("import-labels")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@options_from(ImportLabelsConfig)
def import_labels(source: Path, out: Path, encoding: str, temperature: float) -> None:
    """Convert a MultiPV .jsonl(.gz) file (../shared/data/labelled) or an old `prepare` dataset into a shard
    directory, through the same score -> target functions as `label`."""
    import numpy as np
    from evaluators.encoding import get_encoding
    from training.data.multipv import from_jsonl, jsonl_labeller
    from training.data.pgn import ReadStats
    from training.data.prepared import shard_arrays
    from training.data.shards import write_dir
    with clear_errors():
        if source.is_dir():
            arrays, meta = shard_arrays(source)
            enc = get_encoding(meta["encoding"])
            arrays["fen"] = np.zeros(len(arrays["key"]), dtype="S92")
            labeller = {"imported_from": str(source), "targets": "one-hot"}
            stats = None
        else:
            enc = get_encoding(encoding)
            stats = ReadStats()
            arrays = from_jsonl(source, enc, temperature, stats)
            labeller = jsonl_labeller(source, temperature)
        write_dir(arrays, out, enc, labeller, source.name)
    click.echo(f"{out}: {len(arrays['key'])} positions" + (f" ({stats.summary()})" if stats else ""))


# --- the policy-value network ------------------------------------------------------------------------------

#: TrainConfig fields `train` and `validate` share: they decide which positions are held out, and their targets.
SPLIT_FIELDS = ("result_weight", "temperature", "validation", "max_samples", "device", "seed", "exclude")


@cli.command()
@click.argument("data", nargs=-1, required=True, type=EXISTING)
@options_from(TrainConfig, skip=("data",))
def train(data: tuple[str, ...], **settings) -> None:
    """Train the policy-value ResNet on a joined corpus or its pack (which bring their own validation split),
    label-shard directories, old `prepare` datasets and MultiPV .jsonl(.gz) files, in any mix."""
    from training.resnet.train import train as run
    with clear_errors():
        path = run(TrainConfig(data=list(data), **settings))
    click.echo(f"checkpoint: {path}")


@cli.command()
@click.argument("checkpoint", type=EXISTING_FILES)
@options_from(NetworkFileConfig, overrides=_out_help("The ONNX file, e.g. weights/resnet.onnx."))
def export(checkpoint: Path, out: Path) -> None:
    """Export a policy-value checkpoint or weights file (.pt) to ONNX with the engine's metadata."""
    from training.resnet.export import export_resnet
    with clear_errors():
        export_resnet(checkpoint, out, command=_command_line())
    click.echo(f"wrote {out}")


@cli.command("weights")
@click.argument("checkpoint", type=EXISTING_FILES)
@options_from(NetworkFileConfig, overrides=_out_help("e.g. weights/resnet.pt"))
def weights_command(checkpoint: Path, out: Path) -> None:
    """Write a training checkpoint's network as a weights file (no optimiser state), as shipped in weights/."""
    from training.resnet.weights import load_file, save_weights, weights_of
    with clear_errors():
        click.echo(f"wrote {save_weights(weights_of(load_file(checkpoint)), out)}")


@cli.command("average")
@click.argument("networks", nargs=-1, required=True, type=EXISTING_FILES)
@options_from(AverageConfig, rename={"shares": "--share"})
@options_from(NetworkFileConfig, overrides=_out_help("The weights file."))
def average_command(networks: tuple[Path, ...], shares: tuple[float, ...], out: Path) -> None:
    """Average networks of one shape tensor by tensor into a weights file (a "model soup": networks fine-tuned
    from a common ancestor, e.g. a run's swa.pt and weights/resnet.pt)."""
    from training.resnet.swa import average_files
    from training.resnet.weights import save_weights
    try:
        with clear_errors():
            click.echo(f"wrote {save_weights(average_files(networks, shares), out)}")
    except ValueError as error:  # the shares or the number of networks
        raise click.UsageError(str(error)) from None


@cli.command("distil")
@click.argument("sources", nargs=-1, required=True, type=EXISTING)
@options_from(DistilConfig, skip=("sources",), rename={"teachers": "--teacher"})
def distil_command(sources: tuple[str, ...], **settings) -> None:
    """Mix the policy of stronger networks into the targets of training data (knowledge distillation) and
    write the result as a shard directory for `train`; values, games and results are kept. Resumes an
    interrupted run into the same directory."""
    from training.resnet.distil import distil
    with clear_errors():
        path = distil(DistilConfig(sources=list(sources), **settings))
    click.echo(f"wrote {path}")


@cli.command("evaluate")
@click.argument("network", type=EXISTING_FILES)
@options_from(FiguresConfig)
def evaluate_command(network: Path, test: Path, out: Optional[Path]) -> None:
    """Test-set figures of a network (.onnx or .pt): top-1/top-3 agreement with the engine's best move,
    policy KL(target || net) and cross-entropy, W/D/L cross-entropy against the engine's W/D/L, value MAE."""
    from training.resnet.metrics import evaluate_network
    with clear_errors():
        figures = evaluate_network(network, test)
    _print_figures(figures, out)


@cli.command("validate")
@click.argument("networks", nargs=-1, required=True, type=EXISTING_FILES)
@options_from(TrainConfig, only=("data",), rename={"data": "--data"},
              overrides={"data": {"help": "A training source, as given to `train` (repeatable, in the same order)."}})
@options_from(TrainConfig, only=SPLIT_FIELDS)
@options_from(FiguresConfig, only=("out",))
def validate_command(networks: tuple[Path, ...], data: list[str], out: Optional[Path], **settings) -> None:
    """Figures of networks (.pt) on the validation split that `train` holds out of the same data: choose
    between runs or averages without looking at the test set."""
    from training.resnet.train import validation_figures
    config = TrainConfig(data=list(data), out="", **settings)
    try:
        with clear_errors():
            figures = validation_figures(list(networks), config)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    _print_figures(figures, out)


@cli.command("import-onnx")
@click.argument("onnx_file", type=EXISTING_FILES)
@options_from(ImportOnnxConfig)
@options_from(NetworkFileConfig, overrides=_out_help("The weights file (.pt)."))
def import_onnx_command(onnx_file: Path, calibration: Path, positions: int, out: Path) -> None:
    """Rebuild PyTorch weights (.pt) from an exported policy-value ONNX file, for fine-tuning with --init."""
    from training.resnet.onnx_import import calibration_boards, import_onnx
    from training.resnet.weights import save_weights
    weights = import_onnx(onnx_file, calibration_boards(calibration, positions))
    click.echo(f"wrote {save_weights(weights, out)}")


@cli.command("import-leela")
@click.argument("leela_file", type=EXISTING_FILES)
@options_from(ImportOnnxConfig)
@options_from(NetworkFileConfig, overrides=_out_help("The weights file (.pt)."))
def import_leela_command(leela_file: Path, calibration: Path, positions: int, out: Path) -> None:
    """Turn a Leela Chess Zero network (.pb.gz, .pb: Maia's, Lc0's classical ones) into a weights file (.pt) of
    this project's network, which `train --init` continues and `export` turns into an ONNX file the engine plays as
    it plays the original. Nothing is written for a file it cannot import."""
    from training.resnet.leela_import import import_leela, read_leela
    from training.resnet.onnx_import import calibration_boards
    from training.resnet.weights import describe, save_weights
    with clear_errors():
        network, digest = read_leela(leela_file)
        weights = import_leela(network, {"file": leela_file.name, "sha256": digest},
                               calibration_boards(calibration, positions))
        click.echo(f"wrote {save_weights(weights, out)}: a {describe(weights['shape'])}")
    squeeze = f" --squeeze {weights['shape']['squeeze']}" if weights["shape"].get("squeeze") else ""
    click.echo(f"fine-tune it on lc0-112 data with: python -m training train DATA --init {out} --blocks "
               f"{weights['shape']['blocks']} --filters {weights['shape']['filters']}{squeeze} --out runs/NAME ...")


@cli.command("quantize")
@click.argument("network", type=EXISTING_FILES)
@options_from(QuantizeConfig, skip=("network",), rename={"keep_heads": "--keep-heads/--quantize-heads"})
def quantize_command(network: Path, **settings) -> None:
    """Quantise NETWORK to int8 and compare it with NETWORK: agreement, value error, speed at batch 16."""
    from training.resnet.quantize import quantize_and_compare
    for line in quantize_and_compare(QuantizeConfig(network=network, **settings)):
        click.echo(line)


# --- UCI engines at work: labels, games, measurements -----------------------------------------------------

@cli.command("label")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@options_from(LabelCommandConfig, only=("out", "select_only"))
@options_from(LabelConfig, skip=("sources", "out"))
@options_from(LabelCommandConfig, only=("selfplay_games", "selfplay_engine", "selfplay_nodes", "selfplay_random_plies",
                                        "selfplay_book"), rename={"selfplay_games": "--selfplay"})
def label_command(sources: tuple[Path, ...], out: Optional[Path], select_only: Optional[Path], selfplay_games: int,
                  selfplay_engine: str, selfplay_nodes: int, selfplay_random_plies: int, selfplay_book: Optional[str],
                  **settings) -> None:
    """Label positions of PGN/EPD files (plain, .gz, .bz2, .xz) and fresh self-play games with an engine's
    top K moves and scores (soft policy, W/D/L) into shards; rerun the same command to resume.

    Labels are reproducible: one engine thread, a cleared hash before every position,
    results in order, so the same sources, seed and settings give identical shards
    for any --workers.
    """
    from training.uci.label import label, selfplay_source, write_selection
    with clear_errors():
        if select_only:
            if selfplay_games or not sources:
                raise click.UsageError("--select-only reads the given PGN/EPD files (no --selfplay)")
            summary = write_selection(LabelConfig(sources=list(sources), out=Path("."), **settings), select_only)
            click.echo(summary.text(written_to=select_only))
            return
        if out is None:
            raise click.UsageError("give --out (a shard directory) or --select-only")
        settings["engine"] = _engine_command(settings["engine"], must_exist=True)
        if selfplay_games:
            sources += (selfplay_source(out, _engine_command(selfplay_engine or settings["engine"], must_exist=True),
                                        selfplay_games, selfplay_nodes, settings["workers"], settings["seed"],
                                        selfplay_random_plies, selfplay_book, settings["ray"]),)
        if not sources:
            raise click.UsageError("give PGN/EPD files or --selfplay GAMES")
        label(LabelConfig(sources=list(sources), out=out, **settings), command_line=_command_line())


@cli.command("annotate")
@click.argument("pgn", type=EXISTING_FILES)
@options_from(AnnotateConfig, rename={"command": "--engine"})
def annotate_command(pgn: Path, out: Path, command: str, nodes: int, workers: int) -> None:
    """Annotate every move of a PGN with the engine's [%eval] (resumable: rerun to continue)."""
    from training.uci.selfplay import annotate
    click.echo(f"annotated {annotate(pgn, out, _engine_command(command), nodes, workers)} games into {out}")


def _node_counts(text: str, option: str) -> tuple[int, ...]:
    """A node count or comma-separated node counts (1000,2000), each at least 1."""
    try:
        counts = tuple(int(n) for n in text.split(","))
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise click.BadParameter(f"{text!r} is not a node count or comma-separated node counts", param_hint=option)
    return counts


@cli.command("selfplay")
@options_from(SelfPlayConfig, only=("out", "command", "games", "nodes"), rename={"command": "--engine"})
@options_from(SelfPlayOptions, only=("random_plies", "random_share"))
@options_from(SelfPlayConfig, only=("workers", "ray"))
@options_from(SelfPlayOptions, only=("seed", "node_ratio", "book", "book_plies", "book_min_plies", "decisive_only"))
def selfplay_command(out: Path, command: str, games: int, nodes: str, workers: int, ray: Optional[str],
                     **settings) -> None:
    """Self-play games with [%eval] annotations, ready for `prepare` and `deepchess` (resumable: rerun to
    continue). Prints the games in the file, their decisive share and the engine-annotated positions."""
    from training.uci.selfplay import selfplay, summarize_games
    if settings["node_ratio"] < 1:
        raise click.BadParameter("must be at least 1", param_hint="--node-ratio")
    budgets = _node_counts(nodes, "--nodes")
    options = SelfPlayOptions(**settings, node_budgets=budgets if len(budgets) > 1 else ())
    command = command or OWN_ENGINE
    with clear_errors():
        played = selfplay(out, _engine_command(command), budgets[0], games, workers, options=options, ray=ray)
    click.echo(f"played {played} games into {out}\n{figures_text(summarize_games(out))}")


def _moves_asked(played: bool, player: str) -> str:
    """The moves an agreement command asks about, in words for its settings."""
    moves = "played" if played else "Stockfish's ([%eval])"
    return f"{moves}, {player}'s only" if player else moves


@cli.command("agreement")
@click.argument("files", nargs=-1, required=True, type=EXISTING_FILES)
@options_from(AgreementConfig, rename={"command": "--engine", "options": "--option", "as_json": "--json"})
def agreement_command(files: tuple[Path, ...], command: str, options: list[str], weights: Optional[str],
                      from_ply: int, played: bool, count: int, seed: int, validation_period: int, all_games: bool,
                      player: str, workers: int, as_json: bool) -> None:
    """How often the engine's move at `go nodes 1` is Stockfish's, on Stockfish's moves ([%eval]) from --from-ply
    on in games of PGN files (plain or .xz/.gz/.bz2), or with --played the move played, on every move from
    --from-ply on; by default only in the games of the corpus's validation split, which no training run on the
    corpus saw. Each position is sent with its game's moves. Engine failures count as disagreements and are
    named."""
    from training.data.heldout import select_positions
    from training.uci.agreement import ask_engine, figures, headline, parse_options
    try:
        engine_options = parse_options(options)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--option") from None
    if weights:
        engine_options["Weights"] = weights
    command = _engine_command(command or OWN_ENGINE)
    period = None if all_games else validation_period
    with clear_errors():
        selection = select_positions(files, from_ply, count, seed, period, played, player, progress=True)
        counts = ask_engine(selection, command, engine_options, progress=True, workers=workers)
    settings = {"engine": command, "options": engine_options, "limit": "go nodes 1", "files": [str(f) for f in files],
                "games": "all" if all_games else f"validation split, 1 in {validation_period}",
                "moves": _moves_asked(played, player), "from_ply": from_ply, "count": count, "seed": seed}
    result = figures(selection, counts, settings)
    click.echo(json.dumps(result, indent=1) if as_json else f"{headline(result)}\n{figures_text(result)}")


@cli.command("policy-agreement")
@click.argument("files", nargs=-1, required=True, type=EXISTING_FILES)
@options_from(PolicyAgreementConfig, rename={"networks": "--network"})
@options_from(AgreementConfig, only=("from_ply", "played", "count", "seed", "validation_period", "all_games",
                                     "player", "as_json"), rename={"as_json": "--json"})
def policy_agreement_command(files: tuple[Path, ...], networks: list[Path], threads: int, from_ply: int,
                             played: bool, count: int, seed: int, validation_period: int, all_games: bool,
                             player: str, as_json: bool) -> None:
    """How often each network's policy names the move of the game (top-1, top-3) and its cross-entropy there, on
    the positions `agreement` asks the engine about (the same options), in this process: the networks side by side,
    each as the engine reads it, with the top-1 gain of each over the first (e.g. a fine-tune over its original)."""
    from training.data.heldout import select_positions
    from training.resnet.played import measure
    with clear_errors():
        selection = select_positions(files, from_ply, count, seed, None if all_games else validation_period, played,
                                     player, progress=True)
        result = measure(selection, networks, threads, progress=True)
    result["settings"] = {"files": [str(f) for f in files], "moves": _moves_asked(played, player),
                          "games": "all" if all_games else f"validation split, 1 in {validation_period}",
                          "from_ply": from_ply, "count": count, "seed": seed}
    click.echo(json.dumps(result, indent=1) if as_json else figures_text(result))


@cli.command("evaluate-engine")
@options_from(FiguresConfig, only=("test",))
@options_from(EngineCeilingConfig)
@options_from(FiguresConfig, only=("out",))
def evaluate_engine_command(test: Path, engine: str, nodes: int, multipv: int, positions: int, seed: int,
                            out: Optional[Path]) -> None:
    """How often a UCI engine at a labelling setting picks the test set's best move (top-1/top-3):
    the ceiling of a network trained on labels made at that setting."""
    from training.uci.label import evaluate_engine
    with clear_errors():
        figures = evaluate_engine(engine, nodes, multipv, test, positions, seed)
    _print_figures(figures, out)


@cli.command("label-speed")
@click.argument("source", type=EXISTING_FILES)
@options_from(LabelSpeedConfig, rename={"budgets": "--nodes", "ks": "--multipv"})
def label_speed_command(source: Path, engine: str, positions: int, budgets: tuple[int, ...], ks: tuple[int, ...],
                        min_ply: int, out: Optional[Path]) -> None:
    """Measure labelling speed on positions of SOURCE (PGN/EPD), two per game from ply --min-ply on."""
    from training.uci.speed import measure
    with clear_errors():
        measure(source, _engine_command(engine, must_exist=True), positions, budgets, ks, min_ply, out, click.echo)


# --- DeepChess ---------------------------------------------------------------------------------------------

#: DeepChessConfig fields `deepchess` and `deepchess-valset` share: they must hold out the same games and parents.
DEEPCHESS_DATA_FIELDS = ("labels", "eval_sets", "per_game", "won_lost", "eval_threshold", "sibling_margin",
                         "sibling_quiet", "validation", "val_pairs", "val_parents", "seed", "workers")


@cli.command()
@click.argument("pgn", nargs=-1, required=True, type=EXISTING_FILE)
@options_from(DeepChessConfig, skip=("pgn",), rename={"eval_sets": "--eval-set", "teachers": "--teacher"})
def deepchess(pgn: tuple[str, ...], **settings) -> None:
    """DeepChess: Pos2Vec pretraining, Siamese comparator, distillation and a small net from scratch; or, with
    --value-network, a student taught by a policy-value network's values.

    Writes the networks it trains (teacher.pt unless --teacher gives it, student.pt, scratch.pt; student.pt alone
    with --value-network), validation.npz (this run's held-out pairs, usable as --eval-set) and report.json into the
    run directory.
    """
    from training.deepchess import run_pipeline
    with clear_errors():
        report = run_pipeline(DeepChessConfig(pgn=list(pgn), **settings))
    click.echo(figures_text(report["evaluation"]))


@cli.command("deepchess-valset")
@click.argument("pgn", nargs=-1, required=True, type=EXISTING_FILE)
@options_from(DeepChessEvalConfig, only=("out",))
@options_from(DeepChessConfig, only=DEEPCHESS_DATA_FIELDS, rename={"eval_sets": "--eval-set"})
def deepchess_valset(pgn: tuple[str, ...], out: Path, **settings) -> None:
    """Build a named DeepChess validation set: the held-out pairs a `deepchess` run with the same games,
    labels, --validation and --seed would use, to measure any network on fixed pairs."""
    from training.deepchess import prepare_data
    config = DeepChessConfig(pgn=list(pgn), out=str(out.parent), **settings)
    with clear_errors():
        validation = prepare_data(config, name=out.stem, training=False).validation
    validation.save(out)
    click.echo(f"wrote {out}\n{figures_text(validation.info)}")


@cli.command("deepchess-eval")
@click.argument("networks", nargs=-1, type=EXISTING_FILES)
@options_from(DeepChessEvalConfig, only=("eval_sets", "search_depth", "parents", "engine", "engine_nodes",
                                         "value_networks"),
              rename={"eval_sets": "--eval-set", "value_networks": "--value-network"})
@options_from(FiguresConfig, only=("out",))
def deepchess_eval(networks: tuple[Path, ...], eval_sets: list[Path], search_depth: Optional[int], parents: int,
                   engine: Optional[str], engine_nodes: str, value_networks: list[Path], out: Optional[Path]) -> None:
    """Measure comparators (.pt checkpoints or exported .onnx) on validation sets: won-vs-lost and sibling-pair
    accuracy, and how often the preferred child is the engine's best move; with --engine, a reference UCI
    engine's won-vs-lost accuracy beside them, and with --value-network a policy-value network's."""
    from training.deepchess import evaluate_all, load_network
    from training.deepchess.valset import ValidationSet, search_preferred_child
    if not networks and not engine and not value_networks:
        raise click.UsageError("give NETWORKS to measure, a reference --engine or --value-network, or both")
    node_counts = _node_counts(engine_nodes, "--engine-nodes")
    sets = [ValidationSet.load(path) for path in eval_sets]
    figures = evaluate_all({str(path): load_network(path) for path in networks}, sets)
    if engine:
        from training.deepchess.reference import engine_won_lost
        with clear_errors():
            for name, engine_figures in engine_won_lost(_engine_command(engine, must_exist=True), sets,
                                                        node_counts).items():
                figures[name].update(engine_figures)
    if value_networks:
        from training.deepchess.values import network_won_lost
        with clear_errors():
            for network in value_networks:
                for name, network_figures in network_won_lost(network, sets, log=lambda _: None).items():
                    figures[name].update(network_figures)
    if search_depth:
        from engine.backends import build_evaluator, build_search
        searchers = {"material_alphabeta": ("material", "alphabeta", None),
                     **{str(path): ("comparator", "comparison", str(path)) for path in networks
                        if path.suffix == ".onnx"}}
        for validation in sets:
            for name, (evaluator, search, weights) in searchers.items():
                share = search_preferred_child(build_search(search, build_evaluator(evaluator, weights)),
                                               validation.siblings, search_depth, parents)
                figures[validation.name].setdefault(name, {})[f"preferred_child_depth{search_depth}"] = share
    _print_figures(figures, out)


@cli.command("export-comparator")
@click.argument("checkpoint", type=EXISTING_FILES)
@options_from(NetworkFileConfig, overrides=_out_help("The ONNX file, e.g. weights/comparator.onnx; the .npz beside "
                                                     "it."))
def export_comparator_command(checkpoint: Path, out: Path) -> None:
    """Export a DeepChess checkpoint (student.pt or teacher.pt) to ONNX + .npz for the engine."""
    from training.deepchess.export import export_comparator
    export_comparator(checkpoint, out, command=_command_line())
    click.echo(f"wrote {out} and {out.with_suffix('.npz')}")


# --- reinforcement learning --------------------------------------------------------------------------------

@cli.command("dqn")
@options_from(DQNConfig)
def dqn_command(**settings) -> None:
    """DQN after Narang, Mirza and Dast Parvadeh: a Q-network over the 4672 move slots learns from expert
    transitions, then from epsilon-greedy self-play. Writes OUT/dqn.onnx (play it with --eval dqn)."""
    from training.rl.dqn import train_dqn
    with clear_errors():
        click.echo(f"wrote {train_dqn(DQNConfig(**settings), command=_command_line())}")


@cli.command("ppo")
@options_from(PPOConfig, rename={"value_trains_trunk": "--value-trains-trunk/--value-head-only"})
def ppo_command(**settings) -> None:
    """PPO with MCTS after Sai (2025): fine-tune a policy-value network on games against Stockfish with a
    Skill Level curriculum. Writes OUT/ppo.onnx (play it with --eval resnet --weights OUT/ppo.onnx)."""
    from training.rl.ppo import train_ppo
    with clear_errors():
        click.echo(f"wrote {train_ppo(PPOConfig(**settings), command=_command_line())}")


@cli.command("reinforce")
@options_from(AlphaZeroConfig)
def reinforce(**settings) -> None:
    """AlphaZero-style reinforcement learning: PUCT self-play with root noise, training on the root visit counts
    and results, and a gate that keeps a candidate only if it beats the best network so far."""
    from training.rl.alphazero import train_alphazero
    with clear_errors():
        click.echo(f"best network: {train_alphazero(AlphaZeroConfig(**settings))}")


@cli.command("rl-eval")
@options_from(ArenaConfig, rename={"players": "--player", "opponents": "--opponent"})
def rl_eval(players: list[str], nodes: int, opponents: list[str], skill: int, stockfish_nodes: int,
            games: int, openings: Optional[Path], opening_plies: int, max_plies: int, workers: int,
            pgn_dir: Optional[Path], seed: int) -> None:
    """Play networks against a random mover and Stockfish at a Skill Level; print W/D/L side by side."""
    import chess
    from engine.backends import registry
    from training.rl.arena import MoverSpec, load_openings, play_match
    specs = []
    for player in players:
        name, _, weights = player.partition(":")
        if name not in registry().evaluators:
            raise click.BadParameter(f"{name!r} is not an evaluator ({', '.join(registry().evaluators)})",
                                     param_hint="--player")
        specs.append(MoverSpec(name, weights, nodes))
    with clear_errors():  # a bad openings file is named, not a traceback
        starts = load_openings(openings, 0, opening_plies, seed) if openings else [chess.Board()]
    rows = []
    for spec in specs:
        for opponent in opponents:
            other = MoverSpec(opponent, skill=skill, engine_nodes=stockfish_nodes)
            pgn = None
            if pgn_dir is not None:
                pgn_dir.mkdir(parents=True, exist_ok=True)
                pgn = pgn_dir / f"{len(rows) + 1:02d}-{spec.kind}-vs-{other.label}.pgn"
            stats = play_match(spec, other, starts, games, max_plies, workers, seed, pgn,
                               desc=f"{spec.label} vs {other.label}")
            rows.append((spec.label, other.label, stats))
    width = max(len(label) for label, _, _ in rows)
    click.echo(f"{'player':<{width}}  {'opponent':<20} {'W':>4} {'D':>4} {'L':>4}  score")
    for label, opponent_label, stats in rows:
        click.echo(f"{label:<{width}}  {opponent_label:<20} {stats.wins:>4} {stats.draws:>4} {stats.losses:>4}  "
                   f"{100 * stats.score:.1f}%")


# --- the GPU recipe ----------------------------------------------------------------------------------------

@cli.command("gpu-recipe")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@options_from(GpuRecipeConfig, only=("out", "engine", "minutes", "deliver", "selfplay_games", "selfplay_nodes",
                                     "selfplay_random_plies"))
@options_from(LabelConfig, only=LABEL_SETTINGS)
@options_from(GpuRecipeConfig, only=("extra_data", "test_dir", "gpus"),
              rename={"extra_data": "--data", "test_dir": "--test"})
@options_from(TrainConfig, only=TRAIN_SETTINGS,
              overrides={name: {"default": value} for name, value in RECIPE_DEFAULTS.items()})
def gpu_recipe_command(**settings) -> None:
    """Label on all cores and train on the GPU in resumable steps of at most --minutes (see docs/gpu-recipe.md)."""
    from training.recipes.gpu import step
    with clear_errors():
        step(**settings)


def _print_figures(figures: dict | list[dict], out: Optional[Path]) -> None:
    """Print a command's figures as text to read, and write them as JSON to ``out`` if given."""
    if out:
        out.write_text(json.dumps(figures, indent=1) + "\n")
    click.echo(figures_text(figures))


if __name__ == "__main__":
    cli()
