"""Work beyond one process: self-play and labelling on a Ray cluster (the same games and labels as the local pool,
workers lost mid-run, addresses that cannot be reached, the local pool without Ray) and training under torchrun (the
same weights as one process with the same total batch, a rank that dies)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_stockfish, stockfish_path
from tests.training.uci.test_labelling import labelled, write_synthetic
from training.configs import SelfPlayOptions, TrainConfig
from training.data import shards
from training.uci import workers
from training.uci.label import label
from training.uci.selfplay import selfplay

RAY_MISSING = "the ray extra is not installed (pip install -e '.[ray]')"
#: Four short self-play games: a few seconds, decisive and drawn ones.
GAMES = dict(nodes=40, games=4, options=SelfPlayOptions(random_plies=4, seed=3))

#: An engine that plays through Stockfish and, the first time any copy of it reaches its ``after``-th `go`,
#: kills the process that started it: the worker playing that game, mid-game.
KILLER = '''
import os, signal, subprocess, sys
marker, after, engine = sys.argv[1], int(sys.argv[2]), subprocess.Popen([sys.argv[3]], stdin=subprocess.PIPE, text=True)
goes = 0
for line in sys.stdin:
    engine.stdin.write(line)
    engine.stdin.flush()
    goes += line.startswith("go")
    if line.strip() == "quit":
        break
    if goes == after:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            continue
        os.kill(os.getppid(), signal.SIGKILL)
engine.stdin.close()
engine.wait()
'''


#: The training command under torchrun, whose process of rank 1 kills itself (SIGKILL) at its first step after rank 0
#: has written the checkpoint (argv[1]): a rank that dies mid-run.
RANK_DIES = '''
import os, runpy, signal, sys
from torch.optim.optimizer import register_optimizer_step_pre_hook
checkpoint = sys.argv[1]
def die(optimizer, args, kwargs):
    if os.path.exists(checkpoint):
        os.kill(os.getpid(), signal.SIGKILL)
if os.environ["RANK"] == "1":
    register_optimizer_step_pre_hook(die)
sys.argv = ["training", *sys.argv[2:]]
runpy.run_module("training", run_name="__main__", alter_sys=True)
'''


def killer_engine(directory: Path, after: int) -> tuple[str, Path]:
    """(the command of an engine that kills its worker at its ``after``-th move, the file that says it did)."""
    script = directory / "killer.py"
    script.write_text(KILLER)
    marker = directory / "killed"
    return f"{sys.executable} {script} {marker} {after} {stockfish_path()}", marker


def games_by_round(text: str) -> dict[str, str]:
    return {re.search(r'\[Round "(\d+)"\]', game).group(1): game
            for game in re.split(r"\n\n(?=\[Event )", text.strip())}


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray instance of two workers in this process, which the runs join (as --ray auto joins a cluster)."""
    ray = pytest.importorskip("ray", reason=RAY_MISSING)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_games(tmp_path_factory) -> str:
    """The four games played by the local pool of two processes."""
    out = tmp_path_factory.mktemp("local") / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=2, **GAMES) == 4
    return out.read_text()


@needs_stockfish
def test_ray_selfplay_gives_the_local_pools_games(ray_cluster, local_games, tmp_path):
    out = tmp_path / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=1, ray="auto", **GAMES) == 4
    assert out.read_text() == local_games and len(games_by_round(local_games)) == 4


@needs_stockfish
def test_a_worker_killed_mid_game_loses_only_that_game(ray_cluster, local_games, tmp_path, monkeypatch):
    command, marker = killer_engine(tmp_path, after=10)
    out = tmp_path / "games.pgn"
    monkeypatch.setattr(workers, "RETRIES", 0)  # Ray would play the game again on another worker: lose it for good
    with pytest.raises(workers.WorkLost, match=r"games lost with their workers: 1 \(WorkerCrashedError.*"
                                               r"the 3 finished are kept in .*games.pgn.part"):
        selfplay(out, command, workers=1, ray="auto", **GAMES)
    assert marker.exists() and not out.exists()
    expected = games_by_round(local_games.replace(stockfish_path(), command))
    kept = games_by_round((tmp_path / "games.pgn.part").read_text())
    assert len(kept) == 3 and all(kept[number] == expected[number] for number in kept)
    monkeypatch.undo()
    assert selfplay(out, command, workers=1, ray="auto", **GAMES) == 1  # the rerun plays the lost game
    assert games_by_round(out.read_text()) == expected and not (tmp_path / "games.pgn.part").exists()


@needs_stockfish
def test_ray_plays_a_game_again_whose_worker_died(ray_cluster, local_games, tmp_path):
    command, marker = killer_engine(tmp_path, after=10)
    out = tmp_path / "games.pgn"
    assert selfplay(out, command, workers=1, ray="auto", **GAMES) == 4
    assert marker.exists() and out.read_text() == local_games.replace(stockfish_path(), command)


