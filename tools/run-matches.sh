#!/usr/bin/env bash
# The matches whose results the README quotes (10+0.1, paired openings from Carlsen's games, 2 at a time,
# decided games adjudicated as tools.match does by default).
# Usage: tools/run-matches.sh GAMES OUTDIR MATCH...   (MATCH: resnet-material resnet-sf1350 resnet-sf1500
#        resnet-sf1700 resnet-sf1900 resnet-sf2000 comparator-material comparator-resnet material-sf1350)
set -euo pipefail
games="$1"; out="$2"; shift 2
mkdir -p "$out"
openings=../shared/data/games/carlsen-classical.pgn
if [ ! -f "$openings" ]; then  # a clone without ../shared: the shipped subset of them
    echo "no $openings: playing from tools/openings.pgn (the first 8 plies of 200 of those games)" >&2
    openings=tools/openings.pgn
fi
run() {
    local name="$1"; shift
    .venv/bin/python -m tools.match --games "$games" --tc 10+0.1 --openings "$openings" --opening-plies 8 \
        --pgn "$out/$name.pgn" "$@" > "$out/$name.log" 2>&1
    tail -1 "$out/$name.log"
}
for match in "$@"; do
    case "$match" in
        resnet-material) run "$match" --engine-args "--eval resnet --search puct" --opponent self \
            --opponent-args "--eval material --search alphabeta" ;;
        resnet-sf1350) run "$match" --engine-args "--eval resnet --search puct" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=1350 --opponent-option Threads=1 ;;
        resnet-sf1500) run "$match" --engine-args "--eval resnet --search puct" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=1500 --opponent-option Threads=1 ;;
        resnet-sf1700) run "$match" --engine-args "--eval resnet --search puct" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=1700 --opponent-option Threads=1 ;;
        resnet-sf1900) run "$match" --engine-args "--eval resnet --search puct" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=1900 --opponent-option Threads=1 ;;
        resnet-sf2000) run "$match" --engine-args "--eval resnet --search puct" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=2000 --opponent-option Threads=1 ;;
        comparator-material) run "$match" --engine-args "--eval comparator --search comparison" --opponent self \
            --opponent-args "--eval material --search alphabeta" ;;
        comparator-resnet) run "$match" --engine-args "--eval comparator --search comparison" --opponent self \
            --opponent-args "--eval resnet --search puct" ;;
        material-sf1350) run "$match" --engine-args "--eval material --search alphabeta" \
            --opponent-option UCI_LimitStrength=true --opponent-option UCI_Elo=1350 --opponent-option Threads=1 ;;
        *) echo "unknown match $match" >&2; exit 2 ;;
    esac
done
