"""The GPU recipe (docs/gpu-recipe.md): label on every core, train on the GPU, in resumable steps.

``python -m training gpu-recipe`` (declared in training/__main__.py, which calls :func:`step`): its defaults are
sized for a GPU (RECIPE_DEFAULTS) where the other training commands' are sized for a CPU. The shell scripts beside
it (``gpu-*.sh``) are the GPU calls that made the shipped networks with it and its relatives, kept so that those
networks can be made again (docs/gpu-recipe.md says what each did), each with a toy scale for two CPU cores.

Each invocation does the next piece of work for at most ``--minutes`` and
returns: Stockfish self-play games (if asked), labelling them and any given
PGN/EPD files, training (``--resume``, stopping at a batch boundary), then
export. Run the same command again until it prints ``recipe: done``. The
folder ``--out`` then holds resnet.onnx, resnet.pt, report.json and curves.png;
``--deliver DIR`` copies those (as far as they exist) there after every step.
On a machine with more than one GPU the training runs under ``torchrun``, one
process per GPU (``--gpus``; training.resnet.distributed).
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import click

from training.config_cli import field_default
from training.configs import LabelConfig, TrainConfig

DELIVERABLES = ("resnet.onnx", "resnet.pt", "swa.pt", "report.json", "curves.png")
#: The labelling settings the recipe passes on (their defaults and help are LabelConfig's).
LABEL_SETTINGS = ("nodes", "multipv", "per_game", "min_ply", "workers", "seed")
#: The training settings the recipe passes on (their defaults and help are TrainConfig's, but for RECIPE_DEFAULTS).
TRAIN_SETTINGS = ("init", "grow", "blocks", "filters", "squeeze", "epochs", "batch_size", "lr", "result_weight",
                  "temperature", "swa_every", "mirror", "budget_minutes", "device")
#: A GPU trains on larger batches, and for longer, than `train`'s defaults, sized for a CPU.
RECIPE_DEFAULTS = {"epochs": 10, "batch_size": 1024}


def unpack_engine(engine: Path, out: Path) -> Path:
    """An engine carried as ``.xz`` (Stockfish compresses to less than half) is unpacked into ``out`` once."""
    if engine.suffix != ".xz":
        return engine
    target = out / engine.stem
    if not target.exists():
        temporary = target.with_name(target.name + ".tmp")
        with lzma.open(engine) as packed, open(temporary, "wb") as unpacked:
            shutil.copyfileobj(packed, unpacked)
        temporary.chmod(0o755)
        temporary.replace(target)
    return target


def run_bounded(command: list[str], seconds: float) -> bool:
    """Run ``command`` in its own process group; True if it finished, False if it was stopped at ``seconds``."""
    process = subprocess.Popen(command, start_new_session=True)
    try:
        process.wait(timeout=max(1.0, seconds))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        return False
    if process.returncode:
        raise click.ClickException(f"{shlex.join(command)} failed with exit code {process.returncode}")
    return True


def step(sources: tuple[Path, ...], out: Path, engine: str, minutes: float, deliver: Optional[Path],
         selfplay_games: int, selfplay_nodes: int, selfplay_random_plies: int, nodes: int, multipv: int,
         per_game: int, min_ply: int, workers: int, seed: int, extra_data: list[Path],
         test_dir: Optional[Path], gpus: int, init: str, grow: bool, blocks: int, filters: int, epochs: int,
         batch_size: int, squeeze: int, lr: float, result_weight: float, temperature: float, swa_every: int,
         mirror: bool, budget_minutes: float, device: str) -> None:
    """The next piece of work, within ``minutes``."""
    from training.resnet.train import run_finished, train
    from training.resnet.weights import load_file
    from training.uci.label import label
    deadline = time.monotonic() + minutes * 60
    out.mkdir(parents=True, exist_ok=True)
    status_path = out / "status.json"
    status = json.loads(status_path.read_text()) if status_path.exists() else {}

    def left() -> float:
        return deadline - time.monotonic()

    def finish_step(message: str) -> None:
        status_path.write_text(json.dumps(status, indent=1))
        if deliver:
            deliver.mkdir(parents=True, exist_ok=True)
            for name in DELIVERABLES:
                if (out / name).exists():
                    shutil.copy(out / name, deliver / name)
        click.echo(f"recipe: {message}")

    labels = out / "labels"
    sources = tuple(sources)
    engine_path = find_engine(engine, out) if sources or selfplay_games else None  # training alone needs none
    if selfplay_games:
        pgn = out / f"selfplay-s{seed}-g{selfplay_games}-n{selfplay_nodes}.pgn"
        if not status.get("selfplay"):
            finished = run_bounded([sys.executable, "-m", "training", "selfplay", "--out", str(pgn),
                                    "--engine", str(engine_path), "--games", str(selfplay_games),
                                    "--nodes", str(selfplay_nodes), "--random-plies", str(selfplay_random_plies),
                                    "--workers", str(workers), "--seed", str(seed)], left())
            if not finished:
                return finish_step("self-play stopped at this step's --minutes: run the same command again")
            status["selfplay"] = True
        sources += (pgn,)
    if sources and not status.get("labelled"):
        summary = label(LabelConfig(sources=list(sources), out=labels, engine=str(engine_path), nodes=nodes,
                                    multipv=multipv, workers=workers, seed=seed, min_ply=min_ply, per_game=per_game,
                                    exclude=[test_dir] if test_dir else [], max_minutes=max(0.01, left() / 60)),
                        command_line=shlex.join(sys.argv))
        if summary.stopped:
            return finish_step("labelling stopped at this step's --minutes: run the same command again")
        status["labelled"] = True
    data = [str(labels)] if sources else []
    for source in extra_data:
        data.append(str(source if source.is_dir() else import_once(source, out, status)))
        status_path.write_text(json.dumps(status, indent=1))
    if not data:
        raise click.UsageError("nothing to train on: give PGN/EPD sources, --selfplay-games or --data")
    run_dir = out / "run"
    if not status.get("trained"):
        config = TrainConfig(data=data, out=str(run_dir), blocks=blocks, filters=filters, squeeze=squeeze,
                             epochs=epochs, batch_size=batch_size, lr=lr, result_weight=result_weight,
                             temperature=temperature, device=device, swa_every=swa_every, swa_max_n=0, mirror=mirror,
                             resume=True, init=init, grow=grow, budget_minutes=budget_minutes,
                             exclude=[str(test_dir)] if test_dir else [], max_minutes=max(0.01, left() / 60))
        processes = training_processes(gpus, device)
        if processes > 1:
            command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                       str(processes), "-m", "training", "train", *train_arguments(config)]
            checkpoint = run_dir / "checkpoint.pt"
            if not run_bounded(command, left() + 60) or not checkpoint.exists():  # train stops itself at left()
                return finish_step("training stopped at this step's --minutes: run the same command again")
        else:
            checkpoint = train(config)
        if not run_finished(load_file(checkpoint), config):
            return finish_step("training stopped at this step's --minutes: run the same command again")
        status["trained"] = True
    finish(out, run_dir, test_dir, init)
    status["done"] = True
    finish_step(f"done: {', '.join(str(out / name) for name in DELIVERABLES)}")


def training_processes(gpus: int, device: str) -> int:
    """How many processes train: one per GPU asked for (``gpus``; 0: every one PyTorch sees), one on a CPU."""
    import torch
    if device == "cpu" or not torch.cuda.is_available():
        return 1
    seen = torch.cuda.device_count()
    if gpus > seen:
        raise click.ClickException(f"--gpus {gpus}: PyTorch sees {seen} GPUs here")
    return gpus or seen


def train_arguments(config: TrainConfig) -> list[str]:
    """``config`` as the arguments of `python -m training train` (the settings left at their defaults left out)."""
    arguments = list(config.data)
    for item in dataclasses.fields(config):
        value, default = getattr(config, item.name), field_default(item)
        option = "--" + item.name.replace("_", "-")
        if item.name == "data" or value == default:
            continue
        if isinstance(value, bool):
            arguments.append(option if value else f"--no-{option[2:]}")
        elif isinstance(value, (list, tuple)):
            for entry in value:
                arguments += [option, str(entry)]
        else:
            arguments += [option, str(value)]
    return arguments


def find_engine(engine: str, out: Path) -> str:
    """The labelling engine: a carried file (unpacked if ``.xz``) or a command on the PATH or in /usr/games."""
    found = unpack_engine(Path(engine), out) if Path(engine).exists() else shutil.which(engine) \
        or shutil.which(engine, path="/usr/games")
    if not found:
        raise click.ClickException(f"engine not found: {engine}")
    return str(found)


def import_once(source: Path, out: Path, status: dict) -> Path:
    """A MultiPV file converted once into a shard directory in ``out`` (converting on every step costs minutes)."""
    from evaluators.encoding import get_encoding
    from training.data.multipv import from_jsonl, jsonl_labeller
    from training.data.shards import DEFAULT_ENCODING, write_dir
    from training.data.targets import DEFAULT_TEMPERATURE
    target = out / ("imported-" + source.name.split(".")[0])
    if not status.get(f"imported {source.name}"):
        shutil.rmtree(target, ignore_errors=True)  # an import interrupted last time
        encoding = get_encoding(DEFAULT_ENCODING)
        arrays = from_jsonl(source, encoding, DEFAULT_TEMPERATURE)
        write_dir(arrays, target, encoding, jsonl_labeller(source, DEFAULT_TEMPERATURE), source.name)
        status[f"imported {source.name}"] = True
    return target


def finish(out: Path, run_dir: Path, test_dir: Optional[Path], init: str) -> None:
    """Export ONNX and weights, evaluate on the test set (and the starting network, and the weights' running
    mean where the run kept one), write the report."""
    from training.resnet.export import export_resnet
    from training.resnet.metrics import evaluate_network
    from training.resnet.weights import load_file, save_weights, weights_of
    state = load_file(run_dir / "checkpoint.pt")
    save_weights(weights_of(state), out / "resnet.pt")
    export_resnet(run_dir / "checkpoint.pt", out / "resnet.onnx", command=shlex.join(sys.argv))
    shutil.copy(run_dir / "curves.png", out / "curves.png")
    report = {"command": shlex.join(sys.argv), "network": state["shape"], "training": state["config"],
              "data": state["meta"]["sources"], "history": state["history"]}
    labels_meta = out / "labels" / "meta.json"
    if labels_meta.exists():
        report["labelling"] = json.loads(labels_meta.read_text())["runs"]
    if test_dir:
        report["test"] = evaluate_network(out / "resnet.onnx", test_dir)
        if init:
            report["test_init"] = evaluate_network(Path(init), test_dir)
    if (run_dir / "swa.pt").exists():
        shutil.copy(run_dir / "swa.pt", out / "swa.pt")
        if test_dir:
            report["test_swa"] = evaluate_network(out / "swa.pt", test_dir)
    (out / "report.json").write_text(json.dumps(report, indent=1))
