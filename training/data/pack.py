"""A joined corpus in one compressed file, to train where the cache is not (a GPU rental reached by one checkout).

``python -m training corpus-pack OUT`` writes the training columns of the current corpus
(``ROOT/corpus``, training.data.corpus) and its validation split as one zip of LZMA-compressed
``.npy`` members: 8.8M positions take 34.5 MB instead of their parts' 1.9 GiB, because most
positions are the move before them played (training.data.successors) and the columns compress column
by column (the positions of a game differ in a few bytes).
``train PACK`` then trains as on the corpus itself (the same rows, split and policies).

The position keys are left out (incompressible, 8 bytes a position): the corpus already
dropped the test set's positions, so a pack needs none; ``train --exclude`` says that it
cannot check a pack's positions, as for old one-hot datasets. So are the columns that the
scores give (the MultiPV policy probabilities, the W/D/L targets), where they all are what
they give, and the piece planes of every position that the previous row's move leads to
(training.data.successors: a game's consecutive positions; 84% of the corpus); ``read`` recomputes them.
A ``features36`` corpus's eighteen planes beyond ``planes18``'s are stored as their difference from what the
others and the moves give (successors.features36_extra; zero but for the checkers, and for the last two moves
where the rows before a position are not its game's): the shared corpus's 4.3M positions pack to 25.1 MB, not
the 69.7 MB of their planes stored whole (the device's carry takes 64 MiB).
"""

from __future__ import annotations

import io
import json
import lzma
import os
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from evaluators.encoding import FEATURES36, get_encoding
from training.data import corpus, shards, successors, targets
from training.data.pgn import DataError

FORMAT = "hackmate-corpus-pack"
VERSION = 5
MANIFEST = "manifest.json"
#: Packed instead of the planes: the piece planes of the rows that are not replayed (training.data.successors), in
#: order, the other planes (castling, en passant) of every row, and which rows are replayed.
STORED_PIECES, OTHER_PLANES, REPLAYED = "stored_pieces", "other_planes", "replayed"
#: Packed in a features36 pack: its planes beyond planes18's, XOR what successors.features36_extra predicts.
EXTRA_PLANES = "extra_planes"
#: The packed columns: every training column but the key and the planes, the planes as above, and the split.
COLUMNS = tuple(name for name in shards.TRAINING_COLUMNS if name not in ("key", "planes")) + (
    STORED_PIECES, OTHER_PLANES, REPLAYED, "validation")
#: Packed instead of the W/D/L targets where they are derived: which positions have one (an engine's evaluation).
WDL_KNOWN = "wdl_known"
#: The corpus's policy probabilities are its scores' soft policy at this temperature (MultiPV labels; one-entry
#: policies are 1): where they all are, the pack leaves them out (a fifth of its size) and ``read`` recomputes them.
PROB_TEMPERATURE = targets.DEFAULT_TEMPERATURE
#: The corpus's W/D/L targets are its positions' first scores under this model (targets.wdl_targets; the eighth
#: of the pack that is left out where they all are).
WDL_MODEL = targets.WDL_MODEL
#: The one column packed as its steps from row to row, each less one (modulo 2 ** 64, so any value survives): the
#: policy entries of each position beyond its first, nearly all 0, pack to almost nothing (8.1M positions' offsets:
#: 48 KB, not 2.1 MB).
STEPPED = "policy_offset"
#: The column packed row by row, where every other one goes byte column by byte column: its rows are a few
#: whole-board planes (side to move, castling rights: 8 equal bytes each), so a row repeats bytes right beside it,
#: while its 40 byte columns, each as long as the corpus, lose sight of each other once one is longer than the
#: 8 MiB that zip's LZMA looks back (8.8M positions: 7.2 MB column by column, 0.76 MB row by row).
ROW_BY_ROW = OTHER_PLANES


class PackError(DataError):
    """A pack that cannot be used: not a pack, of another version, truncated or damaged."""


def write(directory: Path, out: Path) -> dict:
    """Pack the joined corpus in ``directory`` into ``out`` (written beside it, then renamed: never half-written
    under its name); returns the pack's manifest."""
    arrays, description, encoding = corpus.load_for_training(directory)
    arrays["validation"] = corpus.validation_split(directory)
    derived = np.array_equal(arrays["policy_prob"], derived_probabilities(arrays, PROB_TEMPERATURE))
    known = ~np.isnan(arrays["wdl"][:, 0])
    wdl_derived = np.array_equal(arrays["wdl"], derived_wdl(arrays, known), equal_nan=True)
    if wdl_derived:
        arrays[WDL_KNOWN] = known
    arrays.update(planes_columns(arrays, encoding))
    manifest = {"format": FORMAT, "version": VERSION, "encoding": encoding, "corpus": description["corpus"],
                "split": description["split"], "positions": len(arrays["key"]),
                "entries": len(arrays["policy_index"]), "validation": int(arrays["validation"].sum()),
                "replayed": int(arrays[REPLAYED].sum()),
                "parts": description["parts"], "policy_prob_temperature": PROB_TEMPERATURE if derived else None,
                "wdl_model": WDL_MODEL if wdl_derived else None}
    columns = packed_columns(derived, wdl_derived, EXTRA_PLANES in arrays)
    temporary = out.with_name(out.name + ".tmp")
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_LZMA) as pack:
            pack.writestr(MANIFEST, json.dumps(manifest, indent=1))  # first: is_pack knows even a truncated pack
            for name in columns:
                with pack.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, encode(name, arrays[name]), allow_pickle=False)
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)  # a failed pack leaves no partial file behind
        raise
    return manifest


