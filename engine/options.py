"""The engine's own UCI options, the current values of every option by case-insensitive name, and the options'
listing as a Markdown table.

Evaluators, wrappers and searches declare their tuning options themselves
(see :mod:`hackmate_core.options`); the UCI layer and ``--list-options`` list both kinds.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Optional, Sequence

from engine import strength
from hackmate_core.options import Option, OptionError

#: Most threads a GUI may ask for.
MAX_THREADS = 128
#: Two where the machine has them, as Lc0 picks its own default: the second thread lets PUCT gather the next
#: minibatch while the network runs (about 1.7x the nodes a second, +0.22 points a game against Stockfish
#: UCI_Elo 1900 at 10+0.1); more than two was never measured to help. A GUI running several games at once
#: should give each engine its share of the cores (tools.match does).
PREFERRED_THREADS = 2
DEFAULT_THREADS = min(PREFERRED_THREADS, os.cpu_count() or 1)

ENGINE_OPTIONS = (
    Option("Hash", "spin", 256, 1, 4096,
           help="megabytes for the search's table (alpha-beta's transposition table, PUCT's tree) and the "
                "evaluator's cache; a PUCT tree node (one per playout) takes about 1.1 KB, a cached network "
                "evaluation 4 KB"),
    Option("Threads", "spin", DEFAULT_THREADS, 1, MAX_THREADS,
           help="CPU threads the engine uses in all: the network runs in this many; with 2 or more PUCT prepares "
                "its next minibatch meanwhile (Overlap), with 1 it waits for the network; the compiled comparison "
                "search splits its root moves between two"),
    Option("MultiPV", "spin", 1, 1, 64, help="principal variations reported (alpha-beta and PUCT)"),
    Option("Move Overhead", "spin", 50, 0, 5000, help="milliseconds kept back per move for the GUI and Python"),
    Option("Ponder", "check", False, help="the GUI may send go ponder"),
    Option("UCI_ShowWDL", "check", False, help="add wdl W D L (permille) to info lines"),
    Option("UCI_Chess960", "check", False, help="Chess960: castling is sent and read as king takes rook"),
    Option("SyzygyPath", "string", "", help="directories of Syzygy tables, separated by the OS path separator"),
    Option("OwnBook", "check", False, help="play from the Polyglot book in BookFile while it has a move"),
    Option("BookFile", "string", "", help="Polyglot opening book (.bin)"),
    Option("Weights", "string", "", rebuild=True,
           help="network file: ONNX (a path, or a shipped file's name: resnet-int8.onnx) or a Leela Chess Zero "
                "network (.pb.gz, .pb); empty: the shipped default"),
    Option("Clear Hash", "button", help="empty the search's table and the evaluator's cache"),
) + strength.OPTIONS


#: Defaults that depend on the machine, as the option listing words them (so that it reads alike everywhere).
LISTED_DEFAULTS = {"Threads": f"{PREFERRED_THREADS} (1 on a one-core machine)"}
TABLE_HEADER = "| Option | Type | Default | Range | Backends | Help |\n|---|---|---|---|---|---|"


def listed_default(option: Option) -> str:
    if option.name in LISTED_DEFAULTS:
        return LISTED_DEFAULTS[option.name]
    if option.kind == "check":
        return "true" if option.default else "false"
    return "" if option.default is None else str(option.default)


def listed_range(option: Option) -> str:
    if option.kind == "spin":
        return f"{option.minimum} to {option.maximum}"
    return ", ".join(option.choices)


def options_table(rows: Iterable[tuple[Option, Sequence[str]]]) -> str:
    """A Markdown table of options, one row each with the backends that declare it (`--list-options`; the
    README embeds it): Option | Type | Default | Range | Backends | Help."""
    lines = [TABLE_HEADER]
    for option, backends in rows:
        cells = [f"`{option.name}`", option.kind, listed_default(option), listed_range(option), ", ".join(backends),
                 option.help]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


class OptionSet:
    """Options by case-insensitive name, with their current (internal) values."""

    def __init__(self, options: Iterable[Option]) -> None:
        self._options = {o.name.lower(): o for o in options}
        self.values: dict[str, Any] = {o.name: o.value for o in self._options.values()}

    def __iter__(self) -> Iterator[Option]:
        return iter(self._options.values())

    def get(self, name: str) -> Any:
        return self.values[self._options[name.lower()].name]

    def find(self, name: str) -> Optional[Option]:
        return self._options.get(name.lower())

    def set(self, name: str, raw: Optional[str]) -> tuple[Option, Any]:
        """Validate and store; returns the option and the parsed value (OptionError if unknown or bad)."""
        option = self.find(name)
        if option is None:
            raise OptionError(f"unknown option {name!r}")
        value = option.parse(raw)
        self.values[option.name] = value
        return option, value
