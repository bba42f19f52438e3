/* The compiled chess board: python-chess's rules for standard chess and Chess960, in plain C99.
 *
 * Everything here mirrors python-chess 1.x exactly: squares 0 (a1) to 63 (h8), colours 1 (white) and
 * 0 (black), piece types 1 (pawn) to 6 (king), castling rights as a mask of rook squares, and legal moves
 * in the order chess.Board.generate_legal_moves() yields them. A move is a 16-bit code
 * from | to << 6 | promotion << 12 (0: no promotion), castling encoded as that board's chess960 flag
 * says (e1g1 in standard chess, king takes rook in Chess960).
 *
 * Positions are plain values (cb_position): copy one to keep it, cb_make() plays a move on it. A cb_board
 * adds the history behind the position (repetitions) and a make/unmake stack; the Python extension
 * (_cboard.c) wraps one, and other C code of this extension can use both directly.
 *
 * cb_accept() states which positions the board takes; everything after assumes an accepted position
 * (one king a side, at most 16 pieces a side, no pawn on a back rank, clean castling rights, a plausible
 * en-passant square, the side not to move not in check). Within those, every move list fits CB_MAX_MOVES.
 */
#ifndef HACKMATE_CBOARD_H
#define HACKMATE_CBOARD_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t cb_bitboard;
typedef uint16_t cb_move;

enum { CB_BLACK = 0, CB_WHITE = 1 };
enum { CB_PAWN = 1, CB_KNIGHT = 2, CB_BISHOP = 3, CB_ROOK = 4, CB_QUEEN = 5, CB_KING = 6 };

/* At most 16 pieces a side: 15 queens (27 moves each), a king (8) and two castlings are 415 moves. */
#define CB_MAX_MOVES 512
/* The longest history a board keeps (game plies before the root plus the tree's). */
#define CB_MAX_PLIES (1 << 20)
/* Clocks above this are refused (python-chess allows any integer). */
#define CB_MAX_CLOCK (1 << 30)

#define CB_MOVE(from, to, promotion) ((cb_move)((from) | (to) << 6 | (promotion) << 12))
#define CB_FROM(move) ((int)((move) & 63))
#define CB_TO(move) ((int)((move) >> 6 & 63))
#define CB_PROMOTION(move) ((int)((move) >> 12 & 7))
#define CB_BIT(square) ((cb_bitboard)1 << (square))

typedef struct {
    cb_bitboard pieces[7];     /* [0]: every piece; [CB_PAWN..CB_KING]: that type, both colours */
    cb_bitboard colors[2];     /* [CB_BLACK], [CB_WHITE] */
    cb_bitboard castling;      /* rook squares with castling rights (python-chess's clean rights) */
    uint64_t base_key;         /* Polyglot Zobrist terms of the pieces and the side to move */
    uint64_t key;              /* transposition key: base_key, a term for each castling right's square, the
                                  en-passant file when an en-passant capture is legal: equal exactly when
                                  python-chess's _transposition_key is (up to 64-bit collisions) */
    int32_t halfmove_clock;
    int32_t fullmove_number;
    int8_t ep_square;          /* -1: none */
    uint8_t turn;              /* CB_WHITE or CB_BLACK */
    uint8_t chess960;          /* castling encoding of the moves (not a rule difference) */
} cb_position;

/* The piece type on a square (0: none). */
static inline int cb_piece_type_at(const cb_position *p, int square) {
    cb_bitboard mask = CB_BIT(square);
    if (!(p->pieces[0] & mask)) return 0;
    for (int type = CB_PAWN; type <= CB_KING; type++)
        if (p->pieces[type] & mask) return type;
    return 0;
}

static inline int cb_popcount(cb_bitboard b) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(b);
#else
    int count = 0;
    for (; b; b &= b - 1) count++;
    return count;
#endif
}

/* ------------------------------------------------------------------ a search's caller (cab.h, ccsearch.h) */

/* Whether the search must stop now (nonzero), or -1 when the callback failed. */
typedef int (*cb_stop_callback)(void *context, uint64_t nodes);
/* A tablebase result for the position (+1, 0, -1 into *result): 1 when found, 0 when not covered, -1 failed. */
typedef int (*cb_probe_callback)(void *context, const cb_position *position, int *result);

/* What a compiled search shares with its caller: the node count, the callbacks with their context, and whether
 * the search was stopped. */
typedef struct {
    uint64_t nodes;
    int aborted;                        /* stopped, or a callback failed (failed says which) */
    int failed;
    cb_stop_callback stop;
    cb_probe_callback probe;            /* NULL: no tablebases */
    int probe_max_pieces;
    void *context;
} cb_hooks;

