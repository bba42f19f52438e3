"""Label shards and the engine labeller: targets, round trips, refusals, dedupe, resume, repeatability, Ray."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import chess
import numpy as np
import pytest
from click.testing import CliRunner

from evaluators.encoding import get_encoding
from evaluators.moves import move_to_index
from tests.conftest import FIXTURES, ROOT, needs_stockfish, stockfish_path
from training.configs import LabelConfig
from training.data import multipv, shards, targets
from training.data.pgn import DataError, ReadStats
from training.uci.label import label

GAMES = FIXTURES / "games.pgn"
PLANES18 = get_encoding("planes18")


def labelled(tmp_path: Path, name: str = "labels", **overrides) -> LabelConfig:
    """Twelve positions (one per fixture game, from ply 8), at a tiny node budget, in shards of four."""
    settings = dict(sources=[GAMES], out=tmp_path / name, engine=stockfish_path(), nodes=60, multipv=3, workers=2,
                    per_game=1, min_ply=8, shard_size=4)
    return LabelConfig(**{**settings, **overrides})


def shard_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("shard-*.npz"))}


def rows_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    return np.add.reduceat(values, offsets[:-1])


def test_soft_policy_and_wdl_targets():
    board = chess.Board()
    record = targets.engine_label(board, PLANES18, [("e2e4", 30, None), ("d2d4", 25, None), ("g1f3", -10, None)],
                                 60.0, 1, 7)
    assert record.policy_prob.sum() == pytest.approx(1.0, abs=1e-6)
    assert record.policy_prob.argmax() == 0 and record.policy_prob[1] / record.policy_prob[0] == \
        pytest.approx(np.exp(-5 / 60), rel=1e-5)
    assert record.policy_index[0] == move_to_index(chess.Move.from_uci("e2e4"), chess.WHITE)
    assert record.wdl.sum() == pytest.approx(1.0) and record.wdl[1] > 0.5  # +30 cp at the start: mostly drawn
    mate = targets.engine_label(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"), PLANES18,
                               [("a1a8", None, 1), ("a1a7", 900, None), ("g1f1", None, -3)], 60.0, -128, -1)
    assert mate.policy_score.tolist() == [31999, 900, -31997]
    assert mate.policy_prob[0] == pytest.approx(1.0) and mate.wdl.tolist() == [1.0, 0.0, 0.0]
    two_rows = targets.soft_policy(np.array([100, 0, 5, 5, 5]), np.array([0, 2, 5]), 50.0)
    np.testing.assert_allclose(two_rows, [1 / (1 + np.exp(-2)), 1 / (1 + np.exp(2)), 1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
    assert targets.side_result("0-1", chess.BLACK) == 1 and targets.side_result("*", chess.WHITE) == -128


def synthetic_records(count: int, start: int = 0) -> list[shards.Record]:
    """Positions of the fixture games labelled with made-up scores of three legal moves (no engine needed)."""
    from training.data.pgn import iter_positions
    records = []
    for position in list(iter_positions(GAMES, ReadStats()))[start:start + count]:
        moves = sorted(position.board.legal_moves, key=lambda m: m.uci())[:3]
        lines = [(m.uci(), cp, None) for m, cp in zip(moves, (40, 0, -300))]
        records.append(targets.engine_label(position.board, PLANES18, lines, 60.0, position.result, position.game))
    return records


def write_synthetic(directory: Path, count: int, start: int = 0, shard_size: int = 4096) -> list[shards.Record]:
    records = synthetic_records(count, start)
    writer = shards.ShardWriter(directory, PLANES18, {"engine": "made-up scores"}, shard_size)
    for record in records:
        writer.add(record, "games.pgn")
    writer.record_run({"test": True})
    return records


def test_shard_round_trip_and_selection(tmp_path):
    records = write_synthetic(tmp_path / "ds", 5, shard_size=2)
    meta = shards.read_meta(tmp_path / "ds")
    assert [e["positions"] for e in meta["shards"]] == [2, 2, 1]
    arrays, _ = shards.load_dir(tmp_path / "ds")
    expected = shards.records_to_arrays(records, PLANES18)
    for name in shards.ARRAYS:
        np.testing.assert_array_equal(arrays[name], expected[name], err_msg=name)
    picked = shards.select(arrays, np.array([4, 0]))
    np.testing.assert_array_equal(picked["policy_offset"], [0, 3, 6])
    np.testing.assert_array_equal(picked["policy_index"], np.concatenate([records[4].policy_index,
                                                                          records[0].policy_index]))
    assert shards.dir_keys(tmp_path / "ds") == {r.key for r in records}
    np.testing.assert_array_equal(shards.best_moves(arrays), [r.policy_index[0] for r in records])


def test_select_only_writes_what_label_would_select(tmp_path):
    from training.__main__ import cli
    from training.uci.label import Summary, select_positions
    write_synthetic(tmp_path / "test", 3)
    arguments = ["--per-game", "3", "--min-ply", "8", "--seed", "5", "--exclude", str(tmp_path / "test")]
    result = CliRunner().invoke(cli, ["label", str(FIXTURES / "games.pgn"), "--select-only",
                                      str(tmp_path / "sel.epd.xz"), *arguments])
    assert result.exit_code == 0, result.output
    config = LabelConfig(sources=[FIXTURES / "games.pgn"], out=tmp_path, per_game=3, min_ply=8, seed=5)
    keys = shards.dir_keys(tmp_path / "test")
    expected = [c.board for c in select_positions(config, Summary(), keys)]
    read_back = [c.board for c in select_positions(LabelConfig(sources=[tmp_path / "sel.epd.xz"], out=tmp_path),
                                                   Summary(), set())]
    assert len(expected) == 36 and f"selected 36 positions; written to {tmp_path / 'sel.epd.xz'}" in result.output
    assert [b.fen() for b in read_back] == [b.fen() for b in expected]  # move counters kept
    assert not (tmp_path / "sel.epd.xz.part").exists()


def test_foreign_corrupt_and_half_written_shards_are_refused(tmp_path):
    directory = tmp_path / "ds"
    write_synthetic(directory, 6, shard_size=3)
    with pytest.raises(shards.ShardError, match="encoded as 'planes18', not 'lc0-112'"):
        shards.load_dir(directory, "lc0-112")
    meta = json.loads((directory / "meta.json").read_text())
    (directory / "meta.json").write_text(json.dumps({**meta, "encoding": "lc0-112"}))
    with pytest.raises(shards.ShardError, match=r"shard-00000.npz: array planes .* \(another encoding\?\)"):
        shards.load_dir(directory)
    (directory / "meta.json").write_text(json.dumps({**meta, "version": 99}))
    with pytest.raises(shards.ShardError, match="version 99"):
        shards.load_dir(directory)
    (directory / "meta.json").write_text(json.dumps(meta))
    second = directory / "shard-00001.npz"
    second.write_bytes(second.read_bytes()[:300])
    with pytest.raises(shards.ShardError, match="shard-00001.npz: corrupt or truncated"):
        shards.load_dir(directory)
    np.savez(directory / "shard-00001.npz", something=np.zeros(3))
    with pytest.raises(shards.ShardError, match="shard-00001.npz: not a complete shard"):
        shards.load_dir(directory)
    # a writer continuing the directory removes what an interrupted writer left behind, and keeps its settings
    (directory / "shard-00002.npz.tmp").write_bytes(b"half")
    shards.ShardWriter(directory, PLANES18, {"engine": "made-up scores"})
    assert not (directory / "shard-00002.npz.tmp").exists()
    with pytest.raises(shards.ShardError, match="made with engine='made-up scores', not engine='another engine'"):
        shards.ShardWriter(directory, PLANES18, {"engine": "another engine"})


def test_multipv_file_conversion(tmp_path):
    source = tmp_path / "labels.jsonl.gz"
    lines = [{"fen": chess.STARTING_FEN, "pv": [["e2e4", 35, None], ["d2d4", 30, None]], "nodes": 25000,
              "result": "1-0", "ply": 0},
             {"fen": "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1", "pv": [["g8f8", None, -1]], "result": "1-0"},
             {"fen": "not a position", "pv": []}]
    with gzip.open(source, "wt") as handle:
        handle.write("\n".join(json.dumps(line) for line in lines) + "\n")
    stats = ReadStats()
    arrays = multipv.from_jsonl(source, PLANES18, 60.0, stats, progress=False)
    assert len(arrays["key"]) == 2 and stats.skipped["bad labelled lines"] == 1
    assert any("labels.jsonl.gz line 3" in error for error in stats.errors)
    np.testing.assert_array_equal(arrays["result"], [1, -1])  # Black to move in a game White won
    assert arrays["policy_score"].tolist() == [35, 30, -31999] and arrays["wdl"][1].tolist() == [0.0, 0.0, 1.0]
    from training.__main__ import cli
    result = CliRunner().invoke(cli, ["import-labels", str(source), "--out", str(tmp_path / "shards")])
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(shards.load_dir(tmp_path / "shards")[0]["policy_prob"], arrays["policy_prob"])
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(gzip.compress(("\n".join(json.dumps(lines[0]) for _ in range(2000))).encode())[:-50])
    with pytest.raises(DataError, match="cut.jsonl.gz: unreadable or truncated"):
        multipv.from_jsonl(truncated, PLANES18, progress=False)


@needs_stockfish
def test_labels_dedupe_resume_and_repeat(tmp_path):
    summary = label(labelled(tmp_path), progress=False)
    assert summary.labelled == 12
    directory = tmp_path / "labels"
    arrays, meta = shards.load_dir(directory)
    offsets = arrays["policy_offset"]
    np.testing.assert_allclose(rows_sum(arrays["policy_prob"], offsets), 1.0, rtol=1e-5)
    firsts = arrays["policy_prob"][offsets[:-1]]
    assert (firsts >= np.maximum.reduceat(arrays["policy_prob"], offsets[:-1])).all()  # the engine's best move
    np.testing.assert_allclose(arrays["wdl"].sum(1), 1.0, rtol=1e-5)
    assert set(arrays["result"].tolist()) <= {-1, 0, 1} and (arrays["ply"] >= 8).all() and (arrays["game"] >= 0).all()
    assert meta["labeller"]["nodes"] == 60 and meta["runs"][0]["summary"]["labelled now"] == 12
    original = shard_bytes(directory)
    assert len(original) == 3

    again = label(labelled(tmp_path), progress=False)  # the same command again: nothing new
    assert again.labelled == 0 and again.skipped["already labelled in the output directory"] == 12

    # a run killed after two shards (the third never listed, a temporary file left): the rerun labels only the rest
    meta = json.loads((directory / "meta.json").read_text())
    meta["shards"] = meta["shards"][:2]
    (directory / "meta.json").write_text(json.dumps(meta))
    (directory / "shard-00002.npz").rename(directory / "shard-00002.npz.tmp")
    resumed = label(labelled(tmp_path, workers=1), progress=False)
    assert resumed.labelled == 4 and resumed.skipped["already labelled in the output directory"] == 8
    assert shard_bytes(directory) == original

    label(labelled(tmp_path, "fresh", workers=1), progress=False)  # another worker count, byte-identical shards
    assert shard_bytes(tmp_path / "fresh") == original

    other = label(labelled(tmp_path, "other", per_game=2, exclude=[directory]), progress=False)
    assert other.skipped["positions in an --exclude dataset"] == 12
    assert not shards.dir_keys(tmp_path / "other") & shards.dir_keys(directory)


@needs_stockfish
def test_bad_sources_are_reported_by_name(tmp_path):
    from training.__main__ import cli
    result = CliRunner().invoke(cli, ["label", str(GAMES), "--out", str(tmp_path / "x"),
                                      "--engine", "no-such-engine-here"])
    assert result.exit_code != 0 and "engine not found: 'no-such-engine-here'" in result.output
    truncated = tmp_path / "games.pgn.gz"
    truncated.write_bytes(gzip.compress(GAMES.read_bytes() * 3)[:-200])
    result = CliRunner().invoke(cli, ["label", str(truncated), "--out", str(tmp_path / "x"), "--nodes", "30",
                                      "--multipv", "1", "--workers", "1", "--per-game", "1",
                                      "--engine", stockfish_path()])
    assert result.exit_code != 0 and "games.pgn.gz: unreadable or truncated after" in result.output
    assert shards.read_meta(tmp_path / "x")["runs"][-1]["summary"]["labelled now"] > 0  # complete labels kept
    broken = tmp_path / "broken.pgn"
    broken.write_text('[Event "bad"]\n[Result "1-0"]\n\n1. e4 e5 2. Ke3 Ke7 3. Kxe5 1-0\n\n' + GAMES.read_text())
    summary = label(labelled(tmp_path, "y", sources=[broken], max_positions=2), progress=False)
    assert summary.read["broken.pgn"].skipped["games with illegal or unreadable moves"] == 1
    assert "broken.pgn game 1" in summary.text()
    stored = shards.read_meta(tmp_path / "y")["runs"][-1]["summary"]["read"]["broken.pgn"]
    assert stored["skipped"] == {"games with illegal or unreadable moves": 1}


@needs_stockfish
def test_worker_engines_close_quietly(tmp_path):
    """Each worker's engine is closed once when the pool ends (closing it twice printed tracebacks)."""
    result = subprocess.run([sys.executable, "-m", "training", "label", str(GAMES), "--out", str(tmp_path),
                             "--engine", stockfish_path(), "--nodes", "30", "--multipv", "1", "--workers", "2",
                             "--per-game", "1", "--max-positions", "4"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "labelled 4 now" in result.stdout + result.stderr


@needs_stockfish
def test_label_fresh_selfplay_games(tmp_path):
    from training.__main__ import cli
    result = CliRunner().invoke(cli, ["label", "--selfplay", "2", "--selfplay-nodes", "20", "--out", str(tmp_path),
                                      "--engine", stockfish_path(), "--nodes", "30", "--multipv", "2",
                                      "--workers", "1", "--per-game", "2", "--min-ply", "8"])
    assert result.exit_code == 0, result.output
    meta = shards.read_meta(tmp_path)
    assert meta["shards"][0]["sources"] == ["selfplay-s1-g2-n20.pgn"] and meta["shards"][0]["positions"] == 4


@needs_stockfish
def test_ray_tasks_give_the_same_labels(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
    label(labelled(tmp_path, "local", max_positions=4), progress=False)
    label(labelled(tmp_path, "ray", max_positions=4, workers=1, ray="local"), progress=False)
    assert shard_bytes(tmp_path / "ray") == shard_bytes(tmp_path / "local") and shard_bytes(tmp_path / "ray")


@needs_stockfish
def test_label_speed_prints_and_writes_its_table(tmp_path):
    from training.__main__ import label_speed_command as label_speed
    out = tmp_path / "speed.json"
    result = CliRunner().invoke(label_speed, [str(GAMES), "--engine", stockfish_path(), "--positions", "3",
                                              "--nodes", "50", "--multipv", "1", "--multipv", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = json.loads(out.read_text())
    assert table["engine"].startswith("Stockfish")
    assert [(row["nodes"], row["multipv"], row["positions"]) for row in table["rows"]] == [(50, 1, 3), (50, 2, 3)]
    assert "| 50 | 2 |" in result.output


@needs_stockfish
def test_engine_agreement_with_its_own_labels_is_complete(tmp_path):
    """The labeller's setting, measured against its own labels, names every best move (labels repeat)."""
    from training.uci.label import evaluate_engine
    label(labelled(tmp_path), progress=False)
    figures = evaluate_engine(stockfish_path(), 60, 3, tmp_path / "labels", positions=0, progress=False)
    assert figures["positions"] == 12 and figures["top1"] == 1.0 and figures["top3"] == 1.0
    sampled = evaluate_engine(stockfish_path(), 60, 3, tmp_path / "labels", positions=5, seed=3, progress=False)
    assert sampled["positions"] == 5
    from training.engines import EngineFailure as LabelError
    with pytest.raises(LabelError, match="cannot start"):
        evaluate_engine(str(tmp_path / "no-engine"), 60, 3, tmp_path / "labels", progress=False)
