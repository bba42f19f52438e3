"""The corpus: files prepared once into the cache and joined (deduplicated, test set out, games held out)."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import re
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import numpy as np
import pytest
from click.testing import CliRunner

from evaluators.encoding import get_encoding
from tests.conftest import needs_stockfish, stockfish_path
from training.__main__ import cli
from training.configs import SelfPlayOptions
from training.data import cache, corpus, shards, targets
from training.data.corpus import CorpusConfig, build, load_for_training, prepare, validation_split
from training.uci.selfplay import selfplay

OPENING = ["e2e4", "e7e5", "g1f3", "b8c6"]  # every game starts so: positions repeat across games and files


def random_game(seed: int, plies: int = 40, annotated: bool = True) -> chess.pgn.Game:
    """A game of random moves after OPENING; with ``annotated`` every move carries an [%eval] (from ply 2 on:
    the first two stand for book moves)."""
    rng = random.Random(seed)
    game = chess.pgn.Game()
    board, node = chess.Board(), game
    while board.ply() < plies and not board.is_game_over():
        move = chess.Move.from_uci(OPENING[board.ply()]) if board.ply() < len(OPENING) else \
            rng.choice(list(board.legal_moves))
        node = node.add_variation(move)
        if annotated and board.ply() >= 2:
            node.set_eval(chess.engine.PovScore(chess.engine.Cp(rng.randint(-300, 300)), chess.WHITE))
        board.push(move)
    game.headers["Result"] = rng.choice(["1-0", "0-1", "1/2-1/2"])
    return game


def write_games(path: Path, seeds: range, annotated: bool = True) -> Path:
    text = "".join(f"{random_game(seed, annotated=annotated)}\n\n" for seed in seeds)
    if path.suffix == ".xz":
        with lzma.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """HACKMATE_CACHE pointed at a temporary directory (never the real ~/.cache)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(cache.ENVIRONMENT, str(directory))
    return directory


def make(files: list[Path], **settings) -> corpus.Corpus:
    settings.setdefault("workers", 1)
    return build(CorpusConfig(files=[str(f) for f in files], shared=False, **settings), progress=False,
                 say=lambda _: None)


def by_key(directory: Path) -> dict[int, tuple]:
    """Each position of a joined corpus with everything it holds (its policy entries too) and its split."""
    arrays, _, _ = load_for_training(directory)
    validation = validation_split(directory)
    offsets = arrays["policy_offset"]
    rows = {}
    for i, key in enumerate(arrays["key"].tolist()):
        policy = slice(offsets[i], offsets[i + 1])
        rows[key] = (arrays["planes"][i].tobytes(), int(arrays["rule50"][i]), int(arrays["ply"][i]),
                     int(arrays["game"][i]), arrays["policy_index"][policy].tolist(),
                     arrays["policy_prob"][policy].tolist(), arrays["policy_score"][policy].tolist(),
                     arrays["wdl"][i].tobytes(), int(arrays["result"][i]), bool(validation[i]))
    assert len(rows) == len(arrays["key"])  # one record per position
    return rows


def test_two_files_equal_their_concatenation_and_a_new_file_reuses_the_parts(tmp_path, cache_dir, monkeypatch):
    first = write_games(tmp_path / "a.pgn", range(0, 12))
    second = write_games(tmp_path / "b.pgn.xz", range(12, 24))
    both = write_games(tmp_path / "ab.pgn", range(0, 24))
    prepared = []
    original = prepare.prepare_part
    monkeypatch.setattr(prepare, "prepare_part", lambda path, *a, **k: prepared.append(path.name) or
                        original(path, *a, **k))
    alone = make([first], validation_period=4)
    assert prepared == ["a.pgn"] and alone.parts[0].status == "prepared"
    part_files = {p: p.stat().st_mtime_ns for p in (cache_dir / corpus.PARTS / alone.parts[0].key).iterdir()}
    joined = make([first, second], validation_period=4)
    assert prepared == ["a.pgn", "b.pgn.xz"]  # the first file's part was reused, not prepared again
    assert [r.status for r in joined.parts] == ["reused", "prepared"]
    assert {p: p.stat().st_mtime_ns for p in part_files} == part_files
    concatenated = make([both], validation_period=4)
    split = by_key(joined.directory)
    assert split == by_key(concatenated.directory)  # the same records, up to their order
    counts = joined.manifest["counts"]
    assert counts["duplicates"] > 0 and counts["positions"] == len(split)
    assert 0 < counts["validation"] < counts["positions"]
    assert (cache_dir / corpus.CURRENT).resolve() == concatenated.directory.resolve()
    # the book plies (no eval) are not records, but they are seen: the split knows every position of a game
    assert all(ply >= 2 for _, _, ply, *_ in split.values())
    assert make([first, second], validation_period=4).join_reused


