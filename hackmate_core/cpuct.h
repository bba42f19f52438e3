/* PUCT's per-leaf work on the compiled board (cboard.h), in plain C99: what hackmate's Python code computes
 * for a new leaf of the search tree, done the same way so that both paths build the same tree.
 *
 * - the game result by rule with the search's repetition policy (hackmate_core.rules.game_result), on the keys
 *   of the earlier positions;
 * - whether the side to move mates in one (hackmate_core.rules.mate_in_one, as a yes or no);
 * - the tactical gains of the blend (evaluators.material.tactical_gains, the same double arithmetic);
 * - the planes18 input of the network as 17 unflipped bitboards (evaluators.encoding.unflipped_bitboards);
 * - the policy slot of each move (evaluators.moves.move_to_index, Chess960 castling as resnet's _policy_move).
 */
#ifndef HACKMATE_CPUCT_H
#define HACKMATE_CPUCT_H

#include "cboard.h"

/* Bitboards of the planes18 encoding before the flip for Black. */
#define CP_PLANES18 17

/* game_result but for repetitions: CB_CHECKMATED, CB_DRAWN (stalemate, fifty moves, insufficient material) or
 * CB_ONGOING. */
int cp_result(const cb_position *leaf, int legal_count);
/* repetition_draw: key_at(context, i) is the transposition key of the i-th of the count positions before the leaf
 * in game order (the last one its parent's), the last tree_plies of them inside the search tree. */
int cp_repetition(const cb_position *leaf, uint64_t (*key_at)(void *context, int index), void *context, int count,
                  int tree_plies);
/* Whether one of the legal moves checkmates. */
int cp_mate_in_one(const cb_position *position, const cb_move *moves, int count);
/* tactical_gains' first list: each move's gain in centipawns (a check earns 150). */
void cp_tactical_gains(const cb_position *position, const cb_move *moves, int count, double *gains);
/* gain_softmax's weights before the normalisation: exp((gain - top) / temperature) for each gain, top being the
 * first largest gain, the same double operations as Python's (math.exp is the C library's exp). */
void cp_gain_weights(const double *gains, int count, double temperature, double *weights);
/* unflipped_bitboards: ours P..K, theirs P..K, four castling planes, the legal en-passant square. */
void cp_planes18(const cb_position *position, const cb_move *moves, int count, uint64_t out[CP_PLANES18]);
/* The policy slot (0..4671) of a legal move. */
int cp_policy_slot(const cb_position *position, cb_move move);

#endif
