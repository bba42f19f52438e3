"""Driving the UCI engine in-process: its output goes to a line buffer the test can wait on."""

from __future__ import annotations

import threading
import time
from typing import Optional

from engine.uci import UciEngine


class Lines:
    """A text stream that collects complete lines and wakes up waiters."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._partial = ""
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            self._partial += text
            *complete, self._partial = self._partial.split("\n")
            self.lines.extend(complete)
            self._changed.notify_all()
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""

    def wait_for(self, prefix: str, timeout: float = 10.0, start: int = 0) -> str:
        """The first line from index ``start`` on that starts with ``prefix``; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[start:]:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line starting with {prefix!r} within {timeout}s; got {self.lines[-10:]}")
                self._changed.wait(left)


class Driver:
    """A UciEngine with a :class:`Lines` output. A fallback the engine takes under strict mode (the suite's
    default, tests/conftest.py) fails the command that caused it: :meth:`send` and :meth:`go` raise."""

    def __init__(self, *args: str) -> None:
        evaluator, search, weights = _backend_args(args)
        self.out = Lines()
        self.engine = UciEngine(evaluator, search, weights, output=self.out)

    @property
    def lines(self) -> list[str]:
        return self.out.lines

    def send(self, *commands: str) -> None:
        for command in commands:
            self.engine.handle(command)
            self.check()

    def check(self) -> None:
        """AssertionError if the engine took a fallback under strict mode (a search's shows once it has ended)."""
        failures = self.engine.strict_failures
        assert not failures, f"the engine fell back under strict mode: {failures}"

    def go(self, command: str = "go depth 2", timeout: float = 20.0) -> str:
        """Send a `go` that ends by itself and return its bestmove line."""
        start = len(self.lines)
        self.send(command)
        assert self.engine.wait(timeout), f"{command!r} still searching after {timeout}s"
        self.check()
        return self.out.wait_for("bestmove", 1.0, start)

    def infos(self) -> list[str]:
        return [line for line in self.lines if line.startswith("info depth")]

    def strings(self) -> list[str]:
        return [line for line in self.lines if line.startswith("info string")]

    def close(self) -> None:
        self.engine.handle("quit")
        self.check()


def _backend_args(args: tuple[str, ...]) -> tuple[str, Optional[str], Optional[str]]:
    values = dict(zip(args[::2], args[1::2]))
    return values.get("--eval", "resnet"), values.get("--search"), values.get("--weights")
