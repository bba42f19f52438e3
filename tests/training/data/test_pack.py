"""training.data.pack, the corpus pack: a joined corpus's training columns and split in one file, which `train`
reads as the corpus."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Iterable

import chess
import chess.engine
import numpy as np
import pytest
from click.testing import CliRunner

from tests.training.data.test_corpus import cache_dir, make, random_game, write_games  # noqa: F401 (cache_dir: a fixture)
from training.__main__ import cli
from training.data import corpus, shards, successors, targets
from training.data import pack as corpus_pack


def write_multipv(path: Path) -> Path:
    """A few MultiPV-labelled positions (three scored moves each): policies that a temperature reshapes."""
    with gzip.open(path, "wt") as handle:
        for seed in range(5):
            board = chess.Board()
            for move in random_game(200 + seed, plies=12).mainline_moves():
                board.push(move)
            pv = [[move.uci(), 60 - 25 * i, None] for i, move in enumerate(list(board.legal_moves)[:3])]
            handle.write(json.dumps({"fen": board.fen(), "pv": pv, "result": "1/2-1/2"}) + "\n")
    return path


@pytest.fixture
def packed(tmp_path, cache_dir) -> tuple[corpus.Corpus, Path]:  # noqa: F811 (cache_dir: the imported fixture)
    """A joined corpus of two game files and MultiPV labels, every third game held out, and its pack."""
    files = [write_games(tmp_path / "a.pgn", range(0, 5)), write_games(tmp_path / "b.pgn.xz", range(5, 10)),
             write_multipv(tmp_path / "labels.jsonl.gz")]
    made = make(files, validation_period=3)
    pack = tmp_path / "corpus.pack"
    corpus_pack.write(made.directory, pack)
    return made, pack


def assert_same_arrays(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], names: Iterable[str]) -> None:
    """Each named column of ``got`` has the dtype and values of ``expected``'s."""
    for name in names:
        assert got[name].dtype == expected[name].dtype, name
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)  # NaN (no eval) equals NaN


def test_a_pack_reads_back_as_the_corpus_without_its_keys(packed):
    made, pack = packed
    expected, _, encoding = corpus.load_for_training(made.directory)
    split = corpus.validation_split(made.directory)
    arrays, description, packed_encoding = corpus_pack.read(pack)
    assert packed_encoding == encoding
    assert set(arrays) == set(shards.TRAINING_COLUMNS) | {"validation"}
    assert_same_arrays(arrays, expected, (name for name in shards.TRAINING_COLUMNS if name != "key"))
    assert arrays["key"].dtype == np.uint64 and not arrays["key"].any() and len(arrays["key"]) == len(split)
    np.testing.assert_array_equal(arrays["validation"], split)
    counts = made.manifest["counts"]
    assert 0 < counts["validation"] < counts["positions"]
    with zipfile.ZipFile(pack) as archive:
        manifest = json.loads(archive.read(corpus_pack.MANIFEST))
    assert manifest["positions"] == counts["positions"] == len(split)
    assert manifest["entries"] == len(expected["policy_index"]) > manifest["positions"]  # the MultiPV entries
    assert manifest["validation"] == counts["validation"] == int(split.sum())
    assert description["positions"] == counts["positions"] and description["validation"] == counts["validation"]
    assert description["packed"] and description["split"] == "games-1-in-3"
    assert manifest["policy_prob_temperature"] == corpus_pack.PROB_TEMPERATURE  # the probabilities were left out
    assert manifest["wdl_model"] == "sf15.1"  # and the W/D/L targets, recomputed equal (assert_same_arrays above)
    with zipfile.ZipFile(pack) as archive:
        assert "policy_prob.npy" not in archive.namelist() and "wdl.npy" not in archive.namelist()
        assert "wdl_known.npy" in archive.namelist()
        assert "planes.npy" not in archive.namelist()  # the planes as training.data.successors keeps them
        stored = np.lib.format.read_array(archive.open(f"{corpus_pack.STORED_PIECES}.npy"))
    assert 0 < manifest["replayed"] == manifest["positions"] - len(stored)  # a game's positions after its first


