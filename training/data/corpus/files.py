"""The corpus's files: the shared ones, the cache's own growth and those given, each of a kind by its name."""

from __future__ import annotations

from pathlib import Path

from training.data import cache
from training.data.corpus.config import ADDED, SHARED_DATA, CorpusConfig, CorpusError

GAME_SUFFIXES = (".pgn", ".pgn.xz", ".pgn.gz", ".pgn.bz2")
MULTIPV_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.xz", ".jsonl.bz2")


def file_kind(path: Path) -> str:
    """"games" or "multipv" by the file's name; anything else is refused."""
    name = path.name.lower()
    if name.endswith(GAME_SUFFIXES):
        return "games"
    if name.endswith(MULTIPV_SUFFIXES):
        return "multipv"
    raise CorpusError(f"{path}: not a game file ({', '.join(GAME_SUFFIXES)}) or a MultiPV file "
                      f"({', '.join(MULTIPV_SUFFIXES)})")


def shared_files() -> list[Path]:
    """The shared game files and MultiPV files (../shared/data beside the repository), sorted."""
    games = [p for p in (SHARED_DATA / "games").glob("*") if p.name.lower().endswith(GAME_SUFFIXES)]
    labelled = [p for p in (SHARED_DATA / "labelled").glob("*") if p.name.lower().endswith(MULTIPV_SUFFIXES)]
    return sorted(games) + sorted(labelled)


def added_files() -> list[Path]:
    """The game and MultiPV files under ROOT/games (ADDED), at any depth, sorted: the corpus's own growth. A file
    still being written (self-play's ``.part`` files) has another suffix and waits for the next run."""
    folder = cache.root() / ADDED
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.lower().endswith(GAME_SUFFIXES +
                                                                                          MULTIPV_SUFFIXES))


def input_files(config: CorpusConfig) -> list[Path]:
    """The files of the corpus: the shared ones and the added ones (unless ``shared`` or ``added`` is off) and the
    given ones, each checked and each once."""
    found = ((shared_files() if config.shared else []) + (added_files() if config.added else [])
             + [Path(f) for f in config.files])
    files, seen = [], set()
    for path in found:  # a file named twice (given and added) joins once
        if path.resolve() not in seen:
            seen.add(path.resolve())
            files.append(path)
    if not files:
        raise CorpusError(f"no files: none given, and none in {SHARED_DATA} or {cache.root() / ADDED}"
                          if config.shared or config.added else "no files: give some, or leave out --no-shared")
    for path in files:
        file_kind(path)
        if not path.is_file():
            raise CorpusError(f"{path}: no such file")
    return files

