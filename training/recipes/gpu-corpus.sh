#!/bin/bash
# The corpus call (docs/gpu-recipe.md, "The corpus call"): continual training from the shipped network on the whole
# corpus, three runs at once on one GPU, in ONE call of the device tool (a rental gives 15 minutes of device time in
# all, the machine's start included, and a call at most 10). The corpus travels packed (training corpus-pack, about
# 28.6 MiB for 6.7M positions), so the call spends its time training, not preparing:
#   A  the control: lr 1e-3 cosine over the call's time, batch 1024, soft MultiPV targets at 10 cp, --mirror, a
#      running mean of the weights every 50 batches, --seed 7;
#   B  as A with --seed 8: a sibling for a weight average ("model soup") of runs from the same network;
#   C  as A with --lr 5e-4 --seed 9: a smaller step away from the shipped network, a third member.
# (The twentieth round's call, commit 1e30169, ran B with --result-weight 0.25 and C for at most 3 passes.)
# Back in $OUT: A-swa.pt, B-swa.pt, C-swa.pt (the running means), A/B/C-checkpoint.pt (last weights and optimiser, to
# resume from) and logs.tar (logs, history.json, curves.png). Evaluate and export them on the CPU machine.
# Carry (.carry/): corpus.pack (python -m training corpus-pack .carry/corpus.pack) and chess.zip (python-chess, which
# the GPU machine lacks: (cd .venv/lib/python3.*/site-packages && python -m zipfile -c "$OLDPWD/.carry/chess.zip" chess/)).
# MIN: minutes this call may take in all (default 9.3, inside the device's 10 a call). INIT: the network the runs
# start from (default weights/resnet.pt; e.g. a run's swa.pt). LR: A's and B's learning rate (default 1e-3); LR_C: C's
# (default 5e-4). PROCS: processes each run trains in, under torchrun (DistributedDataParallel, one GPU each; default:
# every GPU nvidia-smi lists): the same steps as one process with the same total batch, PROCS times the data work.
# GROW=1: INIT is grown into the pack's encoding (train --grow: a planes18 network's new input channels at zero, for
# a corpus prepared with --encoding features36; issue 56).
# Toy scale on a CPU (3,000 positions of the pack; reading the pack takes three processes on two cores half a minute;
# PROCS=2 trains each run in two CPU processes under torchrun, as on two GPUs):
#   SCALE=toy MIN=1.6 OUT=/tmp/out WORK=/tmp/gpu-corpus bash training/recipes/gpu-corpus.sh
set -u
START=$SECONDS
CARRY=${CARRY:-.carry}; export PYTHONPATH=$CARRY/chess.zip${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; WORK=${WORK:-runs/gpu-corpus}; MIN=${MIN:-9.3}; PACK=${PACK:-$CARRY/corpus.pack}
INIT=${INIT:-weights/resnet.pt}; LR=${LR:-1e-3}; LR_C=${LR_C:-5e-4}
GROW_ARGS=(); [ "${GROW:-0}" = 1 ] && GROW_ARGS=(--grow)
mkdir -p "$OUT" "$WORK"
if [ "${SCALE:-full}" = toy ]; then
  DEV=cpu; BS=64; SWA=2; EXTRA=(--max-samples 3000); RESERVE=45; PROCS=${PROCS:-1}
else
  DEV=cuda; BS=1024; SWA=50; EXTRA=(); RESERVE=75  # seconds for start-up, loading the pack, the last save, delivery
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  PROCS=${PROCS:-$(nvidia-smi -L | wc -l)}
fi
TRAIN=(python3 -m training train); THREADS=4
if [ "$PROCS" -gt 1 ]; then  # each run in PROCS processes, the cores shared among the three runs' processes
  TRAIN=(python3 -m torch.distributed.run --standalone --nproc_per_node "$PROCS" -m training train)
  THREADS=$(( $(nproc) / (3 * PROCS) > 0 ? $(nproc) / (3 * PROCS) : 1 ))
fi
BUDGET=$(python3 -c "print(round(($MIN * 60 - $RESERVE) / 60, 2))")
STOP=$(python3 -c "print(round($BUDGET + 0.4, 2))")           # train's own stop (with a checkpoint), a safety
KILL=$(python3 -c "print(int($MIN * 60 - 20))")                # the last resort, before the device's limit
echo "three runs at once from $INIT${GROW_ARGS:+ (grown)}, $BUDGET minutes each, lr $LR (A, B) and $LR_C (C)," \
  "on $DEV in $PROCS processes each;" \
  "pack $(du -h "$PACK" | cut -f1)"
run() {  # name, then train's options beside the common ones
  local name=$1; shift
  OMP_NUM_THREADS=$THREADS timeout "$KILL" "${TRAIN[@]}" "$PACK" --out "$WORK/$name" --init "$INIT" "${GROW_ARGS[@]}" \
    --batch-size "$BS" --lr "$LR" --temperature 10 --swa-every "$SWA" --mirror --device "$DEV" \
    --budget-minutes "$BUDGET" --max-minutes "$STOP" "${EXTRA[@]}" "$@" > "$WORK/$name.log" 2>&1
  echo "== $name exit $? after $((SECONDS - START)) s"
  tr '\r' '\n' < "$WORK/$name.log" | grep -v '^\s*$' | grep -v 'batch/s\]$\|s/batch\]$' | tail -4
}
run A --epochs 40 --seed 7 > "$WORK/A.out" &
run B --epochs 40 --seed 8 > "$WORK/B.out" &
run C --epochs 40 --seed 9 --lr "$LR_C" > "$WORK/C.out" &
wait
cat "$WORK/A.out" "$WORK/B.out" "$WORK/C.out"
for x in A B C; do
  [ -f "$WORK/$x/swa.pt" ] && cp "$WORK/$x/swa.pt" "$OUT/$x-swa.pt"
  [ -f "$WORK/$x/checkpoint.pt" ] && cp "$WORK/$x/checkpoint.pt" "$OUT/$x-checkpoint.pt"
done
tar -cf "$OUT/logs.tar" "$WORK"/*.log "$WORK"/*/history.json "$WORK"/*/curves.png 2>/dev/null
ls -la "$OUT"; echo "call took $((SECONDS - START)) s"
