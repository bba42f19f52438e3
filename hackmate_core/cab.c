/* Compiled alpha-beta (see cab.h): search/alphabeta.py's functions one by one, in the same order of work. */
#include "cab.h"

#include <stdlib.h>
#include <string.h>

#include "cexchange.h"
#include "ckillers.h"


static inline int lsb64(cb_bitboard b) {
    int square = 0;
    while (!(b & 1)) {
        b >>= 1;
        square++;
    }
    return square;
}

#if defined(__GNUC__) || defined(__clang__)
#define LSB(b) __builtin_ctzll(b)
#else
#define LSB(b) lsb64(b)
#endif

/* ------------------------------------------------------------------ transposition table (search/tt.py) */

int cab_table_init(cab_table *table, uint64_t size) {
    table->slots = calloc((size_t)size, sizeof *table->slots);
    table->size = table->slots ? size : 0;
    table->generation = 0;
    return table->slots ? 0 : -1;
}

void cab_table_free(cab_table *table) {
    free(table->slots);
    *table = (cab_table){0};
}

void cab_table_clear(cab_table *table) {
    if (table->slots) memset(table->slots, 0, (size_t)table->size * sizeof *table->slots);
}

int cab_table_hashfull(const cab_table *table) {
    uint64_t sample = table->size < 1000 ? table->size : 1000, used = 0;
    if (!sample) return 0;
    for (uint64_t i = 0; i < sample; i++)
        if (table->slots[i].used && table->slots[i].generation == table->generation) used++;
    return (int)(used * 1000 / sample);
}

static const cab_entry *table_probe(const cab_table *table, uint64_t key) {
    const cab_entry *entry = &table->slots[key % table->size];
    return entry->used && entry->key == key ? entry : NULL;
}

static void table_store(cab_table *table, uint64_t key, int depth, int score, int bound, cb_move move) {
    cab_entry *old = &table->slots[key % table->size];
    if (!old->used || old->generation != table->generation || depth >= old->depth || old->key == key) {
        if (!move && old->used && old->key == key) move = old->move;
        old->key = key;
        old->depth = (int16_t)depth;
        old->score = score;
        old->bound = (uint8_t)bound;
        old->move = move;
        old->generation = (uint8_t)table->generation;
        old->used = 1;
    }
}

/* Mate and tablebase scores are stored relative to the node, not the root. */
static inline int score_to_tt(int score, int ply) {
    return score >= CAB_TB_BOUND ? score + ply : score <= -CAB_TB_BOUND ? score - ply : score;
}

static inline int score_from_tt(int score, int ply) {
    return score >= CAB_TB_BOUND ? score - ply : score <= -CAB_TB_BOUND ? score + ply : score;
}

/* ------------------------------------------------------------------ evaluation */

void cab_set_evaluation(cab_search *s, const int32_t evaluation[2][7][64]) {
    memcpy(s->evaluation, evaluation, sizeof s->evaluation);
    s->flat_evaluation = 1;
    for (int color = 0; color < 2; color++)
        for (int type = CB_PAWN; type <= CB_KING; type++)
            for (int square = 1; square < 64; square++)
                if (evaluation[color][type][square] != evaluation[color][type][0]) s->flat_evaluation = 0;
}

int cab_evaluate(const cab_search *s, const cb_position *p) {
    int score = 0;
    for (int type = CB_PAWN; type <= CB_KING; type++) {
        cb_bitboard white = p->pieces[type] & p->colors[CB_WHITE], black = p->pieces[type] & p->colors[CB_BLACK];
        if (s->flat_evaluation) {
            score += s->evaluation[CB_WHITE][type][0] * cb_popcount(white) - s->evaluation[CB_BLACK][type][0] * cb_popcount(black);
            continue;
        }
        for (; white; white &= white - 1) score += s->evaluation[CB_WHITE][type][LSB(white)];
        for (; black; black &= black - 1) score -= s->evaluation[CB_BLACK][type][LSB(black)];
    }
    return p->turn == CB_WHITE ? score : -score;
}

/* ------------------------------------------------------------------ keys and rules */

int cab_set_keys(cab_search *s, const uint64_t *keys, int count) {
    if (cb_copy_keys(&s->keys, &s->key_capacity, keys, count, CAB_MAX_PLY + 8) < 0) return -1;
    s->key_count = s->root_index = count;
    return 0;
}

/* hackmate_core.rules.repetition_draw_keys over the keys before the position. */
static int repetition(const cab_search *s, uint64_t key, int halfmove_clock) {
    int last = s->key_count - 1, stop = last - halfmove_clock, before_root = 0;
    if (stop < -1) stop = -1;
    for (int index = last - 3; index > stop; index -= 2) {
        if (s->keys[index] != key) continue;
        if (index >= s->root_index || ++before_root >= 2) return 1;
    }
    return 0;
}

