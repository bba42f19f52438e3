"""Finding and starting the UCI engines (Stockfish, or this engine in a process of its own) that matches, suites,
labelling and the RL evaluation play against: the one way the project starts one.

Debian installs engines in /usr/games, which is often not on PATH, so that folder is searched too. An engine that
cannot start, or refuses an option, is an :class:`EngineStartError` naming its command.
"""

from __future__ import annotations

import shlex
import shutil
from typing import Any, Mapping, Optional, Sequence, Union

import chess.engine

GAMES_FOLDER = "/usr/games"
#: Seconds an engine has to answer `uci` when it starts: python-chess's 10 s ran out for Stockfish on a machine
#: whose cores were all busy (Ray starting workers beside a training run).
START_TIMEOUT_S = 60.0


class EngineNotFound(LookupError):
    """An engine command whose program is neither on PATH nor in /usr/games."""


class EngineStartError(RuntimeError):
    """A UCI engine that cannot be started, or refuses the options asked; the message names its command."""


def find_engine(program: str) -> Optional[str]:
    """The path of ``program`` on PATH or in /usr/games, or None."""
    return shutil.which(program) or shutil.which(program, path=GAMES_FOLDER)


def find_stockfish() -> Optional[str]:
    """Stockfish's path, or None where it is not installed."""
    return find_engine("stockfish")


def engine_command(command: str, must_exist: bool = False) -> str:
    """``command`` with its program from /usr/games where PATH lacks it; ``must_exist``: EngineNotFound if absent."""
    words = shlex.split(command)
    if words and shutil.which(words[0]) is None:
        words[0] = find_engine(words[0]) or words[0]
    if must_exist and (not words or shutil.which(words[0]) is None):
        raise EngineNotFound(f"engine not found: {words[0] if words else command!r} (install it, e.g. "
                             "apt-get install stockfish, or give its path with --engine)")
    return shlex.join(words)


def start_engine(command: Union[str, Sequence[str]], options: Optional[Mapping[str, object]] = None,
                 known_only: bool = False, **popen_args: Any) -> chess.engine.SimpleEngine:
    """The engine of ``command`` (a command line, or its words), with ``options`` set (``known_only``: those of them
    it has); ``popen_args`` go to the process (``stderr=None``: the engine's errors to ours)."""
    named = command if isinstance(command, str) else shlex.join(command)
    options = dict(options or {})
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
        engine = chess.engine.SimpleEngine.popen_uci(words, timeout=START_TIMEOUT_S, **popen_args)
    except (OSError, chess.engine.EngineError, ValueError) as error:
        raise EngineStartError(f"cannot start the engine {named!r}: {str(error) or type(error).__name__}") from None
    if known_only:
        options = {name: value for name, value in options.items() if name in engine.options}
    try:
        engine.configure(options)
    except chess.engine.EngineError as error:  # an option it lacks, or a value out of range
        engine.quit()
        raise EngineStartError(f"the engine {named!r} refuses the options {options}: {error}") from None
    return engine
