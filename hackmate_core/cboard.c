/* The compiled chess board (see cboard.h): python-chess's move generator, make-move and game-end rules,
 * ported function by function so that the moves and their order are python-chess's. */
#include "cboard.h"

#include <stdlib.h>
#include <string.h>

#include "polyglot_keys.h"

/* ------------------------------------------------------------------ bit operations */

#define ALL_SQUARES (~(cb_bitboard)0)

#if defined(__GNUC__) || defined(__clang__)
static inline int lsb(cb_bitboard b) { return __builtin_ctzll(b); }
static inline int msb(cb_bitboard b) { return 63 - __builtin_clzll(b); }
static inline int popcount(cb_bitboard b) { return __builtin_popcountll(b); }
#else
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#include <intrin.h>
static inline int lsb(cb_bitboard b) {
    unsigned long square;
    _BitScanForward64(&square, b);
    return (int)square;
}
static inline int msb(cb_bitboard b) {
    unsigned long square;
    _BitScanReverse64(&square, b);
    return (int)square;
}
#else
static inline int lsb(cb_bitboard b) {
    int square = 0;
    while (!(b & 1)) { b >>= 1; square++; }
    return square;
}
static inline int msb(cb_bitboard b) {
    int square = 0;
    while (b >>= 1) square++;
    return square;
}
#endif
static inline int popcount(cb_bitboard b) {
    b = b - ((b >> 1) & 0x5555555555555555ULL);
    b = (b & 0x3333333333333333ULL) + ((b >> 2) & 0x3333333333333333ULL);
    b = (b + (b >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((b * 0x0101010101010101ULL) >> 56);
}
#endif

/* Iterate over the squares of a bitboard from high to low, as python-chess's scan_reversed. */
#define FOR_SQUARES_REVERSED(square, bitboard)                                                            \
    for (cb_bitboard rest_##square = (bitboard); rest_##square && ((square) = msb(rest_##square), 1);   \
         rest_##square ^= CB_BIT(square))

#define RANK_1 0x00000000000000FFULL
#define RANK_3 0x0000000000FF0000ULL
#define RANK_4 0x00000000FF000000ULL
#define RANK_5 0x000000FF00000000ULL
#define RANK_6 0x0000FF0000000000ULL
#define RANK_8 0xFF00000000000000ULL
#define FILE_A 0x0101010101010101ULL
#define FILE_H 0x8080808080808080ULL
#define DARK_SQUARES 0xAA55AA55AA55AA55ULL
#define BACK_RANKS (RANK_1 | RANK_8)

static inline int file_of(int square) { return square & 7; }
static inline int rank_of(int square) { return square >> 3; }

/* ------------------------------------------------------------------ tables */

/* Directions: the first four increase the square index (their nearest blocker is the lowest bit). */
enum { NORTH, EAST, NORTH_EAST, NORTH_WEST, SOUTH, WEST, SOUTH_WEST, SOUTH_EAST };
static const int DIRECTION_FILE[8] = {0, 1, 1, -1, 0, -1, -1, 1};
static const int DIRECTION_RANK[8] = {1, 0, 1, 1, -1, 0, -1, -1};

static cb_bitboard RAYS[8][64];          /* squares in a direction, the origin excluded */
static cb_bitboard LINE[64][64];         /* python-chess's ray(a, b): the whole line through both, or 0 */
static cb_bitboard BETWEEN[64][64];      /* python-chess's between(a, b): the squares strictly between */
static cb_bitboard KNIGHT_ATTACKS[64], KING_ATTACKS[64], PAWN_ATTACKS[2][64];
static cb_bitboard RANK_RAYS[64], FILE_RAYS[64], DIAGONAL_RAYS[64];   /* attacks on an empty board */
static uint64_t CASTLING_KEYS[64];       /* a transposition-key term for a castling right on each square */

static cb_bitboard steps(int square, const int (*offsets)[2], int count) {
    cb_bitboard result = 0;
    for (int i = 0; i < count; i++) {
        int file = file_of(square) + offsets[i][0], rank = rank_of(square) + offsets[i][1];
        if (file >= 0 && file < 8 && rank >= 0 && rank < 8) result |= CB_BIT(rank * 8 + file);
    }
    return result;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void cb_init(void) {
    static const int knight[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int king[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    static const int white_pawn[2][2] = {{-1, 1}, {1, 1}};
    static const int black_pawn[2][2] = {{-1, -1}, {1, -1}};
    for (int square = 0; square < 64; square++) {
        KNIGHT_ATTACKS[square] = steps(square, knight, 8);
        KING_ATTACKS[square] = steps(square, king, 8);
        PAWN_ATTACKS[CB_WHITE][square] = steps(square, white_pawn, 2);
        PAWN_ATTACKS[CB_BLACK][square] = steps(square, black_pawn, 2);
        for (int direction = 0; direction < 8; direction++) {
            cb_bitboard ray = 0;
            int file = file_of(square) + DIRECTION_FILE[direction], rank = rank_of(square) + DIRECTION_RANK[direction];
            for (; file >= 0 && file < 8 && rank >= 0 && rank < 8;
                 file += DIRECTION_FILE[direction], rank += DIRECTION_RANK[direction])
                ray |= CB_BIT(rank * 8 + file);
            RAYS[direction][square] = ray;
        }
        RANK_RAYS[square] = RAYS[EAST][square] | RAYS[WEST][square];
        FILE_RAYS[square] = RAYS[NORTH][square] | RAYS[SOUTH][square];
        DIAGONAL_RAYS[square] = RAYS[NORTH_EAST][square] | RAYS[NORTH_WEST][square] | RAYS[SOUTH_WEST][square]
                                | RAYS[SOUTH_EAST][square];
    }
    for (int a = 0; a < 64; a++) {
        for (int b = 0; b < 64; b++) {
            LINE[a][b] = BETWEEN[a][b] = 0;
            for (int direction = 0; direction < 8; direction++) {
                if (RAYS[direction][a] & CB_BIT(b)) {
                    LINE[a][b] = RAYS[direction][a] | RAYS[(direction + 4) % 8][a] | CB_BIT(a);
                    BETWEEN[a][b] = RAYS[direction][a] & ~(RAYS[direction][b] | CB_BIT(b));
                }
            }
        }
    }
    uint64_t seed = 0x4861636B6D617465ULL;
    for (int square = 0; square < 64; square++) CASTLING_KEYS[square] = splitmix64(&seed);
}

/* ------------------------------------------------------------------ attacks */

static inline cb_bitboard slide(int square, cb_bitboard occupied, int direction) {
    cb_bitboard ray = RAYS[direction][square], blockers = ray & occupied;
    if (blockers) ray ^= RAYS[direction][direction < 4 ? lsb(blockers) : msb(blockers)];
    return ray;
}

static inline cb_bitboard rank_attacks(int square, cb_bitboard occupied) {
    return slide(square, occupied, EAST) | slide(square, occupied, WEST);
}

static inline cb_bitboard rook_attacks(int square, cb_bitboard occupied) {
    return rank_attacks(square, occupied) | slide(square, occupied, NORTH) | slide(square, occupied, SOUTH);
}

static inline cb_bitboard bishop_attacks(int square, cb_bitboard occupied) {
    return slide(square, occupied, NORTH_EAST) | slide(square, occupied, NORTH_WEST)
           | slide(square, occupied, SOUTH_WEST) | slide(square, occupied, SOUTH_EAST);
}

/* chess.Board.attackers_mask */
static cb_bitboard attackers_mask(const cb_position *p, int color, int square, cb_bitboard occupied) {
    cb_bitboard queens_and_rooks = p->pieces[CB_QUEEN] | p->pieces[CB_ROOK];
    cb_bitboard queens_and_bishops = p->pieces[CB_QUEEN] | p->pieces[CB_BISHOP];
    cb_bitboard attackers = (KING_ATTACKS[square] & p->pieces[CB_KING])
                            | (KNIGHT_ATTACKS[square] & p->pieces[CB_KNIGHT])
                            | (rook_attacks(square, occupied) & queens_and_rooks)
                            | (bishop_attacks(square, occupied) & queens_and_bishops)
                            | (PAWN_ATTACKS[!color][square] & p->pieces[CB_PAWN]);
    return attackers & p->colors[color];
}

/* chess.Board.attacks_mask for a piece other than a pawn */
static cb_bitboard piece_attacks(const cb_position *p, int square) {
    cb_bitboard mask = CB_BIT(square), attacks = 0;
    if (mask & p->pieces[CB_KNIGHT]) return KNIGHT_ATTACKS[square];
    if (mask & p->pieces[CB_KING]) return KING_ATTACKS[square];
    if (mask & (p->pieces[CB_BISHOP] | p->pieces[CB_QUEEN])) attacks = bishop_attacks(square, p->pieces[0]);
    if (mask & (p->pieces[CB_ROOK] | p->pieces[CB_QUEEN])) attacks |= rook_attacks(square, p->pieces[0]);
    return attacks;
}

cb_bitboard cb_attackers(const cb_position *p, int color, int square, cb_bitboard occupied) {
    return attackers_mask(p, color, square, occupied);
}

cb_bitboard cb_checkers(const cb_position *p) {
    cb_bitboard king = p->colors[p->turn] & p->pieces[CB_KING];
    return king ? attackers_mask(p, !p->turn, msb(king), p->pieces[0]) : 0;
}

/* chess.Board._slider_blockers */
static cb_bitboard slider_blockers(const cb_position *p, int king) {
    cb_bitboard rooks_and_queens = p->pieces[CB_ROOK] | p->pieces[CB_QUEEN];
    cb_bitboard bishops_and_queens = p->pieces[CB_BISHOP] | p->pieces[CB_QUEEN];
    cb_bitboard snipers = ((RANK_RAYS[king] | FILE_RAYS[king]) & rooks_and_queens)
                          | (DIAGONAL_RAYS[king] & bishops_and_queens);
    cb_bitboard blockers = 0;
    int sniper;
    FOR_SQUARES_REVERSED(sniper, snipers & p->colors[!p->turn]) {
        cb_bitboard between = BETWEEN[king][sniper] & p->pieces[0];
        if (between && !(between & (between - 1))) blockers |= between;
    }
    return blockers & p->colors[p->turn];
}

/* chess.Board.pin_mask */
static cb_bitboard pin_mask(const cb_position *p, int color, int square) {
    cb_bitboard kings = p->colors[color] & p->pieces[CB_KING];
    if (!kings) return ALL_SQUARES;
    int king = msb(kings);
    cb_bitboard square_mask = CB_BIT(square);
    cb_bitboard rays[3] = {FILE_RAYS[king], RANK_RAYS[king], DIAGONAL_RAYS[king]};
    cb_bitboard sliders[3] = {p->pieces[CB_ROOK] | p->pieces[CB_QUEEN], p->pieces[CB_ROOK] | p->pieces[CB_QUEEN],
                              p->pieces[CB_BISHOP] | p->pieces[CB_QUEEN]};
    for (int i = 0; i < 3; i++) {
        if (rays[i] & square_mask) {
            int sniper;
            FOR_SQUARES_REVERSED(sniper, rays[i] & sliders[i] & p->colors[!color]) {
                if ((BETWEEN[sniper][king] & (p->pieces[0] | square_mask)) == square_mask)
                    return LINE[king][sniper];
            }
            break;
        }
    }
    return ALL_SQUARES;
}

/* chess.Board._ep_skewered */
static int ep_skewered(const cb_position *p, int king, int capturer) {
    int last_double = p->ep_square + (p->turn == CB_WHITE ? -8 : 8);
    cb_bitboard occupancy = (p->pieces[0] & ~CB_BIT(last_double) & ~CB_BIT(capturer)) | CB_BIT(p->ep_square);
    cb_bitboard theirs = p->colors[!p->turn];
    if (rank_attacks(king, occupancy) & theirs & (p->pieces[CB_ROOK] | p->pieces[CB_QUEEN])) return 1;
    if (bishop_attacks(king, occupancy) & theirs & (p->pieces[CB_BISHOP] | p->pieces[CB_QUEEN])) return 1;
    return 0;
}

static int attacked_for_king(const cb_position *p, cb_bitboard path, cb_bitboard occupied) {
    int square;
    FOR_SQUARES_REVERSED(square, path) {
        if (attackers_mask(p, !p->turn, square, occupied)) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ move generation */

typedef struct {
    cb_move *moves;
    int count;
} move_list;

static inline void add_move(move_list *list, int from, int to, int promotion) {
    if (list->count < CB_MAX_MOVES) list->moves[list->count++] = CB_MOVE(from, to, promotion);
}

static inline void add_pawn_move(move_list *list, int from, int to) {
    if (rank_of(to) == 0 || rank_of(to) == 7) {
        add_move(list, from, to, CB_QUEEN);
        add_move(list, from, to, CB_ROOK);
        add_move(list, from, to, CB_BISHOP);
        add_move(list, from, to, CB_KNIGHT);
    } else {
        add_move(list, from, to, 0);
    }
}

/* chess.Board.generate_pseudo_legal_ep */
static void generate_pseudo_legal_ep(const cb_position *p, cb_bitboard from_mask, cb_bitboard to_mask,
                                     move_list *list) {
    int ep = p->ep_square;
    if (ep <= 0 || !(CB_BIT(ep) & to_mask) || (CB_BIT(ep) & p->pieces[0])) return;
    cb_bitboard capturers = p->pieces[CB_PAWN] & p->colors[p->turn] & from_mask & PAWN_ATTACKS[!p->turn][ep]
                            & (p->turn == CB_WHITE ? RANK_5 : RANK_4);
    int capturer;
    FOR_SQUARES_REVERSED(capturer, capturers) add_move(list, capturer, ep, 0);
}

/* chess.Board.generate_castling_moves, with _from_chess960's encoding */
static void generate_castling_moves(const cb_position *p, cb_bitboard from_mask, cb_bitboard to_mask,
                                    move_list *list) {
    cb_bitboard backrank = p->turn == CB_WHITE ? RANK_1 : RANK_8;
    cb_bitboard king = p->colors[p->turn] & p->pieces[CB_KING] & backrank & from_mask;
    if (!king) return;
    int king_square = lsb(king);
    king = CB_BIT(king_square);
    int base = p->turn == CB_WHITE ? 0 : 56;
    cb_bitboard occupied = p->pieces[0];
    int candidate;
    FOR_SQUARES_REVERSED(candidate, p->castling & backrank & to_mask) {
        cb_bitboard rook = CB_BIT(candidate);
        int a_side = candidate < king_square;
        int king_to = base + (a_side ? 2 : 6), rook_to = base + (a_side ? 3 : 5);
        cb_bitboard king_path = BETWEEN[king_square][king_to], rook_path = BETWEEN[candidate][rook_to];
        if (((occupied ^ king ^ rook) & (king_path | rook_path | CB_BIT(king_to) | CB_BIT(rook_to)))
            || attacked_for_king(p, king_path | king, occupied ^ king)
            || attacked_for_king(p, CB_BIT(king_to), occupied ^ king ^ rook ^ CB_BIT(rook_to)))
            continue;
        int to = candidate;
        if (!p->chess960 && king_square == base + 4) {
            if (candidate == base + 7) to = base + 6;
            else if (candidate == base) to = base + 2;
        }
        add_move(list, king_square, to, 0);
    }
}

/* chess.Board.generate_pseudo_legal_moves */
static void generate_pseudo_legal_moves(const cb_position *p, cb_bitboard from_mask, cb_bitboard to_mask,
                                        move_list *list) {
    int us = p->turn, from, to;
    cb_bitboard ours = p->colors[us], occupied = p->pieces[0];
    FOR_SQUARES_REVERSED(from, ours & ~p->pieces[CB_PAWN] & from_mask) {
        FOR_SQUARES_REVERSED(to, piece_attacks(p, from) & ~ours & to_mask) add_move(list, from, to, 0);
    }
    if (from_mask & p->pieces[CB_KING]) generate_castling_moves(p, from_mask, to_mask, list);
    cb_bitboard pawns = p->pieces[CB_PAWN] & ours & from_mask;
    if (!pawns) return;
    FOR_SQUARES_REVERSED(from, pawns) {
        FOR_SQUARES_REVERSED(to, PAWN_ATTACKS[us][from] & p->colors[!us] & to_mask) add_pawn_move(list, from, to);
    }
    cb_bitboard single, twice;
    if (us == CB_WHITE) {
        single = pawns << 8 & ~occupied;
        twice = single << 8 & ~occupied & (RANK_3 | RANK_4);
    } else {
        single = pawns >> 8 & ~occupied;
        twice = single >> 8 & ~occupied & (RANK_6 | RANK_5);
    }
    FOR_SQUARES_REVERSED(to, single & to_mask) add_pawn_move(list, to + (us == CB_BLACK ? 8 : -8), to);
    FOR_SQUARES_REVERSED(to, twice & to_mask) add_move(list, to + (us == CB_BLACK ? 16 : -16), to, 0);
    if (p->ep_square > 0) generate_pseudo_legal_ep(p, from_mask, to_mask, list);
}

/* chess.Board._generate_evasions */
static void generate_evasions(const cb_position *p, int king, cb_bitboard checkers, move_list *list) {
    cb_bitboard attacked = 0;
    int checker, to;
    FOR_SQUARES_REVERSED(checker, checkers & (p->pieces[CB_BISHOP] | p->pieces[CB_ROOK] | p->pieces[CB_QUEEN])) {
        attacked |= LINE[king][checker] & ~CB_BIT(checker);
    }
    FOR_SQUARES_REVERSED(to, KING_ATTACKS[king] & ~p->colors[p->turn] & ~attacked) add_move(list, king, to, 0);
    checker = msb(checkers);
    if (CB_BIT(checker) == checkers) {
        cb_bitboard target = BETWEEN[king][checker] | checkers;
        generate_pseudo_legal_moves(p, ~p->pieces[CB_KING], target, list);
        if (p->ep_square > 0 && !(CB_BIT(p->ep_square) & target)) {
            int last_double = p->ep_square + (p->turn == CB_WHITE ? -8 : 8);
            if (last_double == checker) generate_pseudo_legal_ep(p, ALL_SQUARES, ALL_SQUARES, list);
        }
    }
}

/* chess.Board._is_safe (with is_castling and is_en_passant) */
static int is_safe(const cb_position *p, int king, cb_bitboard blockers, cb_move move) {
    int from = CB_FROM(move), to = CB_TO(move);
    if (from == king) {
        int file_difference = file_of(from) - file_of(to);
        if (file_difference > 1 || file_difference < -1
            || (p->pieces[CB_ROOK] & p->colors[p->turn] & CB_BIT(to)))
            return 1;
        return !attackers_mask(p, !p->turn, to, p->pieces[0]);
    }
    int difference = to > from ? to - from : from - to;
    if (p->ep_square == to && (p->pieces[CB_PAWN] & CB_BIT(from)) && (difference == 7 || difference == 9)
        && !(p->pieces[0] & CB_BIT(to)))
        return (pin_mask(p, p->turn, from) & CB_BIT(to)) && !ep_skewered(p, king, from);
    return !(blockers & CB_BIT(from)) || (LINE[from][to] & CB_BIT(king));
}

int cb_legal_moves(const cb_position *p, cb_move *moves) {
    move_list list = {moves, 0};
    cb_bitboard kings = p->pieces[CB_KING] & p->colors[p->turn];
    if (!kings) {
        generate_pseudo_legal_moves(p, ALL_SQUARES, ALL_SQUARES, &list);
        return list.count;
    }
    int king = msb(kings);
    cb_bitboard blockers = slider_blockers(p, king);
    cb_bitboard checkers = attackers_mask(p, !p->turn, king, p->pieces[0]);
    if (checkers) generate_evasions(p, king, checkers, &list);
    else generate_pseudo_legal_moves(p, ALL_SQUARES, ALL_SQUARES, &list);
    int count = 0;
    for (int i = 0; i < list.count; i++)
        if (is_safe(p, king, blockers, moves[i])) moves[count++] = moves[i];
    return count;
}

/* ------------------------------------------------------------------ keys */

static inline uint64_t piece_key(int type, int color, int square) {
    return CB_POLYGLOT[64 * ((type - 1) * 2 + color) + square];
}

static uint64_t castling_key(cb_bitboard castling) {
    uint64_t key = 0;
    int square;
    FOR_SQUARES_REVERSED(square, castling) key ^= CASTLING_KEYS[square];
    return key;
}

/* Polyglot's castling terms: a king-side (h-side) and a queen-side (a-side) right of each colour. */
static uint64_t polyglot_castling_key(const cb_position *p) {
    uint64_t key = 0;
    static const cb_bitboard backranks[2] = {RANK_8, RANK_1};
    for (int color = CB_BLACK; color <= CB_WHITE; color++) {
        cb_bitboard king = p->pieces[CB_KING] & p->colors[color] & backranks[color];
        cb_bitboard rights = p->castling & backranks[color];
        if (!king || !rights) continue;
        int offset = color == CB_WHITE ? 0 : 2;
        if (msb(rights) > msb(king)) key ^= CB_POLYGLOT[768 + offset];
        if (lsb(rights) < msb(king)) key ^= CB_POLYGLOT[769 + offset];
    }
    return key;
}

/* chess.Board.has_legal_en_passant */
static int has_legal_en_passant(const cb_position *p) {
    cb_move moves[CB_MAX_MOVES];
    move_list list = {moves, 0};
    generate_pseudo_legal_ep(p, ALL_SQUARES, ALL_SQUARES, &list);
    if (!list.count) return 0;
    cb_bitboard capturers = 0;
    for (int i = 0; i < list.count; i++) capturers |= CB_BIT(CB_FROM(moves[i]));
    int count = cb_legal_moves(p, moves);
    for (int i = 0; i < count; i++)
        if (CB_TO(moves[i]) == p->ep_square && (capturers & CB_BIT(CB_FROM(moves[i])))) return 1;
    return 0;
}

static void finish_key(cb_position *p) {
    p->key = p->base_key ^ castling_key(p->castling);
    if (p->ep_square > 0 && has_legal_en_passant(p)) p->key ^= CB_POLYGLOT[772 + file_of(p->ep_square)];
}

uint64_t cb_polyglot_key(const cb_position *p) {
    uint64_t key = p->base_key ^ polyglot_castling_key(p);
    if (p->ep_square > 0) {
        cb_bitboard behind = p->turn == CB_WHITE ? CB_BIT(p->ep_square) >> 8 : CB_BIT(p->ep_square) << 8;
        cb_bitboard beside = ((behind >> 1) & ~FILE_H) | ((behind << 1) & ~FILE_A);
        if (beside & p->pieces[CB_PAWN] & p->colors[p->turn]) key ^= CB_POLYGLOT[772 + file_of(p->ep_square)];
    }
    return key;
}

/* ------------------------------------------------------------------ making moves */

static int remove_piece(cb_position *p, int square, int with_keys) {
    int type = cb_piece_type_at(p, square);
    if (!type) return 0;
    cb_bitboard mask = CB_BIT(square);
    int color = (p->colors[CB_WHITE] & mask) ? CB_WHITE : CB_BLACK;
    p->pieces[type] ^= mask;
    p->pieces[0] ^= mask;
    p->colors[color] ^= mask;
    if (with_keys) p->base_key ^= piece_key(type, color, square);
    return type;
}

static void set_piece(cb_position *p, int square, int type, int color, int with_keys) {
    remove_piece(p, square, with_keys);
    if (type < CB_PAWN || type > CB_KING) return;
    cb_bitboard mask = CB_BIT(square);
    p->pieces[type] |= mask;
    p->pieces[0] |= mask;
    p->colors[color] |= mask;
    if (with_keys) p->base_key ^= piece_key(type, color, square);
}

/* chess.Board.push for a legal move */
void cb_make(cb_position *p, cb_move move, int with_keys) {
    int us = p->turn, from = CB_FROM(move), to = CB_TO(move), promotion = CB_PROMOTION(move);
    int base = us == CB_WHITE ? 0 : 56;
    /* _to_chess960: standard castling e1g1 / e1c1 becomes king takes rook */
    if ((from == 4 || from == 60) && (p->pieces[CB_KING] & CB_BIT(from))) {
        int rank_base = from - 4;
        if (to == rank_base + 6 && !(p->pieces[CB_ROOK] & CB_BIT(to))) to = rank_base + 7;
        else if (to == rank_base + 2 && !(p->pieces[CB_ROOK] & CB_BIT(to))) to = rank_base;
    }
    cb_bitboard from_mask = CB_BIT(from), to_mask = CB_BIT(to);
    int ep_before = p->ep_square;
    p->ep_square = -1;
    p->halfmove_clock++;
    if (us == CB_BLACK) p->fullmove_number++;
    if ((from_mask ^ to_mask) & (p->pieces[CB_PAWN] | p->colors[!us])) p->halfmove_clock = 0;

    int piece = remove_piece(p, from, with_keys);
    int captured = cb_piece_type_at(p, to);
    p->castling &= ~to_mask & ~from_mask;
    if (piece == CB_KING) {
        p->castling &= us == CB_WHITE ? ~RANK_1 : ~RANK_8;
    } else if (captured == CB_KING) {
        if (us == CB_WHITE && rank_of(to) == 7) p->castling &= ~RANK_8;
        else if (us == CB_BLACK && rank_of(to) == 0) p->castling &= ~RANK_1;
    }
    if (piece == CB_PAWN) {
        int difference = to - from;
        if (difference == 16 && rank_of(from) == 1) {
            p->ep_square = (int8_t)(from + 8);
        } else if (difference == -16 && rank_of(from) == 6) {
            p->ep_square = (int8_t)(from - 8);
        } else if (to == ep_before && (difference == 7 || difference == 9 || difference == -7 || difference == -9)
                   && !captured) {
            remove_piece(p, ep_before + (us == CB_WHITE ? -8 : 8), with_keys);
        }
    }
    if (promotion) piece = promotion;
    if (piece == CB_KING && (p->colors[us] & to_mask)) {
        int a_side = file_of(to) < file_of(from);
        remove_piece(p, to, with_keys);
        set_piece(p, base + (a_side ? 2 : 6), CB_KING, us, with_keys);
        set_piece(p, base + (a_side ? 3 : 5), CB_ROOK, us, with_keys);
    } else {
        set_piece(p, to, piece, us, with_keys);
    }
    p->turn = (uint8_t)!us;
    if (with_keys) {
        p->base_key ^= CB_POLYGLOT[780];
        finish_key(p);
    }
}

/* chess.Board.push(chess.Move.null()): the turn passes, the en-passant square goes, the clocks run */
void cb_make_null(cb_position *p) {
    p->ep_square = -1;
    p->halfmove_clock++;
    if (p->turn == CB_BLACK) p->fullmove_number++;
    p->turn = (uint8_t)!p->turn;
    p->base_key ^= CB_POLYGLOT[780];
    finish_key(p);
}

int cb_gives_check(const cb_position *p, cb_move move) {
    cb_position child = *p;
    cb_make(&child, move, 0);
    return cb_checkers(&child) != 0;
}

uint64_t cb_perft(const cb_position *p, int depth) {
    if (depth <= 0) return 1;
    cb_move moves[CB_MAX_MOVES];
    int count = cb_legal_moves(p, moves);
    if (depth == 1) return (uint64_t)count;
    uint64_t nodes = 0;
    for (int i = 0; i < count; i++) {
        cb_position child = *p;
        cb_make(&child, moves[i], 0);
        nodes += cb_perft(&child, depth - 1);
    }
    return nodes;
}

/* ------------------------------------------------------------------ game end */

/* chess.Board.has_insufficient_material */
static int has_insufficient_material(const cb_position *p, int color) {
    cb_bitboard ours = p->colors[color], theirs = p->colors[!color];
    if (ours & (p->pieces[CB_PAWN] | p->pieces[CB_ROOK] | p->pieces[CB_QUEEN])) return 0;
    if (ours & p->pieces[CB_KNIGHT])
        return popcount(ours) <= 2 && !(theirs & ~p->pieces[CB_KING] & ~p->pieces[CB_QUEEN]);
    if (ours & p->pieces[CB_BISHOP]) {
        int same_color = !(p->pieces[CB_BISHOP] & DARK_SQUARES) || !(p->pieces[CB_BISHOP] & ~DARK_SQUARES);
        return same_color && !p->pieces[CB_PAWN] && !p->pieces[CB_KNIGHT];
    }
    return 1;
}

int cb_insufficient_material(const cb_position *p) {
    return has_insufficient_material(p, CB_WHITE) && has_insufficient_material(p, CB_BLACK);
}

int cb_board_repetition(const cb_board *board, int tree_plies) {
    int reach = board->position.halfmove_clock < board->plies ? board->position.halfmove_clock : board->plies;
    int before_root = 0;
    for (int back = 4; back <= reach; back += 2) {
        if (board->history[board->plies - back].key != board->position.key) continue;
        if (back <= tree_plies || ++before_root >= 2) return 1;
    }
    return 0;
}

int cb_board_result(const cb_board *board, int legal_move_count, int tree_plies) {
    if (!legal_move_count) return cb_checkers(&board->position) ? CB_CHECKMATED : CB_DRAWN;
    if (board->position.halfmove_clock >= 100 || cb_insufficient_material(&board->position)
        || cb_board_repetition(board, tree_plies))
        return CB_DRAWN;
    return CB_ONGOING;
}

/* ------------------------------------------------------------------ setting up */

/* chess.Board.clean_castling_rights as computed for a board without a move stack */
static cb_bitboard clean_castling_rights(const cb_position *p, cb_bitboard rights) {
    cb_bitboard castling = rights & p->pieces[CB_ROOK];
    cb_bitboard white = castling & RANK_1 & p->colors[CB_WHITE], black = castling & RANK_8 & p->colors[CB_BLACK];
    cb_bitboard kings = p->pieces[CB_KING];
    if (!p->chess960) {
        white &= CB_BIT(0) | CB_BIT(7);
        black &= CB_BIT(56) | CB_BIT(63);
        if (!(p->colors[CB_WHITE] & kings & CB_BIT(4))) white = 0;
        if (!(p->colors[CB_BLACK] & kings & CB_BIT(60))) black = 0;
        return white | black;
    }
    cb_bitboard sides = 0, backranks[2] = {RANK_8, RANK_1}, castlings[2] = {black, white};
    for (int color = CB_BLACK; color <= CB_WHITE; color++) {
        cb_bitboard king = p->colors[color] & kings & backranks[color], rooks = castlings[color];
        if (!king || !rooks) continue;
        if (lsb(rooks) < msb(king)) sides |= CB_BIT(lsb(rooks));
        if (msb(rooks) > msb(king)) sides |= CB_BIT(msb(rooks));
    }
    return sides;
}

/* chess.Board._valid_ep_square */
static int valid_ep_square(const cb_position *p) {
    int ep = p->ep_square;
    if (ep <= 0) return 0;
    int forward = p->turn == CB_WHITE ? -8 : 8;
    if (rank_of(ep) != (p->turn == CB_WHITE ? 5 : 2)) return 0;
    if (!(p->pieces[CB_PAWN] & p->colors[!p->turn] & CB_BIT(ep + forward))) return 0;
    if (p->pieces[0] & (CB_BIT(ep) | CB_BIT(ep - forward))) return 0;
    return 1;
}

const char *cb_set(cb_position *p, const cb_bitboard pieces[7], cb_bitboard white, cb_bitboard black, int turn,
                   cb_bitboard castling, int ep_square, long halfmove_clock, long fullmove_number, int chess960) {
    memset(p, 0, sizeof *p);
    cb_bitboard occupied = 0;
    for (int type = CB_PAWN; type <= CB_KING; type++) {
        if (occupied & pieces[type]) return "two piece types on one square";
        occupied |= pieces[type];
        p->pieces[type] = pieces[type];
    }
    if (white & black) return "a square of both colours";
    if (occupied != (white | black)) return "the colour and piece-type bitboards disagree";
    p->pieces[0] = occupied;
    p->colors[CB_WHITE] = white;
    p->colors[CB_BLACK] = black;
    p->turn = turn ? CB_WHITE : CB_BLACK;
    p->chess960 = chess960 ? 1 : 0;
    if (popcount(white & pieces[CB_KING]) != 1 || popcount(black & pieces[CB_KING]) != 1)
        return "a side without a king or with more than one";
    if (pieces[CB_PAWN] & BACK_RANKS) return "a pawn on a back rank";
    if (popcount(white) > 16 || popcount(black) > 16) return "more than 16 pieces of one colour";
    if (halfmove_clock < 0 || halfmove_clock > CB_MAX_CLOCK || fullmove_number < 0
        || fullmove_number > CB_MAX_CLOCK)
        return "a move counter out of range";
    p->halfmove_clock = (int32_t)halfmove_clock;
    p->fullmove_number = (int32_t)fullmove_number;
    if (ep_square < -1 || ep_square > 63) return "an en-passant square off the board";
    p->ep_square = (int8_t)ep_square;
    if (ep_square != -1 && !valid_ep_square(p)) return "an en-passant square no double pawn push can have left";
    if (clean_castling_rights(p, castling) != castling) return "castling rights without their king or rook in place";
    p->castling = castling;
    cb_bitboard their_king = p->colors[!p->turn] & pieces[CB_KING];
    if (attackers_mask(p, p->turn, msb(their_king), occupied)) return "the side not to move is in check";

    p->base_key = p->turn == CB_WHITE ? CB_POLYGLOT[780] : 0;
    for (int type = CB_PAWN; type <= CB_KING; type++) {
        int square;
        FOR_SQUARES_REVERSED(square, pieces[type] & white) p->base_key ^= piece_key(type, CB_WHITE, square);
        FOR_SQUARES_REVERSED(square, pieces[type] & black) p->base_key ^= piece_key(type, CB_BLACK, square);
    }
    finish_key(p);
    return NULL;
}

/* ------------------------------------------------------------------ boards */

void cb_board_init(cb_board *board, const cb_position *position) {
    board->position = *position;
    board->history = NULL;
    board->moves = NULL;
    board->plies = 0;
    board->capacity = 0;
}

void cb_board_free(cb_board *board) {
    free(board->history);
    free(board->moves);
    board->history = NULL;
    board->moves = NULL;
    board->plies = board->capacity = 0;
}

int cb_copy_keys(uint64_t **keys, int *capacity, const uint64_t *from, int count, int room) {
    if (count + room > *capacity) {
        uint64_t *grown = realloc(*keys, (size_t)(count + room) * sizeof *grown);
        if (!grown) return -1;
        *keys = grown;
        *capacity = count + room;
    }
    if (count) memcpy(*keys, from, (size_t)count * sizeof *from);
    return 0;
}

static int reserve(cb_board *board, int capacity) {
    if (capacity <= board->capacity) return 0;
    if (capacity > CB_MAX_PLIES) return -1;
    cb_position *history = realloc(board->history, (size_t)capacity * sizeof *history);
    if (!history) return -1;
    board->history = history;
    cb_move *moves = realloc(board->moves, (size_t)capacity * sizeof *moves);
    if (!moves) return -1;
    board->moves = moves;
    board->capacity = capacity;
    return 0;
}

int cb_board_copy(cb_board *target, const cb_board *source) {
    if (reserve(target, source->plies) < 0) return -1;
    if (source->plies) {
        memcpy(target->history, source->history, (size_t)source->plies * sizeof *source->history);
        memcpy(target->moves, source->moves, (size_t)source->plies * sizeof *source->moves);
    }
    target->plies = source->plies;
    target->position = source->position;
    return 0;
}

int cb_board_push(cb_board *board, cb_move move) {
    if (board->plies == board->capacity) {
        int capacity = board->capacity ? 2 * board->capacity : 64;
        if (capacity > CB_MAX_PLIES) capacity = CB_MAX_PLIES;
        if (reserve(board, capacity) < 0 || board->plies == board->capacity) return -1;
    }
    board->history[board->plies] = board->position;
    board->moves[board->plies] = move;
    board->plies++;
    if (move) cb_make(&board->position, move, 1);
    else cb_make_null(&board->position);
    return 0;
}

int cb_board_pop(cb_board *board) {
    if (!board->plies) return -1;
    board->plies--;
    board->position = board->history[board->plies];
    return board->moves[board->plies];
}
