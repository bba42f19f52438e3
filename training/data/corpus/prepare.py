"""Preparing the corpus's files into their parts: each file alone, streaming, several files at once.

Rows of a game file: in games with ``[%eval]`` annotations every annotated (engine) move, its policy the move
played, its W/D/L target the eval through Stockfish's model (the eval also in ``policy_score``); in games without
(human games) every move from ``skip_plies`` on, no engine value; with a ``player``, only that player's moves.
Rows of a MultiPV file: the soft policy and W/D/L of training.data.targets' ``engine_label``. Every position of
every readable game is also kept with the game's identity (SEEN), recorded or not, for the validation split.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import chess
import chess.pgn
import chess.polyglot
import numpy as np

from evaluators.encoding import Encoding, get_encoding, unpack_unflipped
from evaluators.moves import move_to_index
from hackmate_core.textfiles import READ_ERRORS
from training.data import cache
from training.data.corpus.config import CorpusConfig
from training.data.corpus.files import file_kind
from training.data.corpus.parts import SEEN, PartWriter, part_entry, part_settings
from training.data.multipv import labelled_records
from training.data.pgn import RESULT_WHITE, ReadStats, iter_games, open_text, player_colours
from training.data.shards import TRAINING_COLUMNS, Record, records_to_arrays
from training.data.split import game_identity
from training.data.targets import score_cp, wdl_target

#: Positions held in memory at a time while a part is prepared.
CHUNK = 1 << 16


class GameRows:
    """Rows of games collected column by column (lists), flushed to a PartWriter every CHUNK positions."""

    #: The lists of a chunk: the records' (planes: 17 bitboards a position for planes18, else packed planes;
    #: black: whether Black is to move; move: the policy slot of the move played; score: the eval in centipawns)
    #: and SEEN's.
    RECORD_LISTS = ("key", "planes", "black", "rule50", "ply", "game", "move", "score", "wdl", "result")

    def __init__(self, writer: PartWriter, encoding: Encoding) -> None:
        self.writer, self.encoding = writer, encoding
        self.lists: dict[str, list] = {name: [] for name in self.RECORD_LISTS + tuple(SEEN)}

    def add_game(self, game: chess.pgn.Game, skip_plies: int, movers: frozenset[chess.Color]) -> int:
        """Add the game's records (see the module's docstring) of the moves of ``movers`` and every position it
        passes through; returns the records added. A game that cannot be encoded adds nothing and raises
        ValueError."""
        lists = self.lists
        records_before, seen_before = len(lists["key"]), len(lists["seen_key"])
        try:
            self._add_moves(game, skip_plies, movers)
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

    def _add_moves(self, game: chess.pgn.Game, skip_plies: int, movers: frozenset[chess.Color]) -> None:
        lists = self.lists
        result_white = RESULT_WHITE[game.headers.get("Result", "*")]
        nodes = list(game.mainline())
        evals = [node.eval() for node in nodes]
        annotated = any(score is not None for score in evals)
        board = game.board()
        for index, (node, score) in enumerate(zip(nodes, evals)):
            key = chess.polyglot.zobrist_hash(board)
            lists["seen_key"].append(key)
            if board.turn in movers and (score is not None or (not annotated and index >= skip_plies)):
                turn = board.turn
                lists["key"].append(key)
                if self.encoding.history == 1:
                    lists["planes"].append(self.encoding.bitboards(board))
                else:
                    lists["planes"].append(self.encoding.packed(board))
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
                    lists["score"].append(score_cp(mover))
                    lists["wdl"].append(wdl_target(mover, board.ply()))
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
        movers = player_colours(game.headers, settings.get("player", ""))
        if not movers:
            stats.skipped["games without the player"] += 1
            continue
        try:
            stats.positions += rows.add_game(game, settings["skip_plies"], movers)
        except ValueError as error:
            stats.error("games that cannot be encoded", f"{path.name} game {index + 1}: {error}")



def _read_multipv(path: Path, writer: PartWriter, settings: dict, stats: ReadStats, tick: Callable[[], None]) -> None:
    encoding = get_encoding(settings["encoding"])
    records: list[Record] = []

    def flush() -> None:
        arrays = records_to_arrays(records, encoding)
        writer.add({name: arrays[name] for name in TRAINING_COLUMNS})
        records.clear()

    with open_text(path) as handle:
        for record in labelled_records(handle, path.name, encoding, settings["temperature"], stats, tick):
            records.append(record)
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


@dataclass
class PartReport:
    """What became of one input file: ``status`` is "reused", "prepared", "rebuilt (why)" or "same content as X"."""

    source: Path
    key: str
    status: str
    manifest: dict = field(default_factory=dict)



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

