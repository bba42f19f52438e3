"""Producing training data with UCI engines: annotating PGN and self-play.

Both write lichess-style PGN, every engine move carrying ``{ [%eval X] }`` from
White's point of view, which training.pgn reads back. Work is split across
processes, one engine each, into part files that are concatenated at the end;
a rerun skips the games a part already holds, so an interrupted job resumes.
"""

from __future__ import annotations

import random
import shlex
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import chess
import chess.engine
import chess.pgn

from training.pgn import iter_games, open_text, ReadStats


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
    engine = chess.engine.SimpleEngine.popen_uci(shlex.split(command))
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


def _selfplay_part(args: tuple) -> int:
    out, command, nodes, games, worker, workers, random_plies, seed = args
    part = _part(Path(out), worker)
    mine = len(range(worker, games, workers))
    done = _count_games(part)
    rng = random.Random(seed * 1000 + worker * 7 + done)
    engine = chess.engine.SimpleEngine.popen_uci(shlex.split(command))
    try:
        with open(part, "a", encoding="utf-8") as handle:
            for round_number in range(done, mine):
                board = chess.Board()
                game = chess.pgn.Game()
                node: chess.pgn.GameNode = game
                while not board.is_game_over(claim_draw=True) and board.ply() < 400:
                    if board.ply() < random_plies:  # random opening plies for variety
                        move = rng.choice(list(board.legal_moves))
                        node = node.add_variation(move)
                    else:
                        result = engine.play(board, chess.engine.Limit(nodes=nodes), info=chess.engine.INFO_SCORE)
                        move = result.move
                        node = node.add_variation(move)
                        if result.info.get("score") is not None:
                            node.set_eval(result.info["score"])
                    board.push(move)
                outcome = board.outcome(claim_draw=True)
                game.headers.update({"Event": "hackmate self-play", "Round": f"{worker}.{round_number + 1}",
                                     "White": command, "Black": command, "Annotator": f"nodes={nodes}",
                                     "Result": outcome.result() if outcome else "1/2-1/2"})
                print(game, file=handle, end="\n\n", flush=True)
    finally:
        engine.quit()
    return mine - done


def _run_parts(function, jobs: list[tuple], out: Path, workers: int) -> int:
    from tqdm import tqdm
    written = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for count in tqdm(pool.map(function, jobs), total=len(jobs), desc="workers", unit="part"):
            written += count
    with open(out, "w", encoding="utf-8") as handle:
        for worker in range(workers):
            part = _part(out, worker)
            if part.exists():
                handle.write(part.read_text(encoding="utf-8"))
    for worker in range(workers):
        _part(out, worker).unlink(missing_ok=True)
    return written


def annotate(source: Path, out: Path, command: str, nodes: int, workers: int) -> int:
    """Add an engine `[%eval]` to every move of every game of ``source``; returns games annotated now."""
    with open_text(source):
        pass  # fail early with a clear message if the file is missing
    jobs = [(str(source), str(out), command, nodes, w, workers) for w in range(workers)]
    return _run_parts(_annotate_part, jobs, out, workers)


def selfplay(out: Path, command: str, nodes: int, games: int, workers: int, random_plies: int = 6,
             seed: int = 1) -> int:
    """Play ``games`` games of an engine against itself at ``nodes`` per move; returns games played now."""
    jobs = [(str(out), command, nodes, games, w, workers, random_plies, seed) for w in range(workers)]
    return _run_parts(_selfplay_part, jobs, out, workers)