def test_files_under_the_caches_games_folder_join_every_corpus_once(tmp_path, cache_dir):
    given = write_games(tmp_path / "a.pgn", range(0, 6))
    (cache_dir / corpus.ADDED / "cpu").mkdir(parents=True)
    added = write_games(cache_dir / corpus.ADDED / "cpu" / "b.pgn.xz", range(6, 12))
    (cache_dir / corpus.ADDED / "c.pgn.xz.part0").write_text("a self-play file still being written")
    joined = make([given, added], validation_period=4)  # b named as well as found: joined once
    assert [part.source.name for part in joined.parts] == ["b.pgn.xz", "a.pgn"]
    assert by_key(joined.directory) == by_key(make([given, added], validation_period=4, added=False).directory)
    assert [part.source.name for part in make([given], added=False).parts] == ["a.pgn"]
    assert "added files (" in corpus.info_text() and ": 1, " in corpus.info_text()


def test_records_match_the_shard_encoding_and_multipv_labels_win(tmp_path, cache_dir):
    games = write_games(tmp_path / "a.pgn", range(3))
    human = write_games(tmp_path / "human.pgn", range(100, 102), annotated=False)
    boards = []  # (position, node) of every move of the three games
    with open(games) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for node in game.mainline():
                boards.append((board.copy(), node))
                board.push(node.move)
    occurrences: dict[int, int] = {}
    for board, _ in boards:
        key = chess.polyglot.zobrist_hash(board)
        occurrences[key] = occurrences.get(key, 0) + 1
    labelled_board = boards[10][0]
    multipv = tmp_path / "labels.jsonl.gz"
    with gzip.open(multipv, "wt") as handle:
        line = {"fen": labelled_board.fen(), "pv": [[m.uci(), 50 - 10 * i, None] for i, m in
                                                     enumerate(list(labelled_board.legal_moves)[:3])],
                "result": "1-0"}
        handle.write(json.dumps(line) + "\nnot json\n")
    made = make([games, human, multipv], skip_plies=6)
    assert made.parts[2].manifest["skipped"] == {"bad labelled lines": 1}
    rows = by_key(made.directory)
    encoding = get_encoding("planes18")
    unique = [(board, node) for board, node in boards if occurrences[chess.polyglot.zobrist_hash(board)] == 1]
    assert len(unique) > 60
    for board, node in unique:  # a position of one game and one ply: its record is that move's
        if board == labelled_board:
            continue
        score = node.eval().pov(board.turn)
        record = shards.make_record(board, encoding, [node.move], np.ones(1), np.array([targets.score_cp(score)]),
                                    targets.wdl_target(score, board.ply()), 0, 0)
        row = rows[record.key]
        assert row[0] == record.planes.tobytes() and row[4] == record.policy_index.tolist()
        assert row[6] == record.policy_score.tolist() and row[7] == record.wdl.tobytes()
    labelled = rows[chess.polyglot.zobrist_hash(labelled_board)]
    assert len(labelled[4]) == 3 and labelled[6] == [50, 40, 30]  # the MultiPV label, not the move played
    human_plies = sorted(ply for _, _, ply, game_id, *_ in rows.values()
                         if game_id in {r[3] for r in rows.values() if np.isnan(np.frombuffer(r[7], np.float32)[0])})
    assert human_plies and human_plies[0] >= 6  # games without evals: every move from --skip-plies on


def test_test_set_and_excluded_positions_are_left_out(tmp_path, cache_dir):
    games = write_games(tmp_path / "a.pgn", range(4))
    every = set(by_key(make([games]).directory))
    chosen = sorted(every)[:5]
    arrays = shards.records_to_arrays([], get_encoding("planes18"))
    arrays = {name: np.resize(array, (5, *array.shape[1:])) for name, array in arrays.items()}
    arrays.update(key=np.array(chosen, dtype=np.uint64), policy_offset=np.arange(6, dtype=np.int64),
                  policy_index=np.zeros(5, np.int16), policy_prob=np.ones(5, np.float32),
                  policy_score=np.zeros(5, np.int32))
    shards.write_dir(arrays, tmp_path / "held", get_encoding("planes18"), {"imported_from": "test"}, "test")
    excluded = make([games], exclude=[str(tmp_path / "held")])
    assert set(by_key(excluded.directory)) == every - set(chosen)
    assert excluded.manifest["counts"]["excluded"] >= 5


