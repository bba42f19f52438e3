"""Every source format training reads, behind one registry: a format says whether a path is one of its own and
reads it as shard arrays (training.data.shards' TRAINING_COLUMNS), with a description for the checkpoint and its
board encoding.

The formats, in the order a path is tried: a corpus pack (training.data.pack), a joined corpus
(training.data.corpus, e.g. ~/.cache/hackmate/corpus), a label-shard directory, an old `prepare` dataset
(training.data.prepared: any other directory) and a MultiPV .jsonl(.gz) file (any other file). A corpus and a
pack bring their own validation split as ``validation``. A new format is one more :class:`SourceFormat` in
FORMATS, before the catch-alls.

``temperature`` (centipawns; 0: as stored) recomputes the soft policies of engine-scored MultiPV entries;
policies of one entry (moves played) stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from evaluators.encoding import get_encoding
from training.data import corpus, pack, prepared, shards
from training.data.multipv import from_jsonl
from training.data.targets import DEFAULT_TEMPERATURE, soft_policy

#: What a format's reader gives: (arrays, description, encoding name).
Read = tuple[dict[str, np.ndarray], dict, str]


@dataclass(frozen=True)
class SourceFormat:
    """A source format: ``detects(path)``, ``read(path, encoding or None, temperature)``, and whether its files
    record the encoding of their positions (those are read first and set it for the rest)."""

    name: str
    detects: Callable[[Path], bool]
    read: Callable[[Path, Optional[str], float], Read]
    records_encoding: bool = True


def _read_corpus(path: Path, encoding: Optional[str], temperature: float) -> Read:
    arrays, description, encoding_name = corpus.load_for_training(path, encoding)
    arrays["validation"] = corpus.validation_split(path)
    if temperature:  # one-entry policies (moves played) stay as they are
        arrays["policy_prob"] = soft_policy(arrays["policy_score"], arrays["policy_offset"], temperature)
    return arrays, description, encoding_name


def _read_shards(path: Path, encoding: Optional[str], temperature: float) -> Read:
    arrays, meta = shards.load_dir(path, encoding, shards.TRAINING_COLUMNS)
    labeller = meta["labeller"]
    if temperature and labeller.get("multipv"):
        arrays["policy_prob"] = soft_policy(arrays["policy_score"], arrays["policy_offset"], temperature)
    description = {"path": str(path), "positions": len(arrays["key"]), "labeller": labeller}
    return arrays, description, meta["encoding"]


def _read_prepared(path: Path, encoding: Optional[str], temperature: float) -> Read:
    arrays, meta = prepared.shard_arrays(path)
    if encoding is not None and meta["encoding"] != encoding:
        raise shards.ShardError(f"{path}: positions encoded as {meta['encoding']!r}, not {encoding!r}")
    return arrays, {k: meta.get(k) for k in ("files", "samples", "filters")}, meta["encoding"]


def _read_multipv(path: Path, encoding: Optional[str], temperature: float) -> Read:
    encoding = encoding or shards.DEFAULT_ENCODING
    arrays = from_jsonl(path, get_encoding(encoding), temperature or DEFAULT_TEMPERATURE)
    arrays = {name: arrays[name] for name in shards.TRAINING_COLUMNS}
    return arrays, {"path": str(path), "positions": len(arrays["key"])}, encoding


FORMATS = (
    SourceFormat("corpus pack", lambda path: path.is_file() and pack.is_pack(path), pack.read),
    SourceFormat("joined corpus", lambda path: path.is_dir() and corpus.is_corpus(path), _read_corpus),
    SourceFormat("label shards", lambda path: path.is_dir() and shards.is_shard_dir(path), _read_shards),
    SourceFormat("prepare dataset", Path.is_dir, _read_prepared),
    SourceFormat("MultiPV file", lambda path: True, _read_multipv, records_encoding=False),
)


def format_of(path: Path) -> SourceFormat:
    """The first format of FORMATS that takes ``path`` (the last takes any)."""
    return next(source for source in FORMATS if source.detects(path))


def read_source(path: Path, encoding: Optional[str], temperature: float) -> Read:
    """(arrays of shards.TRAINING_COLUMNS, description for the checkpoint, encoding name) of one data source,
    its positions in ``encoding`` where one is given (another is refused)."""
    return format_of(path).read(path, encoding, temperature)