@needs_stockfish
def test_a_local_worker_killed_mid_game_keeps_the_finished_games(local_games, tmp_path):
    first_moves = games_by_round(local_games)["1"].count("[%eval ")  # the engine's moves in game 1: its `go`s
    command, marker = killer_engine(tmp_path, after=first_moves + 3)  # the worker dies in game 2
    out, part = tmp_path / "games.pgn", tmp_path / "games.pgn.part"
    with pytest.raises(workers.WorkLost, match=r"games lost with their workers: 3 \(a worker process died\); the 1 "
                                               r"finished are kept in .*games.pgn.part"):
        selfplay(out, command, workers=1, **GAMES)  # one worker: games 2 to 4 were waiting on it
    assert marker.exists() and not out.exists()
    expected = games_by_round(local_games.replace(stockfish_path(), command))
    assert games_by_round(part.read_text()) == {"1": expected["1"]}
    assert selfplay(out, command, workers=2, **GAMES) == 3  # the rerun plays the rest
    assert games_by_round(out.read_text()) == expected and not part.exists()


@needs_stockfish
def test_without_ray_the_local_pool_plays_and_labels_as_before(local_games, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where the ray extra is not installed
    with pytest.raises(workers.ClusterError, match=re.escape("--ray needs Ray: pip install -e '.[ray]'")):
        workers.workers_for("local", 2)
    out = tmp_path / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=2, **GAMES) == 4
    assert out.read_text() == local_games
    assert label(labelled(tmp_path, max_positions=4), progress=False).labelled == 4


def labels_by_key(directory: Path) -> dict[int, tuple]:
    """Each position's label (policy moves and probabilities, W/D/L) by its key, whatever the order of the shards."""
    arrays = shards.load_dir(directory)[0]
    offsets = arrays["policy_offset"]
    return {int(key): (arrays["policy_index"][offsets[row]:offsets[row + 1]].tolist(),
                       arrays["policy_prob"][offsets[row]:offsets[row + 1]].tolist(), arrays["wdl"][row].tolist())
            for row, key in enumerate(arrays["key"])}


@needs_stockfish
def test_ray_labelling_keeps_every_label_but_the_lost_ones(ray_cluster, tmp_path, monkeypatch):
    from training.uci import label as labelling
    label(labelled(tmp_path, "local"), progress=False)
    command, marker = killer_engine(tmp_path, after=3)
    monkeypatch.setattr(labelling, "UNIT_SIZE", 4)  # three units of the twelve positions
    monkeypatch.setattr(workers, "RETRIES", 0)
    with pytest.raises(workers.WorkLost, match=r"positions lost with their workers: 4 \(WorkerCrashedError"):
        label(labelled(tmp_path, "ray", engine=command, ray="auto"), progress=False)
    assert marker.exists() and shards.read_meta(tmp_path / "ray")["runs"][-1]["summary"]["labelled now"] == 8
    monkeypatch.setattr(workers, "RETRIES", 3)
    assert label(labelled(tmp_path, "ray", engine=command, ray="auto"), progress=False).labelled == 4
    assert labels_by_key(tmp_path / "ray") == labels_by_key(tmp_path / "local")


@pytest.mark.parametrize("command", [["selfplay", "--out", "{tmp}/games.pgn", "--ray", "127.0.0.1:1"],
                                     ["label", "--out", "{tmp}/labels", "--selfplay", "1", "--ray",
                                      "ray://127.0.0.1:1"]])
