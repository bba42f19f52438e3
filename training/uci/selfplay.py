"""Producing training data with UCI engines: annotating PGN and self-play.

Both write lichess-style PGN, every engine move carrying ``{ [%eval X] }`` from White's point of view, which
training.data.pgn reads back; the output is compressed when its name ends in .xz, .gz or .bz2, as the shared
corpus's ``sf15-selfplay-*.pgn.xz`` parts are.

Self-play plays each game as one piece of work for a worker with its own engine (training.uci.workers: local
processes, or a Ray cluster with ``ray``), through hackmate_core.games (its game-end rules and ply cap), openings from
hackmate_core.openings' book. Game N's opening, random plies and node budget come from the seed and N alone, and the
engine starts it from a cleared hash (``ucinewgame``), so a game is the same whichever worker plays it. Each game is
appended whole to ``OUT.part`` as soon as it comes back, so a stopped run, or a worker lost mid-run, costs only the
games being played; a rerun plays the games the part lacks, and the finished file holds every game in the order of
its number (its ``Round``), the same for any workers, local or on Ray. Annotation splits the games among processes,
one engine each, into part files joined at the end; a rerun skips the games a part already holds.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from concurrent.futures import wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import chess
import chess.engine
import chess.pgn

from hackmate_core.games import MAX_PLIES, Mover, play_game
from hackmate_core.openings import OpeningBook
from hackmate_core.textfiles import create_text
from training.configs import SelfPlayOptions
from training.data.pgn import ReadStats, decisive_result, iter_games, open_text
from training.processes import process_pool
from training.engines import EngineFailure, start_engine
from training.uci.workers import WorkLost, as_finished, drop_worker_engine, worker_engine, workers_for

HEADER = re.compile(r'\[\w+ "')  # a PGN tag pair; a wrapped comment line may start with "[%eval"
#: Seconds between two looks at the part files for annotation's progress bar.
PROGRESS_EVERY_S = 5.0
#: A whole self-play game in a part file: its tags (the Round its number + 1), its moves and its result.
FINISHED_GAME = re.compile(r'\[Event [^\n]*\n(?:\[[^\n]*\n)*?\[Round "(\d+)"\]\n'
                           r'.*?(?:1-0|0-1|1/2-1/2|\*)\n\n(?=\[Event |\Z)', re.S)


def _count_games(path: Path) -> int:
    """The games in a PGN file so far (0 for none): what an annotation part holds, from its text."""
    if not path.exists():
        return 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.startswith("[Event "))


def _part(out: Path, worker: int) -> Path:
    """Annotation worker ``worker``'s part file of ``out``."""
    return out.with_name(f"{out.name}.part{worker}")


def _annotate_part(args: tuple[str, str, str, int, int, int]) -> int:
    """Annotate every ``workers``-th game of ``source`` from the ``worker``-th into that worker's part, after the
    games the part already holds; returns the games annotated now."""
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
    node budget, from a cleared hash (a new game for the engine); the engine's score of each of its moves is kept
    for the game's PGN (None for the others)."""

    def __init__(self, engine: chess.engine.SimpleEngine, opening: list[chess.Move], random_end: int,
                 budget: dict[chess.Color, int], rng: random.Random) -> None:
        self.engine, self.opening, self.random_end, self.budget, self.rng = engine, opening, random_end, budget, rng
        self.scores: list[Optional[chess.engine.PovScore]] = []
        self.game = object()

    def new_game(self) -> None:
        self.game = object()  # python-chess sends ucinewgame for a new game object: the engine forgets the last

    def choose(self, board: chess.Board) -> chess.Move:
        score = None
        if board.ply() < len(self.opening):
            move = self.opening[board.ply()]
        elif board.ply() < self.random_end:  # random opening plies for variety
            move = self.rng.choice(list(board.legal_moves))
        else:
            result = self.engine.play(board, chess.engine.Limit(nodes=self.budget[board.turn]),
                                      info=chess.engine.INFO_SCORE, game=self.game)
            move, score = result.move, result.info.get("score")
        self.scores.append(score)
        return move


@dataclass(frozen=True)
class SelfPlayGame:
    """Game ``number`` (from 0) of a self-play run: all a worker needs to play it."""

    command: str
    nodes: int
    options: SelfPlayOptions
    number: int


_BOOKS: dict[tuple[str, int], OpeningBook] = {}


