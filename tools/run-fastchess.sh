#!/usr/bin/env bash
# The forfeit check under an external match runner: the default engine (bin/engine, as a GUI starts it) against
# Stockfish (UCI_LimitStrength) under fastchess, one game at a time (CONCURRENCY), at 1+0.01, 10+0.1 and 40 moves in
# 60 s.
# fastchess keeps the clocks and records every time forfeit, illegal move and disconnect; this script writes
# OUTDIR/<tc>.pgn and OUTDIR/<tc>.log per time control and OUTDIR/summary.txt with their counts.
#
# Usage: tools/run-fastchess.sh OUTDIR [GAMES_PER_TC]    (default 34 per time control, 102 in all)
# Environment: TCS (default "1+0.01 10+0.1 40/60"), CONCURRENCY (default 1; ours gets its default of 2 Threads, or
# cores / CONCURRENCY where that is fewer, so that on two cores only two threads think at once), FASTCHESS (default: fastchess on PATH, else ../shared/bin/fastchess), STOCKFISH (default:
# stockfish on PATH, else /usr/games/stockfish), SF_ELO (default 1500), ENGINE_ARGS (default: none, i.e.
# resnet + puct), ENGINE_OPTIONS (UCI options of ours as NAME=VALUE..., default none), SRAND (opening seed, default
# 1), OPENINGS (default ../shared/data/games/carlsen-classical.pgn, first 8 plies).
# Decided games are adjudicated as bin/match does (tools/fastchess-adjudication.sh). Stockfish gets a Move Overhead
# of 100 ms: its forfeits are not ours.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
games="${2:-34}"
tcs="${TCS:-1+0.01 10+0.1 40/60}"
fastchess="${FASTCHESS:-$(command -v fastchess || echo "$root/../shared/bin/fastchess")}"
stockfish="${STOCKFISH:-$(command -v stockfish || echo /usr/games/stockfish)}"
openings="${OPENINGS:-$root/../shared/data/games/carlsen-classical.pgn}"
if [ -z "${OPENINGS:-}" ] && [ ! -f "$openings" ]; then  # a clone without ../shared: the shipped subset of them
    echo "no $openings: playing from tools/openings.pgn (the first 8 plies of 200 of those games)" >&2
    openings="$root/tools/openings.pgn"
fi
for tool in "$fastchess" "$stockfish"; do
    [ -x "$tool" ] || { echo "not found: $tool (set FASTCHESS / STOCKFISH)" >&2; exit 2; }
done
[ -f "$openings" ] || { echo "openings not found: $openings (set OPENINGS)" >&2; exit 2; }
"$root/bin/setup-env"
# shellcheck source=tools/fastchess-adjudication.sh
source "$root/tools/fastchess-adjudication.sh"

ours=(cmd="$root/bin/engine" name=hackmate dir="$root")
[ -z "${ENGINE_ARGS:-}" ] || ours+=(args="$ENGINE_ARGS")
for setting in ${ENGINE_OPTIONS:-}; do ours+=("option.$setting"); done
# one engine of a game thinks at a time: ours gets its share of the cores unless ENGINE_OPTIONS sets Threads
case " ${ENGINE_OPTIONS:-} " in
    *" Threads="* | *" threads="*) ;;
    *) share=$(( $(nproc) / ${CONCURRENCY:-1} )); ours+=("option.Threads=$(( share > 2 ? 2 : share > 0 ? share : 1 ))") ;;
esac

cd "$out"  # fastchess writes its config.json (resume state) here
for tc in $tcs; do
    name="${tc//\//-in-}"
    rm -f "$name.pgn"
    echo "$tc: $games games, log in $out/$name.log" >&2
    "$fastchess" \
        -engine "${ours[@]}" \
        -engine cmd="$stockfish" name="stockfish-${SF_ELO:-1500}" option.Threads=1 option.Hash=16 \
            option.UCI_LimitStrength=true option.UCI_Elo="${SF_ELO:-1500}" "option.Move Overhead=100" \
        -each proto=uci tc="$tc" \
        -rounds $(( (games + 1) / 2 )) -games 2 -concurrency "${CONCURRENCY:-1}" \
        -openings file="$openings" format=pgn order=random plies=8 -srand "${SRAND:-1}" \
        "${adjudication[@]}" \
        -pgnout file="$out/$name.pgn" timeleft=true latency=true -autosaveinterval 0 \
        > "$name.log" 2>&1 || echo "fastchess exited with an error at $tc (see $name.log)" >&2
done

"$root/.venv/bin/python" - "$out" $tcs <<'EOF' | tee "$out/summary.txt"
"""Per time control: games, hackmate's W/D/L, and every forfeit, illegal move and disconnect, by engine."""
import collections
import re
import sys
from pathlib import Path

import chess.pgn

out = Path(sys.argv[1])
print(f"{'time control':<14}{'games':>6}{'W/D/L':>12}   faults (Termination by loser; runner log)")
for tc in sys.argv[2:]:
    name = tc.replace("/", "-in-")
    pgn, log = out / f"{name}.pgn", out / f"{name}.log"
    games, score, faults = 0, collections.Counter(), collections.Counter()
    if pgn.exists():
        with open(pgn) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                games += 1
                ours_white = game.headers["White"] == "hackmate"
                result = game.headers["Result"]
                score["D" if result == "1/2-1/2" else "W" if (result == "1-0") == ours_white else "L"] += 1
                termination = game.headers.get("Termination", "")
                if termination not in ("normal", "adjudication"):
                    loser = {"1-0": game.headers["Black"], "0-1": game.headers["White"]}.get(result, result)
                    faults[f"{termination} ({loser})"] += 1
                if game.errors:
                    faults["unreadable move in PGN"] += 1
    if games == 0:
        faults["no games played (see the log)"] += 1
    text = log.read_text(errors="replace") if log.exists() else ""
    for pattern in ("disconnects", "stalls", "crash", "illegal move", "Illegal move"):
        hits = len(re.findall(pattern, text))
        if hits:
            faults[f"log: {pattern}"] += hits
    listed = ", ".join(f"{count} {what}" for what, count in sorted(faults.items())) or "none"
    print(f"{tc:<14}{games:>6}{score['W']:>5}/{score['D']}/{score['L']:<4}   {listed}")
EOF