def test_an_address_without_ray_stops_at_once_with_a_message(command, tmp_path):
    pytest.importorskip("ray", reason=RAY_MISSING)
    engine = ["--engine", stockfish_path() or sys.executable]
    result = subprocess.run([sys.executable, "-m", "training", *[a.format(tmp=tmp_path) for a in command], *engine],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert re.search(r"Error: cannot reach Ray at (ray://)?127\.0\.0\.1:1 .*: Connection refused", result.stderr)


def test_an_address_that_answers_but_is_not_a_head_stops_with_a_message(ray_cluster, monkeypatch):
    workers.check_reachable(ray_cluster.get_runtime_context().gcs_address)  # a head: its address passes
    monkeypatch.setattr(workers, "CONNECT_TIMEOUT_S", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes connections (the kernel's backlog), says nothing
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(workers.ClusterError, match=rf"{address} \(--ray {address}\) is not a Ray cluster's head "
                                                       r"\(no answer within 0.5 s\): give the address `ray start"):
            workers.check_reachable(address)


#: The network and schedule of the torchrun tests: 1 block of 8 filters, batches of 16, 30 positions held out.
TRAINING = dict(blocks=1, filters=8, batch_size=16, lr=1e-3, device="cpu", precision="fp32", result_weight=0.3,
                validation=0.1)


def train_arguments(data: Path, out: Path, epochs: int, *more: str) -> list[str]:
    """The `train` command line of TRAINING for ``epochs``."""
    options = [f"--{name.replace('_', '-')}={value}" for name, value in {**TRAINING, "epochs": epochs}.items()]
    return ["train", str(data), "--out", str(out), *options, *more]


def torchrun(*command: str) -> subprocess.CompletedProcess:
    """``command`` (a script or ``-m module``, and its arguments) in two CPU processes under torchrun."""
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           *command], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def train_one_process(data: Path, out: Path, epochs: int, **more) -> dict:
    """The checkpoint of TRAINING for ``epochs`` in this process, on one thread as each of torchrun's processes."""
    import torch
    from training.resnet.train import train
    from training.resnet.weights import load_file
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as torchrun's processes, and no waiting on cores the machine lacks
    try:
        return load_file(train(TrainConfig(data=[str(data)], out=str(out), epochs=epochs, **TRAINING, **more),
                               progress=False))
    finally:
        torch.set_num_threads(threads)


def assert_same_training(one: dict, two: dict) -> None:
    """The same weights (float tolerance) and the same figures, epoch by epoch."""
    import torch
    assert (one["epoch"], len(one["history"])) == (two["epoch"], len(two["history"]))
    for name, tensor in one["model"].items():
        if tensor.dtype.is_floating_point:
            torch.testing.assert_close(two["model"][name], tensor, rtol=0, atol=1e-4, msg=name)
    for mine, theirs in zip(one["history"], two["history"]):
        assert mine["train_samples"] == theirs["train_samples"]
        for figure in ("train_policy_loss", "train_value_loss", "val_policy_loss", "val_value_loss"):
            assert theirs[figure] == pytest.approx(mine[figure], rel=1e-4), figure


def test_two_processes_under_torchrun_train_the_weights_of_one(tmp_path):
    """Two CPU processes (Gloo) with half a batch each take the steps of one process with the whole batch."""
    pytest.importorskip("torch", reason="the training extra (torch) is not installed")
    from training.resnet.weights import load_file
    write_synthetic(tmp_path / "shards", 300)
    result = torchrun("-m", "training", *train_arguments(tmp_path / "shards", tmp_path / "two", 1, "--mirror"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "and in 1 more processes" in result.stdout
    two = load_file(tmp_path / "two" / "checkpoint.pt")
    one = train_one_process(tmp_path / "shards", tmp_path / "one", 1, mirror=True)
    assert one["epoch"] == 1
    assert_same_training(one, two)


def test_a_rank_that_dies_stops_the_run_with_the_checkpoint_intact(tmp_path):
    """Rank 1 killed in epoch 2: torchrun stops the run and says which rank died; the checkpoint of epoch 1 is
    whole, and --resume (here in one process, with the same total batch) ends where an uninterrupted run ends."""
    pytest.importorskip("torch", reason="the training extra (torch) is not installed")
    from training.resnet.weights import load_file
    write_synthetic(tmp_path / "shards", 300)
    script, checkpoint = tmp_path / "dies.py", tmp_path / "two" / "checkpoint.pt"
    script.write_text(RANK_DIES)
    died = torchrun(str(script), str(checkpoint), *train_arguments(tmp_path / "shards", tmp_path / "two", 2))
    assert died.returncode != 0, died.stderr[-3000:]
    assert re.search(r"rank\s*: 1 \(local_rank: 1\)\s*exitcode\s*: -9 .*SIGKILL", died.stderr), died.stderr[-3000:]
    stopped = load_file(checkpoint)
    assert (stopped["epoch"], stopped["batch"], len(stopped["history"])) == (1, 0, 1)
    resumed = train_one_process(tmp_path / "shards", tmp_path / "two", 2, resume=True)
    assert resumed["history"][0] == stopped["history"][0]
    assert_same_training(train_one_process(tmp_path / "shards", tmp_path / "one", 2), resumed)


def test_the_recipe_hands_its_training_settings_to_torchrun_unchanged(tmp_path):
    from training.__main__ import cli
    from training.recipes.gpu import train_arguments
    (tmp_path / "data").mkdir()
    config = TrainConfig(data=[str(tmp_path / "data")], out=str(tmp_path / "run"), epochs=10, batch_size=1024,
                         lr=5e-4, resume=True, mirror=True, swa_max_n=0, max_minutes=0.25, init="weights/resnet.pt",
                         exclude=[str(tmp_path / "data")], device="cuda")
    given = cli.commands["train"].make_context("train", train_arguments(config)).params
    assert TrainConfig(data=list(given.pop("data")), **given) == config
