"""training.uci.workers, engine work beyond one process: self-play and labelling on a Ray cluster (the same games and
labels as the local pool, workers lost mid-run, addresses that cannot be reached, the local pool without Ray)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_stockfish, stockfish_path
from tests.training.uci.test_labelling import labelled
from training.configs import SelfPlayOptions
from training.data import shards
from training.uci import workers
from training.uci.label import label
from training.uci.selfplay import selfplay

RAY_MISSING = "the ray extra is not installed (pip install -e '.[ray]')"
#: Four short self-play games: a few seconds, decisive and drawn ones.
GAMES = dict(nodes=40, games=4, options=SelfPlayOptions(random_plies=4, seed=3))

#: An engine that plays through Stockfish and, the first time any copy of it reaches its ``after``-th `go`,
#: kills the process that started it: the worker playing that game, mid-game.
KILLER = '''
import os, signal, subprocess, sys
marker, after, engine = sys.argv[1], int(sys.argv[2]), subprocess.Popen([sys.argv[3]], stdin=subprocess.PIPE, text=True)
goes = 0
for line in sys.stdin:
    engine.stdin.write(line)
    engine.stdin.flush()
    goes += line.startswith("go")
    if line.strip() == "quit":
        break
    if goes == after:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            continue
        os.kill(os.getppid(), signal.SIGKILL)
engine.stdin.close()
engine.wait()
'''


def killer_engine(directory: Path, after: int) -> tuple[str, Path]:
    """(the command of an engine that kills its worker at its ``after``-th move, the file that says it did)."""
    script = directory / "killer.py"
    script.write_text(KILLER)
    marker = directory / "killed"
    return f"{sys.executable} {script} {marker} {after} {stockfish_path()}", marker


def games_by_round(text: str) -> dict[str, str]:
    return {re.search(r'\[Round "(\d+)"\]', game).group(1): game
            for game in re.split(r"\n\n(?=\[Event )", text.strip())}


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray instance of two workers in this process, which the runs join (as --ray auto joins a cluster)."""
    ray = pytest.importorskip("ray", reason=RAY_MISSING)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_games(tmp_path_factory) -> str:
    """The four games played by the local pool of two processes."""
    out = tmp_path_factory.mktemp("local") / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=2, **GAMES) == 4
    return out.read_text()


@needs_stockfish
def test_ray_selfplay_gives_the_local_pools_games(ray_cluster, local_games, tmp_path):
    out = tmp_path / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=1, ray="auto", **GAMES) == 4
    assert out.read_text() == local_games and len(games_by_round(local_games)) == 4


@needs_stockfish
def test_a_worker_killed_mid_game_loses_only_that_game(ray_cluster, local_games, tmp_path, monkeypatch):
    command, marker = killer_engine(tmp_path, after=10)
    out = tmp_path / "games.pgn"
    monkeypatch.setattr(workers, "RETRIES", 0)  # Ray would play the game again on another worker: lose it for good
    with pytest.raises(workers.WorkLost, match=r"games lost with their workers: 1 \(WorkerCrashedError.*"
                                               r"the 3 finished are kept in .*games.pgn.part"):
        selfplay(out, command, workers=1, ray="auto", **GAMES)
    assert marker.exists() and not out.exists()
    expected = games_by_round(local_games.replace(stockfish_path(), command))
    kept = games_by_round((tmp_path / "games.pgn.part").read_text())
    assert len(kept) == 3 and all(kept[number] == expected[number] for number in kept)
    monkeypatch.undo()
    assert selfplay(out, command, workers=1, ray="auto", **GAMES) == 1  # the rerun plays the lost game
    assert games_by_round(out.read_text()) == expected and not (tmp_path / "games.pgn.part").exists()


@needs_stockfish
def test_ray_plays_a_game_again_whose_worker_died(ray_cluster, local_games, tmp_path):
    command, marker = killer_engine(tmp_path, after=10)
    out = tmp_path / "games.pgn"
    assert selfplay(out, command, workers=1, ray="auto", **GAMES) == 4
    assert marker.exists() and out.read_text() == local_games.replace(stockfish_path(), command)