def test_derived_wdl_is_python_chess_sf15_1_model_for_every_score_and_ply():
    # centipawns, and +-(32000 - n) for mate in n (-32000: mated)
    scores = [-32000, -31990, -5000, -1200, -361, -100, -37, -1, 0, 1, 2, 50, 99, 361, 777, 1500, 12000, 31995, 31999]
    plies = [-1, 0, 1, 17, 64, 100, 239, 240, 400]
    cases = [(score, ply) for score in scores for ply in plies]
    known = np.array([i % 7 != 3 for i in range(len(cases))])  # some positions have no evaluation: NaN
    arrays = {"policy_score": np.array([score for score, _ in cases] + [5], dtype=np.int32),
              "policy_offset": np.arange(len(cases) + 1, dtype=np.int64),
              "ply": np.array([ply for _, ply in cases], dtype=np.int16)}
    got = corpus_pack.derived_wdl(arrays, known)
    for (score, ply), row, has_one in zip(cases, got, known):
        engine = chess.engine.Mate(32000 - score) if score > 31000 else \
            chess.engine.Mate(-(32000 + score)) if score < -31000 else chess.engine.Cp(score)
        expected = targets.wdl_target(engine, ply) if has_one else np.full(3, np.nan, dtype=np.float32)
        np.testing.assert_array_equal(row, expected, err_msg=f"{engine} at ply {ply}")
    assert got.dtype == np.float32


def test_wdl_targets_that_the_scores_do_not_give_are_packed(packed, tmp_path, monkeypatch):
    made, _ = packed
    expected, _, _ = corpus.load_for_training(made.directory)
    monkeypatch.setattr(corpus_pack, "derived_wdl", lambda arrays, known: np.zeros_like(arrays["wdl"]))
    pack = tmp_path / "stored.pack"
    assert corpus_pack.write(made.directory, pack)["wdl_model"] is None
    with zipfile.ZipFile(pack) as archive:
        assert "wdl.npy" in archive.namelist() and "wdl_known.npy" not in archive.namelist()
    assert_same_arrays(corpus_pack.read(pack)[0], expected, ("wdl",))


def test_probabilities_that_are_not_the_scores_soft_policy_are_packed(packed, tmp_path, monkeypatch):
    made, _ = packed
    monkeypatch.setattr(corpus_pack, "PROB_TEMPERATURE", 7.0)  # not the temperature the corpus labelled with
    pack = tmp_path / "stored.pack"
    assert corpus_pack.write(made.directory, pack)["policy_prob_temperature"] is None
    with zipfile.ZipFile(pack) as archive:
        assert "policy_prob.npy" in archive.namelist()
    expected, _, _ = corpus.load_for_training(made.directory)
    assert_same_arrays(corpus_pack.read(pack)[0], expected, ("policy_prob", "policy_score", "policy_offset"))


