/* PUCT's per-leaf work on the compiled board (see cpuct.h), function by function as the Python it mirrors. */
#include "cpuct.h"

#include <math.h>

#include "cexchange.h"

#define FULL (~(cb_bitboard)0)
#define RANK_1 0x00000000000000FFULL
#define RANK_8 0xFF00000000000000ULL
#define FILE_A 0x0101010101010101ULL
#define FILE_H 0x8080808080808080ULL
#define LIGHT_SQUARES 0x55AA55AA55AA55AAULL

/* evaluators.material.CHECK_BONUS_CP */
const double CP_CHECK_BONUS_CP = 150.0;

int cp_result(const cb_position *leaf, int legal_count) {
    if (!legal_count) return cb_checkers(leaf) ? CB_CHECKMATED : CB_DRAWN;
    if (leaf->halfmove_clock >= 100 || cb_insufficient_material(leaf)) return CB_DRAWN;
    return CB_ONGOING;
}

int cp_repetition(const cp_line *line) {
    int tree_plies = line->tree_count - 1, count = line->known + tree_plies;  /* positions before the leaf */
    const cb_position *leaf = line->tree[tree_plies];
    /* every second position back within the fifty-move clock */
    int reach = leaf->halfmove_clock < count ? leaf->halfmove_clock : count;
    int before_root = 0;
    for (int back = 4; back <= reach; back += 2) {
        if (cp_line_at(line, count - back)->key != leaf->key) continue;
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
        gains[i] = cb_gives_check(p, move) ? CP_CHECK_BONUS_CP : 0.0;
        if (!(CB_BIT(to) & targets) && !promotion) continue;
        /* the same operations in the same order as the Python (an int and a double make a double) */
        if (CB_BIT(to) & theirs) {
            int taken = CX_PIECE_VALUES[cb_piece_type_at(p, to)];
            gains[i] += (double)taken - (double)CX_PIECE_VALUES[cb_piece_type_at(p, CB_FROM(move))] / 10.0;
        } else if (to == p->ep_square && cx_is_en_passant(p, move)) {
            gains[i] += (double)CX_PIECE_VALUES[CB_PAWN] * 0.9;
        }
        if (promotion) gains[i] += (double)(CX_PIECE_VALUES[promotion] - CX_PIECE_VALUES[CB_PAWN]);
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
            if (cx_is_en_passant(p, moves[i])) {
                out[16] = CB_BIT(p->ep_square);
                break;
            }
        }
    }
}

static int count_bits(cb_bitboard b) {
    int count = 0;
    for (; b; b &= b - 1) count++;
    return count;
}

/* castling (chess.Board.is_castling): the king moving two files or more, or onto a rook of its own */
static int is_castling(const cb_position *p, int from, int to) {
    int files = (from & 7) - (to & 7);
    return (p->pieces[CB_KING] & CB_BIT(from))
           && (files > 1 || files < -1 || (p->pieces[CB_ROOK] & p->colors[p->turn] & CB_BIT(to)));
}

void cp_move_squares(const cb_position *p, cb_move move, int8_t squares[2]) {
    int from = CB_FROM(move), to = CB_TO(move);
    squares[0] = (int8_t)from;
    squares[1] = (int8_t)(is_castling(p, from, to) ? (from & ~7) + (to > from ? 6 : 2) : to);
}

void cp_features(const cb_position *p, const cb_move *moves, int count, const int8_t last[2 * CP_LAST_MOVES],
                 uint64_t out[CP_FEATURES]) {
    cp_planes18(p, moves, count, out);
    int us = p->turn;
    cb_bitboard ours = p->colors[us], theirs = p->colors[!us], bishops = p->pieces[CB_BISHOP];
    out[17] = ours;
    out[18] = theirs;
    out[19] = cb_checkers(p);
    out[20] = count_bits(bishops & ours) == 1 && count_bits(bishops & theirs) == 1
              && count_bits(bishops & LIGHT_SQUARES) == 1 ? FULL : 0;
    for (int type = CB_PAWN; type <= CB_QUEEN; type++) {  /* planes18's piece planes: ours, then theirs */
        int own = count_bits(out[type - 1]), other = count_bits(out[type + 5]);
        out[20 + type] = own > other ? FULL : 0;
        out[25 + type] = own < other ? FULL : 0;
    }
    for (int i = 0; i < 2 * CP_LAST_MOVES; i++) out[31 + i] = last[i] < 0 ? 0 : CB_BIT(last[i]);
}

/* evaluators.encoding._lc0_ep_flag: the en-passant square where a pawn of the side to move stands beside the pawn
 * that made the double step (any in the game's first position), else -1. */
static int lc0_ep_flag(const cb_position *p, int first) {
    if (p->ep_square < 0 || first) return p->ep_square;
    cb_bitboard target = CB_BIT(p->ep_square), beside = ((target << 1) & ~FILE_A) | ((target >> 1) & ~FILE_H);
    cb_bitboard from = p->turn == CB_WHITE ? beside >> 8 : beside << 8;
    return from & p->pieces[CB_PAWN] & p->colors[p->turn] ? p->ep_square : -1;
}

/* evaluators.encoding._lc0_key of both equal: pieces, side to move, castling rights, en passant. */
static int lc0_same(const cb_position *a, int a_first, const cb_position *b, int b_first) {
    for (int type = CB_PAWN; type <= CB_KING; type++)
        if (a->pieces[type] != b->pieces[type]) return 0;
    return a->colors[CB_WHITE] == b->colors[CB_WHITE] && a->colors[CB_BLACK] == b->colors[CB_BLACK]
           && a->turn == b->turn && a->castling == b->castling && lc0_ep_flag(a, a_first) == lc0_ep_flag(b, b_first);
}

