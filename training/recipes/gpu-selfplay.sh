#!/bin/bash
# The self-play call (docs/gpu-recipe.md, "The self-play call"): Stockfish 15.1 self-play for the corpus on every
# core of a GPU rental, in ONE call of the device tool, with the book openings and node budgets of the shared corpus
# (docs/training.md, "Growing it"). The games come back as $OUT/sf15-selfplay-h200-s$SEED.pgn.xz; join them to the
# cache's corpus here with `python -m training corpus FILE`.
# Carry (.carry/): stockfish.xz (xz -T2 -9 -c /usr/games/stockfish > .carry/stockfish.xz: 45 MB -> 21.8 MB),
# book.bin (cp /usr/share/games/gnuchess/book.bin .carry/) and chess.zip (python-chess: see gpu-corpus.sh).
# GAMES: games to play (16 cores of an H200 machine played 15.7-18.3 a second, 135 annotated positions each); SEED: the openings' seed,
# a new one for every call. A safe count, not a timeout, ends the call: `timeout -s INT` would reach a background
# job's Python ignored, and a killed run leaves only its part files.
# Toy scale on this machine: OUT=/tmp/out WORKERS=2 GAMES=4 bash training/recipes/gpu-selfplay.sh
set -u
START=$SECONDS; OUT=${OUT:-/tmp/out}; SEED=${SEED:-42}; mkdir -p "$OUT"
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.carry/stockfish.xz'), open('/tmp/stockfish', 'wb'))"
chmod +x /tmp/stockfish
echo "Stockfish unpacked after $((SECONDS - START)) s; $(nproc) cores"
PYTHONPATH=.carry/chess.zip timeout ${KILL:-540} python3 -m training selfplay --engine /tmp/stockfish \
  --nodes 1000,2000,4000 --book .carry/book.bin --book-min-plies 4 --book-plies 16 --random-plies 1 \
  --random-share 0.3 --workers "${WORKERS:-$(nproc)}" --games "${GAMES:-2100}" --seed "$SEED" \
  --out "$OUT/sf15-selfplay-h200-s$SEED.pgn.xz" 2>&1 | tr '\r' '\n' | grep -v '^\s*$' | tail -6
ls -la "$OUT"; echo "call took $((SECONDS - START)) s"
