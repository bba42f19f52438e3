"""training.resnet.distributed, training under torchrun: the same weights as one process with the same total batch, a
rank that dies, and the GPU recipe's settings handed to torchrun unchanged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.training.uci.test_labelling import write_synthetic
from training.configs import TrainConfig

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
