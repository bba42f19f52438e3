/* hackmate_core.exchange's tables and move tests on the compiled board, written once for the compiled searches and
 * PUCT's leaves (cab.c, ccsearch.c, cpuct.c); tests/hackmate_core/test_compiled_tables.py checks the tables equal to
 * Python's. */
#ifndef HACKMATE_CEXCHANGE_H
#define HACKMATE_CEXCHANGE_H

#include "cboard.h"

/* hackmate_core.exchange.PIECE_VALUES and MVV, by piece type (0: none). */
static const int CX_PIECE_VALUES[7] = {0, 100, 320, 330, 500, 900, 0};
static const int CX_MVV[7] = {0, 1, 3, 3, 5, 9, 0};

/* chess.Board.is_en_passant */
static inline int cx_is_en_passant(const cb_position *p, cb_move move) {
    int from = CB_FROM(move), to = CB_TO(move), difference = to > from ? to - from : from - to;
    return p->ep_square == to && (p->pieces[CB_PAWN] & CB_BIT(from)) && (difference == 7 || difference == 9)
           && !(p->pieces[0] & CB_BIT(to));
}

/* chess.Board.is_capture */
static inline int cx_is_capture(const cb_position *p, cb_move move) {
    return (CB_BIT(CB_TO(move)) & p->colors[!p->turn]) || cx_is_en_passant(p, move);
}

/* hackmate_core.exchange.mvv_lva */
static inline int cx_mvv_lva(const cb_position *p, cb_move move) {
    int victim = cb_piece_type_at(p, CB_TO(move)), attacker = cb_piece_type_at(p, CB_FROM(move));
    return 10 * CX_MVV[victim ? victim : CB_PAWN] - CX_MVV[attacker ? attacker : CB_PAWN];
}

#endif
