"""The one EPD reader: positions with their operations, and every line that is not one named with its reason.

Test suites, opening files and training data all read EPD; they differ only in what they do with a bad
line (refuse the file, or count it and go on), so the reader hands each bad line to its caller instead of
deciding: nothing is dropped silently. A bad line is one python-chess cannot parse or whose position is
not legal (no king, the side not to move in check, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence, Union

import chess

from hackmate_core.textfiles import READ_ERRORS, open_text

#: An EPD operation's value as python-chess reads it: a move (bm Nf3), moves (bm e4 d4), a number, a string.
Operand = Union[None, str, int, float, chess.Move, list[chess.Move]]


@dataclass(frozen=True)
class EpdPosition:
    """A position of an EPD file, its operations (``bm``, ``am``, ``id``, ``ce``, ...) and its line number."""

    board: chess.Board
    operations: dict[str, Operand]
    line: int


@dataclass(frozen=True)
class BadLine:
    """A line that holds no legal position, and why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def read_epd(lines: Iterable[str]) -> Iterator[Union[EpdPosition, BadLine]]:
    """One :class:`EpdPosition` or :class:`BadLine` for every line that is not blank, in order (lines count from 1)."""
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            board, operations = chess.Board.from_epd(text)
        except ValueError as error:
            yield BadLine(number, str(error))
            continue
        if board.is_valid():
            yield EpdPosition(board, operations, number)
        else:
            yield BadLine(number, f"not a legal position ({board.status().name})")


def read_epd_file(path: Path) -> list[Union[EpdPosition, BadLine]]:
    """:func:`read_epd` over a plain or compressed file; one that cannot be read whole is an :class:`InputError`."""
    try:
        with open_text(path) as handle:
            return list(read_epd(handle))
    except READ_ERRORS as error:
        raise InputError.unreadable(path, error) from None


class InputError(ValueError):
    """A file that cannot be used as asked; the message names the file and what is wrong with it."""

    @classmethod
    def unreadable(cls, source: object, error: BaseException) -> "InputError":
        """'SOURCE: unreadable or truncated (ERROR)': a missing, damaged or cut-off file."""
        return cls(f"{source}: unreadable or truncated ({error})")

    @classmethod
    def listing(cls, source: object, problems: Sequence[object], total: int, unit: str, what: str) -> "InputError":
        """'SOURCE: N of TOTAL UNIT WHAT:' and the first 20 problems, one an indented line."""
        shown = [str(problem) for problem in problems[:20]]
        if len(problems) > 20:
            shown.append(f"... and {len(problems) - 20} more")
        return cls(f"{source}: {len(problems)} of {total} {unit} {what}:" + "".join(f"\n  {line}" for line in shown))