def encode(name: str, column: np.ndarray) -> np.ndarray:
    """What a pack stores of the column ``name``: STEPPED as its steps, ROW_BY_ROW row by row, and every other
    column of several bytes a row column by column (byte i of consecutive rows together)."""
    if name == STEPPED:
        unsigned = column.view(np.uint64)
        column = np.diff(unsigned, prepend=np.uint64(0)) - np.uint64(1)
    return np.ascontiguousarray(column) if name == ROW_BY_ROW else np.asfortranarray(column)


def decode(name: str, stored: np.ndarray) -> np.ndarray:
    """The column ``name`` (contiguous) from what ``encode`` stored of it."""
    column = np.ascontiguousarray(stored)
    if name == STEPPED:
        if column.dtype != np.uint64:
            raise ValueError(f"{name} stored as {column.dtype}, not as the uint64 steps this version writes")
        column = np.cumsum(column + np.uint64(1), dtype=np.uint64).view(shards.ARRAYS[name])
    return column


def stores_extra_planes(encoding: str) -> bool:
    """Whether a pack of ``encoding`` keeps planes beyond planes18's as EXTRA_PLANES (features36's)."""
    return encoding == FEATURES36


def packed_columns(probabilities_derived: bool, wdl_derived: bool, extra_planes: bool) -> list[str]:
    """The columns a pack holds: COLUMNS less what is derived, with WDL_KNOWN in place of derived W/D/L, and
    EXTRA_PLANES in a features36 pack."""
    left_out = ({"policy_prob"} if probabilities_derived else set()) | ({"wdl"} if wdl_derived else set())
    return ([name for name in COLUMNS if name not in left_out] + ([WDL_KNOWN] if wdl_derived else [])
            + ([EXTRA_PLANES] if extra_planes else []))


def planes_columns(arrays: dict[str, np.ndarray], encoding: str) -> dict[str, np.ndarray]:
    """STORED_PIECES, OTHER_PLANES and REPLAYED (and EXTRA_PLANES in ``features36``) for ``arrays``' planes,
    checked to give them back."""
    planes, offsets, index = arrays["planes"], arrays["policy_offset"], arrays["policy_index"]
    extra = stores_extra_planes(encoding)
    base = np.ascontiguousarray(planes[:, :successors.ROW_BYTES]) if extra else planes
    replayed = successors.replayable(base, offsets, index)
    pieces = successors.PIECE_BYTES
    columns = {STORED_PIECES: base[~replayed, :pieces], OTHER_PLANES: base[:, pieces:], REPLAYED: replayed}
    if extra:
        columns[EXTRA_PLANES] = planes[:, successors.ROW_BYTES:] ^ successors.features36_extra(
            base, replayed, offsets, index)
    if not np.array_equal(replayed_planes(dict(columns), offsets, index), planes):
        raise AssertionError("replaying the planes does not give them back: a bug in training.data.successors")
    return columns


