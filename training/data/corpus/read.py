"""Reading a joined corpus for training: its rows gathered from the parts' memory maps, and its split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

from evaluators.encoding import Encoding, get_encoding
from training.data import cache, shards
from training.data.corpus.config import CorpusError
from training.data.corpus.join import JOIN_FORMAT, JOIN_VERSION
from training.data.corpus.parts import PARTS, Part, open_part


def is_corpus(path: Path) -> bool:
    """Whether ``path`` is a joined corpus directory (e.g. ROOT/corpus)."""
    try:
        return json.loads((path / cache.MANIFEST).read_text()).get("format") == JOIN_FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def load_for_training(directory: Path, encoding: Optional[str] = None) -> tuple[dict[str, np.ndarray], dict, str]:
    """(arrays, description, encoding name) of a joined corpus: shards.TRAINING_COLUMNS gathered from the parts'
    memory maps (``validation_split`` says which rows are held out)."""
    directory = directory.resolve()
    entry = cache.Entry(directory, JOIN_FORMAT, JOIN_VERSION)
    problem = entry.problem()
    if problem is not None:
        raise CorpusError(f"corpus {directory}: {problem}; run `python -m training corpus` to rebuild it")
    manifest = entry.manifest()
    if encoding is not None and manifest["encoding"] != encoding:
        raise CorpusError(f"corpus {directory}: positions encoded as {manifest['encoding']!r}, not {encoding!r}")
    parts = [open_part(directory.parent.parent / PARTS / p["key"]) for p in manifest["parts"]]
    part_of, rows = np.load(directory / "part.npy"), np.load(directory / "row.npy")
    arrays = gather(parts, part_of, rows, get_encoding(manifest["encoding"]))
    description = {"path": str(directory), "corpus": manifest["key"], "positions": len(rows),
                   "split": manifest["split"], "validation": manifest["counts"]["validation"],
                   "parts": manifest["parts"]}
    return arrays, description, manifest["encoding"]


def validation_split(directory: Path) -> np.ndarray:
    """Which rows of ``load_for_training``'s arrays are the corpus's validation split (bool)."""
    return np.load(directory.resolve() / "validation.npy")


def gather(parts: list[Part], part_of: np.ndarray, rows: np.ndarray, encoding: Encoding) -> dict[str, np.ndarray]:
    """The chosen rows of every part (``part_of`` in order), read from the memory maps into one set of arrays."""
    n = len(rows)
    bounds = np.searchsorted(part_of, np.arange(len(parts) + 1))
    counts = [np.diff(np.asarray(p.column("policy_offset")))[rows[bounds[i]:bounds[i + 1]]]
              for i, p in enumerate(parts)]
    entries = int(sum(int(c.sum()) for c in counts))
    shapes = {"planes": (n, encoding.binary_planes * 8), "wdl": (n, 3), "policy_offset": (n + 1,),
              **{name: (entries,) for name in shards.POLICY_ARRAYS}}
    out = {name: np.empty(shapes.get(name, (n,)), dtype=shards.ARRAYS[name]) for name in shards.TRAINING_COLUMNS}
    out["policy_offset"][0] = 0
    entry_start = 0
    for i, part in enumerate(parts):
        start, stop = bounds[i], bounds[i + 1]
        if start == stop:
            continue
        piece = shards.select({name: part.column(name) for name in shards.TRAINING_COLUMNS}, rows[start:stop])
        for name, array in piece.items():
            if name == "policy_offset":
                out[name][start + 1:stop + 1] = array[1:] + entry_start
            elif name in shards.POLICY_ARRAYS:
                out[name][entry_start:entry_start + len(array)] = array
            else:
                out[name][start:stop] = array
        entry_start += int(piece["policy_offset"][-1])
    return out

