"""Label shards: the one training-data format of supervised, DeepChess and reinforcement-learning training.

A dataset is a directory: ``meta.json`` (format, version, encoding, how the
labels were made, the list of complete shards) and ``shard-NNNNN.npz`` files.
A shard is written under a temporary name and renamed when complete, then
listed in meta.json (itself replaced atomically), so a reader never sees a
half-written shard and an interrupted writer leaves nothing that looks complete.

Arrays of a shard (N positions, M policy entries in all):
``fen`` S92, ``key`` uint64 (python-chess Zobrist hash, ignores move counters),
``planes`` uint8 (N, C*8) bit-packed binary planes (bitorder little), ``rule50``
uint8, ``ply`` int16 (0 unknown), ``game`` int64 (-1 unknown),
``policy_offset`` int64 (N+1) CSR offsets into ``policy_index`` int16 (AlphaZero
4672-slot move index), ``policy_prob`` float32 (sums to 1 per position) and
``policy_score`` int32 (engine centipawns from the side to move's view, mates as
+-(MATE_CP - n); 0 where not an engine label), ``wdl`` float32 (N, 3) (NaN row
when unknown), ``result`` int8 (+1/0/-1 for the side to move, -128 unknown).

The targets of engine labels are made in training.data.targets; the other source formats become these arrays in
training.data.sources.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

import chess
import chess.pgn
import chess.polyglot
import numpy as np

from evaluators.encoding import PLANES18, Encoding, assemble, get_encoding
from evaluators.moves import move_to_index
from hackmate_core.textfiles import base_suffix
from training.data.pgn import DataError, ReadStats, game_id, game_index, iter_games, with_history

FORMAT = "hackmate-shards"
VERSION = 1
#: The board encoding of data made without naming one: the 17 bit-packed planes of evaluators.encoding.
DEFAULT_ENCODING = PLANES18

#: Every array of a shard and its dtype.
ARRAYS = {"fen": np.dtype("S92"), "key": np.dtype(np.uint64), "planes": np.dtype(np.uint8),
          "rule50": np.dtype(np.uint8), "ply": np.dtype(np.int16), "game": np.dtype(np.int64),
          "policy_offset": np.dtype(np.int64), "policy_index": np.dtype(np.int16),
          "policy_prob": np.dtype(np.float32), "policy_score": np.dtype(np.int32),
          "wdl": np.dtype(np.float32), "result": np.dtype(np.int8)}
POLICY_ARRAYS = ("policy_index", "policy_prob", "policy_score")
#: Arrays training needs (the FEN is left on disk).
TRAINING_COLUMNS = tuple(name for name in ARRAYS if name != "fen")


class ShardError(DataError):
    """A shard or shard directory that cannot be used: foreign, of another version or encoding, or damaged."""


# --- records --------------------------------------------------------------------------------------------

@dataclass
class Record:
    """One labelled position, ready for a shard."""

    fen: str
    key: int
    planes: np.ndarray  # packed uint8 (C*8,)
    rule50: int
    ply: int
    game: int
    policy_index: np.ndarray
    policy_prob: np.ndarray
    policy_score: np.ndarray
    wdl: np.ndarray
    result: int


def make_record(board: chess.Board, encoding: Encoding, moves: list[chess.Move], probs: np.ndarray,
                scores: np.ndarray, wdl: np.ndarray, result: int, game: int) -> Record:
    """Encode ``board`` (its move stack serves history encodings) with its targets."""
    return Record(fen=board.fen(), key=chess.polyglot.zobrist_hash(board),
                  planes=encoding.packed(board),
                  rule50=min(255, board.halfmove_clock), ply=board.ply(), game=game,
                  policy_index=np.array([move_to_index(m, board.turn) for m in moves], dtype=np.int16),
                  policy_prob=np.asarray(probs, dtype=np.float32), policy_score=np.asarray(scores, dtype=np.int32),
                  wdl=np.asarray(wdl, dtype=np.float32), result=result)


# --- writing ---------------------------------------------------------------------------------------------

def records_to_arrays(records: list[Record], encoding: Encoding) -> dict[str, np.ndarray]:
    counts = np.array([len(r.policy_index) for r in records], dtype=np.int64)
    if (counts == 0).any():
        raise ValueError("every position needs at least one policy entry")
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def cat(name: str) -> np.ndarray:
        parts = [getattr(r, name) for r in records]
        return np.concatenate(parts) if parts else np.zeros(0, ARRAYS[name])

    arrays = {"fen": np.array([r.fen.encode() for r in records], dtype="S92"),
              "key": np.array([r.key for r in records], dtype=np.uint64),
              "planes": np.array([r.planes for r in records], dtype=np.uint8).reshape(-1, encoding.binary_planes * 8),
              "rule50": np.array([r.rule50 for r in records], dtype=np.uint8),
              "ply": np.array([r.ply for r in records], dtype=np.int16),
              "game": np.array([r.game for r in records], dtype=np.int64),
              "policy_offset": offsets,
              **{name: cat(name) for name in POLICY_ARRAYS},
              "wdl": np.array([r.wdl for r in records], dtype=np.float32).reshape(-1, 3),
              "result": np.array([r.result for r in records], dtype=np.int8)}
    return {name: arrays[name].astype(ARRAYS[name], copy=False) for name in ARRAYS}


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """A compressed .npz with fixed timestamps: the same arrays always give the same bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(array), allow_pickle=False)


