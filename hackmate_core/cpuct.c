/* PUCT's per-leaf work on the compiled board (see cpuct.h), function by function as the Python it mirrors. */
#include "cpuct.h"

#include <math.h>

#define FULL (~(cb_bitboard)0)
#define RANK_1 0x00000000000000FFULL
#define RANK_8 0xFF00000000000000ULL

/* evaluators.material / hackmate_core.exchange */
static const int PIECE_VALUES[7] = {0, 100, 320, 330, 500, 900, 0};
static const double CHECK_BONUS_CP = 150.0;

int cp_result(const cb_position *leaf, int legal_count) {
    if (!legal_count) return cb_checkers(leaf) ? CB_CHECKMATED : CB_DRAWN;
    if (leaf->halfmove_clock >= 100 || cb_insufficient_material(leaf)) return CB_DRAWN;
    return CB_ONGOING;
}

int cp_repetition(const cb_position *leaf, uint64_t (*key_at)(void *context, int index), void *context, int count,
                  int tree_plies) {
    /* every second position back within the fifty-move clock */
    int reach = leaf->halfmove_clock < count ? leaf->halfmove_clock : count;
    int before_root = 0;
    for (int back = 4; back <= reach; back += 2) {
        if (key_at(context, count - back) != leaf->key) continue;
        if (back <= tree_plies || ++before_root >= 2) return 1;
    }
    return 0;
}

int cp_mate_in_one(const cb_position *p, const cb_move *moves, int count) {
    cb_move replies[CB_MAX_MOVES];
    for (int i = 0; i < count; i++) {
        if (!cb_gives_check(p, moves[i])) continue;
        cb_position child = *p;
        cb_make(&child, moves[i], 0);
        if (!cb_legal_moves(&child, replies)) return 1;
    }
    return 0;
}

/* chess.Board.is_en_passant */
static int is_en_passant(const cb_position *p, cb_move move) {
    int from = CB_FROM(move), to = CB_TO(move), difference = to > from ? to - from : from - to;
    return p->ep_square == to && (p->pieces[CB_PAWN] & CB_BIT(from)) && (difference == 7 || difference == 9)
           && !(p->pieces[0] & CB_BIT(to));
}

void cp_gain_weights(const double *gains, int count, double temperature, double *weights) {
    double top = count ? gains[0] : 0.0;
    for (int i = 1; i < count; i++)
        if (gains[i] > top) top = gains[i];
    for (int i = 0; i < count; i++) weights[i] = exp((gains[i] - top) / temperature);
}

void cp_tactical_gains(const cb_position *p, const cb_move *moves, int count, double *gains) {
    cb_bitboard theirs = p->colors[!p->turn];
    cb_bitboard targets = theirs | (p->ep_square >= 0 ? CB_BIT(p->ep_square) : 0);
    for (int i = 0; i < count; i++) {
        cb_move move = moves[i];
        int to = CB_TO(move), promotion = CB_PROMOTION(move);
        gains[i] = cb_gives_check(p, move) ? CHECK_BONUS_CP : 0.0;
        if (!(CB_BIT(to) & targets) && !promotion) continue;
        /* the same operations in the same order as the Python (an int and a double make a double) */
        if (CB_BIT(to) & theirs) {
            int taken = PIECE_VALUES[cb_piece_type_at(p, to)];
            gains[i] += (double)taken - (double)PIECE_VALUES[cb_piece_type_at(p, CB_FROM(move))] / 10.0;
        } else if (to == p->ep_square && is_en_passant(p, move)) {
            gains[i] += (double)PIECE_VALUES[CB_PAWN] * 0.9;
        }
        if (promotion) gains[i] += (double)(PIECE_VALUES[promotion] - PIECE_VALUES[CB_PAWN]);
    }
}

/* chess.Board.has_kingside_castling_rights (side 1) and has_queenside_castling_rights (side 0) */
static int has_castling_rights(const cb_position *p, int color, int kingside) {
    cb_bitboard backrank = color == CB_WHITE ? RANK_1 : RANK_8;
    cb_bitboard king = p->pieces[CB_KING] & p->colors[color] & backrank;
    if (!king) return 0;
    cb_bitboard rights = p->castling & backrank;
    for (; rights; rights &= rights - 1) {
        cb_bitboard rook = rights & (~rights + 1);
        if (kingside ? rook > king : rook < king) return 1;
    }
    return 0;
}

void cp_planes18(const cb_position *p, const cb_move *moves, int count, uint64_t out[CP_PLANES18]) {
    int us = p->turn;
    for (int type = CB_PAWN; type <= CB_KING; type++) {
        out[type - 1] = p->pieces[type] & p->colors[us];
        out[type + 5] = p->pieces[type] & p->colors[!us];
    }
    out[12] = has_castling_rights(p, us, 1) ? FULL : 0;
    out[13] = has_castling_rights(p, us, 0) ? FULL : 0;
    out[14] = has_castling_rights(p, !us, 1) ? FULL : 0;
    out[15] = has_castling_rights(p, !us, 0) ? FULL : 0;
    out[16] = 0;
    if (p->ep_square >= 0) {  /* chess.Board.has_legal_en_passant, from the legal moves at hand */
        for (int i = 0; i < count; i++) {
            if (is_en_passant(p, moves[i])) {
                out[16] = CB_BIT(p->ep_square);
                break;
            }
        }
    }
}

/* evaluators.moves: the AlphaZero 8x8x73 planes; (rank, file) steps in their order */
static const int QUEEN_DIRECTIONS[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
static const int KNIGHT_DELTAS[8][2] = {{2, 1}, {1, 2}, {-1, 2}, {-2, 1}, {-2, -1}, {-1, -2}, {1, -2}, {2, -1}};

static int sign(int x) { return (x > 0) - (x < 0); }

int cp_policy_slot(const cb_position *p, cb_move move) {
    int from = CB_FROM(move), to = CB_TO(move), promotion = CB_PROMOTION(move);
    if (p->chess960 && (p->pieces[CB_KING] & CB_BIT(from))) {  /* resnet's _policy_move */
        int files = (from & 7) - (to & 7);
        if (files > 1 || files < -1 || (p->pieces[CB_ROOK] & p->colors[p->turn] & CB_BIT(to))) {
            int king_to = (from & ~7) + (to > from ? 6 : 2);
            if (king_to != from) to = king_to;
        }
    }
    if (p->turn == CB_BLACK) {
        from ^= 56;
        to ^= 56;
    }
    int dr = (to >> 3) - (from >> 3), df = (to & 7) - (from & 7), plane = 0;
    if (promotion == CB_KNIGHT || promotion == CB_BISHOP || promotion == CB_ROOK) {
        int index = promotion == CB_KNIGHT ? 0 : promotion == CB_BISHOP ? 1 : 2;
        plane = 64 + 3 * index + (df + 1);
    } else {
        int knight = -1;
        for (int i = 0; i < 8; i++)
            if (KNIGHT_DELTAS[i][0] == dr && KNIGHT_DELTAS[i][1] == df) knight = i;
        if (knight >= 0) {
            plane = 56 + knight;
        } else {
            int distance = dr > 0 ? dr : -dr, files = df > 0 ? df : -df;
            if (files > distance) distance = files;
            for (int i = 0; i < 8; i++)
                if (QUEEN_DIRECTIONS[i][0] == sign(dr) && QUEEN_DIRECTIONS[i][1] == sign(df))
                    plane = i * 7 + distance - 1;
        }
    }
    return plane * 64 + from;
}
