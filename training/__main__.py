"""Command line of the training package: `python -m training COMMAND --help`."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Optional

import click

from hackmate_core.uci_engines import engine_command as _engine_command
from training.errors import clear_errors
from training.corpus import corpus_command
from training.shards import DEFAULT_TEMPERATURE


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Data preparation, training and export for the engine's networks."""


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Dataset directory.")
@click.option("--encoding", default="planes18", show_default=True, help="Board encoding: planes18 or lc0-112.")
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


def _split_options(command):
    """Options shared by `train` and `validate`: they decide which positions are held out, and their targets."""
    for option in reversed([
        click.option("--result-weight", default=0.0, show_default=True,
                     help="Share of the game result in the value target; the rest is the engine's W/D/L "
                          "(positions with only one of the two use that one)."),
        click.option("--temperature", default=0.0, show_default=True,
                     help="If > 0: recompute engine-labelled soft policies from their scores at this temperature "
                          "(cp)."),
        click.option("--validation", default=0.05, show_default=True,
                     help="Fraction held out: whole games where the game is known, else by position key."),
        click.option("--max-samples", default=0, show_default=True, help="Use at most this many samples (0: all)."),
        click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda."),
        click.option("--seed", default=1, show_default=True,
                     help="Seed of the --max-samples subset, the data order, the mirroring and a new network's "
                          "initial weights (the validation split does not depend on it): runs to average differ "
                          "by it."),
        click.option("--exclude", multiple=True, type=click.Path(exists=True, file_okay=False),
                     help="Shard directory (e.g. the test set) whose positions are dropped from the data "
                          "(repeatable).")]):
        command = option(command)
    return command


@cli.command()
@click.argument("data", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run directory.")
@click.option("--blocks", default=6, show_default=True)
@click.option("--filters", default=64, show_default=True)
@click.option("--epochs", default=4, show_default=True)
@click.option("--batch-size", default=512, show_default=True)
@click.option("--lr", default=2e-3, show_default=True)
@click.option("--schedule", type=click.Choice(["cosine", "step"]), default="cosine", show_default=True)
@click.option("--label-smoothing", default=0.0, show_default=True)
@_split_options
@click.option("--resume", is_flag=True, help="Continue from the run directory's checkpoint (mid-epoch too).")
@click.option("--init", default="", help="Start from this checkpoint's or weights file's network (fine-tuning), "
                                         "e.g. weights/resnet.pt.")
@click.option("--grow", is_flag=True,
              help="With --init: the network may be smaller than --blocks x --filters; it is embedded in the larger "
                   "network so that training starts from the same function (new blocks as identities, new channels "
                   "at zero).")
@click.option("--squeeze", default=0, show_default=True,
              help="Squeeze-and-excitation units in every residual block, with a bottleneck of filters / this many "
                   "units (Lc0's SE-ResNet; 0: none). With --init --grow an SE-less network gains them as identities.")
@click.option("--max-minutes", default=0.0, show_default=True,
              help="Stop at a batch boundary after this long with a resumable checkpoint (0: no limit).")
@click.option("--budget-minutes", default=0.0, show_default=True,
              help="Length of the run in minutes spent training and validating, summed over resumed steps: the "
                   "learning-rate schedule runs over it (or over the epochs, if --epochs, then a cap, ends the run "
                   "first) and the run ends there, mid-epoch if need be (0: the epochs' steps set the schedule).")
@click.option("--swa-every", default=0, show_default=True,
              help="Every this many steps fold the weights into a running mean (stochastic weight averaging, as "
                   "Lc0's swa_steps), validated each epoch and written as OUT/swa.pt (0: off).")
@click.option("--swa-max-n", default=10, show_default=True,
              help="The newest snapshot weighs 1/(min(n, this)+1) in the mean (Lc0's swa_max_n); 0: a plain mean.")
@click.option("--mirror", is_flag=True,
              help="Show a random half of the positions without castling rights mirrored a-file <-> h-file, with "
                   "mirrored policy targets (the rules are symmetric there): more distinct positions per epoch.")
def train(data: tuple[str, ...], out: str, exclude: tuple[str, ...], **kwargs) -> None:
    """Train the policy-value ResNet on label-shard directories, old `prepare` datasets and MultiPV
    .jsonl(.gz) files, in any mix."""
    from training.train import TrainConfig, train as run
    with clear_errors():
        path = run(TrainConfig(data=list(data), out=out, exclude=list(exclude), **kwargs))
    click.echo(f"checkpoint: {path}")


@cli.command()
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
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
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--teacher", "teachers", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A network (.pt) whose policy goes into the targets; repeat for an ensemble (probabilities "
                   "averaged).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Shard directory.")