def test_train_reads_a_pack_as_the_corpus(packed, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from training.configs import TrainConfig
    from training.resnet.train import load_data, train
    made, pack = packed
    held_out = made.manifest["counts"]["validation"]
    columns = [name for name in shards.TRAINING_COLUMNS if name != "key"] + ["validation"]
    plain = None
    for temperature in (0.0, 50.0):
        settings = dict(out=str(tmp_path / "run"), blocks=1, filters=8, epochs=1, batch_size=64, device="cpu",
                        validation=0.5, temperature=temperature)
        from_corpus, corpus_meta = load_data(TrainConfig(data=[str(made.directory)], **settings))
        derived = []
        with monkeypatch.context() as patch:  # the pack's probabilities are derived once, at the asked temperature
            patch.setattr(targets, "soft_policy", lambda *args, real=targets.soft_policy: derived.append(args[2]) or
                          real(*args))
            from_pack, pack_meta = load_data(TrainConfig(data=[str(pack)], **settings))
        assert derived == [temperature or corpus_pack.PROB_TEMPERATURE]
        assert_same_arrays(from_pack, from_corpus, columns)
        assert from_pack["validation"].sum() == held_out  # the corpus's split, not --validation's
        assert pack_meta["encoding"] == corpus_meta["encoding"]
        assert pack_meta["sources"][0]["split"] == corpus_meta["sources"][0]["split"] == "games-1-in-3"
        if plain is None:
            plain = from_pack["policy_prob"]
        else:  # the temperature reshaped the MultiPV policies, on both sides alike
            assert not np.allclose(from_pack["policy_prob"], plain)
    cut = tmp_path / "cut.pack"
    cut.write_bytes(pack.read_bytes()[:pack.stat().st_size // 2])
    with pytest.raises(corpus_pack.PackError, match=f"{cut}: damaged or incomplete"):
        load_data(TrainConfig(data=[str(cut)], out=str(tmp_path / "run")))
    train(TrainConfig(data=[str(pack)], out=str(tmp_path / "run"), blocks=1, filters=8, epochs=1, batch_size=64,
                      device="cpu", validation=0.5), progress=False)
    assert json.loads((tmp_path / "run" / "history.json").read_text())[0]["val_samples"] == held_out


def test_policy_offsets_survive_their_packed_steps_at_the_ends_of_their_range():
    info = np.iinfo(np.int64)
    offsets = np.array([0, 1, 2, 5, 6, info.max, info.min, -1, 0, 0], dtype=np.int64)
    stored = corpus_pack.encode("policy_offset", offsets)
    assert stored.dtype == np.uint64 and not stored[1:3].any()  # one entry a position: a step of 0
    decoded = corpus_pack.decode("policy_offset", stored)
    assert decoded.dtype == np.int64 and decoded.flags.c_contiguous
    np.testing.assert_array_equal(decoded, offsets)
    with pytest.raises(ValueError, match="policy_offset stored as int64"):
        corpus_pack.decode("policy_offset", offsets)  # a version-3 pack's offsets


def test_a_truncated_foreign_or_other_version_pack_is_refused(packed, tmp_path):
    _, pack = packed
    assert corpus_pack.is_pack(pack)
    text = tmp_path / "games.pgn"
    text.write_text("not a zip")
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert not corpus_pack.is_pack(text) and not corpus_pack.is_pack(other_zip)
    assert not corpus_pack.is_pack(tmp_path / "missing.pack") and not corpus_pack.is_pack(tmp_path)
    for foreign in (text, other_zip):
        with pytest.raises(corpus_pack.PackError, match=str(foreign)):
            corpus_pack.read(foreign)

    cut = tmp_path / "cut.pack"
    data = pack.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    assert corpus_pack.is_pack(cut)  # known as a pack still, so that train refuses it rather than misreads it
    with pytest.raises(corpus_pack.PackError, match=f"{cut}: damaged or incomplete corpus pack"):
        corpus_pack.read(cut)

    flipped = tmp_path / "flipped.pack"  # whole, but a member's compressed bytes damaged: LZMA's own error
    with zipfile.ZipFile(pack) as source:
        largest = max(source.infolist(), key=lambda member: member.compress_size)
    data = bytearray(pack.read_bytes())
    middle = largest.header_offset + 30 + len(largest.filename) + largest.compress_size // 2
    data[middle:middle + 64] = bytes(64)
    flipped.write_bytes(bytes(data))
    with pytest.raises(corpus_pack.PackError, match=f"{flipped}: damaged or incomplete corpus pack"):
        corpus_pack.read(flipped)

    shuffled = tmp_path / "shuffled.pack"  # whole and of this version, but its policy offsets out of order
    with zipfile.ZipFile(pack) as source, zipfile.ZipFile(shuffled, "w") as archive:
        for member in source.namelist():
            content = source.read(member)
            if member == "policy_offset.npy":
                offsets = corpus_pack.decode("policy_offset", np.lib.format.read_array(source.open(member)))
                offsets[[1, 2]] = offsets[[2, 1]] if offsets[1] != offsets[2] else (offsets[2] + 1, offsets[1])
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, corpus_pack.encode("policy_offset", offsets))
                content = buffer.getvalue()
            archive.writestr(member, content)
    with pytest.raises(corpus_pack.PackError, match=f"{shuffled}: policy_offset does not run"):
        corpus_pack.read(shuffled)

    newer = tmp_path / "newer.pack"
    with zipfile.ZipFile(pack) as source, zipfile.ZipFile(newer, "w") as archive:
        for member in source.namelist():
            content = source.read(member)
            if member == corpus_pack.MANIFEST:
                content = json.dumps({**json.loads(content), "version": corpus_pack.VERSION + 1}).encode()
            archive.writestr(member, content)
    assert corpus_pack.is_pack(newer)
    with pytest.raises(corpus_pack.PackError, match=f"{newer}: not a version-{corpus_pack.VERSION} .*pack it again"):
        corpus_pack.read(newer)


def test_a_failed_write_leaves_no_file_and_keeps_the_previous_pack(packed, monkeypatch):
    made, pack = packed
    before = pack.read_bytes()
    written = []
    original = np.lib.format.write_array

    def fail_on_the_third(*args, **kwargs):
        written.append(1)
        if len(written) == 3:
            raise OSError("disk full")
        return original(*args, **kwargs)

    monkeypatch.setattr(corpus_pack.np.lib.format, "write_array", fail_on_the_third)
    fresh = pack.with_name("fresh.pack")
    with pytest.raises(OSError, match="disk full"):
        corpus_pack.write(made.directory, fresh)
    written.clear()
    with pytest.raises(OSError, match="disk full"):
        corpus_pack.write(made.directory, pack)
    assert not fresh.exists() and pack.read_bytes() == before
    assert sorted(p.name for p in pack.parent.glob("*.pack*")) == ["corpus.pack"]  # no temporary left behind


def test_the_cli_packs_a_corpus_and_refuses_a_directory_that_is_not_one(packed, tmp_path):
    made, _ = packed
    out = tmp_path / "cli.pack"
    result = CliRunner().invoke(cli, ["corpus-pack", str(out), "--corpus", str(made.directory)])
    assert result.exit_code == 0, result.output
    assert f"{made.manifest['counts']['positions']:,} positions" in result.output
    assert f"{made.manifest['counts']['validation']:,} in the validation split" in result.output
    assert corpus_pack.read(out)[1]["positions"] == made.manifest["counts"]["positions"]
    default = CliRunner().invoke(cli, ["corpus-pack", str(tmp_path / "default.pack")])  # ROOT/corpus: the latest
    assert default.exit_code == 0, default.output
    assert corpus_pack.read(tmp_path / "default.pack")[1]["corpus"] == corpus_pack.read(out)[1]["corpus"]

    nested = tmp_path / "new" / "folder" / "cli.pack"  # a missing folder is made
    assert CliRunner().invoke(cli, ["corpus-pack", str(nested), "--corpus", str(made.directory)]).exit_code == 0
    assert corpus_pack.is_pack(nested)

    empty = tmp_path / "empty"
    empty.mkdir()
    refused = CliRunner().invoke(cli, ["corpus-pack", str(tmp_path / "x.pack"), "--corpus", str(empty)])
    assert refused.exit_code == 1 and isinstance(refused.exception, SystemExit)  # a message, not a traceback
    assert f"{empty} is not a joined corpus" in refused.output and "python -m training corpus" in refused.output
    assert not (tmp_path / "x.pack").exists()


def test_a_pack_of_a_history_encoding_reads_back_too(tmp_path, cache_dir):  # noqa: F811 (cache_dir: the fixture)
    made = make([write_games(tmp_path / "a.pgn", range(0, 4))], validation_period=3, encoding="lc0-112")
    pack = tmp_path / "lc0.pack"
    corpus_pack.write(made.directory, pack)
    expected, _, _ = corpus.load_for_training(made.directory)
    arrays, _, encoding = corpus_pack.read(pack, encoding="lc0-112")
    assert encoding == "lc0-112" and arrays["planes"].shape[1] > 17 * 8
    assert_same_arrays(arrays, expected, (name for name in shards.TRAINING_COLUMNS if name != "key"))


def test_a_features36_pack_stores_its_extra_planes_as_their_prediction_error(tmp_path, cache_dir):  # noqa: F811
    files = [write_games(tmp_path / "a.pgn", range(0, 4)), write_multipv(tmp_path / "labels.jsonl.gz")]
    made = make(files, validation_period=3, encoding="features36")
    pack = tmp_path / "corpus.pack"
    corpus_pack.write(made.directory, pack)
    expected, _, encoding = corpus.load_for_training(made.directory)
    arrays, _, packed_encoding = corpus_pack.read(pack)
    assert encoding == packed_encoding == "features36"
    assert_same_arrays(arrays, expected, (name for name in shards.TRAINING_COLUMNS if name != "key"))
    with zipfile.ZipFile(pack) as archive:
        residual = np.lib.format.read_array(archive.open(f"{corpus_pack.EXTRA_PLANES}.npy"))
        replayed = np.lib.format.read_array(archive.open(f"{corpus_pack.REPLAYED}.npy"))
        other = np.lib.format.read_array(archive.open(f"{corpus_pack.OTHER_PLANES}.npy"))
    assert other.shape[1] == successors.ROW_BYTES - successors.PIECE_BYTES  # planes18's castling and en passant
    wrong = residual.reshape(len(residual), 18, 8).any(axis=2)
    # the pieces' planes (ours, theirs, opposite bishops, material) are predicted exactly; the last two moves of
    # a game's third position on (its two rows before replayed); only the checkers are left to store there
    assert not wrong[:, [0, 1, *range(3, 14)]].any()
    third_on = replayed & np.concatenate([[False], replayed[:-1]])
    assert third_on.sum() > len(replayed) // 2 and not wrong[third_on][:, 14:].any()
    assert 0 < wrong[:, 2].sum() < len(replayed) // 4  # positions in check
