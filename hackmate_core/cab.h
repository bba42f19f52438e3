/* Compiled alpha-beta: search/alphabeta.py's principal variation search, node for node, on the compiled board.
 *
 * Everything mirrors the Python search exactly so that both paths search the same nodes in the same order:
 * the move ordering (TT move, MVV-LVA, promotions, killers, history, stable sorts), the transposition table
 * of search/tt.py (slot key % size, its replacement rule, generations), null move, late-move reductions,
 * check extension, quiescence, mate distance pruning, draws by rule (fifty moves, insufficient material,
 * repetition of Polyglot keys), mate and tablebase scores and the node count. The static evaluation is a
 * table of centipawns per colour, piece type and square (material and the piece-square tables are both
 * such tables). Python keeps iterative deepening, MultiPV, the stoppers and the reporting; it is asked
 * through two callbacks: every CAB_CHECK_NODES_EVERY nodes whether to stop, and for tablebase results.
 */
#ifndef HACKMATE_CAB_H
#define HACKMATE_CAB_H

#include <stdint.h>

#include "cboard.h"

/* search/alphabeta.py's MAX_PLY and CHECK_NODES_EVERY, and hackmate_core.score's scale. */
#define CAB_MAX_PLY 128
#define CAB_CHECK_NODES_EVERY 16
#define CAB_MATE 100000
#define CAB_INF (CAB_MATE + 1)
#define CAB_MATE_BOUND (CAB_MATE - 1000)
#define CAB_TB_WIN (CAB_MATE_BOUND - 1000)
#define CAB_TB_BOUND (CAB_TB_WIN - 1000)

enum { CAB_EXACT = 0, CAB_LOWER = 1, CAB_UPPER = 2 };

typedef struct {
    uint64_t key;
    int32_t score;
    int16_t depth;
    cb_move move;              /* 0: none (a1a1 is never a move) */
    uint8_t bound;
    uint8_t generation;
    uint8_t used;
} cab_entry;

/* search/tt.py's TranspositionTable with the same number of slots. */
typedef struct {
    cab_entry *slots;
    uint64_t size;
    int generation;
} cab_table;

typedef struct {
    cab_table *table;
    int32_t evaluation[2][7][64];       /* centipawns of a piece of [colour][type] on [square] */
    int flat_evaluation;                /* every square of a (colour, type) the same: count pieces instead */
    int64_t history[64][64];            /* quiet cutoffs by from and to square, depth squared each */
    cb_move killers[CAB_MAX_PLY + 1][2];
    cb_move pv[CAB_MAX_PLY + 2][CAB_MAX_PLY + 2];
    int pv_length[CAB_MAX_PLY + 2];
    int root_score;                     /* the score of pv[0], the best finished root move so far */
    cb_move moves[CAB_MAX_PLY + 2][CB_MAX_MOVES];    /* each ply's moves (one node a ply is open at a time) */
    int64_t order[CAB_MAX_PLY + 2][CB_MAX_MOVES];    /* and their ordering scores */
    uint64_t *keys;                     /* Polyglot keys of the game since the last irreversible move and the path */
    int key_count, key_capacity, root_index;
    cb_position root;
    cb_move excluded[CB_MAX_MOVES];     /* root moves already given a line (MultiPV) */
    int excluded_count;
    cb_move allowed[CB_MAX_MOVES];      /* the root moves the search may play, when allowed_count >= 0 */
    int allowed_count;
    int64_t max_nodes;                  /* -1: none */
    int seldepth;
    cb_hooks hooks;
} cab_search;

/* A table of size slots (at least 1): 0, or -1 out of memory. */
int cab_table_init(cab_table *table, uint64_t size);
void cab_table_free(cab_table *table);
void cab_table_clear(cab_table *table);
/* search/tt.py's hashfull: permille of the first 1000 slots used by the current search. */
int cab_table_hashfull(const cab_table *table);

/* Set the evaluation table (and whether it is flat). */
void cab_set_evaluation(cab_search *search, const int32_t evaluation[2][7][64]);
/* Keys: the game's keys before the root (count of them); 0, or -1 out of memory. */
int cab_set_keys(cab_search *search, const uint64_t *keys, int count);
/* The static evaluation of the side to move (MaterialEvaluator / PstEvaluator.centipawns). */
int cab_evaluate(const cab_search *search, const cb_position *position);
/* One root search of the iteration at depth (AlphaBetaSearch._negamax at ply 0 with a full window):
 * the score; the principal variation in pv[0] (pv_length[0] moves). aborted set: stopped, score meaningless,
 * and pv[0] with root_score the best root move it finished (pv_length[0] 0: none). */
int cab_search_root(cab_search *search, int depth);

#endif