@click.option("--share", default=0.5, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="The teachers' share of each new policy target.")
@click.option("--top-k", default=8, show_default=True, type=click.IntRange(min=1), help="Teacher moves kept per position (renormalised).")
@click.option("--mirror/--no-mirror", default=True, show_default=True,
              help="Also ask each teacher about the board mirrored a-file <-> h-file where there are no castling "
                   "rights, half each.")
@click.option("--temperature", default=0.0, show_default=True,
              help="Soft-policy temperature of MultiPV sources in centipawns, as `train --temperature` (0: as "
                   "stored).")
@click.option("--threads", default=2, show_default=True, help="PyTorch CPU threads.")
@click.option("--device", default="cpu", show_default=True, help="Where the teachers run: cpu, cuda, auto.")
def distil_command(sources: tuple[Path, ...], teachers: tuple[Path, ...], out: Path, share: float, top_k: int,
                   mirror: bool, temperature: float, threads: int, device: str) -> None:
    """Mix the policy of stronger networks into the targets of training data (knowledge distillation) and
    write the result as a shard directory for `train`; values, games and results are kept. Resumes an
    interrupted run into the same directory."""
    from training.distil import DistilConfig, distil
    with clear_errors():
        path = distil(DistilConfig(sources=[str(s) for s in sources], teachers=[str(t) for t in teachers],
                                   out=str(out), share=share, top_k=top_k, mirror=mirror, temperature=temperature,
                                   threads=threads, device=device))
    click.echo(f"wrote {path}")


@cli.command("evaluate")
@click.argument("network", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--test", "test", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Labelled shard directory, e.g. testset/.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here.")
def evaluate_command(network: Path, test: Path, out: Optional[Path]) -> None:
    """Test-set figures of a network (.onnx or .pt) as JSON: top-1/top-3 agreement with the engine's best move,
    policy KL(target || net) and cross-entropy, W/D/L cross-entropy against the engine's W/D/L, value MAE."""
    from training.evaluate import evaluate_network
    with clear_errors():
        figures = evaluate_network(network, test)
    _print_figures(figures, out)


@cli.command("validate")
@click.argument("networks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data", "data", multiple=True, required=True, type=click.Path(exists=True),
              help="A training source, as given to `train` (repeatable, in the same order).")
@_split_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here.")
def validate_command(networks: tuple[Path, ...], data: tuple[str, ...], exclude: tuple[str, ...],
                     out: Optional[Path], **kwargs) -> None:
    """Figures (JSON) of networks (.pt) on the validation split that `train` holds out of the same data: choose
    between runs or averages without looking at the test set."""
    from training.train import TrainConfig, validation_figures
    config = TrainConfig(data=list(data), out="", exclude=list(exclude), **kwargs)
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
@click.option("--seed", default=0, show_default=True, help="Seed of the sample.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here.")
def evaluate_engine_command(test: Path, engine: str, nodes: int, multipv: int, positions: int, seed: int,
                            out: Optional[Path]) -> None:
    """How often a UCI engine at a labelling setting picks the test set's best move (top-1/top-3, JSON):
    the ceiling of a network trained on labels made at that setting."""
    from training.evaluate import evaluate_engine
    with clear_errors():
        figures = evaluate_engine(engine, nodes, multipv, test, positions, seed)
    _print_figures(figures, out)


