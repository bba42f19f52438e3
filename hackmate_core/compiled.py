"""The compiled core's loader: whether ``hackmate_core._cboard`` (the C chess board) is in use, and if not, why.

The extension is optional: a machine without a C compiler installs the package without it, and
``HACKMATE_PURE_PYTHON=1`` in the environment (as msgpack's ``MSGPACK_PUREPYTHON``) turns it off, so both
paths can be tested on one machine. Code that has a compiled path imports :data:`cboard` from here and
falls back to python-chess when it is None; the engine prints :data:`why_not` once as an ``info string``.

Moves cross between the paths as 16-bit codes, ``from | to << 6 | promotion << 12``
(:func:`move_code`, :func:`code_move`).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Optional

import chess

#: The environment variable that forces the pure-Python path when set to anything but "" or "0".
PURE_PYTHON_VARIABLE = "HACKMATE_PURE_PYTHON"
#: The extension's API_VERSION this code was written against; a build of older sources is not used.
API_VERSION = 1


def _load() -> tuple[Optional[ModuleType], Optional[str]]:
    if os.environ.get(PURE_PYTHON_VARIABLE, "") not in ("", "0"):
        return None, f"{PURE_PYTHON_VARIABLE} is set: the pure-Python path runs"
    try:
        from hackmate_core import _cboard
    except ImportError as error:
        return None, (f"the compiled board is not built ({error}): the pure-Python path runs; "
                      "a C compiler and `pip install -e .` (bin/setup-env does it) build it")
    version = getattr(_cboard, "API_VERSION", None)
    if version != API_VERSION:
        return None, (f"the compiled board is out of date (API version {version}, expected {API_VERSION}): "
                      "the pure-Python path runs; `pip install -e .` (bin/setup-env does it) rebuilds it")
    return _cboard, None


#: The extension module ``hackmate_core._cboard``, or None on the pure-Python path.
cboard, why_not = _load()
#: True when the compiled path is in use.
ACTIVE = cboard is not None
#: The API_VERSION of ``hackmate_core._calphabeta`` (the compiled alpha-beta search) this code was written against.
ALPHABETA_API_VERSION = 1


def _load_alphabeta() -> Optional[ModuleType]:
    """The compiled alpha-beta search, when the compiled board is in use (it is built with it) and is current."""
    if cboard is None:
        return None
    try:
        from hackmate_core import _calphabeta
    except ImportError:
        return None
    return _calphabeta if getattr(_calphabeta, "API_VERSION", None) == ALPHABETA_API_VERSION else None


#: The extension module ``hackmate_core._calphabeta``, or None (alpha-beta then searches in Python).
calphabeta = _load_alphabeta()


def move_code(move: chess.Move) -> int:
    """A python-chess move as the compiled board's code (drops and null moves have none: never legal)."""
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def code_move(code: int) -> chess.Move:
    """The python-chess move of a compiled board's move code."""
    return chess.Move(code & 63, code >> 6 & 63, code >> 12 or None)
