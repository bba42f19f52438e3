"""Labelling positions with a UCI engine's MultiPV search, into shards (training.data.shards), and how often the
labels of a setting name a test set's best moves (:func:`evaluate_engine`: the ceiling of a network trained on them).

The pipeline: read positions from PGN/EPD files (plain or compressed) in a fixed
order, select them deterministically (``--per-game``: a seeded sample of each
game; ``--min-ply``; ``--max-positions``), drop every position already selected,
found in an ``--exclude`` dataset or already labelled in the output directory
(Zobrist keys ignore move counters), and label the rest in work units of a few
positions. Each work unit runs in a worker with its own engine (one thread,
16 MB hash, ``ucinewgame`` before every position, the position given as a FEN
without history), so a label depends only on the position, the engine and its
node budget: results come back in order and the shards are byte-identical
whatever the number of workers, locally or as Ray tasks (training.uci.workers). A
rerun of the same command skips what is labelled and finishes the rest. A unit
lost with its worker (on Ray, after Ray's retries) is left out while the rest
are written; the run then ends saying so, and a rerun labels what was lost.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import numpy as np

from evaluators.encoding import get_encoding
from evaluators.moves import move_to_index
from hackmate_core.epd import BadLine, read_epd
from hackmate_core.textfiles import READ_ERRORS as DAMAGED_FILE, base_suffix, create_text
from training.configs import LabelConfig
from training.data.pgn import DataError, ReadStats, game_id, iter_games, open_text
from training.data.shards import ShardWriter, best_moves, dir_keys, excluded_keys, load_dir
from training.data.targets import WDL_MODEL, engine_label, side_result
from training.engines import EngineFailure, start_engine
from training.uci.workers import WorkLost, drop_worker_engine, in_order, worker_engine, workers_for

#: Positions per work unit: small enough for an even spread and a fine-grained resume.
UNIT_SIZE = 16
#: Engine settings that make labels reproducible.
ENGINE_OPTIONS = {"Threads": 1, "Hash": 16}
#: Exceptions of a source file that is unreadable, corrupt or truncated.
READ_ERRORS = (*DAMAGED_FILE, ValueError)


@dataclass
class Candidate:
    """A position selected for labelling, with what its label keeps besides the engine's lines."""

    board: chess.Board  # with enough move stack for history encodings
    result: int
    game: int
    source: str


@dataclass
class Summary:
    """What a run read, skipped and labelled: printed at the end and stored in meta.json."""

    read: dict[str, ReadStats] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    selected: int = 0
    labelled: int = 0
    seconds: float = 0.0
    stopped: str = ""

    def as_dict(self) -> dict:
        return {"read": {name: {"games": s.games, "positions": s.positions, "skipped": dict(s.skipped),
                                "errors": s.errors} for name, s in self.read.items()},
                "selected": self.selected, "labelled now": self.labelled, "skipped": dict(self.skipped),
                "seconds": round(self.seconds, 1),
                "positions per second": round(self.labelled / self.seconds, 2) if self.seconds else 0.0,
                "stopped": self.stopped or None}

    def text(self, written_to: Optional[Path] = None) -> str:
        """The summary; ``written_to``: the EPD file of a ``--select-only`` run, which labels nothing."""
        lines = [f"{name}: {stats.summary()}" for name, stats in self.read.items()]
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        done = (f"written to {written_to}" if written_to else f"labelled {self.labelled} now in "
                f"{self.seconds:.0f} s ({self.labelled / max(self.seconds, 1e-9):.1f}/s)")
        lines.append(f"selected {self.selected} positions; {done}; skipped: {skipped}")
        if self.stopped:
            lines.append(f"stopped early: {self.stopped}")
        return "\n".join(lines)


# --- reading and selecting -------------------------------------------------------------------------------

