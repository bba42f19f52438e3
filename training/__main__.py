"""Command line of the training package: `python -m training COMMAND --help`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import click

from evaluators.encoding import ENCODINGS
from hackmate_core.uci_engines import engine_command as _engine_command
from training.config_cli import SEED, options_from
from training.configs import (AlphaZeroConfig, DeepChessConfig, DistilConfig, DQNConfig, LabelConfig, PPOConfig,
                              TrainConfig)
from training.corpus import CorpusConfig, corpus_command
from training.corpus_pack import corpus_pack_command
from training.errors import clear_errors
from training.readable import figures_text
from training.shards import DEFAULT_TEMPERATURE

#: Where an option names a file or folder: checked by click before the command starts.
EXISTING = click.Path(exists=True)
EXISTING_FILE = click.Path(exists=True, dir_okay=False)
EXISTING_FOLDER = click.Path(exists=True, file_okay=False)
FOLDER = click.Path(file_okay=False)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version())
def cli() -> None:
    """Data preparation, training and export for the engine's networks."""


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Dataset directory.")
@click.option("--encoding", default="planes18", show_default=True, type=click.Choice(tuple(ENCODINGS)),
              help="Board encoding.")
@click.option("--skip-plies", default=8, show_default=True, help="Skip the first N plies of every game.")
@click.option("--min-rating", default=0, show_default=True, help="Skip games with a player rated below this.")
@click.option("--require-eval", is_flag=True, help="Keep only moves annotated with [%eval] (engine moves).")
@click.option("--workers", default=2, show_default=True, help="Parallel reader processes.")
@click.option("--no-dedupe", is_flag=True, help="Keep duplicate positions.")
def prepare(files: tuple[Path, ...], out: Path, encoding: str, skip_plies: int, min_rating: int,
            require_eval: bool, workers: int, no_dedupe: bool) -> None:
    """Turn PGN (plain or .gz/.bz2/.xz) and EPD files into a training dataset."""
    from training.dataset import build_samples, save
    filters = {"skip_plies": skip_plies, "min_rating": min_rating, "require_eval": require_eval}
    samples, stats = build_samples(list(files), encoding, filters, workers, dedupe=not no_dedupe)
    save(samples, out, {"encoding": encoding, "files": [str(f) for f in files], "filters": filters,
                        "read": stats.summary()})
    click.echo(f"{out}: {len(samples)} samples ({stats.summary()})")


#: TrainConfig fields `train` and `validate` share: they decide which positions are held out, and their targets.
SPLIT_FIELDS = ("result_weight", "temperature", "validation", "max_samples", "device", "seed", "exclude")


@cli.command()
@click.argument("data", nargs=-1, required=True, type=EXISTING)
@options_from(TrainConfig, skip=("data",), overrides={"out": {"type": FOLDER}, "exclude": {"type": EXISTING_FOLDER}})
def train(data: tuple[str, ...], **settings) -> None:
    """Train the policy-value ResNet on a joined corpus or its pack (which bring their own validation split),
    label-shard directories, old `prepare` datasets and MultiPV .jsonl(.gz) files, in any mix."""
    from training.train import train as run
    with clear_errors():
        path = run(TrainConfig(data=list(data), **settings))
    click.echo(f"checkpoint: {path}")


@cli.command()
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The ONNX file, e.g. weights/resnet.onnx.")
def export(checkpoint: Path, out: Path) -> None:
    """Export a policy-value checkpoint or weights file (.pt) to ONNX with the engine's metadata."""
    from training.export import export_resnet
    with clear_errors():
        export_resnet(checkpoint, out, command=" ".join(shlex.quote(a) for a in sys.argv))
    click.echo(f"wrote {out}")


@cli.command("weights")
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="e.g. weights/resnet.pt")
def weights_command(checkpoint: Path, out: Path) -> None:
    """Write a training checkpoint's network as a weights file (no optimiser state), as shipped in weights/."""
    from training.weights import load_file, save_weights, weights_of
    with clear_errors():
        click.echo(f"wrote {save_weights(weights_of(load_file(checkpoint)), out)}")


@cli.command("average")
@click.argument("networks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--share", "shares", multiple=True, type=float,
              help="Each network's share of the mean, in order (repeat once per network; default: equal shares).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The weights file.")