def replayed_planes(columns: dict[str, np.ndarray], offsets: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The planes again from what ``planes_columns`` made of them (its columns are taken out of ``columns``)."""
    replayed = columns.pop(REPLAYED)
    base = successors.replay(columns.pop(STORED_PIECES), columns.pop(OTHER_PLANES), replayed, offsets, index)
    if EXTRA_PLANES not in columns:
        return base
    extra = successors.features36_extra(base, replayed, offsets, index) ^ columns.pop(EXTRA_PLANES)
    return np.concatenate([base, extra], axis=1)


def derived_probabilities(arrays: dict[str, np.ndarray], temperature: float) -> np.ndarray:
    """The policy probabilities (float32) that the scores give at ``temperature`` (training.data.targets)."""
    return targets.soft_policy(arrays["policy_score"], arrays["policy_offset"], temperature)


def derived_wdl(arrays: dict[str, np.ndarray], known: np.ndarray) -> np.ndarray:
    """The W/D/L targets (float32; NaN where ``known`` is False) that each position's first score, its evaluation or
    its best MultiPV line's, gives at its ply (targets.wdl_targets, Stockfish 15.1's model). A mate's score
    (+-(MATE_CP - n)) is past the model's clamp and gives 1000 / 0 / 0 as python-chess's Mate does."""
    scores = arrays["policy_score"]
    first = np.minimum(arrays["policy_offset"][:-1], len(scores) - 1)  # a position without entries: no match
    wdl = targets.wdl_targets(scores[first], arrays["ply"])
    wdl[~known] = np.nan
    return wdl


def is_pack(path: Path) -> bool:
    """Whether ``path`` is a file that calls itself a corpus pack (whole or not: ``read`` checks the rest)."""
    try:
        with zipfile.ZipFile(path) as pack:
            return json.loads(pack.read(MANIFEST)).get("format") == FORMAT
    except zipfile.BadZipFile:  # no readable zip directory (a truncated copy): a pack if it starts as one
        return starts_as_pack(path)
    except (OSError, ValueError, KeyError, AttributeError, lzma.LZMAError):
        return False


def starts_as_pack(path: Path) -> bool:
    """Whether ``path`` begins with a zip member named MANIFEST, as ``write`` starts every pack."""
    name = MANIFEST.encode()
    try:
        with open(path, "rb") as handle:
            header = handle.read(30 + len(name))  # a zip local file header is 30 bytes, then the member's name
    except OSError:
        return False
    return header[:4] == b"PK\x03\x04" and header[26:28] == len(name).to_bytes(2, "little") and header[30:] == name


def read(path: Path, encoding: Optional[str] = None, temperature: float = 0.0
         ) -> tuple[dict[str, np.ndarray], dict, str]:
    """(arrays of shards.TRAINING_COLUMNS plus ``validation``, description, encoding name) of the pack ``path``,
    the MultiPV probabilities at ``temperature`` (centipawns; 0: as the corpus had them). The keys are zero (not
    packed). A damaged or foreign pack, or one of another ``encoding`` than the one asked for, is refused with the
    reason."""
    try:
        with zipfile.ZipFile(path) as pack:
            manifest = json.loads(pack.read(MANIFEST))
            if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
                raise PackError(f"{path}: not a version-{VERSION} {FORMAT} (it says {manifest.get('format')!r} "
                                f"version {manifest.get('version')!r}); pack it again with this code")
            packed_temperature, wdl_model = manifest.get("policy_prob_temperature"), manifest.get("wdl_model")
            if wdl_model not in (None, WDL_MODEL):
                raise PackError(f"{path}: W/D/L targets of the {wdl_model!r} model, not {WDL_MODEL!r}")
            extra = stores_extra_planes(manifest["encoding"])
            arrays = {name: decode(name, np.lib.format.read_array(io.BytesIO(pack.read(f"{name}.npy"))))
                      for name in packed_columns(bool(packed_temperature), bool(wdl_model), extra)}
            n, entries = manifest["positions"], manifest["entries"]
            stored = n - manifest["replayed"]
            row_bytes = get_encoding(manifest["encoding"]).binary_planes * 8
            offsets = arrays["policy_offset"]
            if len(offsets) and (offsets[0] != 0 or offsets[-1] != entries or (np.diff(offsets) < 0).any()):
                raise PackError(f"{path}: policy_offset does not run from 0 to the {entries} entries in order")
            if temperature or packed_temperature:  # derived once, at the temperature asked for if any
                arrays["policy_prob"] = derived_probabilities(arrays, temperature or packed_temperature)
            description = {"path": str(path), "corpus": manifest["corpus"], "positions": n,
                           "split": manifest["split"], "validation": manifest["validation"],
                           "parts": manifest["parts"], "packed": True}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, lzma.LZMAError) as error:
        raise PackError(f"{path}: damaged or incomplete corpus pack ({error}); pack it again "
                        "(python -m training corpus-pack)") from None
    pieces = successors.PIECE_BYTES
    base_bytes = successors.ROW_BYTES if extra else row_bytes
    own = {STORED_PIECES: (stored, np.uint8, pieces), OTHER_PLANES: (n, np.uint8, base_bytes - pieces),
           EXTRA_PLANES: (n, np.uint8, row_bytes - base_bytes),
           REPLAYED: (n, bool, None), WDL_KNOWN: (n, bool, None), "validation": (n, bool, None)}  # not shard columns
    for name, array in arrays.items():
        rows, dtype, width = own.get(name) or (entries if name in shards.POLICY_ARRAYS else
                                               n + (name == "policy_offset"), shards.ARRAYS[name], None)
        if len(array) != rows or array.dtype != np.dtype(dtype) or (width and array.shape[1:] != (width,)):
            raise PackError(f"{path}: {name} holds {array.dtype} x {array.shape}, the manifest says "
                            f"{np.dtype(dtype)} x {rows}" + (f" x {width}" if width else ""))
    if arrays[REPLAYED].sum() != manifest["replayed"] or (n and arrays[REPLAYED][0]):
        raise PackError(f"{path}: {REPLAYED} marks {int(arrays[REPLAYED].sum())} rows, the manifest says "
                        f"{manifest['replayed']} (and never the first)")
    arrays["planes"] = replayed_planes(arrays, arrays["policy_offset"], arrays["policy_index"])
    if wdl_model:
        arrays["wdl"] = derived_wdl(arrays, arrays.pop(WDL_KNOWN))
    if encoding is not None and manifest["encoding"] != encoding:
        raise PackError(f"{path}: positions encoded as {manifest['encoding']!r}, not {encoding!r}")
    arrays["key"] = np.zeros(n, dtype=np.uint64)
    return arrays, description, manifest["encoding"]
