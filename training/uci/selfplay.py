"""Producing training data with UCI engines: annotating PGN and self-play.

Both write lichess-style PGN, every engine move carrying ``{ [%eval X] }`` from
White's point of view, which training.data.pgn reads back. Self-play games are played by
hackmate_core.games (its game-end rules and ply cap), openings from hackmate_core.openings'
book. Work is split across processes, one engine each, into part files that are concatenated at the end
(compressed when the output's name ends in .xz, .gz or .bz2, as the shared
corpus's ``sf15-selfplay-*.pgn.xz`` parts are); a rerun skips the games a part
already holds, so an interrupted job resumes.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from concurrent.futures import wait
from pathlib import Path
from typing import Optional

import chess
import chess.engine
import chess.pgn

from hackmate_core.games import MAX_PLIES, Mover, play_game
from hackmate_core.openings import OpeningBook
from hackmate_core.textfiles import create_text
from training.configs import SelfPlayOptions
from training.data.pgn import ReadStats, decisive_result, iter_games, open_text
from training.processes import process_pool
from training.uci.engines import start_engine

HEADER = re.compile(r'\[\w+ "')  # a PGN tag pair; a wrapped comment line may start with "[%eval"
#: Seconds between two looks at the part files for the progress bar.
PROGRESS_EVERY_S = 5.0


def _count_games(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.startswith("[Event "))


def _part(out: Path, worker: int) -> Path:
    return out.with_name(f"{out.name}.part{worker}")


def _annotate_part(args: tuple) -> int:
    source, out, command, nodes, worker, workers = args
    part = _part(Path(out), worker)
    done = _count_games(part)
    written = 0
    engine = start_engine(command)
    try:
        with open(part, "a", encoding="utf-8") as handle:
            for number, (_, game) in enumerate(iter_games(Path(source), ReadStats(), worker, workers)):
                if number < done:
                    continue  # annotated by an earlier run
                board = game.board()
                for node in game.mainline():
                    board.push(node.move)
                    if board.is_game_over():
                        break
                    info = engine.analyse(board, chess.engine.Limit(nodes=nodes))
                    node.set_eval(info["score"])
                print(game, file=handle, end="\n\n", flush=True)
                written += 1
    finally:
        engine.quit()
    return written


class SelfPlayMover(Mover):
    """Both sides of a self-play game: its opening line, then its random plies, then the engine at each colour's
    node budget; the engine's score of each of its moves is kept for the game's PGN (None for the others)."""

    def __init__(self, engine: chess.engine.SimpleEngine, opening: list[chess.Move], random_end: int,
                 budget: dict[chess.Color, int], rng: random.Random) -> None:
        self.engine, self.opening, self.random_end, self.budget, self.rng = engine, opening, random_end, budget, rng
        self.scores: list[Optional[chess.engine.PovScore]] = []

    def choose(self, board: chess.Board) -> chess.Move:
        score = None
        if board.ply() < len(self.opening):
            move = self.opening[board.ply()]
        elif board.ply() < self.random_end:  # random opening plies for variety
            move = self.rng.choice(list(board.legal_moves))
        else:
            result = self.engine.play(board, chess.engine.Limit(nodes=self.budget[board.turn]),
                                      info=chess.engine.INFO_SCORE)
            move, score = result.move, result.info.get("score")
        self.scores.append(score)
        return move


def _selfplay_part(args: tuple) -> int:
    out, command, nodes, games, worker, workers, options = args
    part = _part(Path(out), worker)
    mine = len(range(worker, games, workers))
    done = _count_games(part)
    rng = random.Random(options.seed * 1000 + worker * 7 + done)
    book = OpeningBook(options.book, options.book_plies) if options.book else None
    written, round_number = done, done
    engine = start_engine(command)
    try:
        with open(part, "a", encoding="utf-8") as handle:
            while written < mine:
                plies = rng.randint(options.book_min_plies, options.book_plies) if options.book_min_plies else 0
                opening = book.line(rng, plies) if book else []
                random_plies = options.random_plies if options.random_share >= 1 or \
                    rng.random() < options.random_share else 0
                game_nodes = rng.choice(options.node_budgets) if options.node_budgets else nodes
                budget = {chess.WHITE: game_nodes, chess.BLACK: game_nodes}
                if options.node_ratio != 1:  # the weaker colour alternates with the game number
                    budget[chess.BLACK if (worker + round_number * workers) % 2 == 0 else chess.WHITE] = \
                        max(1, round(game_nodes / options.node_ratio))
                mover = SelfPlayMover(engine, opening, len(opening) + random_plies, budget, rng)
                record = play_game(mover, mover, chess.Board(), MAX_PLIES)
                round_number += 1
                game = chess.pgn.Game()
                node: chess.pgn.GameNode = game
                for move, score in zip(record.moves, mover.scores):
                    node = node.add_variation(move)
                    if score is not None:
                        node.set_eval(score)
                annotator = f"nodes={game_nodes}" if options.node_ratio == 1 else \
                    f"nodes white={budget[chess.WHITE]} black={budget[chess.BLACK]}"
                game.headers.update({"Event": "hackmate self-play", "Round": f"{worker}.{round_number}",
                                     "White": command, "Black": command, "Annotator": annotator,
                                     "Result": record.result})
                if options.decisive_only and decisive_result(game) is None:
                    continue
                print(game, file=handle, end="\n\n", flush=True)
                written += 1
    finally:
        engine.quit()
    return mine - done


def _run_parts(function, jobs: list[tuple], out: Path, workers: int, total: Optional[int] = None) -> int:
    """Run one job per worker, each writing its part file, then join the parts into ``out`` (compressed as its
    name says). The progress bar counts the games in the parts (``total``: the games expected, when known), read
    every few seconds."""
    from tqdm import tqdm

    def games_so_far() -> int:
        return sum(_count_games(_part(out, worker)) for worker in range(workers))

    with process_pool(workers) as pool, \
            tqdm(total=total, initial=games_so_far(), desc=out.name, unit="game") as bar:
        futures = [pool.submit(function, job) for job in jobs]
        while wait(futures, timeout=PROGRESS_EVERY_S).not_done:
            bar.update(games_so_far() - bar.n)
        bar.update(games_so_far() - bar.n)
        written = sum(future.result() for future in futures)
    temporary = out.with_name(out.name + ".tmp")
    with create_text(temporary, out.suffix) as handle:
        for worker in range(workers):
            part = _part(out, worker)
            if part.exists():
                with open(part, encoding="utf-8") as source:
                    shutil.copyfileobj(source, handle)
    os.replace(temporary, out)
    for worker in range(workers):
        _part(out, worker).unlink(missing_ok=True)
    return written


def annotate(source: Path, out: Path, command: str, nodes: int, workers: int) -> int:
    """Add an engine `[%eval]` to every move of every game of ``source``; returns games annotated now."""
    with open_text(source):
        pass  # fail early with a clear message if the file is missing
    jobs = [(str(source), str(out), command, nodes, w, workers) for w in range(workers)]
    return _run_parts(_annotate_part, jobs, out, workers)


def selfplay(out: Path, command: str, nodes: int, games: int, workers: int,
             random_plies: int = SelfPlayOptions.random_plies, seed: int = SelfPlayOptions.seed,
             options: Optional[SelfPlayOptions] = None) -> int:
    """Play ``games`` games of an engine against itself at ``nodes`` per move; returns games played now.

    ``options`` (which then carries the random plies and seed) adds unequal node
    budgets, an opening book and the decisive-game filter.
    """
    options = options or SelfPlayOptions(random_plies, seed)
    if options.book:
        OpeningBook(options.book, options.book_plies)  # fail early with a clear message
    jobs = [(str(out), command, nodes, games, w, workers, options) for w in range(workers)]
    return _run_parts(_selfplay_part, jobs, out, workers, total=games)


def summarize_games(path: Path) -> dict:
    """Games, decisive share and engine-annotated positions of a PGN file, from its text (fast)."""
    games = decisive = positions = 0
    with open_text(path) as handle:
        for line in handle:
            if line.startswith("[Result "):
                games += 1
                decisive += '"1-0"' in line or '"0-1"' in line
            elif not HEADER.match(line):
                positions += line.count("[%eval ")
    return {"games": games, "decisive": decisive, "decisive_share": decisive / games if games else 0.0,
            "annotated_positions": positions}
