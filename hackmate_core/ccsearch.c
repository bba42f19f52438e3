/* The comparison search in C (see ccsearch.h): search/comparison.py's methods one by one, in the same order. */
#include "ccsearch.h"

#include <stdlib.h>
#include <string.h>

#include "cexchange.h"
#include "ckillers.h"

/* hackmate_core.exchange: the king's worth in an exchange */
#define SEE_KING 20000

/* ------------------------------------------------------------------ the best-move table (hackmate_core.lru) */

static inline uint64_t lru_home(const cs_lru *lru, uint64_t key) {
    return (key ^ key >> 29) * 0x9E3779B97F4A7C15ULL >> 20 & lru->index_mask;
}

int cs_lru_init(cs_lru *lru, int32_t capacity) {
    uint64_t size = 4;
    while (size < 2 * (uint64_t)capacity) size *= 2;
    cs_lru_entry *entries = malloc((size_t)capacity * sizeof *entries);
    int32_t *index = calloc((size_t)size, sizeof *index);
    if (!entries || !index) {
        free(entries);
        free(index);
        return -1;
    }
    lru->entries = entries;
    lru->index = index;
    lru->index_mask = size - 1;
    lru->capacity = capacity;
    lru->count = 0;
    lru->oldest = lru->newest = -1;
    return 0;
}

void cs_lru_free(cs_lru *lru) {
    free(lru->entries);
    free(lru->index);
    *lru = (cs_lru){0};
}

void cs_lru_clear(cs_lru *lru) {
    memset(lru->index, 0, (size_t)(lru->index_mask + 1) * sizeof *lru->index);
    lru->count = 0;
    lru->oldest = lru->newest = -1;
}

/* The index slot holding key, or the empty slot where it would go. */
static uint64_t lru_slot(const cs_lru *lru, uint64_t key) {
    uint64_t slot = lru_home(lru, key);
    while (lru->index[slot] && lru->entries[lru->index[slot] - 1].key != key) slot = (slot + 1) & lru->index_mask;
    return slot;
}

static void lru_unlink(cs_lru *lru, int32_t entry) {
    cs_lru_entry *e = &lru->entries[entry];
    if (e->older >= 0) lru->entries[e->older].newer = e->newer;
    else lru->oldest = e->newer;
    if (e->newer >= 0) lru->entries[e->newer].older = e->older;
    else lru->newest = e->older;
}

static void lru_link_newest(cs_lru *lru, int32_t entry) {
    cs_lru_entry *e = &lru->entries[entry];
    e->older = lru->newest;
    e->newer = -1;
    if (lru->newest >= 0) lru->entries[lru->newest].newer = entry;
    else lru->oldest = entry;
    lru->newest = entry;
}

/* Remove the index slot's entry reference, shifting later ones of the probe sequence back (no tombstones). */
static void lru_unindex(cs_lru *lru, uint64_t slot) {
    uint64_t mask = lru->index_mask, next = (slot + 1) & mask;
    while (lru->index[next]) {
        uint64_t home = lru_home(lru, lru->entries[lru->index[next] - 1].key);
        if (((next - home) & mask) >= ((next - slot) & mask)) {   /* home at or before the hole: move it back */
            lru->index[slot] = lru->index[next];
            slot = next;
        }
        next = (next + 1) & mask;
    }
    lru->index[slot] = 0;
}

int32_t cs_lru_find(cs_lru *lru, uint64_t key) {
    int32_t found = lru->index[lru_slot(lru, key)] - 1;
    if (found < 0) return -1;
    lru_unlink(lru, found);
    lru_link_newest(lru, found);
    return found;
}

int32_t cs_lru_insert(cs_lru *lru, uint64_t key) {
    uint64_t slot = lru_slot(lru, key);
    int32_t entry = lru->index[slot] - 1;
    if (entry >= 0) {
        lru_unlink(lru, entry);
        lru_link_newest(lru, entry);
        return entry;
    }
    if (lru->count < lru->capacity) {
        entry = lru->count++;
    } else {   /* the least recent makes room (LruCache evicts it right after the insert: the same entries stay) */
        entry = lru->oldest;
        lru_unlink(lru, entry);
        lru_unindex(lru, lru_slot(lru, lru->entries[entry].key));
        slot = lru_slot(lru, key);
    }
    lru->entries[entry].key = key;
    lru->index[slot] = entry + 1;
    lru_link_newest(lru, entry);
    return entry;
}

cb_move cs_lru_get(cs_lru *lru, uint64_t key) {
    int32_t found = cs_lru_find(lru, key);
    return found < 0 ? 0 : lru->entries[found].move;
}

void cs_lru_put(cs_lru *lru, uint64_t key, cb_move move) {
    lru->entries[cs_lru_insert(lru, key)].move = move;
}

int cs_lru_resize(cs_lru *lru, int32_t capacity) {
    cs_lru grown;
    if (cs_lru_init(&grown, capacity) < 0) return -1;
    int32_t start = lru->oldest;
    for (int32_t skip = lru->count - capacity; skip > 0; skip--) start = lru->entries[start].newer;
    for (int32_t entry = start; entry >= 0; entry = lru->entries[entry].newer)
        cs_lru_put(&grown, lru->entries[entry].key, lru->entries[entry].move);
    cs_lru_free(lru);
    *lru = grown;
    return 0;
}

/* ------------------------------------------------------------------ rules and static exchange */

static inline int see_value(int type) {
    return type == CB_KING ? SEE_KING : CX_PIECE_VALUES[type];
}