def average_command(networks: tuple[Path, ...], shares: tuple[float, ...], out: Path) -> None:
    """Average networks of one shape tensor by tensor into a weights file (a "model soup": networks fine-tuned
    from a common ancestor, e.g. a run's swa.pt and weights/resnet.pt)."""
    from training.swa import average_files
    from training.weights import save_weights
    try:
        with clear_errors():
            click.echo(f"wrote {save_weights(average_files(networks, shares), out)}")
    except ValueError as error:  # the shares or the number of networks
        raise click.UsageError(str(error)) from None


@cli.command("distil")
@click.argument("sources", nargs=-1, required=True, type=EXISTING)
@options_from(DistilConfig, skip=("sources",), rename={"teachers": "--teacher"},
              overrides={"teachers": {"type": EXISTING_FILE}, "out": {"type": FOLDER},
                         "share": {"type": click.FloatRange(0, 1, min_open=True)},
                         "top_k": {"type": click.IntRange(min=1)}})
def distil_command(sources: tuple[str, ...], **settings) -> None:
    """Mix the policy of stronger networks into the targets of training data (knowledge distillation) and
    write the result as a shard directory for `train`; values, games and results are kept. Resumes an
    interrupted run into the same directory."""
    from training.distil import distil
    with clear_errors():
        path = distil(DistilConfig(sources=list(sources), **settings))
    click.echo(f"wrote {path}")


@cli.command("evaluate")
@click.argument("network", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--test", "test", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Labelled shard directory, e.g. testset/.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here (JSON).")
def evaluate_command(network: Path, test: Path, out: Optional[Path]) -> None:
    """Test-set figures of a network (.onnx or .pt): top-1/top-3 agreement with the engine's best move,
    policy KL(target || net) and cross-entropy, W/D/L cross-entropy against the engine's W/D/L, value MAE."""
    from training.evaluate import evaluate_network
    with clear_errors():
        figures = evaluate_network(network, test)
    _print_figures(figures, out)


@cli.command("validate")
@click.argument("networks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data", "data", multiple=True, required=True, type=EXISTING,
              help="A training source, as given to `train` (repeatable, in the same order).")
@options_from(TrainConfig, only=SPLIT_FIELDS, overrides={"exclude": {"type": EXISTING_FOLDER}})
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here (JSON).")
def validate_command(networks: tuple[Path, ...], data: tuple[str, ...], out: Optional[Path], **settings) -> None:
    """Figures of networks (.pt) on the validation split that `train` holds out of the same data: choose
    between runs or averages without looking at the test set."""
    from training.train import validation_figures
    config = TrainConfig(data=list(data), out="", **settings)
    try:
        with clear_errors():
            figures = validation_figures(list(networks), config)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    _print_figures(figures, out)


@cli.command("evaluate-engine")
@click.option("--test", "test", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Labelled shard directory, e.g. testset/.")
@click.option("--engine", default="stockfish", show_default=True, help="UCI engine command line.")
@click.option("--nodes", default=5000, show_default=True, help="Nodes per position.")
@click.option("--multipv", default=4, show_default=True, help="MultiPV lines, as the labeller's --multipv.")
@click.option("--positions", default=1000, show_default=True, help="Test positions sampled (0: all).")
@click.option("--seed", default=SEED, show_default=True, help="Seed of the sample.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here (JSON).")
def evaluate_engine_command(test: Path, engine: str, nodes: int, multipv: int, positions: int, seed: int,
                            out: Optional[Path]) -> None:
    """How often a UCI engine at a labelling setting picks the test set's best move (top-1/top-3):
    the ceiling of a network trained on labels made at that setting."""
    from training.evaluate import evaluate_engine
    with clear_errors():
        figures = evaluate_engine(engine, nodes, multipv, test, positions, seed)
    _print_figures(figures, out)


@cli.command("agreement")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--engine", "command", default="",
              help="UCI engine command line (default: this engine, run by the Python that runs this command).")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="A UCI option of the engine (repeatable), over the defaults TacticalPriors=0 and MaterialBlend=0.")
@click.option("--weights", help="The engine's Weights option: a network file, or a shipped file's name.")
@click.option("--from-ply", default=16, show_default=True, type=click.IntRange(min=0),
              help="Positions from this ply of each game on.")