@needs_stockfish
def test_a_local_worker_killed_mid_game_keeps_the_finished_games(local_games, tmp_path):
    first_moves = games_by_round(local_games)["1"].count("[%eval ")  # the engine's moves in game 1: its `go`s
    command, marker = killer_engine(tmp_path, after=first_moves + 3)  # the worker dies in game 2
    out, part = tmp_path / "games.pgn", tmp_path / "games.pgn.part"
    with pytest.raises(workers.WorkLost, match=r"games lost with their workers: 3 \(a worker process died\); the 1 "
                                               r"finished are kept in .*games.pgn.part"):
        selfplay(out, command, workers=1, **GAMES)  # one worker: games 2 to 4 were waiting on it
    assert marker.exists() and not out.exists()
    expected = games_by_round(local_games.replace(stockfish_path(), command))
    assert games_by_round(part.read_text()) == {"1": expected["1"]}
    assert selfplay(out, command, workers=2, **GAMES) == 3  # the rerun plays the rest
    assert games_by_round(out.read_text()) == expected and not part.exists()


@needs_stockfish
def test_without_ray_the_local_pool_plays_and_labels_as_before(local_games, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where the ray extra is not installed
    with pytest.raises(workers.ClusterError, match=re.escape("--ray needs Ray: pip install -e '.[ray]'")):
        workers.workers_for("local", 2)
    out = tmp_path / "games.pgn"
    assert selfplay(out, stockfish_path(), workers=2, **GAMES) == 4
    assert out.read_text() == local_games
    assert label(labelled(tmp_path, max_positions=4), progress=False).labelled == 4


def labels_by_key(directory: Path) -> dict[int, tuple]:
    """Each position's label (policy moves and probabilities, W/D/L) by its key, whatever the order of the shards."""
    arrays = shards.load_dir(directory)[0]
    offsets = arrays["policy_offset"]
    return {int(key): (arrays["policy_index"][offsets[row]:offsets[row + 1]].tolist(),
                       arrays["policy_prob"][offsets[row]:offsets[row + 1]].tolist(), arrays["wdl"][row].tolist())
            for row, key in enumerate(arrays["key"])}


@needs_stockfish
def test_ray_labelling_keeps_every_label_but_the_lost_ones(ray_cluster, tmp_path, monkeypatch):
    from training.uci import label as labelling
    label(labelled(tmp_path, "local"), progress=False)
    command, marker = killer_engine(tmp_path, after=3)
    monkeypatch.setattr(labelling, "UNIT_SIZE", 4)  # three units of the twelve positions
    monkeypatch.setattr(workers, "RETRIES", 0)
    with pytest.raises(workers.WorkLost, match=r"positions lost with their workers: 4 \(WorkerCrashedError"):
        label(labelled(tmp_path, "ray", engine=command, ray="auto"), progress=False)
    assert marker.exists() and shards.read_meta(tmp_path / "ray")["runs"][-1]["summary"]["labelled now"] == 8
    monkeypatch.setattr(workers, "RETRIES", 3)
    assert label(labelled(tmp_path, "ray", engine=command, ray="auto"), progress=False).labelled == 4
    assert labels_by_key(tmp_path / "ray") == labels_by_key(tmp_path / "local")


@pytest.mark.parametrize("command", [["selfplay", "--out", "{tmp}/games.pgn", "--ray", "127.0.0.1:1"],
                                     ["label", "--out", "{tmp}/labels", "--selfplay", "1", "--ray",
                                      "ray://127.0.0.1:1"]])
def test_an_address_without_ray_stops_at_once_with_a_message(command, tmp_path):
    pytest.importorskip("ray", reason=RAY_MISSING)
    engine = ["--engine", stockfish_path() or sys.executable]
    result = subprocess.run([sys.executable, "-m", "training", *[a.format(tmp=tmp_path) for a in command], *engine],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert re.search(r"Error: cannot reach Ray at (ray://)?127\.0\.0\.1:1 .*: Connection refused", result.stderr)


def test_an_address_that_answers_but_is_not_a_head_stops_with_a_message(ray_cluster, monkeypatch):
    workers.check_reachable(ray_cluster.get_runtime_context().gcs_address)  # a head: its address passes
    monkeypatch.setattr(workers, "CONNECT_TIMEOUT_S", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes connections (the kernel's backlog), says nothing
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(workers.ClusterError, match=rf"{address} \(--ray {address}\) is not a Ray cluster's head "
                                                       r"\(no answer within 0.5 s\): give the address `ray start"):
            workers.check_reachable(address)
