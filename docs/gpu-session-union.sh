#!/bin/bash
# The next GPU lease (docs/gpu-recipe.md, "The next lease"): train on the union of Stockfish's own moves and the
# MultiPV labels, as the 24 November lease's results suggest (labels alone pulled top-1 down). Run it again and
# again, each call at most MIN minutes of work:
#   1st call: fresh Stockfish self-play with [%eval] on all cores but two (4,000 nodes, 6 random plies, as the
#             October network's own games); beside it `prepare` the carried sf15-selfplay-eval and Carlsen games
#             and import the shared 25,000-node MultiPV labels.
#   later:    `prepare` the self-play games once, then A (6x64 from the shipped network) and B (10x128 grown from
#             it) trained at once on all four (tools/gpu_recipe.py each, resumable), until both say done.
# Back in $OUT: A.pt, B.pt (weights; `python -m training export` makes the ONNX), A-swa.pt (A's running mean of
# the weights, training/swa.py), reports.tar (report.json with the test-set figures of the network, its mean and
# the shipped one, logs, curves) and sfgen.pgn.xz.* (the games).
# Carry (.carry/): stockfish.xz, site/chess, sf15-selfplay-eval.pgn.xz, carlsen-classical.pgn.xz,
# sf15-multipv6-25k.jsonl.xz (the commands are in docs/gpu-recipe.md).
# Toy scale on a CPU, with small files of the same names in CARRY:
#   SCALE=toy CARRY=/tmp/toy-carry MIN=0.3 OUT=/tmp/out bash docs/gpu-session-union.sh   (until "union: done")
set -u
CARRY=${CARRY:-.carry}; export PYTHONPATH=$CARRY/site
OUT=${OUT:-/tmp/out}; WORK=${WORK:-runs}; mkdir -p "$OUT" "$WORK"; MIN=${MIN:-8.0}
if [ "${SCALE:-full}" = toy ]; then
  DEV=cpu; BS=64; A="1 8 1"; B="2 8 1"; GAMES=4; NODES=200; INIT=(); SWA=2
else
  DEV=cuda; BS=1024; A="6 64 6"; B="10 128 5"; GAMES=100000; NODES=4000; INIT=(--init weights/resnet.pt); SWA=50
fi
WORKERS=$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))
python3 -c "from pathlib import Path; from tools.gpu_recipe import unpack_engine
unpack_engine(Path('$CARRY/stockfish.xz'), Path('$WORK'))"

if [ ! -f $WORK/union-play.done ]; then
  START=$SECONDS; LIMIT=$(python3 -c "print(int($MIN * 60))")
  setsid python3 -m training selfplay --engine $WORK/stockfish --nodes "$NODES" --random-plies 6 --games "$GAMES" \
    --workers "$WORKERS" --seed 12 --out $WORK/sfgen.pgn > $WORK/sfgen.log 2>&1 &
  PLAY=$!
  [ -d $WORK/sf ] || python3 -m training prepare "$CARRY/sf15-selfplay-eval.pgn.xz" --out $WORK/sf --require-eval \
    --skip-plies 0 --workers 1 > $WORK/prepare-sf.log 2>&1
  [ -d $WORK/carlsen ] || python3 -m training prepare "$CARRY/carlsen-classical.pgn.xz" --out $WORK/carlsen \
    --skip-plies 8 --workers 1 > $WORK/prepare-carlsen.log 2>&1
  [ -d $WORK/shared ] || python3 -m training import-labels "$CARRY/sf15-multipv6-25k.jsonl.xz" --out $WORK/shared \
    > $WORK/import.log 2>&1
  while kill -0 $PLAY 2>/dev/null && [ $((SECONDS - START)) -lt "$LIMIT" ]; do
    sleep 1
  done
  kill -TERM -- -$PLAY 2>/dev/null; wait $PLAY
  for log in $WORK/prepare-sf.log $WORK/prepare-carlsen.log $WORK/import.log; do tr '\r' '\n' < $log | tail -1; done
  cat $WORK/sfgen.pgn.part* $WORK/sfgen.pgn 2>/dev/null > $WORK/sfgen-all.pgn
  echo "self-play games: $(grep -c '^\[Result' $WORK/sfgen-all.pgn)"
  touch $WORK/union-play.done
  echo "union: self-play and preparation done: run the same command again"; exit 0
fi

[ -d $WORK/sfgen ] || python3 -m training prepare $WORK/sfgen-all.pgn --out $WORK/sfgen --require-eval --skip-plies 0 \
  --workers "$WORKERS" > $WORK/prepare-sfgen.log 2>&1 || { tail -3 $WORK/prepare-sfgen.log; exit 1; }
run() {  # name "blocks filters epochs" lr [--grow]
  read -r blocks filters epochs <<< "$2"
  python3 -m tools.gpu_recipe --out "$WORK/union$1" --data $WORK/sf --data $WORK/sfgen --data $WORK/carlsen \
    --data $WORK/shared --test "${TEST:-testset}" --blocks "$blocks" --filters "$filters" --epochs "$epochs" \
    --lr "$3" --batch-size "$BS" --temperature 10 --swa-every "$SWA" --mirror --device "$DEV" --minutes "$MIN" \
    "${INIT[@]}" "${@:4}" > "$WORK/union$1.log" 2>&1
  echo "== $1 exit $?"; tr '\r' '\n' < "$WORK/union$1.log" | grep -v '^\s*$' | grep -v 'batch/s\]$\|s/batch\]$' | tail -3
}
GROW=(); [ ${#INIT[@]} -gt 0 ] && GROW=(--grow)
run A "$A" 1e-3 > $WORK/A.out & PA=$!
run B "$B" 1e-3 "${GROW[@]}" > $WORK/B.out & PB=$!
wait $PA $PB
cat $WORK/A.out $WORK/B.out
for x in A B; do [ -f "$WORK/union$x/resnet.pt" ] && cp "$WORK/union$x/resnet.pt" "$OUT/$x.pt"; done
[ -f "$WORK/unionA/swa.pt" ] && cp "$WORK/unionA/swa.pt" "$OUT/A-swa.pt"  # B's mean: figures in its report only
tar -cf "$OUT/reports.tar" $WORK/union?.log $WORK/union?/report.json $WORK/union?/curves.png 2>/dev/null
xz -T4 -6 -c $WORK/sfgen-all.pgn | split -b 9000000 - "$OUT/sfgen.pgn.xz."; ls -la "$OUT"
if grep -q "recipe: done" $WORK/unionA.log && grep -q "recipe: done" $WORK/unionB.log; then echo "union: done"
else echo "union: training stopped at the time budget: run the same command again"; fi
