#!/bin/bash
# The labelling call, step 2 (docs/gpu-recipe.md, "The labelling call: labels on every core, four sizes at once"):
# train four networks at once on the GPU on step 1's labels (gpu-label.sh) and the shared labels, soft targets
# sharpened to 10 cp: A 6x64 from the shipped network, B 10x128 and D 8x96 grown from it, C 4x48 from scratch
# (training gpu-recipe each, resumable: run again until all four say done). The cores left over play decisive
# Stockfish games for DeepChess (training selfplay, resumable). Its runs: docs/record/gpu.md, "Labelling and four
# sizes on an H100 (24 November 2026)". Back in $OUT: A.pt ... D.pt (weights; `python -m training export` makes the
# ONNX), reports.tar (report.json with the test-set figures, logs, curves) and dec2.pgn.xz.* (cat them, then xz -d).
# Toy scale on a CPU: SCALE=toy MIN=0.5 DEC_GAMES=40 DEC_WORKERS=1 OUT=/tmp/out bash training/recipes/gpu-sizes.sh
set -u
export PYTHONPATH=.carry/site
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; MIN=${MIN:-8.0}
setsid python3 -m training selfplay --engine runs/stockfish --nodes 1000 --node-ratio 4 --random-plies 6 \
  --decisive-only --games "${DEC_GAMES:-60000}" --workers "${DEC_WORKERS:-10}" --seed 8 --out runs/dec2.pgn \
  > runs/dec2.log 2>&1 &
SELFPLAY=$!
if [ "${SCALE:-full}" = toy ]; then
  DEV=cpu; BS=64; A="6 64 1"; B="7 72 1"; C="1 4 1"; D="6 72 1"
else
  DEV=cuda; BS=1024; A="6 64 8"; B="10 128 6"; C="4 48 8"; D="8 96 6"
fi
run() {  # name "blocks filters epochs" lr [--init ... --grow]
  read -r blocks filters epochs <<< "$2"
  python3 -m training gpu-recipe --out "runs/gpu$1" --engine runs/stockfish --data runs/labels --data runs/shared \
    --test "${TEST:-testset}" --blocks "$blocks" --filters "$filters" --epochs "$epochs" --lr "$3" \
    --batch-size "$BS" --temperature 10 --device "$DEV" --minutes "$MIN" "${@:4}" > "runs/gpu$1.log" 2>&1
  echo "== $1 exit $?"; tr '\r' '\n' < "runs/gpu$1.log" | grep -v '^\s*$' | grep -v 'batch/s\]$\|s/batch\]$' | tail -4
}
run A "$A" 1e-3 --init weights/resnet.pt > runs/A.out & PA=$!
run B "$B" 1e-3 --init weights/resnet.pt --grow > runs/B.out & PB=$!
run C "$C" 2e-3 > runs/C.out & PC=$!
run D "$D" 1e-3 --init weights/resnet.pt --grow > runs/D.out & PD=$!
wait $PA $PB $PC $PD
kill -TERM -- -$SELFPLAY 2>/dev/null; sleep 1
cat runs/dec2.pgn.part* runs/dec2.pgn 2>/dev/null | xz -T4 -6 | split -b 9000000 - "$OUT/dec2.pgn.xz."
echo "decisive games: $(cat runs/dec2.pgn.part* runs/dec2.pgn 2>/dev/null | grep -c '^\[Result')"
cat runs/A.out runs/B.out runs/C.out runs/D.out
for x in A B C D; do [ -f "runs/gpu$x/resnet.pt" ] && cp "runs/gpu$x/resnet.pt" "$OUT/$x.pt"; done
tar -cf "$OUT/reports.tar" runs/gpu?.log runs/gpu?/report.json runs/gpu?/curves.png 2>/dev/null; ls -la "$OUT"
