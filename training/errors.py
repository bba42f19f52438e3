"""The one base class of the errors a training command ends on, and how it ends: with the message, not a traceback.

Every error of bad input (a data file, a network file, an engine, a device) derives from :class:`TrainingError`
and names what is wrong in its message (the file, the engine, the option); :func:`clear_errors` turns it, and the
engine side's own input errors, into that message.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import click

from evaluators.base import LoadError
from hackmate_core.epd import InputError
from hackmate_core.uci_engines import EngineNotFound


class TrainingError(Exception):
    """Bad input to a training command: the message names it."""


@contextlib.contextmanager
def clear_errors() -> Iterator[None]:
    """Bad data, weights, engines or devices end a command with their message (naming the file), not a traceback."""
    try:
        yield
    except (TrainingError, EngineNotFound, InputError, LoadError) as error:
        raise click.ClickException(str(error)) from None