/* AlphaBetaSearch._is_draw; count: the position's legal moves, generated here when -1 and needed. */
static int is_draw(cab_search *s, const cb_position *p, uint64_t key, cb_move *moves, int *count) {
    if (p->halfmove_clock >= 100) {  /* fifty_move_draw: unless it is checkmate */
        if (!cb_checkers(p)) return 1;
        if (*count < 0) *count = cb_legal_moves(p, moves);
        if (*count) return 1;
    }
    if (repetition(s, key, p->halfmove_clock)) return 1;
    return !(p->pieces[CB_PAWN] | p->pieces[CB_ROOK] | p->pieces[CB_QUEEN]) && cb_insufficient_material(p);
}

/* Python's list.sort(reverse=True) by score: stable, highest first. */
static void sort_moves(cb_move *moves, int64_t *scores, int count) {
    for (int i = 1; i < count; i++) {
        cb_move move = moves[i];
        int64_t score = scores[i];
        int j = i - 1;
        for (; j >= 0 && scores[j] < score; j--) {
            moves[j + 1] = moves[j];
            scores[j + 1] = scores[j];
        }
        moves[j + 1] = move;
        scores[j + 1] = score;
    }
}

/* ------------------------------------------------------------------ search */

/* Count a node and look at the limits (AlphaBetaSearch._check_stop): nonzero when the search must unwind. */
static int count_node(cab_search *s) {
    if (cb_count_node(&s->hooks, CAB_CHECK_NODES_EVERY)) return 1;
    if (s->max_nodes >= 0 && s->hooks.nodes >= (uint64_t)s->max_nodes) {
        s->hooks.aborted = 1;
        return 1;
    }
    return 0;
}

static int quiescence(cab_search *s, const cb_position *p, int alpha, int beta, int ply) {
    if (count_node(s)) return 0;
    if (ply > s->seldepth) s->seldepth = ply;
    int in_check = cb_checkers(p) != 0;
    if (ply >= CAB_MAX_PLY) return cab_evaluate(s, p);
    cb_move *moves = s->moves[ply];
    int count = cb_legal_moves(p, moves), best;
    if (in_check) {
        if (!count) return -CAB_MATE + ply;
        best = -CAB_INF;
    } else {
        int stand_pat = cab_evaluate(s, p);
        if (stand_pat >= beta) return stand_pat;
        if (stand_pat > alpha) alpha = stand_pat;
        best = stand_pat;
        /* generate_legal_captures: the captures of pieces, then en passant, in the legal moves' order */
        int64_t *scores = s->order[ply];
        int captures = 0;
        for (int i = 0; i < count; i++) {
            if (!cx_is_capture(p, moves[i])) continue;
            scores[captures] = cx_mvv_lva(p, moves[i]);
            moves[captures++] = moves[i];
        }
        count = captures;
        sort_moves(moves, scores, count);
    }
    for (int i = 0; i < count; i++) {
        cb_position child = *p;
        cb_make(&child, moves[i], 0);
        int score = -quiescence(s, &child, -beta, -alpha, ply + 1);
        if (s->hooks.aborted) return 0;
        if (score > best) {
            best = score;
            if (score > alpha) {
                alpha = score;
                if (score >= beta) break;
            }
        }
    }
    return best;
}

/* AlphaBetaSearch._ordered_moves */
static int ordered_moves(cab_search *s, const cb_position *p, cb_move tt_move, int ply, int count) {
    cb_move *moves = s->moves[ply];
    int64_t *scores = s->order[ply];
    cb_bitboard theirs = p->colors[!p->turn];
    const cb_move *killers = s->killers[ply];
    if (count < 0) count = cb_legal_moves(p, moves);
    for (int i = 0; i < count; i++) {
        cb_move move = moves[i];
        if (move == tt_move) scores[i] = 10000000;
        else if (CB_BIT(CB_TO(move)) & theirs) scores[i] = 1000000 + cx_mvv_lva(p, move);
        else if (CB_PROMOTION(move)) scores[i] = 900000 + CB_PROMOTION(move);
        else if (move == killers[0]) scores[i] = 800000;
        else if (move == killers[1]) scores[i] = 700000;
        else scores[i] = s->history[CB_FROM(move)][CB_TO(move)];
    }
    sort_moves(moves, scores, count);
    return count;
}

static int root_skips(const cab_search *s, cb_move move) {
    for (int i = 0; i < s->excluded_count; i++)
        if (s->excluded[i] == move) return 1;
    if (s->allowed_count < 0) return 0;
    for (int i = 0; i < s->allowed_count; i++)
        if (s->allowed[i] == move) return 0;
    return 1;
}

