"""The one-hot sample format of `prepare`: a directory of .npy arrays plus meta.json.

Training reads it beside label shards (:func:`shard_arrays` turns it into a
one-entry policy and an engine-model W/D/L target).

Board planes are stored bit-packed (one bit per square), so an epoch over
millions of positions reads a few hundred megabytes of memory-mappable arrays
instead of re-parsing PGN.

Arrays (N samples): ``planes`` uint8 (N, C*8) bit-packed binary planes
(bitorder little), ``rule50`` uint8, ``move`` int16 policy index, ``result``
int8 (+1/0/-1 for the side to move), ``eval`` float32 expected score or NaN,
``game`` int32 game number (for a validation split by game).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import chess
import chess.engine
import chess.polyglot
import numpy as np

from evaluators.encoding import Encoding, get_encoding
from evaluators.moves import move_to_index
from hackmate_core.score import q_to_cp
from training.data.pgn import Position, ReadStats, iter_epd, iter_positions
from training.data.targets import UNKNOWN_PLY, wdl_target
from training.processes import process_pool

ARRAYS = ("planes", "rule50", "move", "result", "eval", "game")


@dataclass
class Samples:
    planes: np.ndarray
    rule50: np.ndarray
    move: np.ndarray
    result: np.ndarray
    eval: np.ndarray
    game: np.ndarray
    keys: np.ndarray  # Zobrist keys, for deduplication (not saved)

    def __len__(self) -> int:
        return len(self.move)

    @classmethod
    def concatenate(cls, parts: list["Samples"]) -> "Samples":
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in ARRAYS + ("keys",)))

    def select(self, index: np.ndarray) -> "Samples":
        return Samples(*(getattr(self, name)[index] for name in ARRAYS + ("keys",)))


def encode_positions(positions: Iterable[Position], encoding: Encoding, game_offset: int = 0) -> Samples:
    planes, rule50, moves, results, evals, games, keys = [], [], [], [], [], [], []
    for pos in positions:
        planes.append(encoding.packed(pos.board))
        rule50.append(min(255, pos.board.halfmove_clock))
        moves.append(move_to_index(pos.move, pos.board.turn))
        results.append(pos.result)
        evals.append(np.nan if pos.eval_q is None else pos.eval_q)
        games.append(pos.game + game_offset)
        keys.append(chess.polyglot.zobrist_hash(pos.board))
    width = encoding.binary_planes * 8
    return Samples(np.array(planes, dtype=np.uint8).reshape(-1, width), np.array(rule50, dtype=np.uint8),
                   np.array(moves, dtype=np.int16), np.array(results, dtype=np.int8),
                   np.array(evals, dtype=np.float32), np.array(games, dtype=np.int32),
                   np.array(keys, dtype=np.uint64))


def _read_part(args: tuple) -> tuple[Samples, ReadStats]:
    path, encoding_name, filters, worker, workers, game_offset = args
    stats = ReadStats()
    encoding = get_encoding(encoding_name)
    if Path(path).suffix.lower() == ".epd":
        positions = iter_epd(Path(path), stats) if worker == 0 else iter([])
    else:
        positions = iter_positions(Path(path), stats, worker=worker, workers=workers, **filters)
    return encode_positions(positions, encoding, game_offset), stats


def build_samples(paths: list[Path], encoding_name: str, filters: dict, workers: int = 1,
                  dedupe: bool = True, progress: bool = True) -> tuple[Samples, ReadStats]:
    """Read every file in parallel (games split across workers), deduplicating positions."""
    jobs = [(str(path), encoding_name, filters, w, workers, 10_000_000 * file_number)
            for file_number, path in enumerate(paths) for w in range(workers)]
    stats = ReadStats()
    parts = []
    with process_pool(workers) as pool:
        results = pool.map(_read_part, jobs)
        if progress:
            from tqdm import tqdm
            results = tqdm(results, total=len(jobs), desc="reading", unit="part")
        for samples, part_stats in results:
            parts.append(samples)
            stats.merge(part_stats)
    samples = Samples.concatenate(parts)
    if dedupe and len(samples):
        _, first = np.unique(samples.keys, return_index=True)
        duplicates = len(samples) - len(first)
        if duplicates:
            stats.skipped["duplicate positions"] += duplicates
        samples = samples.select(np.sort(first))
    return samples, stats


def save(samples: Samples, directory: Path, meta: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in ARRAYS:
        np.save(directory / f"{name}.npy", getattr(samples, name))
    (directory / "meta.json").write_text(json.dumps({**meta, "samples": len(samples)}, indent=2))


def load(directory: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays (memory-mapped) and metadata of a saved dataset."""
    meta_path = directory / "meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{directory} is not a dataset (no meta.json); create it with `prepare`")
    meta = json.loads(meta_path.read_text())
    return {name: np.load(directory / f"{name}.npy", mmap_mode="r") for name in ARRAYS}, meta


def shard_arrays(directory: Path) -> tuple[dict[str, np.ndarray], dict]:
    """A saved dataset as shard arrays (training.data.shards; no FEN, no key, no ply) and its metadata.

    The policy is the played move with probability 1; the W/D/L target comes from
    the stored eval through the same model as engine labels (ply unknown: UNKNOWN_PLY),
    NaN where there was no eval.
    """
    arrays, meta = load(directory)
    n = len(arrays["move"])
    evals = np.asarray(arrays["eval"])
    wdl = np.full((n, 3), np.nan, dtype=np.float32)
    known = ~np.isnan(evals)
    values, inverse = np.unique(evals[known], return_inverse=True)
    table = np.array([wdl_target(chess.engine.Cp(q_to_cp(float(q))), UNKNOWN_PLY) for q in values],
                     dtype=np.float32).reshape(-1, 3)
    wdl[known] = table[inverse]
    out = {"key": np.zeros(n, dtype=np.uint64), "planes": np.asarray(arrays["planes"]),
           "rule50": np.asarray(arrays["rule50"]), "ply": np.zeros(n, dtype=np.int16),
           "game": np.asarray(arrays["game"]).astype(np.int64), "policy_offset": np.arange(n + 1, dtype=np.int64),
           "policy_index": np.asarray(arrays["move"]).astype(np.int16), "policy_prob": np.ones(n, dtype=np.float32),
           "policy_score": np.zeros(n, dtype=np.int32), "wdl": wdl, "result": np.asarray(arrays["result"])}
    return out, meta
