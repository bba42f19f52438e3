#!/bin/bash
# The union call (docs/gpu-recipe.md, "The union call"): train on the union of Stockfish's own moves and the MultiPV
# labels in ONE call of the device tool (a rental gives 15 minutes of device time in all, the machine's start
# included, and a call at most 10), since labels alone pulled top-1 down in the labelling call:
#   1. `prepare` the carried sf15-selfplay-eval and Carlsen games and import the shared 25,000-node MultiPV labels
#      (at once, on the cores; about a minute);
#   2. A (6x64 from the shipped network) and B (10x128 grown from it) trained at once on the GPU, each for the
#      time the call has left (train --budget-minutes: the schedule runs over that time, whatever the machine's
#      speed; --epochs only caps it), with a running mean of the weights; a later call keeps the first's budget;
#   3. both exported and measured on the test set, and delivered.
# A call stopped early says "run the same command again": the next call resumes where it stopped. Its run:
# docs/record/gpu.md, "The union call (26 November 2026)".
# With PLAY_MIN > 0 the call first plays fresh Stockfish self-play with [%eval] for PLAY_MIN minutes on all cores
# but two (4,000 nodes, 6 random plies, as the October network's own games; needs stockfish.xz in the carry), then
# trains on those games too for the time left (a later call trains on them without playing again).
# Back in $OUT: A.pt, B.pt (weights; `python -m training export` makes the ONNX), A-swa.pt and B-swa.pt (the running
# means, training/resnet/swa.py), reports.tar (report.json with the test-set figures of the network, its mean and the
# shipped one, logs, curves) and, after self-play, sfgen.pgn.xz.* (the games).
# Carry (.carry/): site/chess, sf15-selfplay-eval.pgn.xz, carlsen-classical.pgn.xz, sf15-multipv6-25k.jsonl.xz,
# and stockfish.xz only with PLAY_MIN (the commands are in docs/gpu-recipe.md).
# MIN: minutes this call may take in all (default 9, inside the device's 10 a call); MIN_TRAIN: the least training
# budget worth starting (default 2 minutes; toy scale 0.2).
# Toy scale on a CPU, with small files of the same names in CARRY:
#   SCALE=toy CARRY=/tmp/toy-carry MIN=1.2 OUT=/tmp/out bash training/recipes/gpu-union.sh   (until "union: done")
set -u
START=$SECONDS
CARRY=${CARRY:-.carry}; export PYTHONPATH=$CARRY/site
OUT=${OUT:-/tmp/out}; WORK=${WORK:-runs}; mkdir -p "$OUT" "$WORK"; MIN=${MIN:-9.0}; PLAY_MIN=${PLAY_MIN:-0}
if [ "${SCALE:-full}" = toy ]; then
  DEV=cpu; BS=64; A="1 8 50"; B="2 8 50"; GAMES=4; NODES=200; INIT=(); SWA=2; RESERVE=25; MIN_TRAIN=${MIN_TRAIN:-0.2}
else
  DEV=cuda; BS=1024; A="6 64 30"; B="10 128 20"; GAMES=100000; NODES=4000; INIT=(--init weights/resnet.pt); SWA=50
  RESERVE=90  # seconds of the call kept for loading the data, the epochs' validation, export and the test set
fi
WORKERS=$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))
left() { python3 -c "print(max(0.05, ($MIN * 60 - ($SECONDS - $START) - ${1:-0}) / 60))"; }

if python3 -c "import sys; sys.exit(not float('$PLAY_MIN') > 0)" && [ ! -f $WORK/union-play.done ]; then
  python3 -c "from pathlib import Path; from training.recipes.gpu import unpack_engine
unpack_engine(Path('$CARRY/stockfish.xz'), Path('$WORK'))"
  LIMIT=$(python3 -c "print(int($PLAY_MIN * 60))")
  setsid python3 -m training selfplay --engine $WORK/stockfish --nodes "$NODES" --random-plies 6 --games "$GAMES" \
    --workers "$WORKERS" --seed 12 --out $WORK/sfgen.pgn > $WORK/sfgen.log 2>&1 &
  PLAY=$!
  while kill -0 $PLAY 2>/dev/null && [ $((SECONDS - START)) -lt "$LIMIT" ]; do
    sleep 1
  done
  kill -TERM -- -$PLAY 2>/dev/null; wait $PLAY
  cat $WORK/sfgen.pgn.part* $WORK/sfgen.pgn 2>/dev/null > $WORK/sfgen-all.pgn
  echo "self-play games: $(grep -c '^\[Result' $WORK/sfgen-all.pgn)"
  touch $WORK/union-play.done
fi

