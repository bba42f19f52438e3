"""MultiPV label files: JSON lines ``{"fen", "pv": [[uci, centipawns, mate], ...], "result"?}``, best line first
(the shared ``../shared/data/labelled`` files, gzip or plain; ../shared/data/SOURCES.md).

Each line becomes a labelled position through training.data.targets' ``engine_label``; a line that cannot be read
is counted with its number and skipped, and a file that breaks off is an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

import chess
import numpy as np

from evaluators.encoding import Encoding
from hackmate_core.textfiles import READ_ERRORS
from training.data.pgn import DataError, ReadStats, open_text
from training.data.shards import Record, records_to_arrays
from training.data.targets import DEFAULT_TEMPERATURE, WDL_MODEL, engine_label, side_result

#: What a line that is not a MultiPV record raises on reading.
BAD_LINE = (ValueError, KeyError, TypeError, IndexError, AssertionError)


def numbered_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number from 1, line) of the lines that are not blank."""
    return ((number, line) for number, line in enumerate(lines, 1) if line.strip())


def parse(line: str) -> tuple[dict, chess.Board]:
    """A line's record and its position (errors: BAD_LINE)."""
    item = json.loads(line)
    return item, chess.Board(item["fen"])


def labelled_records(lines: Iterable[str], name: str, encoding: Encoding, temperature: float, stats: ReadStats,
                     tick: Callable[[], None] = lambda: None) -> Iterator[Record]:
    """The labelled positions of the lines of the file ``name``, bad lines counted in ``stats``; ``tick`` after
    every line read."""
    for number, line in numbered_lines(lines):
        tick()
        try:
            item, board = parse(line)
            record = engine_label(board, encoding, [tuple(entry) for entry in item["pv"]], temperature,
                                  side_result(item.get("result"), board.turn), -1)
        except BAD_LINE as error:
            stats.error("bad labelled lines", f"{name} line {number}: {error!r}")
            continue
        stats.positions += 1
        yield record


def from_jsonl(path: Path, encoding: Encoding, temperature: float = DEFAULT_TEMPERATURE,
               stats: Optional[ReadStats] = None, progress: bool = True) -> dict[str, np.ndarray]:
    """A MultiPV file as shard arrays (training.data.shards). Bad lines are counted in ``stats`` with their line
    numbers; a truncated file is an error."""
    stats = stats if stats is not None else ReadStats()
    try:
        with open_text(path) as handle:
            lines: Iterable[str] = handle
            if progress:
                from tqdm import tqdm
                lines = tqdm(handle, desc=path.name, unit="pos")
            records = list(labelled_records(lines, path.name, encoding, temperature, stats))
    except READ_ERRORS as error:
        raise DataError(f"{path}: unreadable or truncated ({error}); {stats.positions} positions read") from None
    return records_to_arrays(records, encoding)


def jsonl_labeller(path: Path, temperature: float) -> dict:
    """How the shared file's labels were made (SOURCES.md), read from its first line."""
    with open_text(path) as handle:
        first = json.loads(handle.readline())
    return {"engine": "Stockfish 15.1", "nodes": first.get("nodes"), "multipv": 6, "temperature": temperature,
            "wdl_model": WDL_MODEL, "imported_from": path.name}