@cli.command("label")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Shard directory.")
@click.option("--select-only", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the positions this run would label (sampled, deduplicated, not excluded) to this EPD "
                   "file (.xz/.gz: compressed) instead of labelling: a compact source to carry to many cores.")
@click.option("--engine", default="stockfish", show_default=True, help="UCI engine command line.")
@click.option("--multipv", default=6, show_default=True, help="Moves labelled per position (K).")
@click.option("--nodes", default=25000, show_default=True, help="Nodes per position.")
@click.option("--workers", default=os.cpu_count() or 1, show_default=True, help="Engine processes.")
@click.option("--seed", default=1, show_default=True, help="Seed of --per-game sampling and self-play openings.")
@click.option("--min-ply", default=0, show_default=True, help="Skip positions before this ply.")
@click.option("--per-game", default=0, show_default=True, help="Positions sampled per game (0: all).")
@click.option("--max-positions", default=0, show_default=True,
              help="Select at most this many positions in all, those labelled by earlier runs included (0: all).")
@click.option("--temperature", default=DEFAULT_TEMPERATURE, show_default=True,
              help="Soft-policy temperature in centipawns: softmax(score / T) over the K moves.")
@click.option("--exclude", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Shard directory whose positions are never labelled here, e.g. the test set (repeatable).")
@click.option("--encoding", default="planes18", show_default=True, help="Board encoding: planes18 or lc0-112.")
@click.option("--shard-size", default=4096, show_default=True, help="Positions per shard.")
@click.option("--max-minutes", default=0.0, show_default=True,
              help="Stop cleanly after this long (rerun to continue; 0: no limit).")
@click.option("--ray", default=None, help="Run the work units as Ray tasks: 'local' (a Ray instance here), "
                                          "'auto' (the running cluster) or a cluster address.")
@click.option("--selfplay", "selfplay_games", default=0, show_default=True,
              help="Also label this many fresh self-play games (played first, resumable).")
@click.option("--selfplay-engine", default="", help="Engine of the self-play games (default: --engine).")
@click.option("--selfplay-nodes", default=4000, show_default=True, help="Nodes per self-play move.")
@click.option("--selfplay-random-plies", default=6, show_default=True, help="Random plies after the book line.")
@click.option("--selfplay-book", type=click.Path(exists=True, dir_okay=False),
              help="Self-play openings: a Polyglot .bin book or a PGN.")
def label_command(sources: tuple[Path, ...], out: Optional[Path], select_only: Optional[Path], engine: str,
                  selfplay_games: int, selfplay_engine: str, selfplay_nodes: int, selfplay_random_plies: int,
                  selfplay_book: Optional[str], exclude: tuple, **kwargs) -> None:
    """Label positions of PGN/EPD files (plain, .gz, .bz2, .xz) and fresh self-play games with an engine's
    top K moves and scores (soft policy, W/D/L) into shards; rerun the same command to resume.

    Labels are reproducible: one engine thread, a cleared hash before every position,
    results in order, so the same sources, seed and settings give identical shards
    for any --workers.
    """
    from training.label import LabelConfig, label, selfplay_source, write_selection
    with clear_errors():
        if select_only:
            if selfplay_games or not sources:
                raise click.UsageError("--select-only reads the given PGN/EPD files (no --selfplay)")
            summary = write_selection(LabelConfig(sources=list(sources), out=Path("."), exclude=list(exclude),
                                                  **kwargs), select_only)
            click.echo(summary.text(written_to=select_only))
            return
        if out is None:
            raise click.UsageError("give --out (a shard directory) or --select-only")
        engine = _engine_command(engine, must_exist=True)
        if selfplay_games:
            sources += (selfplay_source(out, _engine_command(selfplay_engine or engine, must_exist=True),
                                        selfplay_games, selfplay_nodes, kwargs["workers"], kwargs["seed"],
                                        selfplay_random_plies, selfplay_book),)
        if not sources:
            raise click.UsageError("give PGN/EPD files or --selfplay GAMES")
        label(LabelConfig(sources=list(sources), out=out, engine=engine, exclude=list(exclude), **kwargs),
              command_line=" ".join(shlex.quote(a) for a in sys.argv))


@cli.command("import-labels")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Shard directory.")
@click.option("--encoding", default="planes18", show_default=True, help="Board encoding (MultiPV files).")
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
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
def import_onnx_command(onnx_file: Path, calibration: Path, positions: int, out: Path) -> None:
    """Rebuild PyTorch weights (.pt) from an exported policy-value ONNX file, for fine-tuning with --init."""
    from training.onnx_import import calibration_boards, import_onnx
    from training.weights import save_weights
    weights = import_onnx(onnx_file, calibration_boards(calibration, positions))
    click.echo(f"wrote {save_weights(weights, out)}")


def _deepchess_data_options(command):
    """Options shared by `deepchess` and `deepchess-valset`: they must hold out the same games and parents."""
    for option in reversed([
        click.option("--labels", multiple=True, type=click.Path(exists=True),
                     help="Engine-scored moves for sibling pairs: a MultiPV .jsonl(.gz) file or a label-shard "
                          "directory (repeatable)."),
        click.option("--eval-set", "eval_sets", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="Named validation set (deepchess-valset): its held-out positions stay out of "
                          "training and every network is measured on it too (repeatable)."),
        click.option("--per-game", default=10, show_default=True, help="Random positions per decisive game."),
        click.option("--sibling-margin", default=0.05, show_default=True,
                     help="Siblings whose expected scores (-1..1) differ by less count as tied and are skipped."),
        click.option("--sibling-quiet", is_flag=True,
                     help="Encode each sibling child after the captures material with capture quiescence expects "
                          "(the quiet position the comparison search judges), not right after its move."),
        click.option("--validation", default=0.1, show_default=True, help="Fraction of games held out."),
        click.option("--val-pairs", default=20_000, show_default=True, help="Held-out won-vs-lost pairs."),
        click.option("--val-parents", default=10_000, show_default=True, help="Held-out sibling parents kept."),
        click.option("--seed", default=1, show_default=True),
        click.option("--workers", default=os.cpu_count() or 1, show_default=True,
                     help="Processes encoding the sibling children (the same data for any number).")]):
        command = option(command)
    return command


@cli.command()
@click.argument("pgn", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run directory.")
@_deepchess_data_options
@click.option("--sibling-share", default=0.5, show_default=True,
              help="Share of sibling pairs among the training pairs (with --labels).")
@click.option("--pretrain-epochs", default=5, show_default=True, help="Autoencoder epochs per layer.")
@click.option("--epochs", default=20, show_default=True, help="Siamese epochs (fresh pairs each).")
@click.option("--pairs-per-epoch", default=200_000, show_default=True)
@click.option("--distill-epochs", default=20, show_default=True)
@click.option("--lr", default=1e-3, show_default=True)
@click.option("--lr-decay", default=0.99, show_default=True,
              help="Learning rate factor per epoch of the Siamese, distilled and from-scratch training (below 1 "
                   "anneals, so that the last epoch, the one kept, is a settled one).")
@click.option("--teacher", "teachers", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Distil from this trained comparator (teacher.pt of a run on the same games) instead of "
                   "pretraining and training one; repeated, their probabilities are averaged (an ensemble).")
@click.option("--student", type=click.Path(exists=True, dir_okay=False),
              help="Continue distilling this small network (student.pt of a run) instead of starting with its "
                   "tower regressing the teacher's features.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda.")
def deepchess(pgn: tuple[str, ...], out: str, labels: tuple[str, ...], eval_sets: tuple[str, ...],
              teachers: tuple[str, ...], **kwargs) -> None:
    """DeepChess: Pos2Vec pretraining, Siamese comparator, distillation and a small net from scratch.

    Writes teacher.pt (unless --teacher gives it), student.pt, scratch.pt,
    validation.npz (this run's held-out pairs, usable as --eval-set) and
    report.json into the run directory.
    """
    from training.deepchess import DeepChessConfig, run_pipeline
    with clear_errors():
        report = run_pipeline(DeepChessConfig(pgn=list(pgn), out=out, labels=list(labels), eval_sets=list(eval_sets),
                                              teachers=list(teachers), **kwargs))
    click.echo(json.dumps(report["evaluation"], indent=1))


@cli.command("deepchess-valset")
@click.argument("pgn", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Validation set .npz.")
@_deepchess_data_options
def deepchess_valset(pgn: tuple[str, ...], out: Path, labels: tuple[str, ...], eval_sets: tuple[str, ...],
                     **kwargs) -> None:
    """Build a named DeepChess validation set: the held-out pairs a `deepchess` run with the same games,
    labels, --validation and --seed would use, to measure any network on fixed pairs."""
    from training.deepchess import DeepChessConfig, prepare_data
    config = DeepChessConfig(pgn=list(pgn), out=str(out.parent), labels=list(labels), eval_sets=list(eval_sets),
                             **kwargs)
    validation = prepare_data(config, name=out.stem, training=False).validation
    validation.save(out)
    click.echo(f"wrote {out}: {json.dumps(validation.info)}")


@cli.command("deepchess-eval")
@click.argument("networks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--eval-set", "eval_sets", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Validation set (repeatable).")
@click.option("--search-depth", type=click.IntRange(1, 4),
              help="Also pick each held-out parent's child by the engine's own search to this depth, restricted "
                   "to the scored children (`go searchmoves`): the comparison search for .onnx comparators, "
                   "material alpha-beta as the baseline.")
@click.option("--parents", default=2000, show_default=True, help="Held-out parents searched with --search-depth.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures as JSON.")
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
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
def export_comparator_command(checkpoint: Path, out: Path) -> None:
    """Export a DeepChess checkpoint (student.pt or teacher.pt) to ONNX + .npz for the engine."""
    from training.export import export_comparator
    export_comparator(checkpoint, out, command=" ".join(shlex.quote(a) for a in sys.argv))
    click.echo(f"wrote {out} and {out.with_suffix('.npz')}")


@cli.command("annotate")
@click.argument("pgn", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
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
@click.option("--engine", "command", default=f"{shlex.quote(sys.executable)} -m engine", show_default=True,
              help="UCI engine command line (default: this engine with its shipped network).")
@click.option("--games", default=100, show_default=True)
@click.option("--nodes", default="400", show_default=True,
              help="Nodes per move; several, comma-separated (1000,2000,4000): one chosen at random per game.")
@click.option("--random-plies", default=6, show_default=True, help="Random opening plies for variety.")
@click.option("--random-share", default=1.0, show_default=True, type=click.FloatRange(0, 1),
              help="Share of the games that get the random plies (the shared corpus: 1 random ply in 0.3).")
@click.option("--workers", default=2, show_default=True)
@click.option("--seed", default=1, show_default=True, help="Seed of the random opening plies (with --workers).")
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
    played = selfplay(out, _engine_command(command), budgets[0], games, workers, options=options)
    click.echo(f"played {played} games into {out}: {json.dumps(summarize_games(out))}")


@cli.command("dqn")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run directory: checkpoint.pt, replay.npz, history.json, curves.png, dqn.onnx. Rerun to resume.")
@click.option("--expert-pgn", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="PGN games whose moves pre-fill the replay buffer as expert transitions (repeatable).")
@click.option("--expert-transitions", default=50_000, show_default=True, help="Expert transitions to pre-fill.")
@click.option("--steps", default=100_000, show_default=True, help="Self-play plies in all.")
@click.option("--epsilon-start", default=1.0, show_default=True, help="Exploration rate at the first self-play ply.")
@click.option("--epsilon-end", default=0.01, show_default=True, help="Exploration rate after --epsilon-steps.")
@click.option("--epsilon-steps", default=50_000, show_default=True, help="Plies of linear epsilon decay.")
@click.option("--buffer", default=100_000, show_default=True, help="Replay buffer size (transitions).")
@click.option("--batch-size", default=64, show_default=True, help="Transitions per gradient update.")
@click.option("--lr", default=1e-4, show_default=True, help="Adam learning rate.")
@click.option("--gamma", default=0.99, show_default=True, help="Discount per own move.")
@click.option("--target-sync", default=500, show_default=True, help="Updates between target-network syncs.")
@click.option("--train-every", default=4, show_default=True, help="Self-play plies per gradient update.")
@click.option("--reward", type=click.Choice(["result", "material"]), default="result", show_default=True,
              help="result: +1/0/-1 at the end of the game; material: also the mover's material change after "
                   "the opponent's reply (1/3/3/5/9, a pawn worth 0.1).")
@click.option("--expert-weight", default=0.0, show_default=True,
              help="Weight of the expert loss (--expert-loss) on the expert transitions, which then stay in the "
                   "buffer for good (0: the paper's DQN, whose expert transitions self-play overwrites in time).")
@click.option("--expert-loss", type=click.Choice(["margin", "cross-entropy"]), default="margin", show_default=True,
              help="margin: DQfD's large-margin loss; cross-entropy: softmax(Q / --expert-temperature) over the "
                   "legal moves against the expert's move (moves every legal Q-value at once).")
@click.option("--expert-margin", default=0.8, show_default=True,
              help="Margin by which the expert's move must beat every other legal move's Q-value (margin loss).")
@click.option("--expert-temperature", default=0.1, show_default=True,
              help="Temperature of the cross-entropy expert loss (the engine reads Q-values at QTemperature 0.1).")
@click.option("--pretrain-updates", default=0, show_default=True,
              help="Gradient steps on the expert transitions alone before self-play begins (DQfD's pre-training).")
@click.option("--blocks", default=2, show_default=True, help="Residual blocks of the Q-network.")
@click.option("--filters", default=32, show_default=True, help="Channels of the Q-network.")
@click.option("--random-plies", default=4, show_default=True, help="Random plies opening every self-play game.")
@click.option("--max-plies", default=300, show_default=True, help="Self-play and evaluation games are drawn here.")
@click.option("--eval-every", default=10_000, show_default=True,
              help="Plies between evaluations of the greedy network against a random mover (0: never).")
@click.option("--eval-games", default=10, show_default=True, help="Games per evaluation.")
@click.option("--checkpoint-every", default=10_000, show_default=True, help="Plies between checkpoints (and exports).")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda.")
@click.option("--threads", default=1, show_default=True,
              help="PyTorch CPU threads (the network acts one position at a time: more threads rarely help).")
@click.option("--seed", default=1, show_default=True, help="Seed of every random choice (games, sampling, noise).")
def dqn_command(out: Path, expert_pgn: tuple[Path, ...], **kwargs) -> None:
    """DQN after Narang, Mirza and Dast Parvadeh: a Q-network over the 4672 move slots learns from expert
    transitions, then from epsilon-greedy self-play. Writes OUT/dqn.onnx (play it with --eval dqn)."""
    from training.rl.dqn import DQNConfig, train_dqn
    config = DQNConfig(str(out), [str(p) for p in expert_pgn], **kwargs)
    with clear_errors():
        click.echo(f"wrote {train_dqn(config, command=' '.join(shlex.quote(a) for a in sys.argv))}")


@cli.command("ppo")
@click.option("--checkpoint", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Policy-value weights to fine-tune (a training checkpoint, weights/resnet.pt, or import-onnx's "
                   "output).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run directory: checkpoint.pt, history.json, curves.png, ppo.onnx. Rerun to resume.")
@click.option("--updates", default=50, show_default=True, help="PPO updates in all.")
@click.option("--games-per-update", default=8, show_default=True, help="Games against Stockfish per update.")
@click.option("--epochs", default=4, show_default=True, help="Passes over each update's moves.")
@click.option("--minibatch", default=128, show_default=True, help="Moves per gradient step.")
@click.option("--lr", default=2e-5, show_default=True, help="Adam learning rate.")
@click.option("--gamma", default=0.99, show_default=True, help="Discount per own move.")
@click.option("--lam", default=0.95, show_default=True, help="GAE lambda.")
@click.option("--clip", default=0.2, show_default=True, help="PPO ratio clip.")
@click.option("--value-weight", default=0.5, show_default=True, help="Weight of the value loss.")
@click.option("--entropy-weight", default=0.01, show_default=True, help="Weight of the entropy bonus.")
@click.option("--grad-clip", default=0.5, show_default=True, help="Gradient norm clip.")
@click.option("--target-kl", default=0.02, show_default=True,
              help="Stop an update's passes once the approximate KL from the rollout policy passes 1.5 x this "
                   "(0: never).")
@click.option("--start-level", default=0, show_default=True, help="Stockfish Skill Level of the first games.")
@click.option("--max-level", default=20, show_default=True, help="Highest Skill Level of the curriculum.")
@click.option("--window", default=20, show_default=True, help="Games of the current level the win rate is taken over.")
@click.option("--promote-win-rate", default=0.55, show_default=True,
              help="Win rate (wins / games over the window) that promotes to the next level.")
@click.option("--stockfish-nodes", default=10_000, show_default=True, help="Stockfish's nodes a move.")
@click.option("--openings", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Injected openings: a Polyglot .bin book (a weighted random walk) or a PGN (a random game's "
                   "first plies).")
@click.option("--opening-share", default=0.5, show_default=True, help="Share of games started from --openings.")
@click.option("--opening-plies", default=8, show_default=True, help="Longest opening line from --openings.")
@click.option("--shaping", default=0.0, show_default=True,
              help="Weight of the potential-based central-control reward (the paper's 0.1; 0: result only).")
@click.option("--policy-temperature", default=1.0, show_default=True,
              help="The policy PPO samples and trains is softmax(logits / T); below 1 it plays sharper "
                   "(the raw policy of a small network, sampled, rarely beats Stockfish at Skill Level 0).")
@click.option("--mcts-level", default=4, show_default=True,
              help="From this Skill Level on, moves come from alpha pi_PPO + (1 - alpha) pi_MCTS.")
@click.option("--mcts-nodes", default=64, show_default=True, help="PUCT nodes of pi_MCTS.")
@click.option("--alpha", default=0.5, show_default=True, help="Share of the network's policy in the blend.")
@click.option("--mcts-temperature", default=1.0, show_default=True,
              help="pi_MCTS is the visit counts ** (1 / T), renormalised: below 1 it leans to the most visited move "
                   "(raw 64-node visit counts sampled as they are lost 25 of 32 games at Skill Level 0).")
@click.option("--max-plies", default=300, show_default=True, help="Games are drawn here.")
@click.option("--reset-value-head", is_flag=True,
              help="Start from the checkpoint's trunk and policy with a freshly initialised value head (a "
                   "deliberately weak start, to see what PPO's value learning is worth in play).")
@click.option("--value-trains-trunk/--value-head-only", default=True, show_default=True,
              help="Whether the value loss also trains the shared trunk; with --value-head-only the trunk learns "
                   "from the policy loss alone, so a value head still learning cannot pull it away from the policy.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda.")
@click.option("--threads", default=1, show_default=True, help="PyTorch CPU threads.")
@click.option("--seed", default=1, show_default=True, help="Seed of every random choice (games, sampling, noise).")
def ppo_command(checkpoint: Path, out: Path, openings: Optional[str], **kwargs) -> None:
    """PPO with MCTS after Sai (2025): fine-tune a policy-value network on games against Stockfish with a
    Skill Level curriculum. Writes OUT/ppo.onnx (play it with --eval resnet --weights OUT/ppo.onnx)."""
    from training.rl.ppo import PPOConfig, train_ppo
    command = " ".join(shlex.quote(a) for a in sys.argv)
    config = PPOConfig(str(checkpoint), str(out), openings=openings or "", **kwargs)
    with clear_errors():
        click.echo(f"wrote {train_ppo(config, command=command)}")


@cli.command("reinforce")
@click.option("--checkpoint", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Policy-value weights to start from (a training checkpoint or weights file).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run directory: state.json, best.pt/best.onnx, iterationNNN/, history.json, curves.png. "
                   "Rerun to resume.")
@click.option("--iterations", default=10, show_default=True, help="Iterations of self-play, training and gate.")
@click.option("--games", default=40, show_default=True, help="Self-play games per iteration.")
@click.option("--nodes", default=100, show_default=True, help="PUCT nodes per self-play move.")
@click.option("--dirichlet-alpha", default=0.3, show_default=True, help="Dirichlet noise at the root: alpha.")
@click.option("--dirichlet-weight", default=0.25, show_default=True, help="Dirichlet noise at the root: weight.")
@click.option("--temperature-plies", default=30, show_default=True,
              help="Plies at the start of a game whose move is sampled by visit counts (then the best move).")
@click.option("--max-plies", default=300, show_default=True, help="Games are drawn here.")
@click.option("--window", default=4, show_default=True, help="Iterations of games the candidate trains on.")
@click.option("--epochs", default=1, show_default=True, help="Training epochs per iteration.")
@click.option("--batch-size", default=256, show_default=True, help="Training batch size.")
@click.option("--lr", default=3e-4, show_default=True, help="Peak learning rate of each training (AdamW, cosine).")
@click.option("--gate-games", default=40, show_default=True, help="Games of each gating match.")
@click.option("--gate-nodes", default=200, show_default=True, help="PUCT nodes per move in gating games.")
@click.option("--gate-threshold", default=0.55, show_default=True,
              help="Score the candidate needs to replace the best network.")
@click.option("--openings", default="", type=click.Path(dir_okay=False),
              help="PGN or EPD file of gating openings (default: --opening-plies random plies).")
@click.option("--opening-plies", default=6, show_default=True,
              help="Random plies of each gating opening, or with a PGN: plies of each game.")
@click.option("--workers", default=2, show_default=True, help="Processes playing games.")
@click.option("--device", default="auto", show_default=True, help="Training device: auto, cpu, cuda.")
@click.option("--seed", default=1, show_default=True, help="Seed of every random choice (games, sampling, noise).")
def reinforce(checkpoint: Path, out: Path, **kwargs) -> None:
    """AlphaZero-style reinforcement learning: PUCT self-play with root noise, training on the root visit counts
    and results, and a gate that keeps a candidate only if it beats the best network so far."""
    from training.rl.alphazero import AlphaZeroConfig, train_alphazero
    with clear_errors():
        click.echo(f"best network: {train_alphazero(AlphaZeroConfig(str(checkpoint), str(out), **kwargs))}")


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
@click.option("--seed", default=1, show_default=True, help="Seed of every random choice (games, sampling, noise).")
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
    """Print a command's figures as JSON, and write the same text to ``out`` if given."""
    text = json.dumps(figures, indent=1)
    if out:
        out.write_text(text + "\n")
    click.echo(text)


cli.add_command(corpus_command)

if __name__ == "__main__":
    cli()