@click.option("--count", default=3000, show_default=True, type=click.IntRange(min=0),
              help="Positions sampled (0: every eligible one).")
@click.option("--seed", default=SEED, show_default=True, help="Seed of the sample.")
@click.option("--validation-period", default=CorpusConfig.validation_period, show_default=True,
              type=click.IntRange(min=2),
              help="The corpus's validation split: games whose identity (a hash of the moves) is a multiple of this.")
@click.option("--all-games", is_flag=True, help="Take every game, not only the corpus's validation split.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Engines asked at once, each about its share of the positions (the figures do not depend on it).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def agreement_command(files: tuple[Path, ...], command: str, options: tuple[str, ...], weights: Optional[str],
                      from_ply: int, count: int, seed: int, validation_period: int, all_games: bool, workers: int,
                      as_json: bool) -> None:
    """How often the engine's move at `go nodes 1` is Stockfish's, on Stockfish's moves ([%eval]) from --from-ply
    on in games of PGN files (plain or .xz/.gz/.bz2), by default only those of the corpus's validation split,
    which no training run on the corpus saw. Engine failures count as disagreements and are named."""
    from training.agreement import ask_engine, figures, headline, parse_options, select_positions
    try:
        engine_options = parse_options(options)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--option") from None
    if weights:
        engine_options["Weights"] = weights
    command = _engine_command(command or f"{shlex.quote(sys.executable)} -m engine")
    period = None if all_games else validation_period
    with clear_errors():
        selection = select_positions(files, from_ply, count, seed, period, progress=True)
        counts = ask_engine(selection, command, engine_options, progress=True, workers=workers)
    settings = {"engine": command, "options": engine_options, "limit": "go nodes 1", "files": [str(f) for f in files],
                "games": "all" if all_games else f"validation split, 1 in {validation_period}",
                "from_ply": from_ply, "count": count, "seed": seed}
    result = figures(selection, counts, settings)
    click.echo(json.dumps(result, indent=1) if as_json else f"{headline(result)}\n{figures_text(result)}")


@cli.command("label")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Shard directory.")
@click.option("--select-only", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the positions this run would label (sampled, deduplicated, not excluded) to this EPD "
                   "file (.xz/.gz: compressed) instead of labelling: a compact source to carry to many cores.")
@options_from(LabelConfig, skip=("sources", "out"),
              overrides={"exclude": {"type": click.Path(exists=True, file_okay=False, path_type=Path)}})
@click.option("--selfplay", "selfplay_games", default=0, show_default=True,
              help="Also label this many fresh self-play games (played first, resumable).")
@click.option("--selfplay-engine", default="", help="Engine of the self-play games (default: --engine).")
@click.option("--selfplay-nodes", default=4000, show_default=True, help="Nodes per self-play move.")
@click.option("--selfplay-random-plies", default=6, show_default=True, help="Random plies after the book line.")
@click.option("--selfplay-book", type=EXISTING_FILE, help="Self-play openings: a Polyglot .bin book or a PGN.")
def label_command(sources: tuple[Path, ...], out: Optional[Path], select_only: Optional[Path], selfplay_games: int,
                  selfplay_engine: str, selfplay_nodes: int, selfplay_random_plies: int, selfplay_book: Optional[str],
                  **settings) -> None:
    """Label positions of PGN/EPD files (plain, .gz, .bz2, .xz) and fresh self-play games with an engine's
    top K moves and scores (soft policy, W/D/L) into shards; rerun the same command to resume.

    Labels are reproducible: one engine thread, a cleared hash before every position,
    results in order, so the same sources, seed and settings give identical shards
    for any --workers.
    """
    from training.label import label, selfplay_source, write_selection
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
                                        selfplay_random_plies, selfplay_book),)
        if not sources:
            raise click.UsageError("give PGN/EPD files or --selfplay GAMES")
        label(LabelConfig(sources=list(sources), out=out, **settings),
              command_line=" ".join(shlex.quote(a) for a in sys.argv))


@cli.command("import-labels")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Shard directory.")
@click.option("--encoding", default="planes18", show_default=True, type=click.Choice(tuple(ENCODINGS)),
              help="Board encoding (MultiPV files).")
@click.option("--temperature", default=DEFAULT_TEMPERATURE, show_default=True,
              help="Soft-policy temperature in centipawns (MultiPV files).")
