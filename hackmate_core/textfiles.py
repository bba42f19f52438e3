"""Text files plain or compressed (.gz, .bz2, .xz), read and written alike by every package.

The shared game corpus comes as ``.pgn.xz`` parts, so every reader of games or positions (the
corpus, labelling, opening books for matches, test suites, quantisation's calibration) opens files
through :func:`open_text` and accepts any of the three compressions.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import TextIO

#: Openers of compressed files by suffix (anything else is plain text).
COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: What reading a damaged file raises, plain or compressed (truncated streams, bad checksums, I/O errors).
READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


def base_suffix(path: Path) -> str:
    """The suffix under any compression, lower-case: ``.pgn`` for ``games.pgn.xz`` and for ``games.PGN``."""
    name = path.name.lower()
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return Path(name).suffix


def open_text(path: Path) -> TextIO:
    """Open a plain or compressed text file as UTF-8, undecodable bytes replaced (old PGN files mix encodings).
    Raises FileNotFoundError for a missing file."""
    opener = COMPRESSED.get(path.suffix.lower())
    if opener is not None:
        return io.TextIOWrapper(opener(path, "rb"), encoding="utf-8", errors="replace")  # type: ignore[arg-type]
    return open(path, encoding="utf-8", errors="replace")


def create_text(path: Path, suffix: str = "") -> TextIO:
    """Create a plain or compressed text file for writing, compressed as ``suffix`` says (default: the
    path's own suffix; give the final name's to a temporary file), so that :func:`open_text` reads it back."""
    opener = COMPRESSED.get((suffix or path.suffix).lower(), open)
    return opener(path, "wt", encoding="utf-8")  # type: ignore[operator]
