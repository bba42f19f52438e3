"""Shared fixtures: a running engine process and helpers to find external engines."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

from hackmate_core.fallback import STRICT_VARIABLE
from hackmate_core.uci_engines import find_stockfish

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


stockfish_path = find_stockfish


needs_stockfish = pytest.mark.skipif(stockfish_path() is None,
                                     reason="stockfish is not installed (apt-get install stockfish)")


def engine_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine", *args]


class EngineProcess:
    """The real engine over pipes, for raw transcript tests."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(engine_command(*args), cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lines: list[str] = []
        self._queue: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 10.0) -> str:
        """Read lines until one starts with ``prefix``; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting with {prefix!r} within {timeout}s; got {self.lines[-10:]}")

    def drain(self) -> list[str]:
        """Collect whatever the engine has printed so far without waiting."""
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return self.lines
            if line is None:
                return self.lines
            self.lines.append(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(timeout=5)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()


@pytest.fixture
def engine_factory():
    started: list[EngineProcess] = []

    def start(*args: str) -> EngineProcess:
        process = EngineProcess(*args)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


@pytest.fixture(scope="session")
def tiny_network(tmp_path_factory):
    """The suite's one tiny policy-value network: 1 block x 8 filters, one epoch on the fixture games.

    Returns (checkpoint.pt, weights .pt, ONNX, positions trained on); trained once per test session.
    """
    pytest.importorskip("torch", reason="the training extra (torch) is not installed")
    from training.configs import TrainConfig
    from training.data import prepared as dataset
    from training.resnet.export import export_resnet
    from training.resnet.train import train
    from training.resnet.weights import load_file, save_weights, weights_of
    root = tmp_path_factory.mktemp("tiny-network")
    samples, _ = dataset.build_samples([FIXTURES / "games.pgn"], "planes18", {}, workers=1, progress=False)
    dataset.save(samples, root / "data", {"encoding": "planes18", "files": ["games.pgn"]})
    checkpoint = train(TrainConfig(data=[str(root / "data")], out=str(root / "run"), blocks=1, filters=8, epochs=1,
                                   batch_size=64, max_samples=640, device="cpu", validation=0.2), progress=False)
    state = load_file(checkpoint)
    weights = save_weights(weights_of(state), root / "tiny.pt")
    positions = state["history"][-1]["train_samples"] + state["history"][-1]["val_samples"]
    return checkpoint, weights, export_resnet(checkpoint, root / "tiny.onnx", command="pytest"), positions


os.environ.setdefault("TQDM_DISABLE", "1")
#: Strict mode (hackmate_core.fallback): every fallback the engine takes fails the test, also in engine processes
#: started by a test (they inherit it). HACKMATE_STRICT=0 bin/test runs the suite without it.
os.environ.setdefault(STRICT_VARIABLE, "1")


#: The only skips a CI run (CI set in the environment) accepts: what a two-core CPU machine cannot run. Everything
#: else CI must run, so a missing Stockfish, ../shared, Syzygy table, fastchess or extra fails the run there.
CI_ALLOWED_SKIPS = ("OpenVINO is optional", "has a CUDA device", "needs a GPU")


def ci_allows_skip(reason: str) -> bool:
    """Whether CI may skip a test for ``reason``: a GPU or OpenVINO, or the compiled parts on the pure-Python path
    that HACKMATE_PURE_PYTHON asked for (where they are absent by design)."""
    from hackmate_core import compiled
    return any(allowed in reason for allowed in CI_ALLOWED_SKIPS) or (
        compiled.FORCED_PURE_PYTHON and ("compiled" in reason or compiled.PURE_PYTHON_VARIABLE in reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, a skip that :func:`ci_allows_skip` does not allow is a failure that names its reason."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI", "") not in ("", "0", "false") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if not ci_allows_skip(reason):
            report.outcome = "failed"
            report.longrepr = f"CI runs every test a two-core CPU machine can run, but this one was skipped: {reason}"


@pytest.fixture
def lenient(monkeypatch):
    """Strict mode off for one test: for the tests of a fallback itself (it must still be reported)."""
    monkeypatch.setenv(STRICT_VARIABLE, "0")


@pytest.fixture
def driver():
    """Start in-process engines (tests/uci_inprocess.py) with ``driver(*args)``; all are closed afterwards."""
    from tests.uci_inprocess import Driver
    started: list[Driver] = []

    def start(*args: str) -> Driver:
        started.append(Driver(*args))
        return started[-1]

    yield start
    for engine in started:
        engine.close()


def lines_until_bestmove(process: subprocess.Popen, commands: str) -> list[str]:
    """Send ``commands`` to an engine process and read its lines, stripped, up to and including `bestmove`."""
    process.stdin.write(commands)
    process.stdin.flush()
    lines = []
    for line in process.stdout:
        lines.append(line.strip())
        if line.startswith("bestmove"):
            break
    return lines
