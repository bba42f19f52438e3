"""Command line of the training package: `python -m training COMMAND --help`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click


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


@cli.command()
@click.argument("data", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run directory.")
@click.option("--blocks", default=6, show_default=True)
@click.option("--filters", default=64, show_default=True)
@click.option("--epochs", default=4, show_default=True)
@click.option("--batch-size", default=512, show_default=True)
@click.option("--lr", default=2e-3, show_default=True)
@click.option("--schedule", type=click.Choice(["cosine", "step"]), default="cosine", show_default=True)
@click.option("--label-smoothing", default=0.0, show_default=True)
@click.option("--value-target", type=click.Choice(["result", "eval", "mix"]), default="mix", show_default=True)
@click.option("--eval-weight", default=0.7, show_default=True, help="Share of the eval in the mix.")
@click.option("--validation", default=0.05, show_default=True, help="Fraction of games held out.")
@click.option("--max-samples", default=0, show_default=True, help="Use at most this many samples (0: all).")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda.")
@click.option("--resume", is_flag=True, help="Continue from the run directory's checkpoint.")
@click.option("--init", default="", help="Start from the weights of this checkpoint (fine-tuning).")
def train(data: tuple[str, ...], out: str, **kwargs) -> None:
    """Train the policy-value ResNet on prepared datasets."""
    from training.train import TrainConfig, train as run
    path = run(TrainConfig(data=list(data), out=out, **kwargs))
    click.echo(f"checkpoint: {path}")


@cli.command()
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
def export(checkpoint: Path, out: Path) -> None:
    """Export a policy-value checkpoint to ONNX with the engine's metadata."""
    from training.export import export_resnet
    export_resnet(checkpoint, out, command=" ".join(shlex.quote(a) for a in sys.argv))
    click.echo(f"wrote {out}")


@cli.command()
@click.argument("pgn", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run directory.")
@click.option("--per-game", default=10, show_default=True, help="Random positions per decisive game.")
@click.option("--pretrain-epochs", default=5, show_default=True, help="Autoencoder epochs per layer.")
@click.option("--epochs", default=20, show_default=True, help="Siamese epochs (fresh pairs each).")
@click.option("--pairs-per-epoch", default=200_000, show_default=True)
@click.option("--distill-epochs", default=20, show_default=True)
@click.option("--lr", default=1e-3, show_default=True)
@click.option("--validation", default=0.1, show_default=True, help="Fraction of games held out.")
@click.option("--seed", default=1, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda.")
def deepchess(pgn: tuple[str, ...], out: str, **kwargs) -> None:
    """DeepChess: Pos2Vec pretraining, Siamese comparator, distillation and a small net from scratch."""
    from training.deepchess import DeepChessConfig, run_pipeline
    report = run_pipeline(DeepChessConfig(pgn=list(pgn), out=out, **kwargs))
    click.echo(json.dumps(report["accuracy"]))


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
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--engine", "command", default=f"{shlex.quote(sys.executable)} -m engine", show_default=True,
              help="UCI engine command line (default: this engine with its shipped network).")
@click.option("--games", default=100, show_default=True)
@click.option("--nodes", default=400, show_default=True, help="Nodes per move.")
@click.option("--random-plies", default=6, show_default=True, help="Random opening plies for variety.")
@click.option("--workers", default=2, show_default=True)
def selfplay_command(out: Path, command: str, games: int, nodes: int, random_plies: int, workers: int) -> None:
    """Self-play games with [%eval] annotations, ready for `prepare` (resumable: rerun to continue)."""
    from training.generate import selfplay
    played = selfplay(out, _engine_command(command), nodes, games, workers, random_plies)
    click.echo(f"played {played} games into {out}")


@cli.command("reinforce")
@click.option("--checkpoint", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Policy-value checkpoint to improve.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Work directory.")
@click.option("--iterations", default=3, show_default=True)
@click.option("--games", default=100, show_default=True, help="Self-play games per iteration.")
@click.option("--nodes", default=200, show_default=True, help="PUCT nodes per self-play move.")
@click.option("--epochs", default=1, show_default=True, help="Training epochs per iteration.")
@click.option("--lr", default=3e-4, show_default=True)
@click.option("--workers", default=2, show_default=True)
def reinforce(checkpoint: Path, out: Path, iterations: int, games: int, nodes: int, epochs: int, lr: float,
              workers: int) -> None:
    """Self-play reinforcement learning: play with the current net, train on the games, export, repeat.

    Policy targets are the moves PUCT chose, value targets the game results mixed
    with the search's own evaluations.
    """
    from training.dataset import build_samples, save
    from training.export import export_resnet
    from training.generate import selfplay
    from training.train import TrainConfig, load_checkpoint, train as run
    out.mkdir(parents=True, exist_ok=True)
    encoding = load_checkpoint(checkpoint)[1]["meta"]["encoding"]
    for iteration in range(1, iterations + 1):
        weights = out / f"iteration{iteration - 1}.onnx"
        export_resnet(checkpoint, weights, command="reinforce")
        games_path = out / f"selfplay{iteration}.pgn"
        engine = f"{shlex.quote(sys.executable)} -m engine --eval resnet --search puct --weights {weights}"
        selfplay(games_path, engine, nodes, games, workers)
        samples, stats = build_samples([games_path], encoding, {"require_eval": True}, workers)
        save(samples, out / f"data{iteration}", {"encoding": encoding, "files": [str(games_path)],
                                                  "read": stats.summary()})
        checkpoint = run(TrainConfig(data=[str(out / f"data{iteration}")], out=str(out / f"run{iteration}"),
                                     epochs=epochs, lr=lr, init=str(checkpoint),
                                     **_shape(load_checkpoint(checkpoint)[1])))
        click.echo(f"iteration {iteration}: {stats.summary()}; checkpoint {checkpoint}")
    export_resnet(checkpoint, out / "final.onnx", command="reinforce")
    click.echo(f"wrote {out / 'final.onnx'}")


def _shape(state: dict) -> dict:
    return {"blocks": state["shape"]["blocks"], "filters": state["shape"]["filters"]}


def _engine_command(command: str) -> str:
    """Debian installs engines in /usr/games, which is often not on PATH."""
    import shutil
    words = shlex.split(command)
    if words and shutil.which(words[0]) is None and shutil.which(words[0], path="/usr/games"):
        words[0] = shutil.which(words[0], path="/usr/games")  # type: ignore[assignment]
    return shlex.join(words)


if __name__ == "__main__":
    cli()