def play_selfplay_game(job: SelfPlayGame) -> str:
    """Game ``job.number`` as PGN text, played by this worker's engine; with ``decisive_only`` its tries go on until
    one is decisive. Everything random comes from the seed and the game's number."""
    options = job.options
    rng = random.Random(f"{options.seed}:{job.number}")
    book = None
    if options.book:
        book = _BOOKS.get((options.book, options.book_plies))
        if book is None:
            book = _BOOKS[options.book, options.book_plies] = OpeningBook(options.book, options.book_plies)
    engine = worker_engine(job.command)
    try:
        while True:
            plies = rng.randint(options.book_min_plies, options.book_plies) if options.book_min_plies else 0
            opening = book.line(rng, plies) if book else []
            random_plies = options.random_plies if options.random_share >= 1 or \
                rng.random() < options.random_share else 0
            game_nodes = rng.choice(options.node_budgets) if options.node_budgets else job.nodes
            budget = {chess.WHITE: game_nodes, chess.BLACK: game_nodes}
            if options.node_ratio != 1:  # the weaker colour alternates with the game number
                budget[chess.BLACK if job.number % 2 == 0 else chess.WHITE] = \
                    max(1, round(game_nodes / options.node_ratio))
            mover = SelfPlayMover(engine, opening, len(opening) + random_plies, budget, rng)
            record = play_game(mover, mover, chess.Board(), MAX_PLIES)
            game = chess.pgn.Game()
            node: chess.pgn.GameNode = game
            for move, score in zip(record.moves, mover.scores):
                node = node.add_variation(move)
                if score is not None:
                    node.set_eval(score)
            annotator = f"nodes={game_nodes}" if options.node_ratio == 1 else \
                f"nodes white={budget[chess.WHITE]} black={budget[chess.BLACK]}"
            game.headers.update({"Event": "hackmate self-play", "Round": str(job.number + 1), "White": job.command,
                                 "Black": job.command, "Annotator": annotator, "Result": record.result})
            if not options.decisive_only or decisive_result(game) is not None:
                return f"{game}\n\n"
    except chess.engine.EngineError as error:
        drop_worker_engine(engine)
        raise EngineFailure(f"the engine {job.command!r} failed in game {job.number + 1}: {error!r}") from None


def _run_parts(function: Callable[[tuple], int], jobs: list[tuple], out: Path, workers: int) -> int:
    """Run one job per worker, each writing its part file, then join the parts into ``out`` (compressed as its
    name says). The progress bar counts the games in the parts, read every few seconds."""
    from tqdm import tqdm

    def games_so_far() -> int:
        return sum(_count_games(_part(out, worker)) for worker in range(workers))

    with process_pool(workers) as pool, \
            tqdm(initial=games_so_far(), desc=out.name, unit="game") as bar:
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
             options: Optional[SelfPlayOptions] = None, ray: Optional[str] = None) -> int:
    """Play ``games`` games of an engine against itself at ``nodes`` per move on ``workers`` local processes, or
    on the Ray cluster ``ray`` (training.uci.workers); returns the games played now.

    ``options`` (which then carries the random plies and seed) adds unequal node budgets, an opening book and the
    decisive-game filter. A game lost with its worker stops the run at the end with :class:`WorkLost`, every
    finished game kept in ``OUT.part`` for the rerun.
    """
    from tqdm import tqdm
    options = options or SelfPlayOptions(random_plies, seed)
    if options.book:
        OpeningBook(options.book, options.book_plies)  # fail early with a clear message
    part = out.with_name(out.name + ".part")
    finished = finished_games(part)
    jobs = [SelfPlayGame(command, nodes, options, number) for number in range(games) if number not in finished]
    played, lost = 0, []
    pool = workers_for(ray, workers) if jobs else None
    try:
        with open(part, "ab", buffering=0) as handle, \
                tqdm(total=games, initial=games - len(jobs), desc=out.name, unit="game") as bar:
            for job, outcome in (as_finished(pool, play_selfplay_game, jobs) if pool else ()):
                if isinstance(outcome, WorkLost):
                    lost.append(outcome)
                    continue
                handle.write(outcome.encode())  # one write of the whole game: a part never ends mid-game
                finished[job.number] = outcome
                played += 1
                bar.update()
    finally:
        if pool is not None:
            pool.close()
    if lost:
        raise WorkLost(f"games lost with their workers: {len(lost)} ({lost[0]}); the {len(finished)} finished are "
                       f"kept in {part}: run the same command again to play the rest")
    temporary = out.with_name(out.name + ".tmp")
    with create_text(temporary, out.suffix) as handle:
        for number in sorted(finished):
            handle.write(finished[number])
    os.replace(temporary, out)
    part.unlink()
    return played


def finished_games(part: Path) -> dict[int, str]:
    """The whole games of a self-play part file by number; text after the last whole game (a write cut off) is
    removed from the file."""
    if not part.exists():
        return {}
    text = part.read_bytes().decode("utf-8", errors="replace")
    games = {int(match.group(1)) - 1: match.group(0) for match in FINISHED_GAME.finditer(text)}
    kept = "".join(games.values())
    if len(kept) != len(text):
        temporary = part.with_name(part.name + ".tmp")
        temporary.write_bytes(kept.encode())
        os.replace(temporary, part)
    return games


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
