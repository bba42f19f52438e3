"""Fallbacks that speak, and the strict mode that turns them into errors.

In play the engine never forfeits over its own bug: a search that raises or answers an illegal move is replaced by
a legal one, a network that does not load keeps the one loaded before, a backend that cannot be built falls back
to another. Each such fallback keeps the game going, and each would also keep a broken engine's tests green. So
every fallback goes through :func:`fall_back`: it is always reported (the engine prints it as an ``info string``),
and under ``HACKMATE_STRICT=1`` (set by the test suite and CI) it is a failure instead (:class:`StrictFallback`).
"""

from __future__ import annotations

import os
from typing import Callable

#: The environment variable that makes every fallback an error, when set to anything but "" or "0".
STRICT_VARIABLE = "HACKMATE_STRICT"


class StrictFallback(RuntimeError):
    """A fallback taken while strict mode is on."""


def strict() -> bool:
    """Whether fallbacks are errors (read each time, so a test can switch it for one engine)."""
    return os.environ.get(STRICT_VARIABLE, "") not in ("", "0")


def fall_back(report: Callable[[str], None], message: str) -> None:
    """Report a fallback with ``report``; under strict mode raise :class:`StrictFallback` after reporting it."""
    report(message)
    if strict():
        raise StrictFallback(message)