def _write_json(path: Path, data: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=1))
    os.replace(temporary, path)


class ShardWriter:
    """Appends complete shards to a dataset directory, creating or continuing it.

    ``labeller`` describes how labels are made; continuing a directory made with
    different label settings (engine, nodes, MultiPV, temperature) is refused, so a
    directory never mixes label qualities by accident. Leftovers of an interrupted
    writer (temporary files, shards written but never listed) are removed.
    """

    #: Labeller fields that must agree between runs into the same directory.
    LABEL_KEYS = ("engine", "nodes", "multipv", "temperature", "wdl_model", "imported_from", "targets")

    def __init__(self, directory: Path, encoding: Encoding, labeller: dict, shard_size: int = 4096) -> None:
        self.directory = directory
        self.encoding = encoding
        self.shard_size = shard_size
        self.pending: list[Record] = []
        self.pending_sources: set[str] = set()
        directory.mkdir(parents=True, exist_ok=True)
        if (directory / "meta.json").exists():
            self.meta = read_meta(directory, encoding.name)
            differ = [k for k in self.LABEL_KEYS if self.meta["labeller"].get(k) != labeller.get(k)]
            if differ:
                made = ", ".join(f"{k}={self.meta['labeller'].get(k)!r}" for k in differ)
                asked = ", ".join(f"{k}={labeller.get(k)!r}" for k in differ)
                raise ShardError(f"{directory} holds labels made with {made}, not {asked}: use another directory")
        else:
            self.meta = {"format": FORMAT, "version": VERSION, "encoding": encoding.name, "labeller": labeller,
                         "shards": [], "runs": []}
        listed = {entry["file"] for entry in self.meta["shards"]}
        for path in directory.glob("shard-*"):
            if path.name not in listed:
                path.unlink()  # a temporary file or a shard an interrupted writer never listed
        numbers = [int(entry["file"].removeprefix("shard-").removesuffix(".npz")) for entry in self.meta["shards"]]
        self.next_number = 1 + max(numbers, default=-1)
        _write_json(directory / "meta.json", self.meta)

    def add(self, record: Record, source: str) -> None:
        self.pending.append(record)
        self.pending_sources.add(source)
        if len(self.pending) >= self.shard_size:
            self.flush()

    def flush(self) -> None:
        """Write the pending records (if any) as one complete shard."""
        if self.pending:
            self.write_arrays(records_to_arrays(self.pending, self.encoding), sorted(self.pending_sources))
            self.pending, self.pending_sources = [], set()

    def write_arrays(self, arrays: dict[str, np.ndarray], sources: list[str]) -> None:
        """Write ``arrays`` as the next shard (temporary name, then rename) and list it in meta.json."""
        name = f"shard-{self.next_number:05d}.npz"
        temporary = self.directory / (name + ".tmp")
        _write_npz(temporary, arrays)
        os.replace(temporary, self.directory / name)
        self.meta["shards"].append({"file": name, "positions": len(arrays["key"]), "sources": sources})
        _write_json(self.directory / "meta.json", self.meta)
        self.next_number += 1

    def record_run(self, run: dict) -> None:
        """Flush and append a description of this run (command, settings, summary) to meta.json."""
        self.flush()
        self.meta["runs"].append(run)
        _write_json(self.directory / "meta.json", self.meta)