def test_the_cache_refuses_a_half_written_or_foreign_entry_and_rebuilds_it(tmp_path, cache_dir):
    games = write_games(tmp_path / "a.pgn", range(3))
    made = make([games])
    part = cache_dir / corpus.PARTS / made.parts[0].key
    expected = by_key(made.directory)
    (part / cache.MANIFEST).unlink()
    with pytest.raises(corpus.CorpusError, match="half-written"):
        load_for_training(made.directory)  # training never reads a part without its complete-marker
    again = make([games])
    assert again.parts[0].status == "rebuilt (half-written (no manifest))"
    with open(part / "planes.npy", "r+b") as handle:
        handle.truncate(200)
    assert make([games]).parts[0].status.startswith("rebuilt (damaged (planes.npy holds 200 bytes")
    manifest = json.loads((part / cache.MANIFEST).read_text())
    (part / cache.MANIFEST).write_text(json.dumps({**manifest, "version": corpus.PART_VERSION + 1}))
    assert "written by version" in make([games]).parts[0].status
    assert by_key(made.directory) == expected
    (cache_dir / "runs").mkdir()  # a folder kept by hand, not an entry of the corpus
    (cache_dir / "runs" / "net.pt").write_bytes(bytes(3 << 20))
    info = corpus.info_text()
    assert str(cache_dir) in info and "corpus-parts/" in info and "MiB on disk" in info
    assert "runs/: 3.0 MiB (not the corpus's" in info and "half-written" not in info


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative path: content), links as their targets."""
    return {str(p.relative_to(directory)): os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file() or p.is_symlink()}


def test_prune_keeps_the_current_corpus_and_its_parts_and_nothing_else_stale(tmp_path, cache_dir):
    kept, gone, new = (write_games(tmp_path / name, range(i * 4, i * 4 + 4)) for i, name in
                       enumerate(["a.pgn", "gone.pgn", "new.pgn"]))
    (cache_dir / corpus.ADDED / "cpu").mkdir(parents=True)  # self-play the user added: joined by every corpus
    write_games(cache_dir / corpus.ADDED / "cpu" / "sp.pgn.xz", range(20, 24))
    (cache_dir / corpus.ADDED / "cpu" / "next.pgn.xz.part0").write_text("still being written")
    old = [make([kept]), make([kept, gone])]
    current = make([kept, new])
    expected = by_key(current.directory)
    half_written = cache_dir / corpus.PARTS / "0123abcd"  # a part whose preparing was cut short: no manifest
    half_written.mkdir()
    (half_written / "planes.npy.tmp").write_bytes(bytes(100))
    (cache_dir / corpus.JOINS / "manifest.json.tmp").write_text("{")
    (cache_dir / "runs" / "mine").mkdir(parents=True)
    (cache_dir / "runs" / "mine" / "net.pt").write_bytes(bytes(1000))
    (cache_dir / "corpus-1234.pack").write_bytes(b"pack")
    (cache_dir / "notes").mkdir()
    (cache_dir / "notes" / "todo.txt").write_text("mine")
    others = {name: tree(cache_dir / name) for name in ("games", "runs", "notes")}
    pack = (cache_dir / "corpus-1234.pack").read_bytes()
    current_files = tree(current.directory)
    current_parts = {r.key: tree(cache_dir / corpus.PARTS / r.key) for r in current.parts}
    gone_key = next(r.key for r in old[1].parts if r.source == gone)
    stale = [join.directory for join in old] + [cache_dir / corpus.JOINS / "manifest.json.tmp",
                                                 half_written, cache_dir / corpus.PARTS / gone_key]

    result = CliRunner().invoke(cli, ["corpus", "--prune"])
    assert result.exit_code == 0, result.output
    kept_line, *lines = result.output.splitlines()
    assert kept_line.startswith(f"kept the current corpus, {corpus.JOINS}/{current.directory.name},")
    assert len(lines) == len(stale) + 1 and lines[-1].startswith("freed ") and lines[-1].endswith(" MiB")
    assert sorted(line.split(":")[0] for line in lines[:-1]) == sorted(
        f"removed {path.relative_to(cache_dir)}" for path in stale)
    assert not any(path.exists() for path in stale)
    assert sorted(p.name for p in (cache_dir / corpus.JOINS).iterdir()) == [current.directory.name]
    assert sorted(p.name for p in (cache_dir / corpus.PARTS).iterdir()) == sorted(current_parts)
    assert tree(current.directory) == current_files
    assert {key: tree(cache_dir / corpus.PARTS / key) for key in current_parts} == current_parts
    assert {name: tree(cache_dir / name) for name in others} == others
    assert (cache_dir / "corpus-1234.pack").read_bytes() == pack
    assert by_key(cache_dir / corpus.CURRENT) == expected  # what `train` reads still loads, unchanged
    again = CliRunner().invoke(cli, ["corpus", "--prune"])
    assert again.exit_code == 0 and again.output.splitlines()[1].startswith("nothing to prune")
    for usage in (["--prune", "--info"], ["--prune", str(kept)]):
        refused = CliRunner().invoke(cli, ["corpus", *usage])
        assert refused.exit_code == 2 and "--prune takes no FILES and no --info" in refused.output


def test_prune_without_a_current_corpus_refuses_and_removes_nothing(tmp_path, cache_dir):
    games = write_games(tmp_path / "a.pgn", range(4))
    make([games])
    made = make([games, write_games(tmp_path / "b.pgn", range(4, 8))])
    link = cache_dir / corpus.CURRENT
    link.unlink()
    before = tree(cache_dir)
    with pytest.raises(corpus.CorpusError, match="no current corpus"):
        corpus.prune_stale()
    link.symlink_to(Path(corpus.JOINS) / ("0" * 32), target_is_directory=True)  # dangling
    before[corpus.CURRENT] = os.readlink(link).encode()
    result = CliRunner().invoke(cli, ["corpus", "--prune"])
    assert result.exit_code == 1 and "is absent: nothing pruned" in result.output
    assert tree(cache_dir) == before
    link.unlink()
    link.symlink_to(made.directory.relative_to(cache_dir) / "part.npy")  # not a joined corpus
    assert CliRunner().invoke(cli, ["corpus", "--prune"]).exit_code == 1
    link.unlink()
    assert tree(cache_dir) == {name: data for name, data in before.items() if name != corpus.CURRENT}


def test_truncated_or_corrupt_files_are_named_and_counted_and_the_rest_prepared(tmp_path, cache_dir):
    good = write_games(tmp_path / "a.pgn", range(4))
    whole = write_games(tmp_path / "cut.pgn.xz", range(10, 40))
    data = whole.read_bytes()
    whole.write_bytes(data[:len(data) // 2])
    corrupt = tmp_path / "corrupt.pgn"
    corrupt.write_text(f"{random_game(50)}\n\n" '[Result "1-0"]\n\n1. e4 e5 2. Ke3 1-0\n\n'
                       '[Result "1-0"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. c3 Nf6 5. -- d6 1-0\n\n')
    made = make([good, whole, corrupt], workers=2)  # prepared in two processes
    cut = made.parts[1].manifest
    assert "cut.pgn.xz: unreadable after" in cut["damaged"] and 0 < cut["games"] < 30
    assert cut["skipped"] == {"damaged files (truncated or corrupt)": 1}
    assert made.parts[0].manifest["damaged"] is None and made.parts[0].manifest["games"] == 4
    assert "1 damaged file(s)" in made.text() and "cut.pgn.xz" in made.text()
    bad = made.parts[2].manifest  # a corrupt game is named and counted, the file's other games kept
    assert bad["skipped"] == {"games with illegal or unreadable moves": 1, "games that cannot be encoded": 1}
    assert any("corrupt.pgn game 2" in error for error in bad["errors"]) and bad["positions"] > 30


def test_train_validates_on_the_corpus_split(tmp_path, cache_dir):
    pytest.importorskip("torch")
    from training.configs import TrainConfig
    from training.resnet.train import load_data, train
    made = make([write_games(tmp_path / "a.pgn", range(6))], validation_period=3)
    held_out = made.manifest["counts"]["validation"]
    assert 0 < held_out < made.manifest["counts"]["positions"]
    config = TrainConfig(data=[str(cache_dir / corpus.CURRENT)], out=str(tmp_path / "run"), blocks=1, filters=8,
                         epochs=1, batch_size=64, device="cpu", validation=0.5)
    arrays, meta = load_data(config)
    assert arrays["validation"].sum() == held_out  # the corpus's split, not --validation's
    assert meta["sources"][0]["split"] == "games-1-in-3"
    train(config, progress=False)
    assert json.loads((tmp_path / "run" / "history.json").read_text())[0]["val_samples"] == held_out


@needs_stockfish
def test_stockfish_selfplay_writes_a_compressed_part_the_corpus_reads(tmp_path, cache_dir):
    """`selfplay --engine stockfish --nodes 1000,2000 --random-share ... --out X.pgn.xz`: the shared parts' format."""
    out = tmp_path / "sf-selfplay.pgn.xz"
    book = write_games(tmp_path / "book.pgn", range(1))  # its line starts with OPENING
    options = SelfPlayOptions(random_plies=1, seed=5, node_budgets=(50, 100), random_share=0.5, book=str(book),
                              book_plies=6, book_min_plies=2)
    assert selfplay(out, stockfish_path(), 50, games=4, workers=1, options=options) == 4
    with lzma.open(out, "rt") as handle:  # compressed, every game complete, budgets chosen per game
        text = handle.read()
    assert set(re.findall(r'\[Annotator "nodes=(\d+)"\]', text)) <= {"50", "100"} and text.count("[Result ") == 4
    assert re.findall(r"^1\. \S+ \S+", text, re.M) == ["1. e4 e5"] * 4  # at least book_min_plies of the book
    made = make([out])
    assert made.parts[0].manifest["games"] == 4 and made.parts[0].manifest["damaged"] is None
    assert made.manifest["counts"]["positions"] > 40  # every Stockfish move carries its eval: a record each


