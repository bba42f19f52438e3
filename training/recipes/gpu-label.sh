#!/bin/bash
# The labelling call, step 1 (docs/gpu-recipe.md, "The labelling call: labels on every core, four sizes at once"):
# label the carried positions on every core of a GPU machine (Stockfish 15.1, 5,000 nodes, MultiPV 4) for a fixed
# time, importing the shared MultiPV labels beside them. Its one run: docs/record/gpu.md, "Labelling and four sizes
# on an H100 (24 November 2026)".
# The labels come back in $OUT as 9 MB pieces (a call returns at most 8 files of 16 MiB):
#   cat labels.tar.* | tar -x    gives labels/, a shard directory.
# Run from the repository root with .carry/ carried (stockfish.xz, site/chess, the .epd.xz selections, the
# shared .jsonl.gz). Toy scale on a CPU: SOURCES=... NODES=60 MIN=0.5 OUT=/tmp/out bash training/recipes/gpu-label.sh
set -u
export PYTHONPATH=.carry/site
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" runs
SOURCES=${SOURCES:-.carry/sel-s31.epd.xz .carry/sel-decisive-pg16.epd.xz}
NODES=${NODES:-5000}; MIN=${MIN:-8.2}
nproc; nvidia-smi -L 2>/dev/null; python3 -c "import torch; print(torch.__version__, torch.cuda.is_available())"
python3 -c "from pathlib import Path; from training.recipes.gpu import unpack_engine
unpack_engine(Path('.carry/stockfish.xz'), Path('runs'))"
python3 -m training import-labels .carry/sf15-multipv6-25k.jsonl.gz --out runs/shared > runs/import.log 2>&1 &
# shellcheck disable=SC2086
python3 -m training label $SOURCES --out runs/labels --engine runs/stockfish --multipv 4 --nodes "$NODES" \
  --workers "$(nproc)" --seed 32 --exclude testset --max-minutes "$MIN" > runs/label.log 2>&1
echo "label exit $?"; wait; echo "import: $(tail -1 runs/import.log)"
tr '\r' '\n' < runs/label.log | grep -v '^\s*$' | grep -v 'pos/s\]$' | tail -12
tr '\r' '\n' < runs/label.log | grep -v 'pos/s\]$' > "$OUT/label.log"
tar -cf - -C runs labels | split -b 9000000 - "$OUT/labels.tar."; ls -la "$OUT"