def _kind(path: Path) -> str:
    suffix = base_suffix(path)
    if suffix in (".pgn", ".epd"):
        return suffix[1:]
    raise DataError(f"{path}: not a PGN or EPD file (.pgn/.epd, optionally .gz/.bz2/.xz)")


def check_readable(path: Path) -> None:
    """Fail early, naming the file, if a source cannot be opened or decompressed at all."""
    _kind(path)
    try:
        with open_text(path) as handle:
            handle.read(4096)
    except READ_ERRORS as error:
        raise DataError(f"{path}: unreadable ({error})") from None


def _games(path: Path, stats: ReadStats) -> Iterator[tuple[int, list[chess.Board], int]]:
    """(game id, positions before each move and the final one, result string) of every PGN game."""
    for index, game in iter_games(path, stats):
        stats.games += 1
        board = game.board()
        boards = []
        for move in game.mainline_moves():
            boards.append(board.copy(stack=8))
            board.push(move)
        boards.append(board.copy(stack=8))
        yield game_id(path.name, index), boards, game.headers.get("Result", "*")


def _epd_positions(path: Path, stats: ReadStats) -> Iterator[tuple[int, list[chess.Board], str]]:
    with open_text(path) as handle:
        for entry in read_epd(handle):
            if isinstance(entry, BadLine):
                stats.error("bad EPD lines", f"{path.name} {entry}")
            else:
                yield -1, [entry.board], "*"


def select_positions(config: LabelConfig, summary: Summary, excluded: set[int]) -> Iterator[Candidate]:
    """The positions to label, in a fixed order, each new to this selection and not excluded."""
    seen: set[int] = set()
    for path in config.sources:
        stats = summary.read.setdefault(path.name, ReadStats())
        reader = _games if _kind(path) == "pgn" else _epd_positions
        try:
            for game, boards, result in reader(path, stats):
                eligible = []
                for board in boards:
                    if board.ply() < config.min_ply:
                        continue
                    if not any(board.generate_legal_moves()):
                        summary.skipped["positions without a legal move"] += 1
                        continue
                    key = chess.polyglot.zobrist_hash(board)
                    if key in excluded:
                        summary.skipped["positions in an --exclude dataset"] += 1
                    elif key in seen:
                        summary.skipped["duplicate positions in the sources"] += 1
                    else:
                        seen.add(key)
                        eligible.append(board)
                if config.per_game and len(eligible) > config.per_game:
                    rng = random.Random(f"{config.seed}:{game}")
                    keep = set(rng.sample(range(len(eligible)), config.per_game))
                    summary.skipped["positions not sampled (--per-game)"] += len(eligible) - len(keep)
                    eligible = [b for i, b in enumerate(eligible) if i in keep]
                for board in eligible:
                    if config.max_positions and summary.selected >= config.max_positions:
                        return
                    summary.selected += 1
                    stats.positions += 1
                    yield Candidate(board, side_result(result, board.turn), game, path.name)
        except READ_ERRORS as error:
            raise DataError(f"{path}: unreadable or truncated after {stats.games} games ({error})") from None


def write_selection(config: LabelConfig, path: Path) -> Summary:
    """Write the positions ``label`` would select to ``path`` as EPD (compressed by its suffix); label nothing.

    Selecting means reading every game in one process, which on a many-core machine can starve the
    labelling workers: select beforehand and carry the compact file. Move counters are kept (hmvc and
    fmvn operations; the encoding's fifty-move plane needs them); game results are not.
    """
    for source in config.sources:
        check_readable(source)
    excluded = excluded_keys(config.exclude)
    summary = Summary()
    temporary = path.with_name(path.name + ".part")
    with create_text(temporary, path.suffix) as handle:
        for candidate in select_positions(config, summary, excluded):
            board = candidate.board
            handle.write(board.epd(hmvc=board.halfmove_clock, fmvn=board.fullmove_number) + "\n")
    temporary.replace(path)
    return summary


# --- workers ---------------------------------------------------------------------------------------------