def test_a_second_corpus_run_refuses_while_one_holds_the_cache(tmp_path, cache_dir):
    games = write_games(tmp_path / "a.pgn", range(4))
    made = make([games])
    before = tree(cache_dir)
    with cache.exclusive("a test"):
        for args in (["corpus", "--no-shared", "--no-added", str(games)], ["corpus", "--prune"]):
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 1 and "is in use by another" in result.output, result.output
        assert tree(cache_dir) == before
    result = CliRunner().invoke(cli, ["corpus", "--prune"])  # released: the same command runs
    assert result.exit_code == 0 and f"kept the current corpus, {corpus.JOINS}/{made.directory.name}" in result.output


@pytest.mark.parametrize("name", ["planes18", "features36", "lc0-112"])
def test_every_encoding_is_prepared_as_the_engine_encodes_the_game(tmp_path, cache_dir, name):
    """A corpus record's planes are the encoding's planes of its position with the game before it (history and
    last moves included), packed as the shards pack them."""
    games = write_games(tmp_path / "a.pgn", range(2))
    encoding = get_encoding(name)
    expected: dict[int, list[bytes]] = {}
    with open(games) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for node in game.mainline():
                planes = np.packbits(encoding.binary(board).reshape(-1), bitorder="little").tobytes()
                expected.setdefault(chess.polyglot.zobrist_hash(board), []).append(planes)
                board.push(node.move)
    rows = by_key(make([games], skip_plies=0, encoding=name).directory)
    once = {key: planes[0] for key, planes in expected.items() if len(planes) == 1 and key in rows}
    assert len(once) > 60
    assert all(rows[key][0] == planes for key, planes in once.items())


