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

from tools.match import find_stockfish

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
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
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


os.environ.setdefault("TQDM_DISABLE", "1")
