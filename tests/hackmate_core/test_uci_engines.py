"""Starting a UCI engine (hackmate_core.uci_engines.start_engine): its options set, and an engine that cannot start
or refuses an option named by its command; training's start_engine makes the same failure a training error."""

from __future__ import annotations

import re
import shlex
import sys

import pytest

from hackmate_core import uci_engines
from hackmate_core.uci_engines import EngineStartError, start_engine

#: A UCI engine with one option, Depth (1 to 9), that answers `go` with its Depth in `info` and the move e2e4.
FAKE_ENGINE = """
import sys
depth = 1
for line in sys.stdin:
    words = line.split()
    if words == ["uci"]:
        print("id name fake", "option name Depth type spin default 1 min 1 max 9", "uciok", sep="\\n", flush=True)
    elif words == ["isready"]:
        print("readyok", flush=True)
    elif words[:4] == ["setoption", "name", "Depth", "value"]:
        depth = int(words[4])
    elif words[:1] == ["go"]:
        print(f"info depth {depth}", "bestmove e2e4", sep="\\n", flush=True)
    elif words == ["quit"]:
        break
"""


@pytest.fixture
def fake_engine(tmp_path) -> list[str]:
    """The words of FAKE_ENGINE's command."""
    script = tmp_path / "fake engine.py"
    script.write_text(FAKE_ENGINE)
    return [sys.executable, str(script)]


def depth_of(engine) -> int:
    import chess
    import chess.engine
    return engine.play(chess.Board(), chess.engine.Limit(depth=1), info=chess.engine.INFO_BASIC).info["depth"]


def test_an_engine_starts_with_its_options_from_a_command_line_or_its_words(fake_engine):
    for command in (fake_engine, shlex.join(fake_engine)):
        with start_engine(command, {"Depth": 5}) as engine:
            assert engine.id["name"] == "fake" and depth_of(engine) == 5


def test_known_only_sets_the_options_the_engine_has(fake_engine):
    with start_engine(fake_engine, {"Depth": 3, "Hash": 64}, known_only=True) as engine:
        assert depth_of(engine) == 3
    with pytest.raises(EngineStartError, match="refuses the options .'Hash': 64"):
        start_engine(fake_engine, {"Hash": 64})


def test_an_engine_that_cannot_start_or_refuses_a_value_is_named(fake_engine, tmp_path):
    missing = [str(tmp_path / "no-engine"), "--flag"]
    with pytest.raises(EngineStartError, match=f"cannot start the engine {shlex.join(missing)!r}"):
        start_engine(missing)
    with pytest.raises(EngineStartError, match="cannot start the engine 'unclosed \"quote'"):
        start_engine('unclosed "quote')
    with pytest.raises(EngineStartError, match="fake engine.py.* refuses the options {'Depth': 10}"):
        start_engine(shlex.join(fake_engine), {"Depth": 10})


def test_an_engine_that_never_answers_uci_is_named_with_the_timeout(monkeypatch):
    monkeypatch.setattr(uci_engines, "START_TIMEOUT_S", 0.5)
    silent = [sys.executable, "-c", "import time; time.sleep(5)"]
    message = f"cannot start the engine {shlex.join(silent)!r}: TimeoutError"
    with pytest.raises(EngineStartError, match=re.escape(message) + "$"):
        start_engine(silent)


def test_training_names_the_same_failure_a_training_error(tmp_path):
    from training.engines import EngineFailure, start_engine as start_for_training
    from training.errors import TrainingError
    with pytest.raises(EngineFailure, match="cannot start the engine") as raised:
        start_for_training(str(tmp_path / "no-engine"))
    assert isinstance(raised.value, TrainingError)
