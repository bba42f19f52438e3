"""A corpus part: one file's records as shard columns, and every position its games pass through, in the cache.

A part is a cache entry (training.data.cache) keyed by :func:`part_settings`: the file's bytes and the settings
that change its content. Its columns are the shard columns of training.data.shards without the FEN
(``TRAINING_COLUMNS``) and SEEN's, each an ``.npy`` file (training.data.corpus.columns) read memory-mapped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluators.encoding import LC0_112, Encoding
from training.data import cache, shards
from training.data.corpus.columns import ColumnWriter
from training.data.corpus.config import CorpusConfig, CorpusError
from training.data.corpus.files import file_kind

PART_FORMAT, PART_VERSION, PARTS = "hackmate-corpus-part", 1, "corpus-parts"
#: Encodings whose planes changed since their parts were first prepared, with the revision a part's key holds, so
#: that a part of an earlier revision is prepared again and the parts of every other encoding are kept: lc0-112 is
#: exactly Lc0's input (history, repetitions, castling planes) since revision 2.
ENCODING_REVISIONS = {LC0_112: 2}
#: Columns of a part besides the records: every position of every game, for the validation split.
SEEN = {"seen_key": np.dtype(np.uint64), "seen_game": np.dtype(np.int64)}
#: Preference between records of the same position: a MultiPV label, then an engine eval, then a bare move.
RANK_MULTIPV, RANK_EVAL, RANK_MOVE = 2, 1, 0


def part_settings(path: Path, config: CorpusConfig) -> dict:
    """Everything that decides a part's content: the file's bytes, the format version and the settings that
    apply to its kind."""
    kind = file_kind(path)
    settings = {"kind": kind, "sha256": cache.file_digest(path), "version": PART_VERSION,
                "encoding": config.encoding}
    if config.encoding in ENCODING_REVISIONS:
        settings["encoding_revision"] = ENCODING_REVISIONS[config.encoding]
    if kind == "games":
        settings.update(skip_plies=config.skip_plies, min_rating=config.min_rating)
        if config.player:
            settings["player"] = config.player
    else:
        settings.update(temperature=config.temperature)
    return settings


def part_entry(key: str) -> cache.Entry:
    return cache.entry(PARTS, key, PART_FORMAT, PART_VERSION)



class PartWriter:
    """The columns of a part, appended chunk by chunk (shard arrays; CSR policy offsets shifted as they come)."""

    def __init__(self, directory: Path, encoding: Encoding) -> None:
        widths = {"planes": (encoding.binary_planes * 8,), "wdl": (3,)}
        self.columns = {name: ColumnWriter(directory / f"{name}.npy", shards.ARRAYS[name], widths.get(name, ()))
                        for name in shards.TRAINING_COLUMNS}
        self.columns.update({name: ColumnWriter(directory / f"{name}.npy", dtype) for name, dtype in SEEN.items()})
        self.columns["policy_offset"].append(np.zeros(1, dtype=np.int64))
        self.entries = 0

    def add(self, arrays: dict[str, np.ndarray]) -> None:
        for name, array in arrays.items():
            if name == "policy_offset":
                array = array[1:] + self.entries
            self.columns[name].append(array)
        if "policy_offset" in arrays:
            self.entries += int(arrays["policy_offset"][-1])

    @property
    def positions(self) -> int:
        return self.columns["key"].rows

    def close(self) -> None:
        for column in self.columns.values():
            column.close()



class Part:
    """A complete part, its columns memory-mapped on demand."""

    def __init__(self, directory: Path, manifest: dict) -> None:
        self.directory, self.manifest = directory, manifest
        self.kind = manifest["settings"]["kind"]

    def column(self, name: str) -> np.ndarray:
        path = self.directory / f"{name}.npy"
        try:
            array = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as error:
            raise CorpusError(f"{path}: unreadable ({error}); run `python -m training corpus` to rebuild") from None
        dtype = SEEN.get(name, shards.ARRAYS.get(name))
        if name in SEEN:
            rows = self.manifest["seen"]
        elif name in shards.POLICY_ARRAYS:
            rows = self.manifest["entries"]
        else:
            rows = self.manifest["positions"] + (name == "policy_offset")
        if array.dtype != dtype or len(array) != rows:
            raise CorpusError(f"{path}: {array.dtype} x {len(array)}, expected {dtype} x {rows}; "
                              "run `python -m training corpus` to rebuild")
        return array

    def ranks(self) -> np.ndarray:
        """The preference of each record among records of the same position."""
        if self.kind == "multipv":
            return np.full(self.manifest["positions"], RANK_MULTIPV, dtype=np.int8)
        return np.where(np.isnan(self.column("wdl")[:, 0]), RANK_MOVE, RANK_EVAL).astype(np.int8)


def open_part(directory: Path) -> Part:
    """The part in ``directory``, refused with the reason if it is not complete."""
    entry = cache.Entry(directory, PART_FORMAT, PART_VERSION)
    problem = entry.problem()
    if problem is not None:
        raise CorpusError(f"corpus part {directory}: {problem}; run `python -m training corpus` to rebuild it")
    return Part(directory, entry.manifest())
