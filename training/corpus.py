"""The training corpus: every game and labelled file, each prepared once into the cache, joined for training.

``python -m training corpus [FILES...]`` reads every game file of ``../shared/data/games``
(``.pgn``, ``.pgn.xz``), the MultiPV files of ``../shared/data/labelled``, every such file
under ``$HACKMATE_CACHE/games`` (the corpus's own growth: self-play written there joins every
later run) and the files given. Each file is a *part*: prepared alone, streaming (a chunk of positions in memory
at a time), into a cache entry (training.cache) keyed by the file's SHA-256 and the
settings that change its content. A part already there is reused; a new file is
prepared alone and joined to the rest.

A part holds the shard columns of training.shards (``TRAINING_COLUMNS``: no FEN) as
``.npy`` files opened memory-mapped, plus ``seen_key``/``seen_game``: the key of every
position of every readable game with the game's identity, kept or not. Rows of a game
file: in games with ``[%eval]`` annotations every annotated (engine) move, its policy
the move played, its W/D/L target the eval through Stockfish's model (the eval also in
``policy_score``); in games without (human games) every move from ``skip_plies`` on, no
engine value. Rows of a MultiPV file: the soft policy and W/D/L of training.shards'
``engine_label``. A game's identity is a hash of its moves, the same in every file.

The *join* works on keys and indices, never on the positions themselves:
- one record per position key, preferring a MultiPV label, then an engine eval, then
  by game identity and ply (so the corpus does not depend on the order of the files);
- the test set's positions (``testset/``) and those of ``--exclude`` directories removed;
- a named validation split of whole games: one game in ``validation_period`` by its
  identity (stable when files are added). A position is held out only if every game it
  occurs in is held out, so no held-out position is trained on; MultiPV positions take
  the split of the games they occur in (by key where no game holds them).
It is a cache entry too (part, row and validation arrays), keyed by its parts and
exclusions; ``ROOT/corpus`` links to the newest, which ``train`` reads
(``load_for_training``) by gathering its rows from the parts' memory maps.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import click
import numpy as np

from evaluators.encoding import Encoding, get_encoding, unflipped_bitboards, unpack_unflipped
from evaluators.moves import move_to_index
from hackmate_core.textfiles import READ_ERRORS
from training import cache, shards
from training.config_cli import options_from, setting
from training.pgn import RESULT_WHITE, DataError, ReadStats, iter_games, open_text

REPOSITORY = Path(__file__).resolve().parent.parent
SHARED_DATA = REPOSITORY.parent / "shared" / "data"
TESTSET = REPOSITORY / "testset"

PART_FORMAT, PART_VERSION, PARTS = "hackmate-corpus-part", 1, "corpus-parts"
JOIN_FORMAT, JOIN_VERSION, JOINS = "hackmate-corpus", 1, "corpus-joins"
#: The link to the newest joined corpus, under the cache root.
CURRENT = "corpus"
#: The folder under the cache root whose game and MultiPV files every corpus joins (CorpusConfig.added).
ADDED = "games"
GAME_SUFFIXES = (".pgn", ".pgn.xz", ".pgn.gz", ".pgn.bz2")
MULTIPV_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.xz", ".jsonl.bz2")
#: Positions held in memory at a time while a part is prepared.
CHUNK = 1 << 16
#: Columns of a part besides the records: every position of every game, for the validation split.
SEEN = {"seen_key": np.dtype(np.uint64), "seen_game": np.dtype(np.int64)}
#: Preference between records of the same position: a MultiPV label, then an engine eval, then a bare move.
RANK_MULTIPV, RANK_EVAL, RANK_MOVE = 2, 1, 0


class CorpusError(DataError):
    """A corpus that cannot be used: a part missing or damaged, or another encoding than asked."""


@dataclass
class CorpusConfig:
    """What goes into the corpus and what changes its content."""

    files: list[str] = setting([], "Game (.pgn, .pgn.xz, ...) and MultiPV (.jsonl.gz) files to add to the shared ones.")
    shared: bool = setting(True, "Include every game file of ../shared/data/games and the MultiPV files of "
                                 "../shared/data/labelled.")
    added: bool = setting(True, "Include every game and MultiPV file under $HACKMATE_CACHE/games, at any depth "
                                "(where self-play for the corpus goes: the shared folder is read-only).")
    encoding: str = setting("planes18", "Board encoding.", choices=("planes18", "lc0-112"))
    skip_plies: int = setting(8, "In games without [%eval] (human games): skip the first N plies. Annotated games "
                                 "keep every engine move and none of the book or random moves.")
    min_rating: int = setting(0, "Skip games with a player rated below this.")
    temperature: float = setting(shards.DEFAULT_TEMPERATURE, "Soft-policy temperature of MultiPV labels in "
                                                             "centipawns.")
    validation_period: int = setting(20, "Hold out one game in N (by a hash of its moves) as the validation split.")
    exclude: list[str] = setting([], "Shard directory whose positions are left out, besides testset/ (repeatable).")
    workers: int = setting(2, "Files prepared at once (one process each).")


# --- inputs ----------------------------------------------------------------------------------------------

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


def part_settings(path: Path, config: CorpusConfig) -> dict:
    """Everything that decides a part's content: the file's bytes, the format version and the settings that
    apply to its kind."""
    kind = file_kind(path)
    settings = {"kind": kind, "sha256": cache.file_digest(path), "version": PART_VERSION,
                "encoding": config.encoding}
    if kind == "games":
        settings.update(skip_plies=config.skip_plies, min_rating=config.min_rating)
    else:
        settings.update(temperature=config.temperature)
    return settings


def part_entry(key: str) -> cache.Entry:
    return cache.entry(PARTS, key, PART_FORMAT, PART_VERSION)


# --- writing a part --------------------------------------------------------------------------------------

def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A version 1.0 .npy header of fixed length (128 bytes), so that it can be rewritten with the final shape."""
    text = repr({"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape})
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + (text.ljust(117) + "\n").encode("latin1")


class ColumnWriter:
    """One .npy file written in chunks under a temporary name; ``close`` writes its shape and renames it."""

    def __init__(self, path: Path, dtype: np.dtype, row_shape: tuple[int, ...] = ()) -> None:
        self.path, self.dtype, self.row_shape, self.rows = path, dtype, row_shape, 0
        self.handle = open(cache.temporary_name(path), "wb")
        self.handle.write(_npy_header(dtype, (0, *row_shape)))

    def append(self, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array, dtype=self.dtype)
        if array.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path.name}: rows of shape {array.shape[1:]}, expected {self.row_shape}")
        try:
            array.tofile(self.handle)
        except OSError as error:  # not a damaged input: READ_ERRORS must not catch it
            raise CorpusError(f"{self.path}: cannot write ({error})") from None
        self.rows += len(array)

    def close(self) -> None:
        try:
            self.handle.seek(0)
            self.handle.write(_npy_header(self.dtype, (self.rows, *self.row_shape)))
            self.handle.close()
            os.replace(cache.temporary_name(self.path), self.path)
        except OSError as error:
            raise CorpusError(f"{self.path}: cannot write ({error})") from None


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


def game_identity(game: chess.pgn.Game, moves: Iterable[chess.Move]) -> int:
    """A game's identity: a 63-bit hash of its start position and moves (the same game in any file)."""
    text = game.headers.get("FEN", "") + " " + " ".join(move.uci() for move in moves)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def is_held_out(identity: Union[int, np.ndarray], period: int) -> Union[bool, np.ndarray]:
    """Whether a game of this identity (:func:`game_identity`) is a validation game: one in ``period``. The
    split's one rule, kept by the corpus and by the positions agreement takes from unseen games."""
    return identity % period == 0


class GameRows:
    """Rows of games collected column by column (lists), flushed to a PartWriter every CHUNK positions."""

    #: The lists of a chunk: the records' (planes: 17 bitboards a position for planes18, else packed planes;
    #: black: whether Black is to move; move: the policy slot of the move played; score: the eval in centipawns)
    #: and SEEN's.
    RECORD_LISTS = ("key", "planes", "black", "rule50", "ply", "game", "move", "score", "wdl", "result")

    def __init__(self, writer: PartWriter, encoding: Encoding) -> None:
        self.writer, self.encoding = writer, encoding
        self.lists: dict[str, list] = {name: [] for name in self.RECORD_LISTS + tuple(SEEN)}

    def add_game(self, game: chess.pgn.Game, skip_plies: int) -> int:
        """Add the game's records (see the module's docstring) and every position it passes through; returns the
        records added. A game that cannot be encoded adds nothing and raises ValueError."""
        lists = self.lists
        records_before, seen_before = len(lists["key"]), len(lists["seen_key"])
        try:
            self._add_moves(game, skip_plies)
        except (ValueError, KeyError, IndexError, AssertionError) as error:
            for name, column in lists.items():
                del column[seen_before if name in SEEN else records_before:]
            raise ValueError(repr(error)) from None
        added = len(lists["key"]) - records_before
        identity = game_identity(game, (node.move for node in game.mainline()))
        lists["game"].extend([identity] * added)
        lists["seen_game"].extend([identity] * (len(lists["seen_key"]) - seen_before))
        if len(lists["seen_key"]) >= CHUNK:
            self.flush()
        return added

    def _add_moves(self, game: chess.pgn.Game, skip_plies: int) -> None:
        lists = self.lists
        result_white = RESULT_WHITE[game.headers.get("Result", "*")]
        nodes = list(game.mainline())
        evals = [node.eval() for node in nodes]
        annotated = any(score is not None for score in evals)
        board = game.board()
        for index, (node, score) in enumerate(zip(nodes, evals)):
            key = chess.polyglot.zobrist_hash(board)
            lists["seen_key"].append(key)
            if score is not None or (not annotated and index >= skip_plies):
                turn = board.turn
                lists["key"].append(key)
                if self.encoding.history == 1:
                    lists["planes"].append(unflipped_bitboards(board))
                else:
                    lists["planes"].append(np.packbits(self.encoding.binary(board).reshape(-1), bitorder="little"))
                lists["black"].append(turn == chess.BLACK)
                lists["rule50"].append(min(255, board.halfmove_clock))
                lists["ply"].append(board.ply())
                lists["move"].append(move_to_index(node.move, turn))
                lists["result"].append(result_white if turn == chess.WHITE else -result_white)
                if score is None:
                    lists["score"].append(0)
                    lists["wdl"].append(np.full(3, np.nan, dtype=np.float32))
                else:
                    mover = score.pov(turn)
                    lists["score"].append(shards.score_cp(mover))
                    lists["wdl"].append(shards.wdl_target(mover, board.ply()))
            board.push(node.move)

    def flush(self) -> None:
        lists = self.lists
        n = len(lists["key"])
        if self.encoding.history == 1:
            bitboards = np.array(lists["planes"], dtype=np.uint64).reshape(n, -1)
            bits = unpack_unflipped(bitboards, np.array(lists["black"], dtype=bool))
            planes = np.packbits(bits.reshape(n, -1), axis=1, bitorder="little")
        else:
            planes = np.array(lists["planes"], dtype=np.uint8).reshape(n, -1)
        self.writer.add({
            "key": np.array(lists["key"], dtype=np.uint64), "planes": planes,
            "rule50": np.array(lists["rule50"], dtype=np.uint8), "ply": np.array(lists["ply"], dtype=np.int16),
            "game": np.array(lists["game"], dtype=np.int64), "policy_offset": np.arange(n + 1, dtype=np.int64),
            "policy_index": np.array(lists["move"], dtype=np.int16), "policy_prob": np.ones(n, dtype=np.float32),
            "policy_score": np.array(lists["score"], dtype=np.int32),
            "wdl": np.array(lists["wdl"], dtype=np.float32).reshape(n, 3),
            "result": np.array(lists["result"], dtype=np.int8),
            **{name: np.array(lists[name], dtype=dtype) for name, dtype in SEEN.items()}})
        for column in lists.values():
            column.clear()


def _read_games(path: Path, rows: GameRows, settings: dict, stats: ReadStats, tick: Callable[[], None]) -> None:
    for index, game in iter_games(path, stats):
        stats.games += 1
        tick()
        if game.headers.get("Result", "*") not in RESULT_WHITE:
            stats.skipped["games without a result"] += 1
            continue
        if settings["min_rating"]:
            ratings = [game.headers.get(k, "") for k in ("WhiteElo", "BlackElo")]
            if any(r.isdigit() and int(r) < settings["min_rating"] for r in ratings):
                stats.skipped["games below the minimum rating"] += 1
                continue
        try:
            stats.positions += rows.add_game(game, settings["skip_plies"])
        except ValueError as error:
            stats.error("games that cannot be encoded", f"{path.name} game {index + 1}: {error}")


def _read_multipv(path: Path, writer: PartWriter, settings: dict, stats: ReadStats, tick: Callable[[], None]) -> None:
    encoding = get_encoding(settings["encoding"])
    records: list[shards.Record] = []

    def flush() -> None:
        arrays = shards.records_to_arrays(records, encoding)
        writer.add({name: arrays[name] for name in shards.TRAINING_COLUMNS})
        records.clear()

    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            tick()
            try:
                item = json.loads(line)
                board = chess.Board(item["fen"])
                records.append(shards.engine_label(board, encoding, [tuple(entry) for entry in item["pv"]],
                                                   settings["temperature"],
                                                   shards.side_result(item.get("result"), board.turn), -1))
            except (ValueError, KeyError, TypeError, IndexError, AssertionError) as error:
                stats.error("bad labelled lines", f"{path.name} line {number}: {error!r}")
                continue
            stats.positions += 1
            if len(records) >= CHUNK:
                flush()
    if records:
        flush()


def prepare_part(path: Path, settings: dict, key: str, slot: int = 0, progress: bool = True) -> dict:
    """Prepare one file into its part (cache entry ``key``), streaming; returns the part's manifest.

    A file that turns out truncated or corrupt keeps what was read before the damage,
    and the manifest names the damage (``damaged``), counted in the read statistics.
    """
    started = time.time()
    entry = part_entry(key)
    directory = entry.start()
    encoding = get_encoding(settings["encoding"])
    writer = PartWriter(directory, encoding)
    stats = ReadStats()
    damaged = None
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(desc=path.name, unit=" games" if settings["kind"] == "games" else " lines", position=slot,
                   leave=False, mininterval=2.0)
    tick: Callable[[], None] = bar.update if bar is not None else (lambda: None)
    try:
        if settings["kind"] == "games":
            rows = GameRows(writer, encoding)
            try:
                _read_games(path, rows, settings, stats, tick)
            finally:
                rows.flush()
        else:
            _read_multipv(path, writer, settings, stats, tick)
    except READ_ERRORS as error:
        damaged = f"{path.name}: unreadable after {stats.games or stats.positions} " \
                  f"{'games' if settings['kind'] == 'games' else 'positions'} ({error})"
        stats.error("damaged files (truncated or corrupt)", damaged)
    finally:
        if bar is not None:
            bar.close()
    writer.close()
    read = f"{stats.games:,} games" if settings["kind"] == "games" else "labelled lines"
    skipped = ", ".join(f"{n:,} {why}" for why, n in sorted(stats.skipped.items()))
    summary = f"{path.name}: {writer.positions:,} positions of {read}" + (f"; skipped {skipped}" if skipped else "")
    return entry.finish({"source": path.name, "settings": settings, "positions": writer.positions,
                         "entries": writer.entries, "seen": writer.columns["seen_key"].rows, "games": stats.games,
                         "skipped": dict(stats.skipped), "errors": stats.errors, "damaged": damaged,
                         "seconds": round(time.time() - started, 1), "summary": summary})


def _prepare_job(job: tuple) -> dict:
    path, settings, key, slot, progress = job
    return prepare_part(Path(path), settings, key, slot, progress)


# --- reading parts ---------------------------------------------------------------------------------------

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


# --- the join --------------------------------------------------------------------------------------------

def split_name(period: int) -> str:
    return f"games-1-in-{period}"


def excluded_keys(directories: list[Path]) -> np.ndarray:
    """Sorted unique position keys of the shard directories whose positions the corpus leaves out."""
    keys: set[int] = set()
    for directory in directories:
        shards.read_meta(directory)
        keys |= shards.dir_keys(directory)
    return np.array(sorted(keys), dtype=np.uint64)


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
    seen_key, held_out = seen_key[order], is_held_out(seen_game[order], period)
    del seen_game, order
    by_key = keys % np.uint64(period) == 0
    if not len(seen_key):
        return by_key
    starts = np.flatnonzero(np.concatenate([[True], seen_key[1:] != seen_key[:-1]]))
    unique_keys, all_held_out = seen_key[starts], np.logical_and.reduceat(held_out, starts)
    at = np.minimum(np.searchsorted(unique_keys, keys), len(unique_keys) - 1)
    return np.where(unique_keys[at] == keys, all_held_out[at], by_key)


# --- building --------------------------------------------------------------------------------------------

@dataclass
class PartReport:
    """What became of one input file: ``status`` is "reused", "prepared", "rebuilt (why)" or "same content as X"."""

    source: Path
    key: str
    status: str
    manifest: dict = field(default_factory=dict)


@dataclass
class Corpus:
    """The result of ``build``: each file's part, the joined corpus's directory and manifest, and whether the
    join was reused."""

    parts: list[PartReport]
    directory: Path
    manifest: dict
    join_reused: bool

    def text(self) -> str:
        """What became of each file, what was skipped or damaged, and the joined corpus's counts."""
        lines = []
        for report in self.parts:
            m = report.manifest
            read = f"{m['games']:,} games" if m["settings"]["kind"] == "games" else "labelled lines"
            damaged = f"; DAMAGED: {m['damaged']}" if m["damaged"] else ""
            lines.append(f"{report.source.name}: {report.status}, {m['positions']:,} positions of {read} "
                         f"({m['seconds']} s when prepared){damaged}")
        m = self.manifest
        damaged = [r.manifest["damaged"] for r in self.parts if r.manifest["damaged"]]
        skipped: dict[str, int] = {}
        for report in self.parts:
            for why, n in report.manifest["skipped"].items():
                skipped[why] = skipped.get(why, 0) + n
        lines.append("skipped: " + (", ".join(f"{n:,} {why}" for why, n in sorted(skipped.items())) or "none"))
        if damaged:
            lines.append(f"{len(damaged)} damaged file(s), read up to the damage: " + "; ".join(damaged))
        c = m["counts"]
        lines.append(f"joined{' (reused)' if self.join_reused else ''}: {c['positions']:,} positions of "
                     f"{c['records']:,} records ({c['duplicates']:,} duplicates, {c['excluded']:,} test-set or "
                     f"excluded positions left out); validation split {m['split']!r}: {c['validation']:,} positions")
        lines.append(f"corpus: {self.directory}")
        return "\n".join(lines)


def build(config: CorpusConfig, progress: bool = True, say: Callable[[str], None] = print) -> Corpus:
    """Prepare the parts that are not in the cache (in parallel), reuse the rest, and join them."""
    encoding = get_encoding(config.encoding)  # refuses an unknown name before any work
    if config.validation_period < 2:
        raise CorpusError(f"the validation period must be at least 2, not {config.validation_period}")
    reports = prepare_parts(input_files(config), config, progress, say)
    parts = {r.key: Part(part_entry(r.key).path, r.manifest) for r in reports}
    exclude = ([TESTSET] if TESTSET.is_dir() else []) + [Path(d) for d in config.exclude]
    excluded = excluded_keys(exclude)
    join_key = cache.settings_digest({"version": JOIN_VERSION, "parts": sorted(parts), "encoding": encoding.name,
                                      "period": config.validation_period,
                                      "excluded": hashlib.sha256(excluded.tobytes()).hexdigest()})[:32]
    entry = cache.entry(JOINS, join_key, JOIN_FORMAT, JOIN_VERSION)
    problem = entry.problem()
    if problem not in (None, "absent"):
        say(f"the joined corpus {entry.path} is {problem}: rebuilding it")
    if problem is not None:
        arrays, counts = join([parts[key] for key in sorted(parts)], excluded, config.validation_period)
        entry.start()
        for name, array in arrays.items():
            cache.save_array(entry.path / f"{name}.npy", array)
        entry.finish({"encoding": encoding.name, "split": split_name(config.validation_period),
                      "validation_period": config.validation_period, "counts": counts,
                      "parts": [{"key": key, "source": parts[key].manifest["source"],
                                 "positions": parts[key].manifest["positions"]} for key in sorted(parts)],
                      "excluded_from": [str(d) for d in exclude],
                      "summary": f"{counts['positions']:,} positions ({counts['validation']:,} validation) "
                                 f"from {len(parts)} parts"})
    _link_current(entry.path, say)
    return Corpus(reports, entry.path, entry.manifest(), problem is None)


def prepare_parts(files: list[Path], config: CorpusConfig, progress: bool, say: Callable[[str], None]
                  ) -> list[PartReport]:
    """Each file's part: reused where the cache holds it complete, else prepared (rebuilt, saying why)."""
    reports: list[PartReport] = []
    jobs: dict[str, tuple[Path, dict]] = {}
    for path in files:
        settings = part_settings(path, config)
        key = cache.settings_digest(settings)[:32]
        twin = next((r for r in reports if r.key == key), None)
        problem = part_entry(key).problem()
        if twin is not None:
            status = f"same content as {twin.source.name}"
        elif problem is None:
            status = "reused"
        else:
            status = "prepared" if problem == "absent" else f"rebuilt ({problem})"
            if problem != "absent":
                say(f"{path.name}: its cached part {part_entry(key).path} is {problem}: rebuilding it")
            jobs[key] = (path, settings)
        reports.append(PartReport(path, key, status))
    ordered = sorted(jobs.items(), key=lambda item: -_work(item[1][0]))
    arguments = [(str(path), settings, key, slot % max(1, config.workers), progress)
                 for slot, (key, (path, settings)) in enumerate(ordered)]
    if len(arguments) <= 1 or config.workers <= 1:
        for job in arguments:
            say(_prepare_job(job)["summary"])
    else:
        from training.processes import process_pool
        with process_pool(min(config.workers, len(arguments))) as pool:
            for manifest in pool.map(_prepare_job, arguments):
                say(manifest["summary"])
    for report in reports:
        report.manifest = part_entry(report.key).manifest()
    return reports


def _work(path: Path) -> float:
    """A rough measure of the work of preparing a file, to start the longest first: a compressed file holds
    several times its size, and a MultiPV line (a few hundred bytes) takes about as long as a PGN move (a few
    dozen)."""
    expansion = {".xz": 7.0, ".bz2": 5.0, ".gz": 4.0}.get(path.suffix.lower(), 1.0)
    return path.stat().st_size * expansion * (1.0 if file_kind(path) == "games" else 0.2)


def _link_current(directory: Path, say: Callable[[str], None]) -> None:
    """Point ROOT/corpus at the newest joined corpus (a relative symbolic link), where links can be made."""
    link = cache.root() / CURRENT
    temporary = cache.temporary_name(link)
    try:
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(directory.relative_to(cache.root()), target_is_directory=True)
        os.replace(temporary, link)
    except OSError as error:
        say(f"could not link {link} to the corpus ({error}): give train {directory}")


# --- training --------------------------------------------------------------------------------------------

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


# --- the command -----------------------------------------------------------------------------------------

def info_text() -> str:
    """What the cache holds: each part and joined corpus with its size on disk, the unusable ones named."""
    description = cache.describe()
    known = {PARTS: (PART_FORMAT, PART_VERSION), JOINS: (JOIN_FORMAT, JOIN_VERSION)}
    lines = [f"cache: {description['root']} (${cache.ENVIRONMENT} to move it)"]
    current = cache.root() / CURRENT
    if current.is_symlink():
        lines.append(f"current corpus: {current} -> {os.readlink(current)}")
    added = added_files()
    lines.append(f"added files ({cache.root() / ADDED}, joined by every corpus run): {len(added)}, "
                 f"{sum(p.stat().st_size for p in added) / 2**20:,.1f} MiB")
    for item in description["entries"]:
        if item["kind"] in known:
            problem = cache.Entry(Path(item["path"]), *known[item["kind"]]).problem()
            state = f" [unusable: {problem}; rebuilt when its inputs are asked for; safe to delete]" if problem else ""
            lines.append(f"{item['kind']}/{item['key']}: {item['bytes'] / 2**20:,.1f} MiB  {item['summary']}{state}")
    lines.extend(f"{kind}/: {size / 2**20:,.1f} MiB (not the corpus's: left as it is)"
                 for kind, size in description["folders"].items() if kind not in known and kind != ADDED)
    lines.append(f"in all: {description['bytes'] / 2**20:,.1f} MiB on disk")
    return "\n".join(lines)


def prune_stale() -> tuple[Path, list[tuple[Path, int]]]:
    """Remove what the current corpus (ROOT/corpus, the last one `corpus` joined) does not read, to free the disk:
    the other joined corpora (one more, about 70 MiB, each time the corpus grows; rebuilt from the parts if asked
    for again) and the parts its manifest does not list, half-written ones included (after a `corpus` of a few
    files only, every other file's part: they are prepared again when joined again); nothing else. Returns the
    current join's folder and each removed path with its bytes on disk, joins first (an interrupted run leaves no
    join without its parts). Refuses (CorpusError), removing nothing, without a complete current corpus."""
    link, joins, parts = cache.root() / CURRENT, cache.root() / JOINS, cache.root() / PARTS
    if not link.is_symlink():
        raise CorpusError(f"no current corpus ({link} is not a link): nothing pruned; run `python -m training corpus`")
    current = cache.Entry(link.resolve(), JOIN_FORMAT, JOIN_VERSION)
    problem = current.problem() if current.path.parent == joins.resolve() else f"not in {joins}"
    if problem:
        raise CorpusError(f"the current corpus {link} -> {os.readlink(link)} is {problem}: nothing pruned; "
                          f"run `python -m training corpus`")
    used = {part["key"] for part in current.manifest()["parts"]}
    stale = [path for path in sorted(joins.iterdir()) if path.resolve() != current.path]
    stale += [path for path in sorted(parts.iterdir()) if path.name not in used] if parts.is_dir() else []
    removed = []
    for path in stale:
        if path.is_dir() and not path.is_symlink():
            removed.append((path, cache.size_on_disk(path)))
            shutil.rmtree(path)
        else:  # a loose file, such as a temporary name left by a crash
            removed.append((path, path.lstat().st_size))
            path.unlink()
    return current.path, removed


@click.command("corpus")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@options_from(CorpusConfig, skip=("files",), overrides={"exclude": {"type": click.Path(exists=True, file_okay=False)}})
@click.option("--info", is_flag=True, help="Print what the cache holds and its size on disk; prepare nothing.")
@click.option("--prune", is_flag=True, help="Remove the joined corpora other than the current one (about 70 MiB "
                                            "each, rebuilt from the parts if asked for again) and the parts it does "
                                            "not join; prepare nothing. Refused while another corpus run "
                                            "holds the cache.")
def corpus_command(info: bool, prune: bool, files: tuple[str, ...], **kwargs) -> None:
    """Prepare every game and MultiPV file into the cache (each file once, reused after) and join them into the
    training corpus: one record per position, the test set left out, whole games held out for validation.
    Train on it with `python -m training train $HACKMATE_CACHE/corpus` (default ~/.cache/hackmate/corpus)."""
    if prune and (info or files):
        raise click.UsageError("--prune takes no FILES and no --info")
    if info:
        click.echo(info_text())
        return
    try:
        with cache.exclusive("corpus --prune" if prune else "corpus"):
            if prune:
                kept, removed = prune_stale()
            else:
                corpus = build(CorpusConfig(files=list(files), **kwargs), say=click.echo)
    except (DataError, cache.CacheBusy) as error:
        raise click.ClickException(str(error)) from None
    if prune:
        click.echo(f"kept the current corpus, {JOINS}/{kept.name}, and the parts it joins")
        for path, size in removed:
            click.echo(f"removed {path.relative_to(cache.root())}: {size / 2**20:,.1f} MiB")
        click.echo(f"freed {sum(size for _, size in removed) / 2**20:,.1f} MiB" if removed else
                   "nothing to prune: the cache holds only the current corpus and its parts")
        return
    click.echo(corpus.text())
    click.echo(f"train with: python -m training train {cache.root() / CURRENT} --out runs/NAME ...")