def write_dir(arrays: dict[str, np.ndarray], directory: Path, encoding: Encoding, labeller: dict, source: str,
              shard_size: int = 65536) -> None:
    """Write already-built arrays (a conversion) as a shard directory."""
    writer = ShardWriter(directory, encoding, labeller, shard_size)
    n = len(arrays["key"])
    for start in range(0, n, shard_size):
        writer.write_arrays(select(arrays, np.arange(start, min(n, start + shard_size))), [source])
    writer.record_run({"source": source, "positions": n})


# --- reading ---------------------------------------------------------------------------------------------

def is_shard_dir(directory: Path) -> bool:
    meta = directory / "meta.json"
    if not meta.exists():
        return False
    try:
        return json.loads(meta.read_text()).get("format") == FORMAT
    except ValueError:
        return False


def read_meta(directory: Path, encoding: Optional[str] = None) -> dict:
    """meta.json of a shard directory, checked for format, version and (if given) encoding."""
    path = directory / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise ShardError(f"{directory} is not a shard directory (no meta.json)") from None
    except (OSError, ValueError) as error:
        raise ShardError(f"{path}: unreadable ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ShardError(f"{path}: not a {FORMAT} directory (format {found!r})")
    if meta.get("version") != VERSION:
        raise ShardError(f"{path}: {FORMAT} version {meta.get('version')!r}, this code reads version {VERSION}")
    if encoding is not None and meta.get("encoding") != encoding:
        raise ShardError(f"{path}: positions encoded as {meta.get('encoding')!r}, not {encoding!r}")
    return meta


def read_shard(path: Path, encoding: Encoding, columns: Iterable[str] = tuple(ARRAYS),
               positions: Optional[int] = None) -> dict[str, np.ndarray]:
    """The arrays of one shard, checked for completeness, dtypes and consistent sizes (and ``positions``)."""
    columns = list(columns)
    needed = set(columns) | {"key", "policy_offset"}
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = needed - set(archive.files)
            if missing:
                raise ShardError(f"{path}: not a complete shard (missing {', '.join(sorted(missing))})")
            arrays = {name: archive[name] for name in sorted(needed)}
    except ShardError:
        raise
    except FileNotFoundError:
        raise ShardError(f"{path}: no such shard") from None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as error:
        raise ShardError(f"{path}: corrupt or truncated shard ({error})") from None
    for name, array in arrays.items():
        if array.dtype != ARRAYS[name]:
            raise ShardError(f"{path}: array {name} is {array.dtype}, expected {ARRAYS[name]}")
    n = len(arrays["key"])
    if positions is not None and n != positions:
        raise ShardError(f"{path}: holds {n} positions, meta.json says {positions}")
    offsets = arrays["policy_offset"]
    m = int(offsets[-1]) if len(offsets) else -1
    shapes = {"planes": (n, encoding.binary_planes * 8), "wdl": (n, 3), "policy_offset": (n + 1,),
              **{name: (m,) for name in POLICY_ARRAYS}}
    for name, array in arrays.items():
        expected = shapes.get(name, (n,))
        if array.shape != expected:
            detail = " (another encoding?)" if name == "planes" else ""
            raise ShardError(f"{path}: array {name} has shape {array.shape}, expected {expected}{detail}")
    if offsets[0] != 0 or (np.diff(offsets) <= 0).any():
        raise ShardError(f"{path}: policy offsets are not increasing from 0")
    return {name: arrays[name] for name in columns}


def iter_shards(directory: Path, encoding: Optional[str] = None, columns: Iterable[str] = tuple(ARRAYS)
                ) -> Iterator[tuple[dict, dict[str, np.ndarray]]]:
    """(meta entry, arrays) of every complete shard listed in ``directory``'s meta.json."""
    meta = read_meta(directory, encoding)
    enc = get_encoding(meta["encoding"])
    for entry in meta["shards"]:
        yield entry, read_shard(directory / entry["file"], enc, columns, entry["positions"])


def select(arrays: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    """The given positions (indices or a boolean mask) of shard arrays, with their policy entries."""
    rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, dtype=np.int64)
    out = {name: array[rows] for name, array in arrays.items() if name not in POLICY_ARRAYS + ("policy_offset",)}
    if "policy_offset" in arrays:
        offsets = arrays["policy_offset"]
        starts = offsets[rows]
        counts = offsets[rows + 1] - starts
        new_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        entries = np.repeat(starts - new_offsets[:-1], counts) + np.arange(new_offsets[-1])
        out["policy_offset"] = new_offsets
        out.update({name: arrays[name][entries] for name in POLICY_ARRAYS if name in arrays})
    return out


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate shard arrays, shifting the CSR offsets."""
    if not parts:
        return {}
    out = {name: np.concatenate([p[name] for p in parts]) for name in parts[0] if name != "policy_offset"}
    if "policy_offset" in parts[0]:
        shifts = np.cumsum([0] + [int(p["policy_offset"][-1]) for p in parts[:-1]])
        out["policy_offset"] = np.concatenate([[0]] + [p["policy_offset"][1:] + s for p, s in zip(parts, shifts)])
    return out


def load_dir(directory: Path, encoding: Optional[str] = None, columns: Iterable[str] = tuple(ARRAYS)
             ) -> tuple[dict[str, np.ndarray], dict]:
    """All shards of ``directory`` concatenated, and its meta.json."""
    columns = tuple(columns)
    meta = read_meta(directory, encoding)
    parts = [arrays for _, arrays in iter_shards(directory, encoding, columns)]
    if not parts:
        empty = records_to_arrays([], get_encoding(meta["encoding"]))
        return {name: empty[name] for name in columns}, meta
    return concatenate(parts), meta


def load_dir_encoded(directory: Path, encoding: Encoding) -> tuple[dict[str, np.ndarray], dict]:
    """All shards of ``directory`` with their planes in ``encoding``: as stored, or encoded anew (a network of
    another encoding measured on a test set). An encoding that shows history or last moves reads each position's
    game from the PGN source the directory keeps beside its shards (:func:`kept_games`); without one it sees a
    game that starts at the FEN, and the meta's ``planes`` says which."""
    arrays, meta = load_dir(directory)
    if meta["encoding"] == encoding.name:
        return arrays, meta
    games = {} if encoding.position_only else kept_games(directory, meta)
    if games:
        boards = replayed_positions(arrays, games, directory)
        how = f"from the games of {', '.join(sorted({name for name, _ in games.values()}))}"
    else:
        boards = [chess.Board(fen.decode()) for fen in arrays["fen"]]
        how = "from the FENs" + ("" if encoding.position_only else ", no game before them")
    arrays["planes"] = np.array([encoding.packed(board) for board in boards],
                                dtype=np.uint8).reshape(len(boards), encoding.binary_planes * 8)
    return arrays, {**meta, "planes": f"{encoding.name} {how} (stored: {meta['encoding']})"}


#: How a PGN source kept in a shard directory may be compressed (:func:`kept_games`).
KEPT_SUFFIXES = ("", ".xz", ".gz", ".bz2")


def kept_games(directory: Path, meta: dict) -> dict[int, tuple[str, chess.pgn.Game]]:
    """The games of the PGN sources that ``directory`` keeps beside its shards (a file named as a shard's source,
    or that name compressed), by :func:`~training.data.pgn.game_id`, each with its file's name: where a test set
    that ships its games finds the moves before each position."""
    games: dict[int, tuple[str, chess.pgn.Game]] = {}
    names = sorted({name for shard in meta["shards"] for name in shard.get("sources", ())
                    if base_suffix(Path(name)) == ".pgn"})
    for name in names:
        path = next((directory / (name + suffix) for suffix in KEPT_SUFFIXES
                     if (directory / (name + suffix)).is_file()), None)
        if path is None:
            continue
        # a game that cannot be read is left out: a row of it is refused by replayed_positions, with its name
        for index, game in iter_games(path, ReadStats()):
            games[game_id(name, index)] = (path.name, game)
    return games


def replayed_positions(arrays: dict[str, np.ndarray], games: dict[int, tuple[str, chess.pgn.Game]],
                       directory: Path) -> list[chess.Board]:
    """Each row's position played out from its game's start (the ``game`` column, and ``ply``: the position's
    ``board.ply()``, counted from the game's first position's), with as much of the game on the board's stack as
    an encoding reads; each checked to be the row's FEN."""
    boards: list[Optional[chess.Board]] = [None] * len(arrays["fen"])
    rows = sorted(range(len(boards)), key=lambda row: (int(arrays["game"][row]), int(arrays["ply"][row])))
    board, moves, first_ply, current, name = chess.Board(), [], 0, -1, ""
    for row in rows:
        game, ply, fen = int(arrays["game"][row]), int(arrays["ply"][row]), arrays["fen"][row].decode()
        if game != current:
            if game not in games:
                raise DataError(f"{directory}: position {row} ({fen}) comes from a game that no kept PGN holds")
            current, (name, pgn_game) = game, games[game]
            board, moves = pgn_game.board(), list(pgn_game.mainline_moves())
            first_ply = board.ply()
        where = f"ply {ply} of game {game_index(game) + 1} of {name}"
        if not first_ply <= ply <= first_ply + len(moves):
            raise DataError(f"{directory}: position {row} ({fen}) is {where}, which that game does not reach")
        while first_ply + len(board.move_stack) < ply:
            board.push(moves[len(board.move_stack)])
        if board.fen() != fen:
            raise DataError(f"{directory}: position {row} is {fen}, but {where} is {board.fen()}")
        boards[row] = with_history(board)
    return boards  # type: ignore[return-value]


def dir_keys(directory: Path) -> set[int]:
    """Zobrist keys of every position in the complete shards of ``directory`` (for deduplication)."""
    keys: set[int] = set()
    if not (directory / "meta.json").exists():
        return keys
    for _, arrays in iter_shards(directory, columns=("key",)):
        keys.update(arrays["key"].tolist())
    return keys


def excluded_keys(directories: Iterable[Path]) -> set[int]:
    """The position keys of shard directories whose positions a command leaves out (``--exclude``, the test set),
    each checked to be a shard directory (a clear error for one that is not)."""
    keys: set[int] = set()
    for directory in directories:
        read_meta(directory)
        keys |= dir_keys(directory)
    return keys


def best_moves(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Per position, the move slot with the highest target probability (the first such entry), as int64."""
    offsets, prob = arrays["policy_offset"], arrays["policy_prob"]
    if len(offsets) < 2:
        return np.zeros(0, dtype=np.int64)
    starts = offsets[:-1]
    row = np.repeat(np.arange(len(starts)), np.diff(offsets))
    top = np.maximum.reduceat(prob, starts)
    candidates = np.where(prob == top[row], np.arange(len(prob)), len(prob))
    return arrays["policy_index"][np.minimum.reduceat(candidates, starts)].astype(np.int64)


def to_inputs(planes: np.ndarray, rule50: np.ndarray, encoding: Encoding) -> np.ndarray:
    """Packed planes -> float32 network input (N, C, 8, 8): the numpy path (device.unpack_planes is PyTorch's)."""
    binary = np.unpackbits(planes, axis=1, bitorder="little")[:, : encoding.binary_planes * 64]
    return assemble(binary.reshape(-1, encoding.binary_planes, 8, 8).astype(bool), rule50)
