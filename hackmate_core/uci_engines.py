"""Finding the external UCI engines (Stockfish) that matches, labelling and the RL evaluation play against.

Debian installs engines in /usr/games, which is often not on PATH, so that folder is searched too.
"""

from __future__ import annotations

import shlex
import shutil
from typing import Optional

GAMES_FOLDER = "/usr/games"


class EngineNotFound(LookupError):
    """An engine command whose program is neither on PATH nor in /usr/games."""


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
