"""Games under an external match runner: fastchess keeps the clocks and judges every move, as a GUI does.

fastchess is not part of the repository: it is found through the FASTCHESS environment variable, on PATH,
or at ../shared/bin/fastchess beside the repository; the tests are skipped without it or without Stockfish.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import chess.pgn
import pytest

from tests.conftest import FIXTURES, ROOT, needs_stockfish, stockfish_path

#: What fastchess prints (lower-cased) when an engine breaks the rules or the protocol; its lines name the engine.
FAULTS = ("loses on time", "illegal move", "disconnects", "stalls", "crashed", "warning")


@functools.lru_cache(maxsize=None)
def find_fastchess() -> Optional[str]:
    """The fastchess binary that runs on this machine, if any."""
    for candidate in (os.environ.get("FASTCHESS"), shutil.which("fastchess"),
                      str(ROOT.parent / "shared" / "bin" / "fastchess")):
        if candidate and os.access(candidate, os.X_OK):
            try:
                subprocess.run([candidate, "-version"], capture_output=True, timeout=10, check=True)
            except (OSError, subprocess.SubprocessError):
                continue
            return candidate
    return None


needs_fastchess = pytest.mark.skipif(find_fastchess() is None,
                                     reason="fastchess not found (set FASTCHESS, put it on PATH, "
                                            "or place it at ../shared/bin/fastchess)")


def play(tmp_path: Path, engine_args: str, rounds: int, games_per_round: int, tc: str) -> tuple[str, list]:
    """Our engine against Stockfish (UCI_Elo 1500) under fastchess, one game at a time; (output, games).

    Games are cut short as cutechess-cli users do (resign at 1000 cp for 3 moves, a draw at move 40)
    so that the test stays short; every move until then is on the clock.
    """
    pgn = tmp_path / "games.pgn"
    command = [
        find_fastchess(),
        "-engine", f"cmd={sys.executable}", f"args=-m engine {engine_args}", "name=hackmate", f"dir={ROOT}",
        # Stockfish's own 10 ms overhead is not enough on a loaded 2-core machine; its forfeits are not ours.
        "-engine", f"cmd={stockfish_path()}", "name=stockfish", "option.UCI_LimitStrength=true",
        "option.UCI_Elo=1500", "option.Threads=1", "option.Move Overhead=200",
        "-each", "proto=uci", f"tc={tc}",
        "-rounds", str(rounds), "-games", str(games_per_round), "-concurrency", "1",
        "-openings", f"file={FIXTURES / 'games.pgn'}", "format=pgn", "plies=8", "order=sequential",
        "-maxmoves", "40", "-resign", "movecount=3", "score=1000", "twosided=true",
        "-pgnout", f"file={pgn}", "-autosaveinterval", "0",
    ]
    finished = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output[-3000:]
    games = []
    with open(pgn) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    return output, games


def assert_clean(output: str, games: list, expected: int) -> None:
    """No time forfeit, illegal move, disconnect or crash of ours, and every recorded move legal."""
    assert len(games) == expected, output[-3000:]
    for game in games:
        ours_white = game.headers["White"] == "hackmate"
        termination = game.headers.get("Termination", "")
        we_lost = game.headers["Result"] == ("0-1" if ours_white else "1-0")
        if we_lost or termination == "abandoned":
            assert termination in ("normal", "adjudication"), f"{termination}\n{game}"
        assert not game.errors, game.errors  # python-chess replays every move: all were legal
    counts = re.search(r"Player: hackmate\s+Timeouts: (\d+)\s+Crashed: (\d+)", output)  # printed after a fault
    assert counts is None or counts.groups() == ("0", "0"), output[-3000:]
    faulty = [line for line in output.splitlines() if "hackmate" in line and any(f in line.lower() for f in FAULTS)]
    assert not faulty, faulty


@needs_fastchess
def test_fastchess_compliance_check_passes():
    """fastchess's own UCI conformance steps (uci, isready, position, go with each clock form, ucinewgame)."""
    finished = subprocess.run([find_fastchess(), "--compliance", sys.executable, "-m engine"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert "Engine passed all compliance checks" in finished.stdout, finished.stdout[-3000:]


@pytest.mark.slow
@needs_fastchess
@needs_stockfish
def test_material_alphabeta_plays_four_clean_games_at_5s(tmp_path):
    output, games = play(tmp_path, "--eval material --search alphabeta", rounds=2, games_per_round=2,
                         tc="5+0.05")
    assert_clean(output, games, 4)


@pytest.mark.slow
@needs_fastchess
@needs_stockfish
def test_default_network_plays_a_clean_game_at_5s(tmp_path):
    output, games = play(tmp_path, "", rounds=1, games_per_round=1, tc="5+0.05")
    assert_clean(output, games, 1)
