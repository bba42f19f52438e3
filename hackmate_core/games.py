"""The one game runner: two movers play from an opening to the game's end, under one set of game-end rules.

The rules are those match runners apply (cutechess, fastchess): checkmate, stalemate and insufficient
material end the game, and so do the fifty-move rule once a hundred half-moves have passed without a
capture or pawn move (a mate on the hundredth still counts) and threefold repetition once the position
stands on the board for the third time. python-chess's ``claim_draw=True`` would also end a game where
the side to move could complete either with its next move, one move early, and tries every legal move
to find out. A game
that reaches the ply cap is drawn by adjudication. A mover loses by an illegal move, or by raising
:class:`Forfeit` (out of time, a crashed engine). The searches score repetitions inside their tree by
their own policy (:mod:`hackmate_core.rules`); that policy judges lines, never ends a game.

Matches between UCI engines (``tools.match``) keep their clocks in their movers and end decided games
early through the ``adjudicate`` hook; the training package plays its self-play games (UCI engines for
data, networks for reinforcement learning) and its evaluation games through the same runner, a mover
recording what it needs of each move and the ``on_move`` hook doing the trainer's work between moves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Optional

import chess
import chess.pgn

#: Plies after the opening at which a game is drawn.
MAX_PLIES = 400

#: After each move, the game so far: ``(result, termination)`` to end it there, or None to play on.
Adjudicator = Callable[[chess.Board], Optional[tuple[str, str]]]
#: After each move, the board it was played on (the move on its stack; not to be modified) and the move.
MoveHook = Callable[[chess.Board, chess.Move], None]

WHITE_SCORES = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}


class Mover(ABC):
    """Something that picks a move in a position: an engine, a network, a random mover."""

    name: str = "mover"

    @abstractmethod
    def choose(self, board: chess.Board) -> chess.Move:
        """A legal move of ``board`` (which must not be modified); raise :class:`Forfeit` to lose instead."""

    def new_game(self) -> None:
        """Forget the previous game."""

    def close(self) -> None:
        """Release processes and files."""


class Forfeit(Exception):
    """A mover loses without a move; the message, e.g. 'time forfeit', is the game's termination."""


def outcome(board: chess.Board) -> Optional[chess.Outcome]:
    """How the game ends in ``board`` by the rules (see the module docstring), or None while it goes on."""
    ended = board.outcome()  # checkmate first, then insufficient material, stalemate, 75 moves, fivefold
    if ended is None and board.is_fifty_moves():
        return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
    if ended is None and board.is_repetition(3):
        return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
    return ended


def white_score(board: chess.Board) -> Optional[float]:
    """White's score (1, 0.5, 0) when the game is over by the rules, else None."""
    ended = outcome(board)
    return None if ended is None else WHITE_SCORES[ended.result()]


@dataclass
class GameRecord:
    """A finished game: where it started, the moves played, its result ('1-0', '1/2-1/2', '0-1') and why it ended."""

    opening: chess.Board
    moves: list[chess.Move]
    result: str
    termination: str

    @property
    def white_score(self) -> float:
        return WHITE_SCORES[self.result]

    def pgn(self, **headers: str) -> chess.pgn.Game:
        """The game as PGN, the opening's own moves included, with ``headers`` and its Result and Termination."""
        game = chess.pgn.Game.from_board(self.opening)
        node: chess.pgn.GameNode = game.end()
        for move in self.moves:
            node = node.add_variation(move)
        game.headers.update({**headers, "Result": self.result, "Termination": self.termination})
        return game


def play_game(white: Mover, black: Mover, opening: chess.Board, max_plies: int = MAX_PLIES,
              adjudicate: Optional[Adjudicator] = None, on_move: Optional[MoveHook] = None) -> GameRecord:
    """One game from ``opening`` (its move stack counts for repetitions) to its end.

    In each position the rules come first, then ``adjudicate``, then the ply cap; ``on_move`` after each move.
    """
    board = opening.copy()
    moves: list[chess.Move] = []
    white.new_game()
    black.new_game()
    while True:
        ended = outcome(board)
        if ended is not None:
            return GameRecord(opening, moves, ended.result(), "normal")
        verdict = adjudicate(board) if adjudicate else None
        if verdict is not None:
            return GameRecord(opening, moves, *verdict)
        if len(moves) >= max_plies:
            return GameRecord(opening, moves, "1/2-1/2", "adjudication (ply limit)")
        mover, loss = (white, "0-1") if board.turn == chess.WHITE else (black, "1-0")
        try:
            move = mover.choose(board)
        except Forfeit as reason:
            return GameRecord(opening, moves, loss, str(reason))
        if not board.is_legal(move):
            return GameRecord(opening, moves, loss, f"rules infraction (illegal move {move} by {mover.name})")
        board.push(move)
        moves.append(move)
        if on_move is not None:
            on_move(board, move)
