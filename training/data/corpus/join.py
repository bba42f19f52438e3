"""The join: one record per position of every part, the test set and excluded positions left out, and the
validation split of whole games marked.

It works on keys and indices, never on the positions themselves: one record per position key, preferring a
MultiPV label, then an engine eval, then by game identity and ply (so the corpus does not depend on the order of
the files). A position is held out only if every game it occurs in is held out (one game in ``period`` by its
identity, training.data.split), so no held-out position is trained on; a position no game holds (a MultiPV
position alone) by its key.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from training.data.corpus.parts import Part
from training.data.shards import excluded_keys
from training.data.split import hash_held_out

JOIN_FORMAT, JOIN_VERSION, JOINS = "hackmate-corpus", 1, "corpus-joins"


def sorted_keys(directories: list[Path]) -> np.ndarray:
    """Sorted unique position keys of the shard directories whose positions the corpus leaves out."""
    return np.array(sorted(excluded_keys(directories)), dtype=np.uint64)


def join(parts: list[Part], excluded: np.ndarray, period: int) -> tuple[dict[str, np.ndarray], dict]:
    """Choose one record per position, drop ``excluded`` keys and mark the validation split.

    Returns the arrays ``part`` (index into ``parts``), ``row`` and ``validation``, in
    part and row order (for reading the memory maps in order), and the counts.
    """
    keys = np.concatenate([np.asarray(p.column("key")) for p in parts])
    ranks = np.concatenate([p.ranks() for p in parts])
    games = np.concatenate([np.asarray(p.column("game")) for p in parts])
    plies = np.concatenate([np.asarray(p.column("ply")) for p in parts])
    part_of = np.concatenate([np.full(p.manifest["positions"], i, dtype=np.uint16) for i, p in enumerate(parts)])
    rows = np.concatenate([np.arange(p.manifest["positions"], dtype=np.int64) for p in parts])
    records = len(keys)
    keep = ~np.isin(keys, excluded)
    keys, ranks, games, plies, part_of, rows = (a[keep] for a in (keys, ranks, games, plies, part_of, rows))
    order = np.lexsort((rows, part_of, plies, games, -ranks.astype(np.int16), keys))
    sorted_keys = keys[order]
    first = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]])) if len(order) else order
    chosen = order[first]
    chosen = chosen[np.lexsort((rows[chosen], part_of[chosen]))]
    validation = validation_of(keys[chosen], parts, period)
    counts = {"records": records, "excluded": int((~keep).sum()), "duplicates": int(keep.sum()) - len(chosen),
              "positions": len(chosen), "validation": int(validation.sum())}
    return {"part": part_of[chosen], "row": rows[chosen], "validation": validation}, counts


def validation_of(keys: np.ndarray, parts: list[Part], period: int) -> np.ndarray:
    """Whether each position is held out: every game it occurs in is a validation game (one in ``period`` by
    identity); a position no game holds (a MultiPV position alone) by its key."""
    seen_key = np.concatenate([np.asarray(p.column("seen_key")) for p in parts])
    seen_game = np.concatenate([np.asarray(p.column("seen_game")) for p in parts])
    order = np.argsort(seen_key, kind="stable")
    seen_key, held_out = seen_key[order], hash_held_out(seen_game[order], period)
    del seen_game, order
    by_key = hash_held_out(keys, np.uint64(period))
    if not len(seen_key):
        return by_key
    starts = np.flatnonzero(np.concatenate([[True], seen_key[1:] != seen_key[:-1]]))
    unique_keys, all_held_out = seen_key[starts], np.logical_and.reduceat(held_out, starts)
    at = np.minimum(np.searchsorted(unique_keys, keys), len(unique_keys) - 1)
    return np.where(unique_keys[at] == keys, all_held_out[at], by_key)

