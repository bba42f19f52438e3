"""training.uci.selfplay, data generation with UCI engines: annotation and self-play (resumable, the same games for
any workers, unequal budgets, books, filter)."""

from __future__ import annotations

import io
import random
import re
import struct
import sys

import chess
import chess.pgn
import chess.polyglot

from tests.conftest import needs_stockfish, stockfish_path
from hackmate_core.openings import OpeningBook
from training.configs import SelfPlayOptions
from training.data.pgn import ReadStats, decisive_result, iter_positions
from training.uci.selfplay import annotate, selfplay, summarize_games

GAMES = '[Event "a"]\n[Result "1-0"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n' \
        '[Event "b"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n'


@needs_stockfish
def test_annotate_adds_evals_and_resumes(tmp_path):
    source = tmp_path / "in.pgn"
    source.write_text(GAMES)
    out = tmp_path / "out.pgn"
    assert annotate(source, out, stockfish_path(), nodes=200, workers=2) == 2
    positions = list(iter_positions(out, ReadStats()))
    assert len(positions) == 11
    # every move that does not end the game carries the engine's eval (the mating move has nothing to analyse)
    assert sum(p.eval_q is not None for p in positions) == 9
    # a rerun with finished part files annotates nothing new
    (tmp_path / "out.pgn.part0").write_text(out.read_text().split("\n\n[Event")[0] + "\n\n")
    assert annotate(source, out, stockfish_path(), nodes=200, workers=1) == 1


def test_selfplay_writes_annotated_games(tmp_path):
    out = tmp_path / "sp.pgn"
    command = f"{sys.executable} -m engine --eval material --search alphabeta"
    assert selfplay(out, command, nodes=30, games=1, workers=1, random_plies=4) == 1
    positions = list(iter_positions(out, ReadStats(), require_eval=True))
    assert positions and all(-1 <= p.eval_q <= 1 for p in positions)


def test_decisive_game_filter():
    text = "".join(f'[Result "{r}"]\n\n1. e4 e5 {r}\n\n' for r in ("1-0", "0-1", "1/2-1/2", "*"))
    handle = io.StringIO(text)
    games = [chess.pgn.read_game(handle) for _ in range(4)]
    assert [decisive_result(g) for g in games] == [1, -1, None, None]


def test_opening_books_polyglot_and_pgn(tmp_path):
    board = chess.Board()
    entries = [(chess.polyglot.zobrist_hash(board), 796)]  # e2e4 (polyglot move encoding)
    board.push_uci("e2e4")
    entries.append((chess.polyglot.zobrist_hash(board), 3364))  # e7e5
    book = tmp_path / "book.bin"
    book.write_bytes(b"".join(struct.pack(">QHHI", key, move, 1, 0) for key, move in sorted(entries)))
    assert [m.uci() for m in OpeningBook(str(book), 6).line(random.Random(1))] == ["e2e4", "e7e5"]  # out of book
    assert len(OpeningBook(str(book), 1).line(random.Random(1))) == 1
    pgn = tmp_path / "openings.pgn"
    pgn.write_text(GAMES)
    lines = {tuple(m.uci() for m in OpeningBook(str(pgn), 3).line(random.Random(seed))) for seed in range(20)}
    assert lines == {("e2e4", "e7e5", "d1h5"), ("f2f3", "e7e5", "g2g4")}


@needs_stockfish
def test_unequal_budgets_book_and_decisive_only(tmp_path):
    book = tmp_path / "openings.pgn"
    book.write_text(GAMES)
    out = tmp_path / "sf.pgn"
    options = SelfPlayOptions(random_plies=2, seed=3, node_ratio=8, book=str(book), book_plies=2, decisive_only=True)
    assert selfplay(out, stockfish_path(), nodes=400, games=2, workers=1, options=options) == 2
    text = out.read_text()
    budgets = re.findall(r'\[Annotator "nodes white=(\d+) black=(\d+)"\]', text)
    assert len(budgets) == 2 and all(sorted(map(int, b)) == [50, 400] for b in budgets)
    assert all(line.split()[1] in ("e4", "f3") for line in re.findall(r"^1\. \S+", text, re.M))  # the book's
    summary = summarize_games(out)
    assert summary["games"] == 2 and summary["decisive_share"] == 1.0 and summary["annotated_positions"] > 20


@needs_stockfish
def test_selfplay_games_do_not_depend_on_the_workers_and_a_rerun_finishes_a_cut_part(tmp_path):
    one, two = tmp_path / "one.pgn", tmp_path / "two.pgn"
    assert selfplay(one, stockfish_path(), nodes=40, games=3, workers=1, random_plies=4, seed=9) == 3
    text = one.read_text()
    games = re.split(r"\n\n(?=\[Event )", text.strip())
    assert [re.search(r'\[Round "(\d+)"\]', game).group(1) for game in games] == ["1", "2", "3"]
    # a run stopped while writing its second game: the third game whole, then half of the first
    (tmp_path / "two.pgn.part").write_text(games[2] + "\n\n" + games[0][:len(games[0]) // 2])
    assert selfplay(two, stockfish_path(), nodes=40, games=3, workers=2, random_plies=4, seed=9) == 2
    assert two.read_text() == text and not (tmp_path / "two.pgn.part").exists()
