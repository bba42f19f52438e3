"""Games between movers, played in-process: networks alone or through PUCT, a random mover, Stockfish.

The three trainers use it for their evaluation games (DQN against a random
mover, PPO against Stockfish's `Skill Level`, AlphaZero's gating matches) and
`python -m training rl-eval` for the reported results. A :class:`MoverSpec` is
a picklable recipe, so that matches run in worker processes that build their
own networks and engines. Games are played by :mod:`hackmate_core.games`, the
runner and game-end rules that matches use too (draws as an arbiter grants
them: fifty moves and threefold repetition once claimable), drawn at a ply limit.
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import chess
import chess.engine

from evaluators.base import Evaluator
from hackmate_core.elo import MatchStats
from hackmate_core.games import MAX_PLIES, GameRecord, Mover, play_game
from hackmate_core.openings import load_openings as openings_of_file, random_openings
from hackmate_core.uci_engines import find_stockfish
from search.base import SearchControl
from training.processes import process_pool
from training.engines import start_engine


class RandomMover(Mover):
    """A uniformly random legal move: the baseline the DQN paper reports against."""

    def __init__(self, seed: int) -> None:
        self.name = "random"
        self.rng = random.Random(seed)

    def choose(self, board: chess.Board) -> chess.Move:
        return self.rng.choice(list(board.legal_moves))


class PolicyMover(Mover):
    """An evaluator alone: the legal move with the highest prior (for a DQN, the greedy move)."""

    def __init__(self, evaluator: Evaluator, name: str) -> None:
        self.evaluator, self.name = evaluator, name

    def choose(self, board: chess.Board) -> chess.Move:
        priors = self.evaluator.evaluate(board).priors
        if not priors:
            raise ValueError(f"{self.name} gives no move priors")
        return max(priors, key=priors.__getitem__)

    def new_game(self) -> None:
        self.evaluator.new_game()


class SearchMover(Mover):
    """An evaluator through PUCT at a fixed node budget per move."""

    def __init__(self, evaluator: Evaluator, nodes: int, name: str) -> None:
        from search.puct import PuctSearch
        self.evaluator, self.nodes, self.name = evaluator, nodes, name
        self.search = PuctSearch(evaluator)

    def choose(self, board: chess.Board) -> chess.Move:
        move = self.search.search(board, SearchControl(max_nodes=self.nodes), lambda info: None).best_move
        assert move is not None, "the search found no move in a position with legal moves"
        return move

    def new_game(self) -> None:
        self.evaluator.new_game()
        self.search.new_game()


class EngineMover(Mover):
    """A UCI engine (Stockfish at a `Skill Level`) at a fixed node budget per move."""

    def __init__(self, command: str, options: dict[str, object], nodes: int, name: str) -> None:
        self.name, self.nodes = name, nodes
        self.engine = start_engine(command, options)
        self.game = 0

    def choose(self, board: chess.Board) -> chess.Move:
        move = self.engine.play(board, chess.engine.Limit(nodes=self.nodes), game=self.game).move
        if move is None:
            raise chess.engine.EngineError(f"{self.name} returned no move in {board.fen()}")
        return move

    def new_game(self) -> None:
        self.game += 1  # a new game key makes python-chess send ucinewgame

    def close(self) -> None:
        self.engine.quit()


def stockfish(skill: int, nodes: int) -> EngineMover:
    """Stockfish at ``Skill Level`` ``skill`` (0-20), one thread, ``nodes`` nodes a move."""
    command = find_stockfish()
    if command is None:
        raise FileNotFoundError("stockfish not found (apt-get install stockfish, or put it on PATH)")
    return EngineMover(shlex.quote(command), {"Skill Level": skill, "Threads": 1, "Hash": 16}, nodes,
                       f"stockfish-skill{skill}")


def evaluator_mover(evaluator: Evaluator, nodes: int, name: str) -> Mover:
    """The evaluator alone (``nodes`` 0) or through PUCT with ``nodes`` nodes a move."""
    return PolicyMover(evaluator, name) if nodes == 0 else SearchMover(evaluator, nodes, name)


@dataclass(frozen=True)
class MoverSpec:
    """A picklable recipe for a mover.

    ``kind``: ``random``; ``stockfish`` (at ``skill``, ``engine_nodes`` a move);
    ``network`` (the bare ResNet of the ONNX file ``weights``, no heuristic
    blend: what AlphaZero self-play and gating use); or the name of an engine
    evaluator (``--eval`` of :mod:`engine`, with ``weights`` or its shipped
    file), configured as the engine plays it. Evaluators play alone when
    ``nodes`` is 0, through PUCT otherwise.
    """

    kind: str
    weights: str = ""
    nodes: int = 0
    skill: int = 0
    engine_nodes: int = 20_000

    @property
    def label(self) -> str:
        if self.kind == "random":
            return "random"
        if self.kind == "stockfish":
            return f"stockfish-skill{self.skill}"
        name = self.kind + (f":{self.weights}" if self.weights else "")
        return name + (f"+puct{self.nodes}" if self.nodes else " (greedy)")

    def build(self, seed: int) -> Mover:
        if self.kind == "random":
            return RandomMover(seed)
        if self.kind == "stockfish":
            return stockfish(self.skill, self.engine_nodes)
        if self.kind == "network":
            from evaluators.resnet import ResNetEvaluator
            return evaluator_mover(ResNetEvaluator(Path(self.weights)), self.nodes, self.label)
        from engine.backends import build_evaluator
        evaluator = build_evaluator(self.kind, self.weights or None)
        if not isinstance(evaluator, Evaluator):
            raise ValueError(f"{self.kind} is not a scalar evaluator with priors")
        return evaluator_mover(evaluator, self.nodes, self.label)


def load_openings(path: Optional[Path], count: int, plies: int, seed: int) -> list[chess.Board]:
    """Openings from a PGN (its first ``plies`` plies) or EPD file, or ``plies`` random plies without one
    (hackmate_core.openings)."""
    return random_openings(count, plies, seed) if path is None else openings_of_file(path, count, seed, plies)


def _play_one(job: tuple) -> tuple[int, GameRecord, str, str]:
    index, first, second, opening, max_plies, seed = job
    movers = [first.build(seed * 1_000_003 + 2 * index), second.build(seed * 1_000_003 + 2 * index + 1)]
    try:
        white, black = movers if index % 2 == 0 else movers[::-1]
        return index, play_game(white, black, opening, max_plies), white.name, black.name
    finally:
        for mover in movers:
            mover.close()


def play_match(first: MoverSpec, second: MoverSpec, openings: list[chess.Board], games: int,
               max_plies: int = MAX_PLIES, workers: int = 1, seed: int = 1, pgn: Optional[Path] = None,
               desc: str = "games") -> MatchStats:
    """``games`` games with paired openings (each opening twice, colours swapped); ``first``'s W/D/L."""
    from tqdm import tqdm
    jobs = [(i, first, second, openings[(i // 2) % len(openings)], max_plies, seed) for i in range(games)]
    stats = MatchStats(0, 0, 0)
    handle = open(pgn, "w", encoding="utf-8") if pgn else None
    results: Iterable[tuple[int, GameRecord, str, str]]
    pool = None
    if workers > 1:
        pool = process_pool(workers)
        results = pool.map(_play_one, jobs)
    else:
        results = map(_play_one, jobs)
    try:
        bar = tqdm(results, total=games, desc=desc, unit="game")
        for index, record, white, black in bar:
            score = record.white_score if index % 2 == 0 else 1.0 - record.white_score
            stats.wins += score == 1.0
            stats.draws += score == 0.5
            stats.losses += score == 0.0
            bar.set_postfix_str(f"W {stats.wins} D {stats.draws} L {stats.losses}")
            if handle:
                game = record.pgn(Event="hackmate rl", Round=str(index + 1), White=white, Black=black)
                print(game, file=handle, end="\n\n", flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if handle:
            handle.close()
    return stats