# 1. the data, once (each step at once on its own cores)
HALF=$(( WORKERS > 3 ? WORKERS / 2 : 1 ))
[ -d $WORK/sf ] || python3 -m training prepare "$CARRY/sf15-selfplay-eval.pgn.xz" --out $WORK/sf --require-eval \
  --skip-plies 0 --workers "$HALF" > $WORK/prepare-sf.log 2>&1 &
[ -d $WORK/carlsen ] || python3 -m training prepare "$CARRY/carlsen-classical.pgn.xz" --out $WORK/carlsen \
  --skip-plies 8 --workers 1 > $WORK/prepare-carlsen.log 2>&1 &
[ -d $WORK/shared ] || python3 -m training import-labels "$CARRY/sf15-multipv6-25k.jsonl.xz" --out $WORK/shared \
  > $WORK/import.log 2>&1 &
DATA=(--data $WORK/sf --data $WORK/carlsen --data $WORK/shared)
if [ -f $WORK/union-play.done ]; then
  [ -d $WORK/sfgen ] || python3 -m training prepare $WORK/sfgen-all.pgn --out $WORK/sfgen --require-eval \
    --skip-plies 0 --workers "$HALF" > $WORK/prepare-sfgen.log 2>&1 &
  DATA+=(--data $WORK/sfgen)
fi
wait
for log in $WORK/prepare-*.log $WORK/import.log; do [ -f $log ] && echo "$(basename $log): $(tr '\r' '\n' < $log | tail -1)"; done
NEEDED="sf carlsen shared"; [ -f $WORK/union-play.done ] && NEEDED="$NEEDED sfgen"
for d in $NEEDED; do [ -d $WORK/$d ] || { echo "union: $WORK/$d was not made (its log above)"; exit 1; }; done
echo "data ready after $((SECONDS - START)) s"

# 2. both networks at once, each for the time this call has left (resumed by a later call if stopped); the first
# call sets the runs' budget, which later calls keep (their schedule was planned with it)
[ -d $WORK/unionA ] || [ -d $WORK/unionB ] || rm -f $WORK/budget  # a budget file without runs is stale
if [ -f $WORK/budget ]; then BUDGET=$(cat $WORK/budget)
else
  BUDGET=${BUDGET:-$(left "$RESERVE")}
  if python3 -c "import sys; sys.exit(not float('$BUDGET') < float('${MIN_TRAIN:-2}'))"; then
    echo "union: only $BUDGET minutes left for training in this call: run the same command again"; exit 0
  fi
  echo "$BUDGET" > $WORK/budget
fi
STEP=$(left 10)
echo "training A and B for $BUDGET minutes each in all (this step at most $STEP)"
run() {  # name "blocks filters max-epochs" lr [--grow]
  read -r blocks filters epochs <<< "$2"
  python3 -m training gpu-recipe --out "$WORK/union$1" "${DATA[@]}" --test "${TEST:-testset}" \
    --blocks "$blocks" --filters "$filters" --epochs "$epochs" --budget-minutes "$BUDGET" \
    --lr "$3" --batch-size "$BS" --temperature 10 --swa-every "$SWA" --mirror --device "$DEV" --minutes "$STEP" \
    "${INIT[@]}" "${@:4}" > "$WORK/union$1.log" 2>&1
  echo "== $1 exit $?"; tr '\r' '\n' < "$WORK/union$1.log" | grep -v '^\s*$' | grep -v 'batch/s\]$\|s/batch\]$' | tail -3
}
GROW=(); [ ${#INIT[@]} -gt 0 ] && GROW=(--grow)
run A "$A" 1e-3 > $WORK/A.out & PA=$!
run B "$B" 1e-3 "${GROW[@]}" > $WORK/B.out & PB=$!
wait $PA $PB
cat $WORK/A.out $WORK/B.out

# 3. deliver what exists
for x in A B; do
  [ -f "$WORK/union$x/resnet.pt" ] && cp "$WORK/union$x/resnet.pt" "$OUT/$x.pt"
  [ -f "$WORK/union$x/swa.pt" ] && cp "$WORK/union$x/swa.pt" "$OUT/$x-swa.pt"
done
tar -cf "$OUT/reports.tar" $WORK/union?.log $WORK/union?/report.json $WORK/union?/curves.png 2>/dev/null
[ -f $WORK/sfgen-all.pgn ] && xz -T4 -6 -c $WORK/sfgen-all.pgn | split -b 9000000 - "$OUT/sfgen.pgn.xz."
ls -la "$OUT"; echo "call took $((SECONDS - START)) s"
if grep -q "recipe: done" $WORK/unionA.log && grep -q "recipe: done" $WORK/unionB.log; then echo "union: done"
else echo "union: training stopped at this call's limit: run the same command again"; fi