def import_labels(source: Path, out: Path, encoding: str, temperature: float) -> None:
    """Convert a MultiPV .jsonl(.gz) file (../shared/data/labelled) or an old `prepare` dataset into a shard
    directory, through the same score -> target functions as `label`."""
    from evaluators.encoding import get_encoding
    from training import shards
    from training.pgn import ReadStats
    import numpy as np
    with clear_errors():
        if source.is_dir():
            arrays, meta = shards.from_prepared(source)
            enc = get_encoding(meta["encoding"])
            arrays["fen"] = np.zeros(len(arrays["key"]), dtype="S92")
            labeller = {"imported_from": str(source), "targets": "one-hot"}
            stats = None
        else:
            enc = get_encoding(encoding)
            stats = ReadStats()
            arrays = shards.from_jsonl(source, enc, temperature, stats)
            labeller = shards.jsonl_labeller(source, temperature)
        shards.write_dir(arrays, out, enc, labeller, source.name)
    click.echo(f"{out}: {len(arrays['key'])} positions" + (f" ({stats.summary()})" if stats else ""))


@cli.command("import-onnx")
@click.argument("onnx_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--calibration", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="PGN whose positions give the BatchNorm statistics (e.g. the games it was trained on).")
@click.option("--positions", default=4096, show_default=True, help="Calibration positions.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The weights file (.pt).")
def import_onnx_command(onnx_file: Path, calibration: Path, positions: int, out: Path) -> None:
    """Rebuild PyTorch weights (.pt) from an exported policy-value ONNX file, for fine-tuning with --init."""
    from training.onnx_import import calibration_boards, import_onnx
    from training.weights import save_weights
    weights = import_onnx(onnx_file, calibration_boards(calibration, positions))
    click.echo(f"wrote {save_weights(weights, out)}")


#: DeepChessConfig fields `deepchess` and `deepchess-valset` share: they must hold out the same games and parents.
DEEPCHESS_DATA_FIELDS = ("labels", "eval_sets", "per_game", "sibling_margin", "sibling_quiet", "validation",
                         "val_pairs", "val_parents", "seed", "workers")
DEEPCHESS_DATA_TYPES = {"labels": {"type": EXISTING}, "eval_sets": {"type": EXISTING_FILE}}


@cli.command()
@click.argument("pgn", nargs=-1, required=True, type=EXISTING_FILE)
@options_from(DeepChessConfig, skip=("pgn",), rename={"eval_sets": "--eval-set", "teachers": "--teacher"},
              overrides={**DEEPCHESS_DATA_TYPES, "out": {"type": FOLDER}, "teachers": {"type": EXISTING_FILE},
                         "student": {"type": EXISTING_FILE}})
def deepchess(pgn: tuple[str, ...], **settings) -> None:
    """DeepChess: Pos2Vec pretraining, Siamese comparator, distillation and a small net from scratch.

    Writes teacher.pt (unless --teacher gives it), student.pt, scratch.pt,
    validation.npz (this run's held-out pairs, usable as --eval-set) and
    report.json into the run directory.
    """
    from training.deepchess import run_pipeline
    with clear_errors():
        report = run_pipeline(DeepChessConfig(pgn=list(pgn), **settings))
    click.echo(figures_text(report["evaluation"]))


