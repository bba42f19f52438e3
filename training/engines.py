"""Starting a UCI engine for the training package: hackmate_core.uci_engines' ``start_engine``, its failure a
training error.

A command line names the engine (``engine_command`` of hackmate_core.uci_engines has already found its program
where PATH lacks it); an engine that cannot start, or refuses an option, is an :class:`EngineFailure` naming the
command, which a training command prints instead of a traceback.
"""

from __future__ import annotations

import shlex
import sys
from typing import Mapping, Optional

import chess.engine

from hackmate_core import uci_engines
from training.errors import TrainingError

#: This engine, run by the Python that runs the training command (the default of `agreement` and `selfplay`).
OWN_ENGINE = f"{shlex.quote(sys.executable)} -m engine"


class EngineFailure(TrainingError):
    """A UCI engine that cannot be started, refuses the options asked, or fails at its work."""


def start_engine(command: str, options: Optional[Mapping[str, object]] = None, known_only: bool = False
                 ) -> chess.engine.SimpleEngine:
    """The engine of the command line ``command``, with ``options`` set (``known_only``: those of them it has)."""
    try:
        return uci_engines.start_engine(command, options, known_only)
    except uci_engines.EngineStartError as error:
        raise EngineFailure(str(error)) from None