def test_a_player_filter_keeps_only_that_players_moves(tmp_path, cache_dir):
    """--player: the records are the positions where the named player (a part of the White or Black header, any
    case) is to move; a game without the player adds none and is counted; the split stays the games'."""
    games = [random_game(seed, annotated=False) for seed in range(8)]
    for number, game in enumerate(games):
        game.headers["White"], game.headers["Black"] = ("Carlsen,M", f"Rival {number}") if number % 2 else \
            (f"Rival {number}", "Carlsen,M")
    games[0].headers["Black"] = "Somebody Else"
    path = tmp_path / "carlsen.pgn"
    path.write_text("".join(f"{game}\n\n" for game in games))
    rows = by_key(make([path], skip_plies=0, player="carlsen").directory)
    expected = set()
    for game in games[1:]:
        colour = chess.WHITE if game.headers["White"] == "Carlsen,M" else chess.BLACK
        board = game.board()
        for node in game.mainline():
            if board.turn == colour:
                expected.add(chess.polyglot.zobrist_hash(board))
            board.push(node.move)
    assert set(rows) == expected
    every = by_key(make([path], skip_plies=0).directory)
    assert expected < set(every)
    assert all(every[key][9] == rows[key][9] for key in rows)  # the same games held out
    result = CliRunner().invoke(cli, ["corpus", "--no-shared", "--no-added", "--player", "Carlsen", "--workers", "1",
                                      str(path)])
    assert result.exit_code == 0, result.output
    assert "skipped 1 games without the player" in result.output