/* Count a node, asking stop() every `every` nodes: nonzero when the search must unwind. */
static inline int cb_count_node(cb_hooks *hooks, uint64_t every) {
    if (++hooks->nodes % every) return 0;
    int stop = hooks->stop(hooks->context, hooks->nodes);
    if (!stop) return 0;
    hooks->aborted = 1;
    hooks->failed = stop < 0;
    return 1;
}

/* The tablebases on a position without castling rights and of at most probe_max_pieces pieces: 1 with *result,
 * 0 when there are none or they do not cover it, -1 when the callback failed (aborted and failed then set). */
static inline int cb_probe(cb_hooks *hooks, const cb_position *p, int *result) {
    if (!hooks->probe || p->castling || cb_popcount(p->pieces[0]) > hooks->probe_max_pieces) return 0;
    int found = hooks->probe(hooks->context, p, result);
    if (found < 0) hooks->aborted = hooks->failed = 1;
    return found;
}

/* ------------------------------------------------------------------ a board with its history */

typedef struct {
    cb_position position;      /* the current position */
    cb_position *history;      /* history[i]: the position before moves[i] */
    cb_move *moves;
    int plies;                 /* moves made (history entries in use) */
    int capacity;
} cb_board;

/* Game results of cb_result(). */
enum { CB_ONGOING = 1, CB_DRAWN = 0, CB_CHECKMATED = -1 };

/* Fill the attack and Zobrist tables; call once before anything else. */
void cb_init(void);

/* Set a position from python-chess's public state and check that the board accepts it: NULL when it
 * does, else the reason it does not (a static string). The keys are computed here. */
const char *cb_set(cb_position *position, const cb_bitboard pieces[7], cb_bitboard white, cb_bitboard black,
                   int turn, cb_bitboard castling, int ep_square, long halfmove_clock, long fullmove_number,
                   int chess960);

/* The legal moves into moves[CB_MAX_MOVES], in python-chess's order; returns their number. */
int cb_legal_moves(const cb_position *position, cb_move *moves);
/* Play a legal move (one cb_legal_moves returned for this position); with_keys 0 skips the keys. */
void cb_make(cb_position *position, cb_move move, int with_keys);
/* Pass (chess.Board.push(chess.Move.null())), the keys kept: for a side to move not in check, the position is one
 * the board accepts. The searches' null-move pruning. */
void cb_make_null(cb_position *position);
/* Whether the side to move has a piece besides pawns and the king (null-move pruning's guard against zugzwang). */
static inline int cb_has_pieces(const cb_position *p) {
    return (p->colors[p->turn] & (p->pieces[CB_KNIGHT] | p->pieces[CB_BISHOP] | p->pieces[CB_ROOK]
                                  | p->pieces[CB_QUEEN])) != 0;
}
/* The pieces giving check to the side to move. */
cb_bitboard cb_checkers(const cb_position *position);
/* chess.Board.attackers_mask: the pieces of color that attack square, sliders blocked by occupied. */
cb_bitboard cb_attackers(const cb_position *position, int color, int square, cb_bitboard occupied);
/* python-chess's insufficient material for both sides (neither can mate). */
int cb_insufficient_material(const cb_position *position);
/* chess.polyglot.zobrist_hash: base_key, king- and queen-side castling rights, and the en-passant file when
 * a pawn of the side to move stands ready to capture, legal or not. */
uint64_t cb_polyglot_key(const cb_position *position);
/* Whether a legal move gives check (chess.Board.gives_check). */
int cb_gives_check(const cb_position *position, cb_move move);
/* Leaf nodes depth plies below the position (perft). */
uint64_t cb_perft(const cb_position *position, int depth);

/* A board: init empties it (no memory held), free releases its history. */
void cb_board_init(cb_board *board, const cb_position *position);
void cb_board_free(cb_board *board);
/* A search's line of keys: count keys copied into *keys (grown with realloc to at least count + room, *capacity
 * its size) so that the search may add room more after them; 0, or -1 out of memory (*keys kept). */
int cb_copy_keys(uint64_t **keys, int *capacity, const uint64_t *from, int count, int room);
/* A copy of source's history and position into an initialised target; 0 on success, -1 out of memory. */
int cb_board_copy(cb_board *target, const cb_board *source);
/* Make a legal move, or pass for move 0 (a null move, the side to move not in check), keeping the position before
 * it: 0 on success, -1 out of memory or history full. */
int cb_board_push(cb_board *board, cb_move move);
/* Unmake the last move: the move, or -1 when there is none. */
int cb_board_pop(cb_board *board);
/* hackmate_core.rules.repetition_draw: the last tree_plies moves were played inside the search tree. */
int cb_board_repetition(const cb_board *board, int tree_plies);
/* hackmate_core.rules.game_result given the position's legal moves: CB_CHECKMATED, CB_DRAWN or CB_ONGOING. */
int cb_board_result(const cb_board *board, int legal_move_count, int tree_plies);

#endif