def open_engine(command: str) -> chess.engine.SimpleEngine:
    """A labelling engine, with the settings that make labels reproducible where it has them."""
    return start_engine(command, ENGINE_OPTIONS, known_only=True)


def analyse(engine: chess.engine.SimpleEngine, fen: str, nodes: int, multipv: int
            ) -> list[tuple[str, Optional[int], Optional[int]]]:
    """MultiPV lines ``[(uci, centipawns, mate), ...]`` of one position, from a cleared hash."""
    board = chess.Board(fen)
    infos = engine.analyse(board, chess.engine.Limit(nodes=nodes), multipv=multipv, game=object(),
                           info=chess.engine.INFO_SCORE | chess.engine.INFO_PV)
    lines = []
    for info in infos:
        if not info.get("pv") or "score" not in info:
            continue
        score = info["score"].relative
        lines.append((info["pv"][0].uci(), score.score(), score.mate()))
    if not lines:
        raise EngineFailure(f"the engine returned no move for {fen}")
    return lines


def label_unit(unit: tuple[str, int, int, list[str]]) -> list[list[tuple[str, Optional[int], Optional[int]]]]:
    """One work unit, in a worker with its own engine: (engine command, nodes, MultiPV, FENs) -> MultiPV lines per
    FEN, in order."""
    command, nodes, multipv, fens = unit
    engine = worker_engine(command, ENGINE_OPTIONS, known_only=True)
    try:
        return [analyse(engine, fen, nodes, multipv) for fen in fens]
    except chess.engine.EngineError as error:
        drop_worker_engine(engine)
        raise EngineFailure(f"the engine {command!r} failed: {error!r}") from None


# --- the run ---------------------------------------------------------------------------------------------

def labeller_settings(config: LabelConfig, engine_name: str) -> dict:
    """What the labels depend on, stored with the shards: a rerun into the directory with others is refused."""
    return {"engine": engine_name, "nodes": config.nodes, "multipv": config.multipv,
            "temperature": config.temperature, "wdl_model": WDL_MODEL, "hash_mb": ENGINE_OPTIONS["Hash"],
            "threads": ENGINE_OPTIONS["Threads"], "hash_cleared_per_position": True}


def label(config: LabelConfig, command_line: str = "", progress: bool = True,
          log: Callable[[str], None] = print) -> Summary:
    """Label the configured sources into ``config.out``; returns the run's summary (also in meta.json)."""
    for path in config.sources:
        check_readable(path)
    encoding = get_encoding(config.encoding)
    probe = open_engine(config.engine)
    engine_name = probe.id.get("name", config.engine)
    probe.quit()
    writer = ShardWriter(config.out, encoding, labeller_settings(config, engine_name), config.shard_size)
    done = dir_keys(config.out)
    excluded = excluded_keys(config.exclude)
    summary = Summary()
    started = time.monotonic()
    deadline = started + config.max_minutes * 60 if config.max_minutes else None

    source_errors: list[DataError] = []

    def units() -> Iterator[tuple[tuple, list[Candidate]]]:
        """Work units of new positions; a source that turns out unreadable ends them (the rest is still labelled)."""
        batch: list[Candidate] = []
        try:
            for candidate in select_positions(config, summary, excluded):
                if chess.polyglot.zobrist_hash(candidate.board) in done:
                    summary.skipped["already labelled in the output directory"] += 1
                    continue
                batch.append(candidate)
                if len(batch) == UNIT_SIZE:
                    yield (config.engine, config.nodes, config.multipv, [c.board.fen() for c in batch]), batch
                    batch = []
        except DataError as error:
            source_errors.append(error)
            summary.stopped = str(error)
        if batch:
            yield (config.engine, config.nodes, config.multipv, [c.board.fen() for c in batch]), batch

    workers = workers_for(config.ray, config.workers)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(desc="labelling", unit="pos", total=config.max_positions or None, smoothing=0.05)
    interrupted = False
    lost: list[tuple[int, WorkLost]] = []
    try:
        for batch, outcome in in_order(workers, label_unit, units()):
            if isinstance(outcome, WorkLost):
                lost.append((len(batch), outcome))
                continue
            for candidate, lines in zip(batch, outcome):
                record = engine_label(candidate.board, encoding, lines, config.temperature, candidate.result,
                                      candidate.game)
                writer.add(record, candidate.source)
            summary.labelled += len(batch)
            if bar is not None:
                bar.update(len(batch))
            if deadline is not None and time.monotonic() > deadline:
                summary.stopped = f"--max-minutes {config.max_minutes:g}: run the same command again to continue"
                break
        if lost:
            summary.stopped = (f"positions lost with their workers: {sum(n for n, _ in lost)} ({lost[0][1]}): "
                               "run the same command again to label them")
    except KeyboardInterrupt:
        summary.stopped = "interrupted: run the same command again to continue"
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
        workers.close()
        summary.seconds = time.monotonic() - started
        writer.record_run({"command": command_line, "sources": [str(p) for p in config.sources],
                           "settings": json.loads(json.dumps({k: v for k, v in asdict(config).items()
                                                              if k not in ("sources", "out")}, default=str)),
                           "summary": summary.as_dict()})
    log(summary.text())
    if source_errors:
        raise source_errors[0]
    if interrupted:
        raise KeyboardInterrupt
    if lost:
        raise WorkLost(summary.stopped)
    return summary


