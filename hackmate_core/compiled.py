"""The compiled core's loader: whether ``hackmate_core._cboard`` (the C chess board) is in use, and if not, why.

The extension is optional: a machine without a C compiler installs the package without it, and
``HACKMATE_PURE_PYTHON=1`` in the environment (as msgpack's ``MSGPACK_PUREPYTHON``) turns it off, so both
paths can be tested on one machine. Code that has a compiled path imports :data:`cboard` from here and
falls back to python-chess when it is None; the engine prints :data:`why_not` once as an ``info string``.

Moves cross between the paths as 16-bit codes, ``from | to << 6 | promotion << 12``
(:func:`move_code`, :func:`code_move`).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Optional

import chess

from hackmate_core.rules import PLAIN_MOVES
from hackmate_core.tree import TreeNode

#: The environment variable that forces the pure-Python path when set to anything but "" or "0".
PURE_PYTHON_VARIABLE = "HACKMATE_PURE_PYTHON"
#: The compiled parts, by module name: what each is, and the API_VERSION this code was written against (a build of
#: older sources is not used).
EXTENSIONS = {"_cboard": ("the compiled board", 2), "_calphabeta": ("the compiled alpha-beta search", 2),
              "_cpuct": ("the compiled PUCT leaves", 9), "_ccomparison": ("the compiled comparison search", 8)}
#: Whether the environment asks for the pure-Python path (then its use is no fallback).
FORCED_PURE_PYTHON = os.environ.get(PURE_PYTHON_VARIABLE, "") not in ("", "0")
#: What rebuilds them.
_REBUILD = "a C compiler and `pip install -e .` (bin/setup-env does it) build it"


def _load(name: str) -> tuple[Optional[ModuleType], Optional[str]]:
    """The extension ``hackmate_core.<name>``, or None and why not."""
    what, api_version = EXTENSIONS[name]
    if FORCED_PURE_PYTHON:
        return None, f"{PURE_PYTHON_VARIABLE} is set: the pure-Python path runs"
    try:
        module = importlib.import_module(f"hackmate_core.{name}")
    except ImportError as error:
        return None, f"{what} is not built ({error}): the pure-Python path runs; {_REBUILD}"
    version = getattr(module, "API_VERSION", None)
    if version != api_version:
        return None, (f"{what} is out of date (API version {version}, expected {api_version}): the pure-Python "
                      f"path runs; {_REBUILD}")
    return module, None


#: The extension module ``hackmate_core._cboard``, or None on the pure-Python path.
cboard, _board_problem = _load("_cboard")
#: True when the compiled path is in use.
ACTIVE = cboard is not None
#: ``hackmate_core._calphabeta``, ``hackmate_core._cpuct`` and ``hackmate_core._ccomparison`` (built with the
#: board), or None: alpha-beta then searches in Python, PUCT makes its leaves with python-chess, the DeepChess
#: comparator and its comparison search run in numpy and Python.
calphabeta, _alphabeta_problem = _load("_calphabeta") if ACTIVE else (None, None)
cpuct, _puct_problem = _load("_cpuct") if ACTIVE else (None, None)
ccomparison, _comparison_problem = _load("_ccomparison") if ACTIVE else (None, None)
if cpuct is not None:
    cpuct.bind_node(TreeNode)  # the node layout the compiled PUCT reads and writes (TypeError: a slot is missing)
#: Why a compiled part is not in use (the engine says it once as an ``info string``), or None when all are.
why_not = _board_problem or "; ".join(
    problem for problem in (_alphabeta_problem, _puct_problem, _comparison_problem) if problem) or None


def move_code(move: chess.Move) -> int:
    """A python-chess move in 16 bits, the compiled parts' move code: from square, to square, promotion piece type
    (below 4096: an index of ``PLAIN_MOVES``; drops and null moves have none: never legal)."""
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def code_move(code: int) -> chess.Move:
    """The python-chess move of a move code (moves without promotion shared from ``PLAIN_MOVES``)."""
    return PLAIN_MOVES[code] if code < 4096 else chess.Move(code & 63, code >> 6 & 63, code >> 12)
