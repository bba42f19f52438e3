/* The comparison search in C: search/comparison.py's alpha-beta over positions, node for node, with the
 * compiled comparator (ccomp.h) on the compiled board (cboard.h).
 *
 * Everything mirrors the Python search so that both paths search the same nodes in the same order and return
 * the same leaf: leaves that are positions (their features), mates, draws and tablebase results compared by
 * the same rules; the move ordering of each MoveOrdering (the best-move table first, captures that keep
 * material by static exchange, the killer moves, the comparator's preference for each child over the position or
 * the history of cut-offs, stable sorts), with the killers and the history kept alike;
 * the best-move table itself with the LRU policy of hackmate_core.lru and its capacity; the transposition table
 * (the same policy, the same capacity); check extension,
 * late-move reductions and pruning, null-move pruning, capture quiescence, the repetition policy of the compiled
 * board, the node count and where `stop` is asked. Python keeps iterative deepening, the stoppers and the reports;
 * it is asked through two callbacks: every CS_CHECK_NODES_EVERY nodes whether to stop, and for tablebase results.
 *
 * The features of every position met are kept in a table (cc_cache) across iterations and searches; the
 * features are exact, so the table changes the speed and nothing else.
 */
#ifndef HACKMATE_CCSEARCH_H
#define HACKMATE_CCSEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "cboard.h"
#include "ccomp.h"

/* search/comparison.py's MAX_PLY, MAX_QUIESCENCE_PLIES, CHECK_NODES_EVERY, FULL_DEPTH_MOVES, REDUCTION_MIN_DEPTH,
 * DEEP_REDUCTION_MOVES, DEEP_REDUCTION_MIN_DEPTH, NULL_MOVE_MIN_DEPTH, NULL_MOVE_REDUCTION and
 * LATE_MOVE_PRUNING_MOVES (CS_PRUNE_DEPTHS entries) */
#define CS_MAX_PLY 64
#define CS_MAX_QUIESCENCE_PLIES 8
#define CS_CHECK_NODES_EVERY 16
#define CS_FULL_DEPTH_MOVES 3
#define CS_REDUCTION_MIN_DEPTH 3
#define CS_DEEP_REDUCTION_MOVES 6
#define CS_DEEP_REDUCTION_MIN_DEPTH 4
#define CS_NULL_MOVE_MIN_DEPTH 3
#define CS_NULL_MOVE_REDUCTION 2
#define CS_PRUNE_DEPTHS 3
#define CS_LATE_MOVE_PRUNING_MOVES {0, 5, 8}
/* Positions on the stack: the root's ply 0 to a leaf's CS_MAX_PLY, and one more for a quiescence child. */
#define CS_PLIES (CS_MAX_PLY + 2)
/* Leaves a node keeps at once: its best, and alpha and beta when they are earlier bests of its own. */
#define CS_SLOTS 4

/* The values of MoveOrdering, in search/comparison.py's ORDERINGS order. */
enum {
    CS_ORDER_CAPTURES_COMPARATOR = 0, CS_ORDER_COMPARATOR = 1, CS_ORDER_CAPTURES = 2, CS_ORDER_CAPTURES_HISTORY = 3
};

/* The search's UCI options (search/comparison.py's OPTIONS): each a switch but ordering, a CS_ORDER_* value. */
typedef struct {
    int quiescence, ordering, hash_move, check_extension, late_move_reductions, killer_moves, null_move,
        deeper_reductions, late_move_pruning, history_near_leaves, transposition_table;
} cs_options;

/* Where a leaf kept by a node lives: its features and its line. */
typedef struct {
    float *features;
    cb_move pv[CS_PLIES];
} cs_storage;

/* search/comparison.py's Leaf, as a view of storage that outlives it. */
typedef struct {
    const float *features;       /* NULL: not a position (a mate, a draw, a tablebase result, a bound) */
    const cb_move *pv;
    const cs_storage *owner;     /* the node's storage holding features and pv, or NULL */
    int pv_length;
    int bound;                   /* +1 / -1: the initial beta / alpha */
    int mate_ply;                /* plies from the root to a mate, signed by the winner (> 0: White mates) */
    int tablebase_ply;           /* plies from the root to a tablebase win, signed by the winner */
    int draw;
} cs_leaf;

/* The best-move table: hackmate_core.lru.LruCache of transposition keys to moves, with its capacity. */
typedef struct {
    uint64_t key;
    cb_move move;
    int32_t older, newer;        /* the recency list, -1 at its ends */
} cs_lru_entry;

typedef struct {
    cs_lru_entry *entries;       /* [capacity] */
    int32_t *index;              /* linear probing: entry + 1, 0 empty */
    uint64_t index_mask;
    int32_t capacity, count, oldest, newest;
} cs_lru;

/* 0, or -1 out of memory (the table is then left as it was). */
int cs_lru_init(cs_lru *lru, int32_t capacity);
/* The entry of key (then the most recent), or -1. */
int32_t cs_lru_find(cs_lru *lru, uint64_t key);
/* The entry of key, made the most recent: a new one (the least recent evicted beyond the capacity, its entry
 * reused) when key has none. */
int32_t cs_lru_insert(cs_lru *lru, uint64_t key);
void cs_lru_free(cs_lru *lru);
void cs_lru_clear(cs_lru *lru);
/* A new capacity, keeping the most recent entries in their order; 0, or -1 out of memory (unchanged). */
int cs_lru_resize(cs_lru *lru, int32_t capacity);
/* The move stored for key (then the most recent), or 0. */
cb_move cs_lru_get(cs_lru *lru, uint64_t key);
/* Store move for key as the most recent, the least recent evicted beyond the capacity. */
void cs_lru_put(cs_lru *lru, uint64_t key, cb_move move);