def selfplay_source(out: Path, command: str, games: int, nodes: int, workers: int, seed: int,
                    random_plies: int, book: Optional[str], ray: Optional[str] = None) -> Path:
    """Fresh self-play games as a PGN source in ``out`` (training.uci.selfplay; resumable), played where the
    labelling runs (``ray``: its Ray cluster)."""
    from training.uci.selfplay import SelfPlayOptions, selfplay
    out.mkdir(parents=True, exist_ok=True)
    pgn = out / f"selfplay-s{seed}-g{games}-n{nodes}.pgn"
    unfinished = any(out.glob(pgn.name + ".part*"))
    if not pgn.exists() or unfinished:
        selfplay(pgn, command, nodes, games, workers,
                 options=SelfPlayOptions(random_plies=random_plies, seed=seed, book=book), ray=ray)
    return pgn


def evaluate_engine(command: str, nodes: int, multipv: int, test: Path, positions: int = 0, seed: int = 0,
                    progress: bool = True) -> dict:
    """Top-1 / top-3 agreement of a UCI engine's MultiPV lines with the test set's best moves.

    The engine searches each position as the labeller does (one thread, a cleared hash, ``nodes``,
    ``multipv``), so this measures how often labels made at that setting name the test set's move:
    the most a network trained on them can be expected to reach. ``positions`` > 0 samples that
    many test positions (seeded); 0 takes them all.
    """
    from tqdm import tqdm
    arrays, meta = load_dir(test)
    best = best_moves(arrays)
    rows = np.arange(len(best))
    if 0 < positions < len(rows):
        rows = np.sort(np.random.default_rng(seed).choice(rows, positions, replace=False))
    engine = open_engine(command)
    top1 = top3 = 0
    try:
        for row in tqdm(rows, desc="positions", unit="pos", disable=not progress):
            fen = arrays["fen"][row].decode()
            turn = chess.Board(fen).turn
            lines = analyse(engine, fen, nodes, multipv)
            ranked = [move_to_index(chess.Move.from_uci(uci), turn) for uci, _, _ in lines]
            top1 += ranked[0] == best[row]
            top3 += int(best[row]) in ranked[:3]
    finally:
        engine.quit()
    n = max(len(rows), 1)
    return {"engine": command, "nodes": nodes, "multipv": multipv, "test": str(test), "positions": len(rows),
            "labeller": meta.get("labeller"), "top1": top1 / n, "top3": top3 / n}