/* hackmate_core.exchange.see */
static int see(const cb_position *p, cb_move move) {
    int to = CB_TO(move), attacker = cb_piece_type_at(p, CB_FROM(move));
    if (!attacker) return 0;
    cb_bitboard occupied = p->pieces[0] ^ CB_BIT(CB_FROM(move));
    int captured;
    if (cx_is_en_passant(p, move)) {
        captured = CB_PAWN;
        occupied ^= CB_BIT(p->turn == CB_WHITE ? to - 8 : to + 8);
    } else {
        captured = cb_piece_type_at(p, to);
    }
    int gains[40], count = 1, on_square = attacker;
    gains[0] = captured ? CX_PIECE_VALUES[captured] : 0;
    if (CB_PROMOTION(move)) {
        gains[0] += CX_PIECE_VALUES[CB_PROMOTION(move)] - CX_PIECE_VALUES[CB_PAWN];
        on_square = CB_PROMOTION(move);
    }
    occupied |= CB_BIT(to);
    int side = !p->turn;
    for (;;) {   /* each turn takes a piece off the board: at most 32 */
        cb_bitboard attackers = cb_attackers(p, side, to, occupied) & occupied, found = 0;
        if (!attackers) break;
        int type = CB_PAWN;
        for (; type <= CB_KING; type++)
            if ((found = attackers & p->pieces[type])) break;
        if (type == CB_KING && (cb_attackers(p, !side, to, occupied) & occupied)) break;
        gains[count] = see_value(on_square) - gains[count - 1];
        count++;
        on_square = type;
        occupied ^= found & (~found + 1);
        side = !side;
    }
    while (count > 1) {
        int last = gains[--count];
        gains[count - 1] = -(-gains[count - 1] > last ? -gains[count - 1] : last);
    }
    return gains[0];
}

/* hackmate_core.exchange.keeps_material */
static int keeps_material(const cb_position *p, cb_move move) {
    int taker = cb_piece_type_at(p, CB_FROM(move)), victim = cb_piece_type_at(p, CB_TO(move));
    return CX_PIECE_VALUES[taker ? taker : CB_PAWN] <= CX_PIECE_VALUES[victim ? victim : CB_PAWN] || see(p, move) >= 0;
}

/* Python's sort(reverse=True) by key (and numpy's stable argsort of -key): highest first, ties in order. */
static void sort_moves(cb_move *moves, const float **children, double *keys, int count) {
    for (int i = 1; i < count; i++) {
        cb_move move = moves[i];
        const float *child = children ? children[i] : NULL;
        double key = keys[i];
        int j = i - 1;
        for (; j >= 0 && keys[j] < key; j--) {
            moves[j + 1] = moves[j];
            keys[j + 1] = keys[j];
            if (children) children[j + 1] = children[j];
        }
        moves[j + 1] = move;
        keys[j + 1] = key;
        if (children) children[j + 1] = child;
    }
}