static int negamax(cab_search *s, const cb_position *p, int depth, int alpha, int beta, int ply, int pv_node,
                   int allow_null) {
    s->pv_length[ply] = 0;
    if (depth <= 0) return quiescence(s, p, alpha, beta, ply);
    if (count_node(s)) return 0;
    if (ply > s->seldepth) s->seldepth = ply;
    uint64_t key = cb_polyglot_key(p);
    int count = -1;   /* the legal moves in s->moves[ply], once generated */
    if (ply > 0) {
        if (is_draw(s, p, key, s->moves[ply], &count)) return 0;
        /* mate distance pruning */
        if (alpha < -CAB_MATE + ply) alpha = -CAB_MATE + ply;
        if (beta > CAB_MATE - ply - 1) beta = CAB_MATE - ply - 1;
        if (alpha >= beta) return alpha;
        int result, found = cb_probe(&s->hooks, p, &result);
        if (found < 0) return 0;
        if (found) {
            if (result < 0 && cb_checkers(p)) {
                if (count < 0) count = cb_legal_moves(p, s->moves[ply]);
                if (!count) return -CAB_MATE + ply;
            }
            return result == 0 ? 0 : result > 0 ? CAB_TB_WIN - ply : -CAB_TB_WIN + ply;
        }
    }
    if (ply >= CAB_MAX_PLY) return cab_evaluate(s, p);

    const cab_entry *entry = table_probe(s->table, key);
    cb_move tt_move = 0;
    if (entry) {
        tt_move = entry->move;
        if (ply > 0 && !pv_node && entry->depth >= depth) {
            int score = score_from_tt(entry->score, ply), bound = entry->bound;
            if (bound == CAB_EXACT || (bound == CAB_LOWER && score >= beta) || (bound == CAB_UPPER && score <= alpha))
                return score;
        }
    }

    int in_check = cb_checkers(p) != 0;
    /* null move: if passing still fails high, the position is good enough */
    if (allow_null && !pv_node && !in_check && depth >= 3 && ply > 0 && beta < CAB_MATE_BOUND
        && beta > -CAB_MATE_BOUND && cb_has_pieces(p) && cab_evaluate(s, p) >= beta) {
        cb_position child = *p;
        cb_make_null(&child);
        s->keys[s->key_count++] = key;
        int score = -negamax(s, &child, depth - 3, -beta, -beta + 1, ply + 1, 0, 0);
        s->key_count--;
        if (s->hooks.aborted) return 0;
        if (score >= beta) return beta;
    }

    count = ordered_moves(s, p, tt_move, ply, count);
    if (!count) return in_check ? -CAB_MATE + ply : 0;

    const cb_move *moves = s->moves[ply];
    int original_alpha = alpha, best_score = -CAB_INF, searched = 0;
    cb_move best_move = 0;
    s->keys[s->key_count++] = key;
    for (int i = 0; i < count; i++) {
        cb_move move = moves[i];
        if (ply == 0 && root_skips(s, move)) continue;
        int capture = cx_is_capture(p, move);
        cb_position child = *p;
        cb_make(&child, move, 1);
        int gives_check = cb_checkers(&child) != 0;
        int new_depth = depth - 1 + (gives_check && ply < 2 * depth + 4 ? 1 : 0), score;
        if (searched == 0) {
            score = -negamax(s, &child, new_depth, -beta, -alpha, ply + 1, pv_node, 1);
        } else {
            int reduction = 0;
            if (depth >= 3 && searched >= 3 && !capture && !gives_check && !in_check && !CB_PROMOTION(move))
                reduction = searched < 8 ? 1 : 2;
            score = -negamax(s, &child, new_depth - reduction, -alpha - 1, -alpha, ply + 1, 0, 1);
            if (!s->hooks.aborted && score > alpha && (reduction || pv_node))
                score = -negamax(s, &child, new_depth, -beta, -alpha, ply + 1, pv_node, 1);
        }
        if (s->hooks.aborted) return 0;   /* the keys are set afresh by the next root search */
        searched++;
        if (score > best_score) {
            best_score = score;
            best_move = move;
            if (score > alpha) {
                alpha = score;
                if (pv_node) {
                    int length = s->pv_length[ply + 1];
                    s->pv[ply][0] = move;
                    memcpy(&s->pv[ply][1], s->pv[ply + 1], (size_t)length * sizeof(cb_move));
                    s->pv_length[ply] = length + 1;
                    if (ply == 0) s->root_score = score;   /* AlphaBetaSearch.root_line */
                }
                if (score >= beta) {
                    if (!capture) {   /* AlphaBetaSearch._remember_quiet */
                        ck_remember(s->killers[ply], move);
                        s->history[CB_FROM(move)][CB_TO(move)] += (int64_t)depth * depth;
                    }
                    break;
                }
            }
        }
    }
    s->key_count--;
    if (searched == 0) return -CAB_INF;   /* every root move excluded */
    int bound = best_score >= beta ? CAB_LOWER : best_score > original_alpha ? CAB_EXACT : CAB_UPPER;
    table_store(s->table, key, depth, score_to_tt(best_score, ply), bound, best_move);
    return best_score;
}

int cab_search_root(cab_search *s, int depth) {
    s->hooks.aborted = s->hooks.failed = 0;
    s->key_count = s->root_index;
    return negamax(s, &s->root, depth, -CAB_INF, CAB_INF, 0, 1, 1);
}
