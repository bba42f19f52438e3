"""`python -m training agreement`: the positions it asks about (ply, Stockfish's moves only, the validation split,
the seed), the agreement it counts, the failures it names, and a run against the real engine."""

from __future__ import annotations

import io
import json
import random
import shlex
import sys
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest
from click.testing import CliRunner

from training.__main__ import cli
from training.configs import AgreementConfig
from training.data.heldout import Selection, select_positions, wilson_interval
from training.data.split import game_identity
from training.uci.agreement import BAD_ANSWER, ENGINE_CRASHED, NO_MOVE, ask_engine, parse_options

BOOK_PLIES = 4
PERIOD = 3  # small, so that a dozen games have some in the split and some out

#: A UCI engine that plays the first legal move in UCI order, or fails as its option Answer says.
FAKE_ENGINE = '''
import os
import sys
import chess
board, answer = chess.Board(), "first"
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "go" and os.environ.get("FAKE_ENGINE_PIDS"):  # which process answered
        with open(os.environ["FAKE_ENGINE_PIDS"], "a") as pids:
            print(os.getpid(), file=pids)
    if words[0] == "position" and os.environ.get("FAKE_ENGINE_POSITIONS"):  # what it was sent
        with open(os.environ["FAKE_ENGINE_POSITIONS"], "a") as positions:
            print(line.strip(), file=positions)
    if words[0] == "uci":
        print("option name Answer type string default first")
        print("option name TacticalPriors type spin default 50 min 0 max 100")
        print("option name MaterialBlend type spin default 0 min 0 max 100")
        print("uciok")
    elif words[0] == "isready":
        print("readyok")
    elif words[:3] == ["setoption", "name", "Answer"]:
        answer = words[4]
    elif words[0] == "position":
        moves = words.index("moves") if "moves" in words else len(words)
        board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:moves]))
        for move in words[moves + 1:]:
            board.push_uci(move)
    elif words[0] == "go":
        if answer == "crash":
            sys.exit(1)
        first = min(move.uci() for move in board.legal_moves)
        reversed_first = first[2:4] + first[0:2]  # from the square a legal move goes to: never legal
        print("bestmove", {"first": first, "illegal": reversed_first, "unreadable": "zz99", "none": "(none)",
                           "null": "0000"}[answer])
    elif words[0] == "quit":
        break
    sys.stdout.flush()
'''


def annotated_game(seed: int, plies: int = 30) -> chess.pgn.Game:
    """Random moves; after BOOK_PLIES unannotated book moves, every move but one in four carries an [%eval] (the
    rest stand for random opening moves, which carry none)."""
    rng = random.Random(seed)
    game = chess.pgn.Game()
    board, node = chess.Board(), game
    while board.ply() < plies and not board.is_game_over():
        move = rng.choice(sorted(board.legal_moves, key=chess.Move.uci))
        node = node.add_variation(move)
        if board.ply() >= BOOK_PLIES and rng.random() < 0.75:
            node.set_eval(chess.engine.PovScore(chess.engine.Cp(rng.randint(-300, 300)), chess.WHITE))
        board.push(move)
    return game


@pytest.fixture(scope="module")
def games() -> list[chess.pgn.Game]:
    return [annotated_game(seed) for seed in range(12)]


