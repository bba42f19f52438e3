#!/usr/bin/env bash
# Tuning by match: the engine with some UCI options changed against the same engine with its defaults, under
# fastchess, paired openings (each opening twice, colours swapped), then fastchess's report
# (W/D/L, Elo with its 95% interval from game pairs) in OUTDIR/summary.txt.
#
# Usage: tools/run-option-match.sh OUTDIR GAMES NAME=VALUE...   e.g. tools/run-option-match.sh runs/tp0 40 TacticalPriors=0
# Environment: TC (default 10+0.1), CONCURRENCY (default 2: two games at a time; one engine of a game thinks at a
# time, with its default of 2 Threads or cores / CONCURRENCY where that is fewer, so never more threads think than
# there are cores), SRAND (opening seed, default 1), ENGINE_ARGS (for both engines, default none: resnet + puct),
# BASE_OPTIONS (NAME=VALUE... for both engines, Threads included), FASTCHESS, OPENINGS (default
# ../shared/data/games/carlsen-classical.pgn, first 8 plies).
# Decided games are adjudicated as bin/match does (tools/fastchess-adjudication.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
games="$2"
shift 2
[ "$#" -gt 0 ] || { echo "give at least one NAME=VALUE for the tuned engine" >&2; exit 2; }
fastchess="${FASTCHESS:-$(command -v fastchess || echo "$root/../shared/bin/fastchess")}"
openings="${OPENINGS:-$root/../shared/data/games/carlsen-classical.pgn}"
if [ -z "${OPENINGS:-}" ] && [ ! -f "$openings" ]; then  # a clone without ../shared: the shipped subset of them
    echo "no $openings: playing from tools/openings.pgn (the first 8 plies of 200 of those games)" >&2
    openings="$root/tools/openings.pgn"
fi
[ -x "$fastchess" ] || { echo "not found: $fastchess (set FASTCHESS)" >&2; exit 2; }
[ -f "$openings" ] || { echo "openings not found: $openings (set OPENINGS)" >&2; exit 2; }
"$root/bin/setup-env"
# shellcheck source=tools/fastchess-adjudication.sh
source "$root/tools/fastchess-adjudication.sh"

common=(cmd="$root/bin/engine" dir="$root")
case " ${BASE_OPTIONS:-} " in
    *" Threads="*) ;;
    *) share=$(( $(nproc) / ${CONCURRENCY:-2} )); common+=("option.Threads=$(( share > 2 ? 2 : share > 0 ? share : 1 ))") ;;
esac
[ -z "${ENGINE_ARGS:-}" ] || common+=(args="$ENGINE_ARGS")
for setting in ${BASE_OPTIONS:-}; do common+=("option.$setting"); done
tuned=("${common[@]}" name="tuned")
for setting in "$@"; do tuned+=("option.$setting"); done

cd "$out"  # fastchess writes its config.json here
echo "$*" > settings.txt
"$fastchess" \
    -engine "${tuned[@]}" \
    -engine "${common[@]}" name=default \
    -each proto=uci tc="${TC:-10+0.1}" \
    -rounds $(( (games + 1) / 2 )) -games 2 -repeat -concurrency "${CONCURRENCY:-2}" \
    -openings file="$openings" format=pgn order=random plies=8 -srand "${SRAND:-1}" \
    "${adjudication[@]}" \
    -pgnout file="$out/games.pgn" -autosaveinterval 0 > match.log 2>&1 \
    || echo "fastchess exited with an error (see $out/match.log)" >&2
# fastchess's last report: the tuned engine's Elo with its interval (pentanomial), W/D/L, pair statistics
awk '/^Results of/ {block = ""} /^Results of/, /^-+$/ {block = block $0 "\n"} END {printf "%s", block}' match.log \
    | tee summary.txt
