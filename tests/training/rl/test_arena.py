"""training.rl.arena, games between movers: rules, illegal moves, paired colours, and the `rl-eval` report."""

from __future__ import annotations

import chess
from click.testing import CliRunner

from tests.conftest import needs_stockfish
from hackmate_core.games import Mover, play_game
from hackmate_core.openings import random_openings
from training.rl.arena import MoverSpec, RandomMover, play_match


class Fixed(Mover):
    """Plays the given moves in order."""

    def __init__(self, moves: list[str]) -> None:
        self.moves = [chess.Move.from_uci(m) for m in moves]

    def choose(self, board: chess.Board) -> chess.Move:
        return self.moves.pop(0)


def test_games_end_by_rule_by_illegal_move_or_at_the_ply_limit():
    mated = play_game(Fixed(["f2f3", "g2g4"]), Fixed(["e7e5", "d8h4"]), chess.Board())
    assert mated.white_score == 0.0 and mated.termination == "normal"
    illegal = play_game(Fixed(["e2e5"]), RandomMover(1), chess.Board())
    assert illegal.white_score == 0.0 and illegal.termination == "rules infraction (illegal move e2e5 by mover)"
    long = play_game(RandomMover(1), RandomMover(2), chess.Board(), max_plies=10)
    assert long.white_score == 0.5 and long.termination == "adjudication (ply limit)" and len(long.moves) == 10
    game = long.pgn(White="a", Black="b")
    assert game.headers["Result"] == "1/2-1/2" and len(list(game.mainline_moves())) == 10


def test_matches_pair_openings_and_count_from_the_first_players_view():
    openings = random_openings(2, 4, seed=3)
    assert len(openings) == 2 and all(board.ply() == 4 for board in openings)
    stats = play_match(MoverSpec("material"), MoverSpec("random"), openings, 4, max_plies=30)
    assert stats.games == 4


@needs_stockfish
def test_rl_eval_reports_every_player_against_every_opponent():
    from training.__main__ import cli
    result = CliRunner().invoke(cli, ["rl-eval", "--player", "material", "--player", "pst", "--games", "2",
                                      "--max-plies", "20", "--stockfish-nodes", "100", "--workers", "1"])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if "(greedy)" in line]
    assert [(row[0], row[2]) for row in rows] == [("material", "random"), ("material", "stockfish-skill0"),
                                                  ("pst", "random"), ("pst", "stockfish-skill0")]
    assert all(sum(int(n) for n in row[3:6]) == 2 for row in rows)
