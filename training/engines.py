"""Starting a UCI engine (Stockfish, or this engine in a process of its own): the one way the training package does.

A command line names the engine (``engine_command`` of hackmate_core.uci_engines has already found its program
where PATH lacks it); an engine that cannot start, or refuses an option, is an :class:`EngineFailure` naming the
command, which a training command prints instead of a traceback.
"""

from __future__ import annotations

import shlex
import sys
from typing import Mapping, Optional

import chess.engine

from training.errors import TrainingError

#: This engine, run by the Python that runs the training command (the default of `agreement` and `selfplay`).
OWN_ENGINE = f"{shlex.quote(sys.executable)} -m engine"


class EngineFailure(TrainingError):
    """A UCI engine that cannot be started, refuses the options asked, or fails at its work."""


def start_engine(command: str, options: Optional[Mapping[str, object]] = None, known_only: bool = False
                 ) -> chess.engine.SimpleEngine:
    """The engine of the command line ``command``, with ``options`` set (``known_only``: those of them it has)."""
    options = dict(options or {})
    try:
        engine = chess.engine.SimpleEngine.popen_uci(shlex.split(command))
    except (OSError, chess.engine.EngineError, ValueError) as error:
        raise EngineFailure(f"cannot start the engine {command!r}: {error}") from None
    if known_only:
        options = {name: value for name, value in options.items() if name in engine.options}
    try:
        engine.configure(options)
    except chess.engine.EngineError as error:  # an option it lacks, or a value out of range
        engine.quit()
        raise EngineFailure(f"the engine {command!r} refuses the options {options}: {error}") from None
    return engine