/* search/comparison.py's TRANSPOSITION_PV: the moves of a line a transposition keeps. */
#define CS_TRANSPOSITION_PV 12
/* How a node's best leaf compares with the node's bounds (search/comparison.py's EXACT, LOWER, UPPER). */
enum { CS_EXACT = 1, CS_LOWER = 2, CS_UPPER = 3 };

/* A transposition table entry but the leaf's features (search/comparison.py's Transposition). */
typedef struct {
    int depth, kind, pv_length;
    cb_move pv[CS_TRANSPOSITION_PV];
} cs_transposition;

typedef struct {
    const cc_network *net;
    int size;                            /* floats a position's features take (cc_feature_floats) */
    cc_cache features;
    cs_lru best_moves;
    /* the transposition table: the LRU of keys, and by its entry each one's transposition and leaf's features */
    cs_lru transpositions;
    cs_transposition *transposition;     /* [transpositions.capacity] */
    float *transposition_features;       /* [transpositions.capacity][size] */
    cs_options options;                  /* read at each iteration */
    int iteration_depth;
    /* ComparisonSearch.killers and .history: per ply the last two quiet moves that cut off there (newest first,
     * 0: none), per side to move the depth squared summed over the quiet moves that cut off, by from * 64 + to;
     * both cleared by cs_start */
    cb_move killers[CS_PLIES][2];
    int64_t history[2][64 * 64];
    /* the path from the root */
    cb_position stack[CS_PLIES];
    cb_move line[CS_PLIES];              /* line[ply]: the move made at ply on the path, 0 for a null move */
    int64_t *accumulators;               /* [CS_PLIES][net->width] */
    int accumulated[CS_PLIES];           /* whether a ply's accumulator is up to date (made when first needed) */
    cb_move moves[CS_PLIES][CB_MAX_MOVES];
    const float *children[CS_PLIES][CB_MAX_MOVES];   /* the children's features where the comparator ordered */
    double order[CB_MAX_MOVES];          /* ordering keys of the node being ordered */
    cc_workspace work;                   /* children whose features are computed together: */
    int64_t *batch_accumulators;         /* [CC_BATCH][net->width] */
    cb_position batch_positions[CC_BATCH];
    float *batch_features[CC_BATCH];
    float *arena;                        /* the children's features, a stack along the path */
    size_t arena_top;
    cs_storage slots[CS_PLIES][CS_SLOTS];
    float *own[CS_PLIES];                /* each ply's position's features when it computes them */
    float *even;                         /* the start position's: what a draw is worth */
    float *root_features;
    cs_storage root_storage;
    cs_storage split_storage;            /* with a second thread: the best leaf both share (in the main thread's) */
    cs_storage previous_storage;         /* the last finished iteration's best leaf (previous, when previous_found):
                                            what the split's second thread searches against until there is a best */
    cs_leaf previous;
    int previous_found;
    cs_leaf root_best;                   /* the best leaf of the current iteration so far (root_first: its move) */
    cb_move root_first;                  /* the first root move that improved in this iteration, 0: none yet */
    uint64_t *keys;                      /* transposition keys of the game before the root, then of the path */
    int key_count, key_capacity;
    cb_move allowed[CB_MAX_MOVES];       /* the root moves the search may play, when allowed_count >= 0 */
    int allowed_count;
    int seldepth;
    cb_hooks hooks;
} cs_search;

/* A search over net with tables of these sizes (entries, slots, entries): NULL out of memory. */
cs_search *cs_create(const cc_network *net, int32_t best_moves, uint64_t feature_slots, int32_t transpositions);
void cs_destroy(cs_search *search);
/* An empty transposition table of capacity entries: 0, or -1 out of memory (the table is then left as it was). */
int cs_transpositions_resize(cs_search *search, int32_t capacity);
/* A new root (an accepted position) and the transposition keys of the game's positions before it (count,
 * oldest first), the killers and the history cleared: 0, or -1 out of memory. */
int cs_start(cs_search *search, const cb_position *root, const uint64_t *keys, int count);
/* One iteration at depth (ComparisonSearch._alphabeta at the root between the two bounds): 0 with the best leaf
 * in *result, or 1 when stopped or a callback failed (root_first and root_best say how far it went). */
int cs_search_root(cs_search *search, int depth, cs_leaf *result);

/* Whether this build searches with a second thread (POSIX threads), and the least depth it does so at. */
#if defined(__unix__) || defined(__APPLE__)
#define CS_SPLIT 1
#else
#define CS_SPLIT 0
#endif
#define CS_SPLIT_MIN_DEPTH 4

/* cs_search_root with a second thread, helper (started on the same root, its own tables, killers and history):
 * search takes the root's first move while helper takes the next, then both take the remaining root moves one at a
 * time, each against the best leaf found so far by either, which they share under a lock (root splitting). Until
 * there is one, helper searches against the last iteration's best leaf: a move found no better than that one is
 * searched again at the end if the iteration's best is worse after all. Only search calls its hooks; the helper
 * searches without tablebases. The leaf found and the node count may vary from run to run (which thread searches
 * which move, and against which best, is a race). Without CS_SPLIT, below CS_SPLIT_MIN_DEPTH or with fewer than two
 * root moves: cs_search_root. */
int cs_search_root_split(cs_search *search, cs_search *helper, int depth, cs_leaf *result);

#endif