@pytest.fixture(scope="module")
def pgn(games, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("agreement") / "games.pgn"
    path.write_text("\n\n".join(str(game) for game in games) + "\n")
    return path


def held_out(game: chess.pgn.Game) -> bool:
    return game_identity(game, game.mainline_moves()) % PERIOD == 0


def expected_positions(games: list[chess.pgn.Game], from_ply: int, split: bool, played: bool = False
                       ) -> list[tuple[str, str]]:
    """(FEN, Stockfish's move, or with ``played`` any move) of every position the rule takes, in order."""
    positions = []
    for game in games:
        if split and not held_out(game):
            continue
        board = game.board()
        for ply, node in enumerate(game.mainline()):
            if ply >= from_ply and (played or node.eval() is not None):
                positions.append((board.fen(), node.move.uci()))
            board.push(node.move)
    return positions


def positions_of(selection: Selection) -> list[tuple[str, str]]:
    return [(selection.games[number].board_at(ply).fen(), selection.games[number].moves[ply].uci())
            for number, ply in selection.samples]


def test_every_stockfish_move_from_the_ply_on_of_the_held_out_games(games, pgn):
    assert 0 < sum(map(held_out, games)) < len(games)
    for from_ply in (0, 16):
        selection = select_positions([pgn], from_ply=from_ply, count=0, period=PERIOD)
        assert positions_of(selection) == expected_positions(games, from_ply, split=True)
        assert selection.games_read == len(games)
        assert selection.games_in_split == sum(map(held_out, games))
        assert selection.positions_eligible == len(selection.samples)
    everything = select_positions([pgn], from_ply=16, count=0, period=None)
    assert positions_of(everything) == expected_positions(games, 16, split=False)
    assert len(everything.samples) > len(selection.samples)


def test_played_takes_every_move_from_the_ply_on(games, pgn):
    for split in (True, False):
        selection = select_positions([pgn], from_ply=10, count=0, period=PERIOD if split else None, played=True)
        assert positions_of(selection) == expected_positions(games, 10, split, played=True)
        assert len(selection.samples) > len(expected_positions(games, 10, split))


def test_each_position_is_sent_with_its_whole_game(games, pgn, fake_engine, tmp_path, monkeypatch):
    """`position startpos moves ...` with every move of the game before the position, whatever the sample."""
    monkeypatch.setenv("FAKE_ENGINE_POSITIONS", str(tmp_path / "positions"))
    result = CliRunner().invoke(cli, ["agreement", str(pgn), "--played", "--all-games", "--from-ply", "10",
                                      "--count", "12", "--engine", fake_engine, "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["agreement"]["positions"] == 12 and figures["settings"]["moves"] == "played"
    assert figures["eligible"]["positions"] == len(expected_positions(games, 10, split=False, played=True))
    selection = select_positions([pgn], from_ply=10, count=12, period=None, played=True)
    sent = (tmp_path / "positions").read_text().splitlines()
    assert sorted(sent) == sorted(" ".join(["position startpos moves", *(move.uci() for move in
                                                                           selection.games[number].moves[:ply])])
                                  for number, ply in selection.samples)


def test_the_sample_is_seeded_and_keeps_the_history(pgn):
    every = positions_of(select_positions([pgn], count=0, period=None))
    first, again, other = (positions_of(select_positions([pgn], count=10, seed=seed, period=None))
                           for seed in (1, 1, 2))
    assert first == again != other
    assert len(first) == 10 and set(first) <= set(every)
    selection = select_positions([pgn], count=10, period=None)
    number, ply = selection.samples[0]
    assert len(selection.games[number].board_at(ply).move_stack) == ply  # the engine sees the game so far


def test_wilson_interval():
    low, high = wilson_interval(34, 100)
    assert low == pytest.approx(0.2546, abs=1e-4) and high == pytest.approx(0.4372, abs=1e-4)
    assert wilson_interval(0, 10)[0] == pytest.approx(0) and wilson_interval(10, 10)[1] == pytest.approx(1)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_options_are_name_value_pairs_over_the_defaults():
    assert parse_options(["Move Overhead=0", "TacticalPriors=25", "Weights="]) == {
        "TacticalPriors": "25", "MaterialBlend": "0", "Move Overhead": "0", "Weights": ""}
    with pytest.raises(ValueError, match="Name=Value"):
        parse_options(["Threads"])


@pytest.fixture
def fake_engine(tmp_path) -> str:
    """The command line of FAKE_ENGINE."""
    script = tmp_path / "fake_engine.py"
    script.write_text(FAKE_ENGINE)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_agreement_and_failures_are_counted(games, pgn, fake_engine, tmp_path, monkeypatch):
    command = fake_engine
    selection = select_positions([pgn], from_ply=16, count=0, period=None)
    agreed = sum(min(move.uci() for move in chess.Board(fen).legal_moves) == uci
                 for fen, uci in positions_of(selection))
    counts = ask_engine(selection, command, parse_options([]))
    assert counts["asked"] == len(selection.samples) and counts["agreed"] == agreed > 0
    monkeypatch.setenv("FAKE_ENGINE_PIDS", str(tmp_path / "pids"))
    assert ask_engine(selection, command, parse_options([]), workers=3) == counts  # three engines, the same figures
    answered = (tmp_path / "pids").read_text().split()
    assert len(answered) == len(selection.samples) and len(set(answered)) == 3
    monkeypatch.delenv("FAKE_ENGINE_PIDS")
    selection.samples = selection.samples[:2]
    for answer, failure in (("illegal", BAD_ANSWER), ("unreadable", BAD_ANSWER), ("none", NO_MOVE),
                            ("null", NO_MOVE), ("crash", ENGINE_CRASHED)):
        for workers in (1, 2):
            counts = ask_engine(selection, command, parse_options([f"Answer={answer}"]), workers=workers)
            assert counts == {"asked": 2, failure: 2}, (answer, workers)


def test_an_option_the_engine_lacks_is_a_clear_error(pgn, fake_engine):
    result = CliRunner().invoke(cli, ["agreement", str(pgn), "--all-games", "--count", "1", "--engine", fake_engine,
                                      "--option", "NoSuchOption=1"])
    assert result.exit_code == 1 and "NoSuchOption" in result.output and "Traceback" not in result.output


def test_the_engine_end_to_end(games, pgn, driver):
    """The command's count is the engine's own: the same positions asked of an in-process engine with the same
    options agree as often."""
    result = CliRunner().invoke(cli, ["agreement", str(pgn), "--all-games", "--count", "4", "--option",
                                      "Evaluator=material", "--workers", "2", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)  # the progress bars go to stderr
    selection = select_positions([pgn], from_ply=AgreementConfig.from_ply, count=4, seed=AgreementConfig.seed,
                                 period=None)
    engine = driver()
    engine.send(*(f"setoption name {name} value {value}" for name, value in figures["settings"]["options"].items()))
    agreed = 0
    for number, ply in selection.samples:
        moves = [move.uci() for move in selection.games[number].moves]
        engine.send("ucinewgame", "position startpos moves " + " ".join(moves[:ply]))
        agreed += engine.go("go nodes 1").split()[1] == moves[ply]
    assert figures["agreement"]["positions"] == 4 and figures["agreement"]["agreed"] == agreed
    assert figures["agreement"]["percent"] == 25 * agreed
    assert not any(figures["failures"].values())
    assert figures["settings"]["options"] == {"TacticalPriors": "0", "MaterialBlend": "0", "Evaluator": "material"}
    assert figures["eligible"] == {"games_read": len(games), "games_in_split": len(games),
                                   "games_with_positions": len(games),
                                   "positions": len(expected_positions(games, 16, split=False)),
                                   "games_skipped": {}}


def test_a_player_filter_asks_only_about_that_players_moves(games, pgn, tmp_path):
    named = []
    for number, game in enumerate(games):
        game = chess.pgn.read_game(io.StringIO(str(game)))
        game.headers["White"], game.headers["Black"] = ("Carlsen,M", "Rival") if number % 2 else ("Rival", "Carlsen,M")
        named.append(game)
    named[0].headers["White"] = named[0].headers["Black"] = "Somebody Else"
    path = tmp_path / "named.pgn"
    path.write_text("\n\n".join(str(game) for game in named) + "\n")
    selection = select_positions([path], from_ply=10, count=0, period=None, played=True, player="CARLSEN")
    expected = []
    for game in named[1:]:
        colour = chess.WHITE if game.headers["White"] == "Carlsen,M" else chess.BLACK
        board = game.board()
        for ply, node in enumerate(game.mainline()):
            if ply >= 10 and board.turn == colour:
                expected.append((board.fen(), node.move.uci()))
            board.push(node.move)
    assert positions_of(selection) == expected
    assert selection.games_read == len(named) and selection.skipped == {"games without the player": 1}