/* hackmate_core.rules.repetition_draw on the keys before the position at ply */
static int repetition(const cs_search *s, int ply) {
    const cb_position *p = &s->stack[ply];
    int before = s->key_count + ply, reach = p->halfmove_clock < before ? p->halfmove_clock : before, earlier = 0;
    for (int back = 4; back <= reach; back += 2) {
        if (s->keys[before - back] != p->key) continue;
        if (back <= ply || ++earlier >= 2) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ leaves */

static const cs_leaf NO_LEAF = {0};

/* ComparisonSearch._mate_rank: 1 with the rank in *rank, or 0 for a position or a draw. */
static inline int mate_rank(const cs_leaf *leaf, double *rank) {
    if (leaf->bound) *rank = leaf->bound * 1e9;
    else if (leaf->mate_ply > 0) *rank = 1000.0 - leaf->mate_ply;
    else if (leaf->mate_ply < 0) *rank = -1000.0 - leaf->mate_ply;
    else if (leaf->tablebase_ply > 0) *rank = 500.0 - leaf->tablebase_ply;
    else if (leaf->tablebase_ply < 0) *rank = -500.0 - leaf->tablebase_ply;
    else return 0;
    return 1;
}

/* ComparisonSearch.white_prefers: leaf a is better for White than leaf b. */
static int white_prefers(const cs_search *s, const cs_leaf *a, const cs_leaf *b) {
    double ka = 0.0, kb = 0.0;
    int ranked_a = mate_rank(a, &ka), ranked_b = mate_rank(b, &kb);
    if (ranked_a || ranked_b) return (ranked_a && ranked_b && ka == kb) ? 0 : ka > kb;
    const float *fa = a->draw ? s->even : a->features, *fb = b->draw ? s->even : b->features;
    if (fa == fb) return 0;
    return cc_prefers_first(s->net, fa, fb) > 0.5;
}

static inline int better(const cs_search *s, int white, const cs_leaf *a, const cs_leaf *b) {
    return white ? white_prefers(s, a, b) : white_prefers(s, b, a);
}

/* ComparisonSearch._narrow */
static inline int narrow(const cs_search *s, int white, const cs_leaf *best, const cs_leaf *alpha,
                         const cs_leaf *beta) {
    return white ? white_prefers(s, best, alpha) : white_prefers(s, beta, best);
}

/* ComparisonSearch._cuts */
static inline int cuts(const cs_search *s, int white, const cs_leaf *leaf, const cs_leaf *alpha,
                       const cs_leaf *beta) {
    return !(white ? white_prefers(s, beta, leaf) : white_prefers(s, leaf, alpha));
}

/* A copy of leaf with its features and line in storage (line: move, then leaf's). */
static void keep(const cs_search *s, cs_storage *storage, const cs_leaf *leaf, cb_move move, cs_leaf *out) {
    *out = *leaf;
    if (leaf->features) {
        memcpy(storage->features, leaf->features, (size_t)s->size * sizeof(float));
        out->features = storage->features;
    }
    int length = 0;
    if (move) storage->pv[length++] = move;
    if (leaf->pv_length) memcpy(storage->pv + length, leaf->pv, (size_t)leaf->pv_length * sizeof(cb_move));
    out->pv = storage->pv;
    out->pv_length = length + leaf->pv_length;
    out->owner = storage;
}

/* Leaf.after(move), kept at ply in a slot that none of the node's leaves in use occupies. */
static void keep_after(cs_search *s, int ply, const cs_leaf *leaf, cb_move move, const cs_leaf *best,
                       const cs_leaf *alpha, const cs_leaf *beta, cs_leaf *out) {
    cs_storage *slot = s->slots[ply];
    while (slot == best->owner || slot == alpha->owner || slot == beta->owner) slot++;
    keep(s, slot, leaf, move, out);
}

/* The accumulator of the position at ply, brought up to date from the nearest ply above whose is. */
static const int64_t *accumulator_at(cs_search *s, int ply) {
    int width = s->net->width, from = ply;
    while (!s->accumulated[from]) from--;
    for (; from < ply; from++) {
        cc_update(s->net, &s->stack[from], &s->stack[from + 1], s->accumulators + (size_t)from * width,
                  s->accumulators + (size_t)(from + 1) * width);
        s->accumulated[from + 1] = 1;
    }
    return s->accumulators + (size_t)ply * width;
}

/* The features of the position at ply into out, from the table or its accumulator. */
static void features_at(cs_search *s, int ply, float *out) {
    if (cc_cache_get(&s->features, &s->stack[ply], out)) return;
    cc_features(s->net, accumulator_at(s, ply), out);
    cc_cache_put(&s->features, &s->stack[ply], out);
}

/* Leaf(features if features is not None else comparator.features(board)) */
static void position_leaf(cs_search *s, int ply, const float *features, cs_leaf *out) {
    *out = NO_LEAF;
    if (!features) {
        features_at(s, ply, s->own[ply]);
        features = s->own[ply];
    }
    out->features = features;
    out->pv = s->slots[ply][0].pv;
}

static inline void mated_leaf(const cs_search *s, int ply, cs_leaf *out) {
    *out = NO_LEAF;
    out->mate_ply = s->stack[ply].turn == CB_BLACK ? ply : -ply;
    out->pv = s->slots[ply][0].pv;
}

static inline void draw_leaf(const cs_search *s, int ply, cs_leaf *out) {
    *out = NO_LEAF;
    out->draw = 1;
    out->pv = s->slots[ply][0].pv;
}

/* ------------------------------------------------------------------ search */

/* ComparisonSearch._count_node: nonzero when the search must unwind. */
static int count_node(cs_search *s, int ply) {
    if (cb_count_node(&s->hooks, CS_CHECK_NODES_EVERY)) return 1;
    if (ply > s->seldepth) s->seldepth = ply;
    return 0;
}

/* Make move at ply, or pass for move 0: the child's position and the key of the path (its accumulator when first
 * needed). */
static void push(cs_search *s, int ply, cb_move move) {
    s->keys[s->key_count + ply] = s->stack[ply].key;
    s->stack[ply + 1] = s->stack[ply];
    if (move) cb_make(&s->stack[ply + 1], move, 1);
    else cb_make_null(&s->stack[ply + 1]);
    s->line[ply] = move;
    s->accumulated[ply + 1] = 0;
}

/* ComparisonSearch._terminal: 1 with the leaf in *out, 0 when the game goes on, -1 when the probe failed.
 * count: the legal moves (at the root: the moves searched), or -1 at a leaf. */
static int terminal(cs_search *s, int ply, int count, cs_leaf *out) {
    if (ply == 0 && count > 0) return 0;
    const cb_position *p = &s->stack[ply];
    if (count < 0) count = cb_legal_moves(p, s->moves[ply]);
    if (!count) {
        if (cb_checkers(p)) mated_leaf(s, ply, out);
        else draw_leaf(s, ply, out);
        return 1;
    }
    if (p->halfmove_clock >= 100 || cb_insufficient_material(p) || repetition(s, ply)) {
        draw_leaf(s, ply, out);
        return 1;
    }
    int result, found = cb_probe(&s->hooks, p, &result);
    if (found <= 0) return found;
    if (result == 0) {
        draw_leaf(s, ply, out);
    } else {
        *out = NO_LEAF;
        out->tablebase_ply = (result > 0) == (p->turn == CB_WHITE) ? ply : -ply;
        out->pv = s->slots[ply][0].pv;
    }
    return 1;
}

/* The legal moves of the position at ply into s->moves[ply], at the root only the allowed ones: their number. */
static int node_moves(cs_search *s, int ply) {
    int count = cb_legal_moves(&s->stack[ply], s->moves[ply]);
    if (ply > 0 || s->allowed_count < 0) return count;
    int kept = 0;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < s->allowed_count; j++)
            if (s->moves[0][i] == s->allowed[j]) {
                s->moves[0][kept++] = s->moves[0][i];
                break;
            }
    return kept;
}

/* The plies the i-th move at ply is searched shallower first (late-move reductions), before the check test. */
static int reduction(const cs_search *s, int ply, int i, cb_move move, int reducible, int depth) {
    if (!reducible || i < CS_FULL_DEPTH_MOVES || CB_PROMOTION(move) || cx_is_capture(&s->stack[ply], move)) return 0;
    return s->options.deeper_reductions && i >= CS_DEEP_REDUCTION_MOVES && depth >= CS_DEEP_REDUCTION_MIN_DEPTH ? 2 : 1;
}

static int alphabeta(cs_search *s, int depth, int ply, const cs_leaf *alpha, const cs_leaf *beta,
                     const float *features, cs_leaf *out);
static int quiescence(cs_search *s, int ply, int qply, const cs_leaf *alpha, const cs_leaf *beta,
                      const float *features, cs_leaf *out);

/* ComparisonSearch._ordered, in two steps: s->moves[ply] best first, the first of them (the return value) in their
 * final places at once. Their keys need no features: the stored best move (3.0), the captures that keep material
 * (all captures with captures; none with comparator) at 1 + MVV-LVA / 100, then with killer_moves the ply's
 * killers that are quiet moves here (0.75, 0.5), all above any probability. captures leaves the others as
 * generated, captures+history orders them at once by the history, as do the comparator's orderings where
 * near_leaves (history_near_leaves where late-move pruning applies: the moves it skips cost no features); the
 * comparator orders them (finish_order) only when the search gets to them, which a cut-off on one of the first
 * often spares. The children's features are computed where the comparator orders them, and by each child itself
 * otherwise: the same numbers either way. */
static int ordered(cs_search *s, int ply, int count, int near_leaves) {
    const cb_position *p = &s->stack[ply];
    cb_move *moves = s->moves[ply];
    double *keys = s->order;
    cb_move hash_move = s->options.hash_move ? cs_lru_get(&s->best_moves, p->key) : 0;
    static const cb_move no_killers[2] = {0, 0};
    const cb_move *killers = s->options.killer_moves ? s->killers[ply] : no_killers;
    for (int i = 0; i < count; i++) s->children[ply][i] = NULL;
    /* keys of the first moves, 0 for the others (left in their order, below them by a stable sort) */
    int first = 0;
    for (int i = 0; i < count; i++) {
        cb_move move = moves[i];
        int capture = cx_is_capture(p, move);
        keys[i] = 0.0;
        if (move == hash_move) keys[i] = 3.0;
        else if (capture && (s->options.ordering == CS_ORDER_CAPTURES
                             || (s->options.ordering != CS_ORDER_COMPARATOR && keeps_material(p, move))))
            keys[i] = 1.0 + cx_mvv_lva(p, move) / 100.0;
        else if (!capture && move == killers[0]) keys[i] = 0.75;
        else if (!capture && move == killers[1]) keys[i] = 0.5;
        first += keys[i] > 0.0;
    }
    sort_moves(moves, NULL, keys, count);
    int by_history = s->options.ordering == CS_ORDER_CAPTURES_HISTORY
                     || (near_leaves && s->options.ordering != CS_ORDER_CAPTURES);
    if (by_history) {
        const int64_t *history = s->history[p->turn];
        for (int i = first; i < count; i++) keys[i] = (double)history[CB_FROM(moves[i]) * 64 + CB_TO(moves[i])];
        sort_moves(moves + first, NULL, keys + first, count - first);
    }
    return s->options.ordering == CS_ORDER_CAPTURES || by_history ? count : first;
}

/* ComparisonSearch._cut_off: move cut the node at ply with depth to go; a quiet one becomes the ply's newest
 * killer and earns depth squared in the history. */
static void cut_off(cs_search *s, int ply, cb_move move, int depth) {
    const cb_position *p = &s->stack[ply];
    if (CB_PROMOTION(move) || cx_is_capture(p, move)) return;
    ck_remember(s->killers[ply], move);
    s->history[p->turn][CB_FROM(move) * 64 + CB_TO(move)] += (int64_t)depth * depth;
}

/* The rest of ComparisonSearch._ordered: moves first to count - 1 of s->moves[ply] by how much the comparator
 * prefers each child to the position (features: the position's), their features in s->children[ply]. Each
 * child's features come from the table, or from its accumulator (the parent's updated by the move) with others,
 * CC_BATCH at a time. */
static void finish_order(cs_search *s, int ply, int first, int count, const float *features) {
    const cb_position *p = &s->stack[ply];
    cb_move *moves = s->moves[ply];
    const float **children = s->children[ply];
    double *keys = s->order;
    int width = s->net->width, waiting = 0;
    const int64_t *sources[CC_BATCH], *parent = NULL;
    for (int i = first; i < count; i++) {
        float *child = s->arena + s->arena_top;
        s->arena_top += (size_t)s->size;
        children[i] = child;
        cb_position *position = &s->batch_positions[waiting];
        *position = *p;
        cb_make(position, moves[i], 1);
        if (!cc_cache_get(&s->features, position, child)) {
            int64_t *accumulator = s->batch_accumulators + (size_t)waiting * width;
            if (!parent) parent = accumulator_at(s, ply);
            cc_update(s->net, p, position, parent, accumulator);
            sources[waiting] = accumulator;
            s->batch_features[waiting++] = child;
        }
        if (waiting == CC_BATCH || (waiting && i == count - 1)) {
            cc_features_many(s->net, &s->work, sources, waiting, s->batch_features);
            for (int k = 0; k < waiting; k++) cc_cache_put(&s->features, &s->batch_positions[k], s->batch_features[k]);
            waiting = 0;
        }
    }
    if (!features) {
        features_at(s, ply, s->own[ply]);
        features = s->own[ply];
    }
    for (int i = first; i < count; i++) {
        double preference = cc_prefers_first(s->net, children[i], features);
        keys[i] = p->turn == CB_BLACK ? 1.0 - preference : preference;
    }
    sort_moves(moves + first, children + first, keys + first, count - first);
}

/* ComparisonSearch._expand over s->moves[ply]: qply >= 0 searches the children in quiescence, else with
 * alpha-beta at depth - 1; the moves from ready on are put in order by finish_order when the search gets there
 * (features: the position's); quiet moves from prune_from on that give no check are skipped (0: none).
 * 0, or 1 when stopped. */
static int expand(cs_search *s, int ply, int qply, int count, int ready, const float *features, cs_leaf alpha,
                  cs_leaf beta, const cs_leaf *stand_pat, int reducible, int prune_from, int depth, cs_leaf *out) {
    const cb_position *p = &s->stack[ply];
    const cb_move *moves = s->moves[ply];
    int white = p->turn == CB_WHITE, found = stand_pat != NULL;
    cs_leaf best = found ? *stand_pat : NO_LEAF;
    for (int i = 0; i < count; i++) {
        if (i == ready) finish_order(s, ply, ready, count, features);
        cb_move move = moves[i];
        const float *child = qply < 0 ? s->children[ply][i] : NULL;
        int reduce = reduction(s, ply, i, move, reducible, depth);
        push(s, ply, move);
        if (prune_from && i >= prune_from && !CB_PROMOTION(move) && !cx_is_capture(p, move)
            && !cb_checkers(&s->stack[ply + 1]))
            continue;
        if (reduce && cb_checkers(&s->stack[ply + 1])) reduce = 0;
        cs_leaf leaf;
        if (qply >= 0 ? quiescence(s, ply + 1, qply + 1, &alpha, &beta, NULL, &leaf)
                      : alphabeta(s, depth - 1 - reduce, ply + 1, &alpha, &beta, child, &leaf))
            return 1;
        int improves = !found || better(s, white, &leaf, &best);
        if (reduce && improves) {
            if (alphabeta(s, depth - 1, ply + 1, &alpha, &beta, child, &leaf)) return 1;
            improves = !found || better(s, white, &leaf, &best);
        }
        if (!improves) continue;
        cs_leaf kept;
        keep_after(s, ply, &leaf, move, &best, &alpha, &beta, &kept);
        best = kept;
        found = 1;
        if (ply == 0 && qply < 0) {   /* at the root: the best so far, for a stopped iteration */
            if (!s->root_first) s->root_first = move;
            keep(s, &s->root_storage, &best, 0, &s->root_best);
        }
        if (narrow(s, white, &best, &alpha, &beta)) {
            if (white) alpha = best;
            else beta = best;
            if (!white_prefers(s, &beta, &alpha)) {   /* the opponent will not allow what the side has */
                if (qply < 0) cut_off(s, ply, move, depth);
                break;
            }
        }
    }
    *out = best;
    return 0;
}

/* ComparisonSearch._null_move (see there for why each condition): 1 with the leaf of a pass that cuts the node in
 * *out (no line), 0 when the node must search its moves, -1 when stopped. */
static int null_move(cs_search *s, int depth, int ply, int in_check, const cs_leaf *alpha, const cs_leaf *beta,
                     cs_leaf *out) {
    const cb_position *p = &s->stack[ply];
    int white = p->turn == CB_WHITE;
    if (in_check || ply == 0 || depth < CS_NULL_MOVE_MIN_DEPTH || !s->line[ply - 1] || (white ? beta : alpha)->bound
        || !cb_has_pieces(p))
        return 0;
    push(s, ply, 0);
    cs_leaf leaf;
    if (alphabeta(s, depth - 1 - CS_NULL_MOVE_REDUCTION, ply + 1, alpha, beta, NULL, &leaf)) return -1;
    if (leaf.mate_ply || !narrow(s, white, &leaf, alpha, beta)) return 0;
    if (!cuts(s, white, &leaf, alpha, beta)) return 0;
    *out = leaf;
    out->pv_length = 0;
    return 1;
}

/* ComparisonSearch._transposition: 1 with the stored leaf of the position at ply in *out when it was searched at
 * least depth deep and decides this node (an exact leaf, or a bound beyond alpha or beta on its side), else 0. The
 * leaf's features and line stay in the table until the next store, so the parent keeps a copy at once. */
static int transposition(cs_search *s, int depth, int ply, const cs_leaf *alpha, const cs_leaf *beta, cs_leaf *out) {
    int32_t entry = cs_lru_find(&s->transpositions, s->stack[ply].key);
    if (entry < 0) return 0;
    const cs_transposition *stored = &s->transposition[entry];
    if (stored->depth < depth) return 0;
    cs_leaf leaf = NO_LEAF;
    leaf.features = s->transposition_features + (size_t)entry * (size_t)s->size;
    leaf.pv = stored->pv;
    leaf.pv_length = stored->pv_length;
    int white = s->stack[ply].turn == CB_WHITE;
    if (stored->kind == CS_LOWER && !cuts(s, white, &leaf, alpha, beta)) return 0;
    if (stored->kind == CS_UPPER && narrow(s, white, &leaf, alpha, beta)) return 0;
    *out = leaf;
    return 1;
}

/* ComparisonSearch._store_transposition: the best leaf of the position at ply searched depth deep between alpha
 * and beta, when it is a position's (mates and tablebase results count plies from the root, draws may come from
 * the path). */
static void store_transposition(cs_search *s, int depth, int ply, const cs_leaf *alpha, const cs_leaf *beta,
                                const cs_leaf *best) {
    if (!best->features || best->bound) return;
    int white = s->stack[ply].turn == CB_WHITE, kind = CS_EXACT;
    if (!narrow(s, white, best, alpha, beta)) kind = CS_UPPER;
    else if (cuts(s, white, best, alpha, beta)) kind = CS_LOWER;
    int32_t entry = cs_lru_insert(&s->transpositions, s->stack[ply].key);
    cs_transposition *stored = &s->transposition[entry];
    stored->depth = depth;
    stored->kind = kind;
    stored->pv_length = best->pv_length < CS_TRANSPOSITION_PV ? best->pv_length : CS_TRANSPOSITION_PV;
    memcpy(stored->pv, best->pv, (size_t)stored->pv_length * sizeof(cb_move));
    memcpy(s->transposition_features + (size_t)entry * (size_t)s->size, best->features,
           (size_t)s->size * sizeof(float));
}

/* ComparisonSearch._alphabeta: 0 with the best leaf in *out, or 1 when stopped. */
static int alphabeta(cs_search *s, int depth, int ply, const cs_leaf *alpha, const cs_leaf *beta,
                     const float *features, cs_leaf *out) {
    if (count_node(s, ply)) return 1;
    if (depth <= 0 || ply >= CS_MAX_PLY) {
        int ended = terminal(s, ply, -1, out);   /* a leaf asks only whether a move exists */
        if (ended) return ended < 0;
        if (s->options.quiescence && ply < CS_MAX_PLY) return quiescence(s, ply, 0, alpha, beta, features, out);
        position_leaf(s, ply, features, out);
        return 0;
    }
    const cb_position *p = &s->stack[ply];
    int count = node_moves(s, ply);
    int ended = terminal(s, ply, count, out);
    if (ended) return ended < 0;
    int in_check = cb_checkers(p) != 0;
    if (in_check && s->options.check_extension && ply > 0 && ply + depth < 2 * s->iteration_depth) depth++;
    int transpose = s->options.transposition_table && ply > 0;
    if (transpose && transposition(s, depth, ply, alpha, beta, out)) return 0;
    if (s->options.null_move) {
        int passed = null_move(s, depth, ply, in_check, alpha, beta, out);
        if (passed) return passed < 0;
    }
    size_t arena_top = s->arena_top;
    int reducible = s->options.late_move_reductions && depth >= CS_REDUCTION_MIN_DEPTH && !in_check;
    static const int prune_moves[CS_PRUNE_DEPTHS] = CS_LATE_MOVE_PRUNING_MOVES;
    int prune_from = s->options.late_move_pruning && ply > 0 && depth < CS_PRUNE_DEPTHS && !in_check
                     ? prune_moves[depth] : 0;
    int first = ordered(s, ply, count, prune_from && s->options.history_near_leaves);
    int stopped = expand(s, ply, -1, count, first, features, *alpha, *beta, NULL, reducible, prune_from, depth, out);
    s->arena_top = arena_top;
    if (stopped) return 1;
    if (out->pv_length) cs_lru_put(&s->best_moves, p->key, out->pv[0]);
    if (transpose) store_transposition(s, depth, ply, alpha, beta, out);
    return 0;
}

/* ComparisonSearch._quiescence: 0 with the best leaf in *out, or 1 when stopped. */
static int quiescence(cs_search *s, int ply, int qply, const cs_leaf *alpha, const cs_leaf *beta,
                      const float *features, cs_leaf *out) {
    if (qply > 0 && count_node(s, ply)) return 1;
    const cb_position *p = &s->stack[ply];
    cb_move *moves = s->moves[ply];
    double *keys = s->order;
    if (cb_checkers(p)) {
        int count = cb_legal_moves(p, moves);
        if (!count) {
            mated_leaf(s, ply, out);
            return 0;
        }
        if (qply >= CS_MAX_QUIESCENCE_PLIES || ply >= CS_MAX_PLY) {
            position_leaf(s, ply, features, out);
            return 0;
        }
        for (int i = 0; i < count; i++) keys[i] = cx_is_capture(p, moves[i]) ? cx_mvv_lva(p, moves[i]) : -100;
        sort_moves(moves, NULL, keys, count);
        return expand(s, ply, qply, count, count, NULL, *alpha, *beta, NULL, 0, 0, 0, out);
    }
    cs_leaf stand_pat;
    position_leaf(s, ply, features, &stand_pat);
    if (qply >= CS_MAX_QUIESCENCE_PLIES || ply >= CS_MAX_PLY) {
        *out = stand_pat;
        return 0;
    }
    int white = p->turn == CB_WHITE;
    cs_leaf a = *alpha, b = *beta;
    if (narrow(s, white, &stand_pat, &a, &b)) {
        if (white) a = stand_pat;
        else b = stand_pat;
        if (!white_prefers(s, &b, &a)) {   /* cut before the captures are even generated */
            *out = stand_pat;
            return 0;
        }
    }
    /* _promising_captures: the legal captures that keep material by static exchange, most valuable victim first */
    int count = cb_legal_moves(p, moves), captures = 0;
    cb_bitboard theirs = p->colors[!p->turn];
    for (int i = 0; i < count; i++) {
        int to = CB_TO(moves[i]);
        if (!((theirs & CB_BIT(to)) || (to == p->ep_square && (p->pieces[CB_PAWN] & CB_BIT(CB_FROM(moves[i]))))))
            continue;
        if (!keeps_material(p, moves[i])) continue;
        keys[captures] = cx_mvv_lva(p, moves[i]);
        moves[captures++] = moves[i];
    }
    sort_moves(moves, NULL, keys, captures);
    return expand(s, ply, qply, captures, captures, NULL, a, b, &stand_pat, 0, 0, 0, out);
}

/* ------------------------------------------------------------------ the searcher */

cs_search *cs_create(const cc_network *net, int32_t best_moves, uint64_t feature_slots, int32_t transpositions) {
    cs_search *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->net = net;
    s->size = cc_feature_floats(net);
    /* each ply's leaves and own features, the root's best leaf, the start position's and the root's features, the
     * split's leaf and the previous iteration's */
    float *block = malloc((size_t)(CS_PLIES * (CS_SLOTS + 1) + 5) * (size_t)s->size * sizeof(float));
    /* the children's features along the path: at most every move at every ply (untouched memory costs nothing) */
    s->arena = block ? malloc((size_t)CS_PLIES * CB_MAX_MOVES * (size_t)s->size * sizeof(float)) : NULL;
    s->accumulators = s->arena ? malloc((size_t)CS_PLIES * (size_t)net->width * sizeof(int64_t)) : NULL;
    s->batch_accumulators = s->accumulators ? malloc((size_t)CC_BATCH * (size_t)net->width * sizeof(int64_t)) : NULL;
    if (!s->batch_accumulators || cc_workspace_init(&s->work, net) < 0
        || cs_lru_init(&s->best_moves, best_moves) < 0 || cs_transpositions_resize(s, transpositions) < 0) {
        cs_lru_free(&s->best_moves);
        cc_workspace_free(&s->work);
        free(block);
        free(s->arena);
        free(s->accumulators);
        free(s->batch_accumulators);
        free(s);
        return NULL;
    }
    for (int ply = 0; ply < CS_PLIES; ply++) {
        float *storage = block + (size_t)ply * (CS_SLOTS + 1) * s->size;
        for (int slot = 0; slot < CS_SLOTS; slot++) s->slots[ply][slot].features = storage + (size_t)slot * s->size;
        s->own[ply] = storage + (size_t)CS_SLOTS * s->size;
    }
    s->root_storage.features = block + (size_t)CS_PLIES * (CS_SLOTS + 1) * s->size;
    s->even = s->root_storage.features + s->size;
    s->root_features = s->even + s->size;
    s->split_storage.features = s->root_features + s->size;
    s->previous_storage.features = s->split_storage.features + s->size;
    cc_cache_init(&s->features, feature_slots, s->size);   /* without memory for it: no table, same search */
    /* what a draw is worth: the start position's features */
    static const cb_bitboard start[7] = {0, 0x00FF00000000FF00ULL, 0x4200000000000042ULL, 0x2400000000000024ULL,
                                         0x8100000000000081ULL, 0x0800000000000008ULL, 0x1000000000000010ULL};
    cb_position position;
    cb_set(&position, start, 0xFFFFULL, 0xFFFF000000000000ULL, CB_WHITE, 0x8100000000000081ULL, -1, 0, 1, 0);
    cc_accumulate(net, &position, s->accumulators);
    cc_features(net, s->accumulators, s->even);
    return s;
}

void cs_destroy(cs_search *s) {
    if (!s) return;
    free(s->slots[0][0].features);   /* the block of every ply's storage */
    free(s->arena);
    free(s->accumulators);
    free(s->batch_accumulators);
    cc_workspace_free(&s->work);
    free(s->keys);
    cc_cache_free(&s->features);
    cs_lru_free(&s->best_moves);
    cs_lru_free(&s->transpositions);
    free(s->transposition);
    free(s->transposition_features);
    free(s);
}

int cs_transpositions_resize(cs_search *s, int32_t capacity) {
    cs_lru table;
    cs_transposition *entries = malloc((size_t)capacity * sizeof *entries);
    /* untouched memory costs nothing: a large table takes only what the search fills */
    float *features = entries ? malloc((size_t)capacity * (size_t)s->size * sizeof(float)) : NULL;
    if (!features || cs_lru_init(&table, capacity) < 0) {
        free(entries);
        free(features);
        return -1;
    }
    cs_lru_free(&s->transpositions);
    free(s->transposition);
    free(s->transposition_features);
    s->transpositions = table;
    s->transposition = entries;
    s->transposition_features = features;
    return 0;
}

int cs_start(cs_search *s, const cb_position *root, const uint64_t *keys, int count) {
    if (cb_copy_keys(&s->keys, &s->key_capacity, keys, count, CS_PLIES) < 0) return -1;
    s->key_count = count;
    s->stack[0] = *root;
    cc_accumulate(s->net, root, s->accumulators);
    s->accumulated[0] = 1;
    s->hooks.nodes = 0;
    s->previous_found = 0;
    memset(s->killers, 0, sizeof s->killers);
    memset(s->history, 0, sizeof s->history);
    return 0;
}

/* A finished iteration's best leaf, kept for the next one's split. */
static void keep_previous(cs_search *s, const cs_leaf *best) {
    keep(s, &s->previous_storage, best, 0, &s->previous);
    s->previous_found = 1;
}

/* The iteration's state at the start of an iteration. */
static void begin_iteration(cs_search *s, int depth) {
    s->hooks.aborted = s->hooks.failed = 0;
    s->iteration_depth = depth;
    s->seldepth = 0;
    s->arena_top = 0;
    s->root_first = 0;
    s->root_best = NO_LEAF;
}

int cs_search_root(cs_search *s, int depth, cs_leaf *result) {
    begin_iteration(s, depth);
    cs_leaf alpha = NO_LEAF, beta = NO_LEAF;
    alpha.bound = -1;
    beta.bound = 1;
    features_at(s, 0, s->root_features);
    if (alphabeta(s, depth, 0, &alpha, &beta, s->root_features, result)) return 1;
    keep_previous(s, result);
    return 0;
}

/* ------------------------------------------------------------------ a second thread at the root */

#if CS_SPLIT
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* What the two threads share in one iteration. */
typedef struct {
    cs_search *main, *helper;
    int depth, count, reducible, white;
    pthread_mutex_t lock;                /* guards best, found, first */
    cs_leaf best;                        /* in main->split_storage */
    int found;
    cb_move first;
    atomic_int next;                     /* the next root move to take */
    atomic_int stop;                     /* main's hooks said stop: both unwind */
    atomic_int helper_done;
    atomic_int first_done;               /* the first move's search finished */
    const cs_leaf *previous;             /* what the helper searches against while nothing is found, or NULL */
    unsigned char doubtful[CB_MAX_MOVES];   /* found no better than previous only: searched again if needed */
    atomic_ullong helper_nodes;          /* the helper's count, as of its last look at stop */
    cb_hooks hooks;                      /* main's hooks as the caller set them */
} cs_split;

/* The helper's stop hook: the main thread decides. */
static int helper_stop(void *context, uint64_t nodes) {
    cs_split *split = context;
    atomic_store_explicit(&split->helper_nodes, nodes, memory_order_relaxed);
    return atomic_load_explicit(&split->stop, memory_order_relaxed);
}

/* The main thread's stop hook: the caller's, told both threads' nodes. */
static int main_stop(void *context, uint64_t nodes) {
    cs_split *split = context;
    int stop = split->hooks.stop(split->hooks.context,
                                 nodes + atomic_load_explicit(&split->helper_nodes, memory_order_relaxed));
    if (stop) atomic_store(&split->stop, 1);
    return stop;
}

/* The main thread's tablebase hook: the caller's (the hooks have one context). */
static int main_probe(void *context, const cb_position *p, int *result) {
    cs_split *split = context;
    return split->hooks.probe(split->hooks.context, p, result);
}

/* The i-th root move searched by s against the shared best (expand's loop body at the root), which it improves
 * under the lock: 0, or 1 when stopped. */
static int split_move(cs_search *s, cs_split *split, int i) {
    cs_leaf alpha = NO_LEAF, beta = NO_LEAF, best = NO_LEAF, leaf;
    alpha.bound = -1;
    beta.bound = 1;
    pthread_mutex_lock(&split->lock);
    int found = split->found, speculative = 0;
    if (found) keep(s, &s->root_storage, &split->best, 0, &best);   /* a copy of its own to search against */
    pthread_mutex_unlock(&split->lock);
    if (!found && split->previous && i > 0) {
        keep(s, &s->root_storage, split->previous, 0, &best);
        found = speculative = 1;
    }
    if (found) {
        if (split->white) alpha = best;
        else beta = best;
    }
    cb_move move = split->main->moves[0][i];
    const float *child = split->main->children[0][i];
    int reduce = reduction(s, 0, i, move, split->reducible, split->depth);
    push(s, 0, move);
    if (reduce && cb_checkers(&s->stack[1])) reduce = 0;
    if (alphabeta(s, split->depth - 1 - reduce, 1, &alpha, &beta, child, &leaf)) return 1;
    int improves = !found || better(s, split->white, &leaf, &best);
    if (reduce && improves) {
        if (alphabeta(s, split->depth - 1, 1, &alpha, &beta, child, &leaf)) return 1;
        improves = !found || better(s, split->white, &leaf, &best);
    }
    if (!improves) {
        split->doubtful[i] = (unsigned char)speculative;
        return 0;
    }
    pthread_mutex_lock(&split->lock);
    if (!split->found || better(s, split->white, &leaf, &split->best)) {
        keep(s, &split->main->split_storage, &leaf, move, &split->best);
        split->found = 1;
        if (!split->first) split->first = move;
    }
    pthread_mutex_unlock(&split->lock);
    return 0;
}

/* Root moves taken one at a time until none is left or the search stops: 0, or 1 when stopped. */
static int split_moves(cs_search *s, cs_split *split) {
    for (;;) {
        if (atomic_load(&split->stop)) return 1;
        int i = atomic_fetch_add(&split->next, 1);
        if (i >= split->count) return 0;
        if (split_move(s, split, i)) return 1;
    }
}

static void *helper_thread(void *context) {
    cs_split *split = context;
    split_moves(split->helper, split);
    atomic_store(&split->helper_done, 1);
    return NULL;
}

int cs_search_root_split(cs_search *s, cs_search *helper, int depth, cs_leaf *result) {
    if (depth < CS_SPLIT_MIN_DEPTH) return cs_search_root(s, depth, result);
    int count = node_moves(s, 0);
    if (count < 2) return cs_search_root(s, depth, result);
    begin_iteration(s, depth);
    begin_iteration(helper, depth);
    helper->options = s->options;
    cs_split split = {.main = s, .helper = helper, .depth = depth, .count = count, .hooks = s->hooks};
    split.white = s->stack[0].turn == CB_WHITE;
    split.reducible = s->options.late_move_reductions && depth >= CS_REDUCTION_MIN_DEPTH && !cb_checkers(&s->stack[0]);
    atomic_init(&split.next, 1);
    atomic_init(&split.stop, 0);
    atomic_init(&split.helper_done, 0);
    atomic_init(&split.helper_nodes, helper->hooks.nodes);
    pthread_mutex_init(&split.lock, NULL);
    s->hooks.stop = main_stop;
    if (s->hooks.probe) s->hooks.probe = main_probe;
    s->hooks.context = &split;
    helper->hooks.stop = helper_stop;
    helper->hooks.context = &split;
    helper->hooks.probe = NULL;
    if (s->previous_found) split.previous = &s->previous;
    pthread_t thread;
    /* the root node as alphabeta sees it: counted, every move in order at once (nothing is cut at the root) */
    int threaded = 0, stopped = count_node(s, 0);
    if (!stopped) {
        features_at(s, 0, s->root_features);
        int first = ordered(s, 0, count, 0);
        finish_order(s, 0, first, count, s->root_features);
        if (split.previous) threaded = pthread_create(&thread, NULL, helper_thread, &split) == 0;
        stopped = split_move(s, &split, 0);
        atomic_store(&split.first_done, !stopped);
    }
    if (!stopped && !threaded) threaded = pthread_create(&thread, NULL, helper_thread, &split) == 0;
    if (!stopped) stopped = split_moves(s, &split);
    if (threaded) {
        struct timespec pause = {0, 200000};
        while (!atomic_load(&split.helper_done)) {
            int stop = stopped ? 0 : s->hooks.stop(s->hooks.context, s->hooks.nodes);   /* the caller decides */
            if (stop) {
                s->hooks.aborted = 1;
                s->hooks.failed = stop < 0;
                stopped = 1;
            }
            nanosleep(&pause, NULL);
        }
        pthread_join(thread, NULL);
    }
    stopped = stopped || atomic_load(&split.stop);
    /* moves found no better than the last iteration's best, when this one's best is worse after all */
    if (!stopped && split.previous && better(s, split.white, split.previous, &split.best))
        for (int i = 1; i < count && !stopped; i++)
            if (split.doubtful[i]) {
                split.doubtful[i] = 0;
                stopped = split_move(s, &split, i);
            }
    s->hooks.stop = split.hooks.stop;   /* the caller's hooks back */
    s->hooks.probe = split.hooks.probe;
    s->hooks.context = split.hooks.context;
    pthread_mutex_destroy(&split.lock);
    if (helper->seldepth > s->seldepth) s->seldepth = helper->seldepth;
    if (split.found) {
        s->root_first = atomic_load(&split.first_done) ? s->moves[0][0] : split.first;
        keep(s, &s->root_storage, &split.best, 0, &s->root_best);
    }
    s->arena_top = 0;
    if (stopped) return 1;
    *result = s->root_best;
    keep_previous(s, result);
    cs_lru_put(&s->best_moves, s->stack[0].key, result->pv[0]);
    cs_lru_put(&helper->best_moves, s->stack[0].key, result->pv[0]);
    return 0;
}
#else
int cs_search_root_split(cs_search *s, cs_search *helper, int depth, cs_leaf *result) {
    (void)helper;
    return cs_search_root(s, depth, result);
}
#endif
