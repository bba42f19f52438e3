"""Data generation with UCI engines: annotation and self-play, resumable."""

from __future__ import annotations

import sys


from tests.conftest import needs_stockfish, stockfish_path
from training.generate import annotate, selfplay
from training.pgn import ReadStats, iter_positions

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
