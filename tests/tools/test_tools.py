"""The match runner's adjudication, the openings loader and the EPD test-suite runner."""

from __future__ import annotations

import sys

import chess
import chess.engine
import pytest
from click.testing import CliRunner

from engine.options import DEFAULT_THREADS
from hackmate_core.epd import BadLine, EpdPosition, InputError, read_epd
from hackmate_core.openings import load_openings
from tools.match import Adjudication, cli as match_cli, with_thread_share
from tools.suite import cli as suite_cli, is_solved, load_suite, run_suite

LATE = chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 60")  # past move 40
EARLY = chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 20")


def test_resign_needs_both_engines_to_agree_for_three_moves_each():
    rules = Adjudication()
    assert rules.verdict(EARLY, [1200] * 6) == ("1-0", "adjudication (resign)")
    assert rules.verdict(EARLY, [-100_000] * 6) == ("0-1", "adjudication (resign)")
    assert rules.verdict(EARLY, [1200] * 5) is None  # not yet three moves each
    assert rules.verdict(EARLY, [1200, 1200, 900, 1200, 1200, 1200]) is None  # one engine disagreed
    assert rules.verdict(EARLY, [1200, 1200, None, 1200, 1200, 1200]) is None  # a move without a score


def test_draw_only_late_and_near_equal():
    rules = Adjudication()
    assert rules.verdict(LATE, [5, -3] * 8) == ("1/2-1/2", "adjudication (draw)")
    assert rules.verdict(EARLY, [5, -3] * 8) is None
    assert rules.verdict(LATE, [5, -30] * 8) is None
    assert Adjudication(draw_moves=0, resign_moves=0).verdict(LATE, [0] * 20) is None


def test_suite_scoring(tmp_path):
    epd = tmp_path / "suite.epd"
    epd.write_text('6k1/5ppp/8/8/8/8/8/R5K1 w - - bm Ra8#; id "back rank";\n'
                   '4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - am Qxd5; id "poisoned";\n'
                   '4k3/8/8/8/8/8/8/4K3 w - - id "no opcode";\n')
    positions, unscored = load_suite(epd)
    assert len(positions) == 2 and unscored == 1
    ops = positions[0].operations
    assert is_solved(chess.Move.from_uci("a1a8"), ops) and not is_solved(chess.Move.from_uci("a1a7"), ops)
    assert not is_solved(None, ops)
    command = [sys.executable, "-m", "engine", "--eval", "material", "--search", "alphabeta"]
    result = run_suite(command, {}, positions, chess.engine.Limit(nodes=3000))
    assert (result.solved, result.total) == (2, 2) and result.nodes > 0


def test_suite_rejects_a_malformed_line(tmp_path):
    epd = tmp_path / "bad.epd"
    epd.write_text("this is not a position bm e4;\n")
    with pytest.raises(InputError, match="1 of 1 lines are not legal positions:\n  line 1: "):
        load_suite(epd)
    result = CliRunner().invoke(suite_cli, [str(epd)])
    assert result.exit_code == 1 and "Error:" in result.output and "line 1" in result.output


def test_the_epd_reader_names_every_line_it_cannot_read():
    lines = ['6k1/5ppp/8/8/8/8/8/R5K1 w - - bm Ra8#; id "m1";', "", "garbage", "8/8/8/8/8/8/8/8 w - -",
             "4k3/8/8/8/8/8/8/4K3 b - - ce 12;"]
    first, garbage, kingless, last = read_epd(lines)
    assert isinstance(first, EpdPosition) and first.line == 1 and first.operations["id"] == "m1"
    assert first.operations["bm"] == [chess.Move.from_uci("a1a8")]
    assert isinstance(garbage, BadLine) and garbage.line == 3
    assert isinstance(kingless, BadLine) and str(kingless).startswith("line 4: not a legal position")
    assert isinstance(last, EpdPosition) and last.line == 5 and last.operations == {"ce": 12}


def test_match_openings_list_every_unplayable_line(tmp_path):
    epd = tmp_path / "openings.epd"
    epd.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"e4\";\n"
                   "\n"
                   "this is not a position\n"
                   "8/8/8/8/8/8/8/8 w - -\n"
                   "7k/5QQ1/8/8/8/8/8/K7 b - -\n")
    with pytest.raises(InputError) as raised:
        load_openings(epd, 0, 1)
    message = str(raised.value)
    assert message.startswith(f"{epd}: 3 of 4 lines are not playable openings")
    assert "line 3: expected 'w' or 'b'" in message and "line 4: not a legal position" in message
    assert "line 5: the game is already over" in message and "line 1" not in message

    result = CliRunner().invoke(match_cli, ["--opponent", "self", "--openings", str(epd)])
    assert isinstance(result.exception, SystemExit), result.exception  # a clean exit, no traceback
    assert result.exit_code == 1 and "Error:" in result.output and "line 3" in result.output


def test_match_openings_name_the_pgn_game_with_an_illegal_move(tmp_path):
    pgn = tmp_path / "openings.pgn"
    pgn.write_text('[Result "*"]\n\n1. e4 e5 *\n\n[Result "*"]\n\n1. e4 e5 2. Ke3 *\n')
    with pytest.raises(InputError, match=r"1 of 2 games .*\n  game 2: illegal san: 'Ke3'"):
        load_openings(pgn, 0, 1)
    (tmp_path / "empty.epd").write_text("\n")
    with pytest.raises(InputError, match="no opening positions"):
        load_openings(tmp_path / "empty.epd", 0, 1)


def test_match_gives_each_of_our_engines_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert with_thread_share({}, 2) == {"Threads": "1"}  # two games at a time on two cores
    assert with_thread_share({"Hash": "16"}, 1) == {"Hash": "16", "Threads": "2"}
    assert with_thread_share({"threads": "3"}, 2) == {"threads": "3"}  # given: kept
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert with_thread_share({}, 1)["Threads"] == str(DEFAULT_THREADS)  # never above the default
