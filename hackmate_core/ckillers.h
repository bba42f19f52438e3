/* Killer moves, kept alike by both compiled alpha-beta searches (cab.c, ccsearch.c) as search/killers.py keeps them
 * for the Python ones: per ply, the last two moves that cut off there without a capture, newest first. Which moves
 * count is each search's. */
#ifndef HACKMATE_CKILLERS_H
#define HACKMATE_CKILLERS_H

#include "cboard.h"

/* search.killers.Killers.remember: move cut off at the ply whose killers these are; it becomes the newest (once,
 * however often it cuts off). */
static inline void ck_remember(cb_move killers[2], cb_move move) {
    if (killers[0] != move) {
        killers[1] = killers[0];
        killers[0] = move;
    }
}

#endif
