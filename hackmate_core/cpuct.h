/* PUCT's per-leaf work on the compiled board (cboard.h), in plain C99: what hackmate's Python code computes
 * for a new leaf of the search tree, done the same way so that both paths build the same tree.
 *
 * - the game result by rule with the search's repetition policy (hackmate_core.rules.game_result), on the keys
 *   of the earlier positions;
 * - whether the side to move mates in one (hackmate_core.rules.mate_in_one, as a yes or no);
 * - the tactical gains of the blend (evaluators.material.tactical_gains, the same double arithmetic);
 * - the planes18 input of the network as 17 unflipped bitboards (evaluators.encoding.unflipped_bitboards);
 * - the lc0-112 input as 111 unflipped bitboards (evaluators.encoding.lc0_bitboards), the history from the leaf's
 *   line: the tree's positions, and above the root what the search hands over (evaluators.encoding.lc0_history);
 * - the features36 input as 35 unflipped bitboards (evaluators.encoding.feature_bitboards), the last moves from
 *   the leaf's line: the tree's moves, and above the root what the search hands over (last_move_squares);
 * - the policy slot of each move under a network's conventions (evaluators.moves.PolicySlots).
 */
#ifndef HACKMATE_CPUCT_H
#define HACKMATE_CPUCT_H

#include "cboard.h"

/* Bitboards of the planes18 encoding before the flip for Black. */
#define CP_PLANES18 17
/* lc0-112: positions of history, bitboards of each (White's pawns to king, Black's, the repetition plane) as
 * evaluators.encoding.lc0_history gives them, and the binary planes before the flip for Black. */
#define CP_LC0_HISTORY 8
#define CP_LC0_BLOCK 13
#define CP_LC0_PLANES 111
/* features36: the binary planes before the flip for Black, and the game's moves whose squares they show. */
#define CP_FEATURES 35
#define CP_LAST_MOVES 2
/* PolicySlots' conventions, as flags: castling as the king taking its rook, a queen promotion in a slot of its own. */
#define CP_KING_TAKES_ROOK 1
#define CP_OWN_QUEEN_SLOT 2

/* The tables the policy slots and tactical gains are made with (tests/hackmate_core/test_compiled_tables.py checks
 * them equal to Python's): evaluators.moves.QUEEN_DIRECTIONS and KNIGHT_DELTAS as (rank, file) steps, and
 * evaluators.material.CHECK_BONUS_CP. */
extern const int CP_QUEEN_DIRECTIONS[8][2];
extern const int CP_KNIGHT_DELTAS[8][2];
extern const double CP_CHECK_BONUS_CP;

/* A leaf's line: the game's positions in order, the first known of them before the search's root (index 0 the
 * game's first position when first is set), then the tree's from the root (tree[0]) to the leaf (the last). */
typedef struct {
    const cb_position *game;
    int known;
    const cb_position *const *tree;
    int tree_count;
    int first;
} cp_line;

static inline const cb_position *cp_line_at(const cp_line *line, int index) {
    return index < line->known ? &line->game[index] : line->tree[index - line->known];
}

/* game_result but for repetitions: CB_CHECKMATED, CB_DRAWN (stalemate, fifty moves, insufficient material) or
 * CB_ONGOING. */
int cp_result(const cb_position *leaf, int legal_count);
/* repetition_draw of the line's last position (the leaf), the moves from the root on played inside the tree. */
int cp_repetition(const cp_line *line);
/* Whether one of the legal moves checkmates. */
int cp_mate_in_one(const cb_position *position, const cb_move *moves, int count);
/* tactical_gains' first list: each move's gain in centipawns (a check earns 150). */
void cp_tactical_gains(const cb_position *position, const cb_move *moves, int count, double *gains);
/* gain_softmax's weights before the normalisation: exp((gain - top) / temperature) for each gain, top being the
 * first largest gain, the same double operations as Python's (math.exp is the C library's exp). */
void cp_gain_weights(const double *gains, int count, double temperature, double *weights);
/* unflipped_bitboards: ours P..K, theirs P..K, four castling planes, the legal en-passant square. */
void cp_planes18(const cb_position *position, const cb_move *moves, int count, uint64_t out[CP_PLANES18]);
/* lc0_bitboards of the line's leaf: the tree's positions below the root from the line, the root's and the seven
 * before it from root_history (evaluators.encoding.lc0_history of the root, the root's first). */
void cp_lc0_planes(const cp_line *line, const uint64_t root_history[CP_LC0_HISTORY][CP_LC0_BLOCK],
                   uint64_t out[CP_LC0_PLANES]);
/* evaluators.encoding.last_move_squares of one legal move: its from and to squares, castling as the king's move to
 * its g- or c-file square. */
void cp_move_squares(const cb_position *before, cb_move move, int8_t squares[2]);
/* feature_bitboards: planes18's 17 (cp_planes18), ours, theirs, the checkers, opposite-coloured bishops, ours >
 * theirs in pawns to queens, ours < theirs, then a bitboard of each of the last moves' squares (last: the from and
 * to squares of the last move, then of the one before, as cp_move_squares gives them; -1: none). */
void cp_features(const cb_position *position, const cb_move *moves, int count, const int8_t last[2 * CP_LAST_MOVES],
                 uint64_t out[CP_FEATURES]);
/* A 64-bit digest of count words (a cache key of bitboards; equal words, equal digests). */
uint64_t cp_digest(const uint64_t *words, int count);
/* The policy slot (0..4671) of a legal move under the conventions (CP_KING_TAKES_ROOK | CP_OWN_QUEEN_SLOT, or 0:
 * the king's two-square step in Chess960 too, queen promotions in the push's slot). */
int cp_policy_slot(const cb_position *position, cb_move move, int conventions);

#endif
