"""How a training command ends on bad input: with the error's message, which names the file, not a traceback."""

from __future__ import annotations

import contextlib
from typing import Iterator

import click


@contextlib.contextmanager
def clear_errors() -> Iterator[None]:
    """Bad data, weights or engines end a command with their message (naming the file), not a traceback."""
    from evaluators.base import LoadError
    from hackmate_core.epd import InputError
    from hackmate_core.uci_engines import EngineNotFound
    from training.label import LabelError
    from training.pgn import DataError
    from training.train import DeviceError
    from training.weights import WeightsError
    try:
        yield
    except (DataError, DeviceError, EngineNotFound, InputError, LabelError, LoadError, WeightsError) as error:
        raise click.ClickException(str(error)) from None