@cli.command("deepchess-valset")
@click.argument("pgn", nargs=-1, required=True, type=EXISTING_FILE)
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Validation set .npz.")
@options_from(DeepChessConfig, only=DEEPCHESS_DATA_FIELDS, rename={"eval_sets": "--eval-set"},
              overrides=DEEPCHESS_DATA_TYPES)
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
@click.argument("networks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--eval-set", "eval_sets", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Validation set (repeatable).")
@click.option("--search-depth", type=click.IntRange(1, 4),
              help="Also pick each held-out parent's child by the engine's own search to this depth, restricted "
                   "to the scored children (`go searchmoves`): the comparison search for .onnx comparators, "
                   "material alpha-beta as the baseline.")
@click.option("--parents", default=2000, show_default=True, help="Held-out parents searched with --search-depth.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here (JSON).")
def deepchess_eval(networks: tuple[Path, ...], eval_sets: tuple[Path, ...], search_depth: int | None, parents: int,
                   out: Path | None) -> None:
    """Measure comparators (.pt checkpoints or exported .onnx) on validation sets: won-vs-lost and sibling-pair
    accuracy, and how often the preferred child is the engine's best move."""
    from training.deepchess import evaluate_all, load_network
    from training.valset import ValidationSet, search_preferred_child
    sets = [ValidationSet.load(path) for path in eval_sets]
    figures = evaluate_all({str(path): load_network(path) for path in networks}, sets)
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
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The ONNX file, e.g. weights/comparator.onnx; the .npz beside it.")
def export_comparator_command(checkpoint: Path, out: Path) -> None:
    """Export a DeepChess checkpoint (student.pt or teacher.pt) to ONNX + .npz for the engine."""
    from training.export import export_comparator
    export_comparator(checkpoint, out, command=" ".join(shlex.quote(a) for a in sys.argv))
    click.echo(f"wrote {out} and {out.with_suffix('.npz')}")


@cli.command("annotate")
@click.argument("pgn", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The annotated PGN.")
@click.option("--engine", "command", default="stockfish", show_default=True, help="UCI engine command line.")
@click.option("--nodes", default=5000, show_default=True, help="Nodes per analysed position.")
@click.option("--workers", default=2, show_default=True, help="Parallel engine processes.")
def annotate_command(pgn: Path, out: Path, command: str, nodes: int, workers: int) -> None:
    """Annotate every move of a PGN with the engine's [%eval] (resumable: rerun to continue)."""
    from training.generate import annotate
    click.echo(f"annotated {annotate(pgn, out, _engine_command(command), nodes, workers)} games into {out}")


@cli.command("selfplay")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The PGN file of the games (.pgn.xz, .pgn.gz: compressed, as the shared corpus's parts).")
@click.option("--engine", "command", default="",
              help="UCI engine command line (default: this engine with its shipped network, run by the Python "
                   "that runs this command).")
@click.option("--games", default=100, show_default=True, help="Games to play (rerun the same command to resume).")
@click.option("--nodes", default="400", show_default=True,
              help="Nodes per move; several, comma-separated (1000,2000,4000): one chosen at random per game.")
@click.option("--random-plies", default=6, show_default=True, help="Random opening plies for variety.")
@click.option("--random-share", default=1.0, show_default=True, type=click.FloatRange(0, 1),
              help="Share of the games that get the random plies (the shared corpus: 1 random ply in 0.3).")
@click.option("--workers", default=2, show_default=True, help="Games played at once (an engine process each).")
@click.option("--seed", default=SEED, show_default=True, help="Seed of the random opening plies (with --workers).")
@click.option("--node-ratio", default=1.0, show_default=True,
              help="Above 1: one side, alternating game by game, searches nodes / ratio (more decisive games).")
@click.option("--book", type=click.Path(exists=True, dir_okay=False),
              help="Openings: a Polyglot .bin book (weighted random walk) or a PGN (a random game's first plies); "
                   "--random-plies random moves follow the book line.")
@click.option("--book-plies", default=16, show_default=True, help="Longest book line.")
@click.option("--book-min-plies", default=0, show_default=True,
              help="Shortest book line: each game's is drawn between this and --book-plies (0: --book-plies).")
@click.option("--decisive-only", is_flag=True, help="Keep decisive games only; --games counts those.")
def selfplay_command(out: Path, command: str, games: int, nodes: str, random_plies: int, random_share: float,
                     workers: int, seed: int, node_ratio: float, book: str | None, book_plies: int,
                     book_min_plies: int, decisive_only: bool) -> None:
    """Self-play games with [%eval] annotations, ready for `prepare` and `deepchess` (resumable: rerun to
    continue). Prints the games in the file, their decisive share and the engine-annotated positions."""
    from training.generate import SelfPlayOptions, selfplay, summarize_games
    if node_ratio < 1:
        raise click.BadParameter("must be at least 1", param_hint="--node-ratio")
    try:
        budgets = tuple(int(n) for n in nodes.split(","))
    except ValueError:
        raise click.BadParameter(f"{nodes!r} is not a node count or comma-separated node counts",
                                 param_hint="--nodes") from None
    options = SelfPlayOptions(random_plies, seed, node_ratio, book, book_plies, decisive_only,
                              budgets if len(budgets) > 1 else (), random_share, book_min_plies)
    command = command or f"{shlex.quote(sys.executable)} -m engine"
    played = selfplay(out, _engine_command(command), budgets[0], games, workers, options=options)
    click.echo(f"played {played} games into {out}\n{figures_text(summarize_games(out))}")


@cli.command("dqn")
@options_from(DQNConfig, overrides={"out": {"type": FOLDER}, "expert_pgn": {"type": EXISTING_FILE}})
def dqn_command(**settings) -> None:
    """DQN after Narang, Mirza and Dast Parvadeh: a Q-network over the 4672 move slots learns from expert
    transitions, then from epsilon-greedy self-play. Writes OUT/dqn.onnx (play it with --eval dqn)."""
    from training.rl.dqn import train_dqn
    with clear_errors():
        click.echo(f"wrote {train_dqn(DQNConfig(**settings), command=' '.join(shlex.quote(a) for a in sys.argv))}")


@cli.command("ppo")
@options_from(PPOConfig, rename={"value_trains_trunk": "--value-trains-trunk/--value-head-only"},
              overrides={"checkpoint": {"type": EXISTING_FILE}, "out": {"type": FOLDER},
                         "openings": {"type": EXISTING_FILE}})
def ppo_command(**settings) -> None:
    """PPO with MCTS after Sai (2025): fine-tune a policy-value network on games against Stockfish with a
    Skill Level curriculum. Writes OUT/ppo.onnx (play it with --eval resnet --weights OUT/ppo.onnx)."""
    from training.rl.ppo import train_ppo
    command = " ".join(shlex.quote(a) for a in sys.argv)
    with clear_errors():
        click.echo(f"wrote {train_ppo(PPOConfig(**settings), command=command)}")


@cli.command("reinforce")
@options_from(AlphaZeroConfig, overrides={"checkpoint": {"type": EXISTING_FILE}, "out": {"type": FOLDER},
                                          "openings": {"type": EXISTING_FILE}})
def reinforce(**settings) -> None:
    """AlphaZero-style reinforcement learning: PUCT self-play with root noise, training on the root visit counts
    and results, and a gate that keeps a candidate only if it beats the best network so far."""
    from training.rl.alphazero import train_alphazero
    with clear_errors():
        click.echo(f"best network: {train_alphazero(AlphaZeroConfig(**settings))}")


@cli.command("rl-eval")
@click.option("--player", "players", multiple=True, required=True,
              help="An engine evaluator, EVAL or EVAL:WEIGHTS (e.g. dqn:runs/dqn/dqn.onnx, resnet); repeatable: "
                   "every player meets the same opponents.")
@click.option("--nodes", default=0, show_default=True,
              help="0: players play alone (their policy's best move, a DQN's greedy move); N: through PUCT, N nodes.")
@click.option("--opponent", "opponents", multiple=True, type=click.Choice(["random", "stockfish"]),
              default=("random", "stockfish"), show_default=True,
              help="Opponents (repeatable): a uniformly random mover, Stockfish at --skill.")
@click.option("--skill", default=0, show_default=True, help="Stockfish's Skill Level.")
@click.option("--stockfish-nodes", default=20_000, show_default=True, help="Stockfish's nodes a move.")
@click.option("--games", default=100, show_default=True, help="Games per player and opponent, colours alternating.")
@click.option("--openings", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="PGN or EPD openings, each played twice (default: the start position).")
@click.option("--opening-plies", default=8, show_default=True, help="With a PGN: plies of each game.")
@click.option("--max-plies", default=400, show_default=True, help="Games are drawn here.")
@click.option("--workers", default=2, show_default=True, help="Processes playing games.")
@click.option("--pgn-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each pairing's games to a PGN here.")
@click.option("--seed", default=SEED, show_default=True, help="Seed of every random choice (games, sampling, noise).")
def rl_eval(players: tuple[str, ...], nodes: int, opponents: tuple[str, ...], skill: int, stockfish_nodes: int,
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


def _print_figures(figures: dict | list[dict], out: Optional[Path]) -> None:
    """Print a command's figures as text to read, and write them as JSON to ``out`` if given."""
    if out:
        out.write_text(json.dumps(figures, indent=1) + "\n")
    click.echo(figures_text(figures))


cli.add_command(corpus_command)
cli.add_command(corpus_pack_command)

if __name__ == "__main__":
    cli()