/* evaluators.encoding._lc0_repeated of the line's position at index: the same position with the same side to
 * move at least four plies back, looking no further than the last capture or pawn move. */
static int lc0_repeated(const cp_line *line, int index) {
    const cb_position *position = cp_line_at(line, index);
    if (position->halfmove_clock < 4) return 0;
    for (int earlier = index - 4; earlier >= 0; earlier -= 2) {
        const cb_position *before = cp_line_at(line, earlier);
        if (before->pieces[0] == position->pieces[0]
            && lc0_same(before, line->first && earlier == 0, position, line->first && index == 0))
            return 1;
        if (before->halfmove_clock < 2) return 0;
    }
    return 0;
}

void cp_lc0_planes(const cp_line *line, const uint64_t root_history[CP_LC0_HISTORY][CP_LC0_BLOCK],
                   uint64_t out[CP_LC0_PLANES]) {
    int leaf_index = line->known + line->tree_count - 1, depth = line->tree_count - 1;
    const cb_position *leaf = line->tree[depth];
    int us = leaf->turn, ours = us == CB_WHITE ? 0 : 6;
    for (int back = 0; back < CP_LC0_HISTORY; back++) {
        uint64_t *block = out + back * CP_LC0_BLOCK;
        if (back < depth) {  /* below the root: the tree's */
            const cb_position *p = cp_line_at(line, leaf_index - back);
            for (int type = CB_PAWN; type <= CB_KING; type++) {
                block[type - 1] = p->pieces[type] & p->colors[us];
                block[type + 5] = p->pieces[type] & p->colors[!us];
            }
            block[12] = lc0_repeated(line, leaf_index - back) ? FULL : 0;
        } else {  /* the root and the game before it: White's and Black's, seen by the side to move here */
            const uint64_t *entry = root_history[back - depth];
            for (int i = 0; i < 6; i++) {
                block[i] = entry[ours + i];
                block[6 + i] = entry[6 - ours + i];
            }
            block[12] = entry[12];
        }
    }
    uint64_t *rest = out + CP_LC0_HISTORY * CP_LC0_BLOCK;  /* LC0_CASTLING's order, then the constant planes */
    rest[0] = has_castling_rights(leaf, us, 0) ? FULL : 0;
    rest[1] = has_castling_rights(leaf, us, 1) ? FULL : 0;
    rest[2] = has_castling_rights(leaf, !us, 0) ? FULL : 0;
    rest[3] = has_castling_rights(leaf, !us, 1) ? FULL : 0;
    rest[4] = us == CB_BLACK ? FULL : 0;
    rest[5] = 0;
    rest[6] = FULL;
}

/* splitmix64's finaliser: a bijection that spreads every bit of its input */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

uint64_t cp_digest(const uint64_t *words, int count) {
    uint64_t digest = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < count; i++) digest = mix64(digest ^ words[i]) + 0x9E3779B97F4A7C15ULL;
    return digest;
}

/* evaluators.moves: the AlphaZero 8x8x73 planes; (rank, file) steps in their order */
const int CP_QUEEN_DIRECTIONS[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
const int CP_KNIGHT_DELTAS[8][2] = {{2, 1}, {1, 2}, {-1, 2}, {-2, 1}, {-2, -1}, {-1, -2}, {1, -2}, {2, -1}};

static int sign(int x) { return (x > 0) - (x < 0); }

int cp_policy_slot(const cb_position *p, cb_move move, int conventions) {
    int from = CB_FROM(move), to = CB_TO(move), promotion = CB_PROMOTION(move);
    if (is_castling(p, from, to)) {
        if (conventions & CP_KING_TAKES_ROOK) {
            if (!p->chess960) to = (from & ~7) + (to > from ? 7 : 0);  /* e1g1 as e1h1 */
        } else if (p->chess960) {  /* moves._two_square_castling */
            int king_to = (from & ~7) + (to > from ? 6 : 2);
            if (king_to != from) to = king_to;
        }
    }
    if (p->turn == CB_BLACK) {
        from ^= 56;
        to ^= 56;
    }
    if (promotion == CB_QUEEN && (conventions & CP_OWN_QUEEN_SLOT)) {  /* moves.queen_promotion_own_slot */
        int files = (to & 7) - (from & 7), direction = files == 0 ? 0 : files == 1 ? 1 : 7;
        return (direction * 7 + 1) * 64 + from;
    }
    int dr = (to >> 3) - (from >> 3), df = (to & 7) - (from & 7), plane = 0;
    if (promotion == CB_KNIGHT || promotion == CB_BISHOP || promotion == CB_ROOK) {
        int index = promotion == CB_KNIGHT ? 0 : promotion == CB_BISHOP ? 1 : 2;
        plane = 64 + 3 * index + (df + 1);
    } else {
        int knight = -1;
        for (int i = 0; i < 8; i++)
            if (CP_KNIGHT_DELTAS[i][0] == dr && CP_KNIGHT_DELTAS[i][1] == df) knight = i;
        if (knight >= 0) {
            plane = 56 + knight;
        } else {
            int distance = dr > 0 ? dr : -dr, files = df > 0 ? df : -df;
            if (files > distance) distance = files;
            for (int i = 0; i < 8; i++)
                if (CP_QUEEN_DIRECTIONS[i][0] == sign(dr) && CP_QUEEN_DIRECTIONS[i][1] == sign(df))
                    plane = i * 7 + distance - 1;
        }
    }
    return plane * 64 + from;
}
