/* The DeepChess comparator in C (evaluators/comparator.py's ComparatorEvaluator), value for value.
 *
 * evaluators/comparator.py defines the network's arithmetic so that this file can compute it exactly, not
 * merely closely: the same numbers in, the same bits out, hence the same decisions in the search.
 *
 * - The first layer is an accumulator of fixed-point integers: the weight rows of the position's 773 input bits
 *   (evaluators/bits773.py) and the bias, each scaled by 2^bits and rounded to an int64 once, when the weights
 *   are loaded. Integer sums do not depend on their order, so the accumulator updated by the features a move
 *   changes always equals the one computed from scratch: no drift. It becomes float32 as
 *   (float)((double)value * scale).
 * - Every other layer sums its products in float32, input by input in index order, then adds the bias: plain
 *   loops over the outputs that the compiler vectorises (no fused multiply-add: built with -ffp-contract=off).
 *   An input of zero (most ReLU outputs) adds nothing and is skipped; that can only change the sign of a zero.
 *   Several positions go through a layer together, 64 outputs at a time: the same sums, with each block of
 *   weights loaded into the first-level cache once for all of them.
 * - A position's features are its tower output multiplied by both halves of the head's first layer: row 0 as
 *   the first position of a comparison (with that layer's bias), row 1 as the second.
 * - A comparison of a and b: logit(x) = the head's last layer on relu(x) in CC_LANES float32 partial sums (lane
 *   l adds the products of inputs l, l + CC_LANES, ... in order; then the lanes in order), as a double, plus the
 *   output bias; forward = logit(a0 + b1), backward = logit(b0 + a1), and P(a better) =
 *   0.5 + 0.5 * (sigmoid(forward) - sigmoid(backward)) in double with the C library's exp (which is what
 *   Python's math.exp calls), so equal features always give exactly 0.5.
 */
#ifndef HACKMATE_CCOMP_H
#define HACKMATE_CCOMP_H

#include <stdint.h>

#include "cboard.h"

/* evaluators/bits773.py */
#define CC_INPUTS 773
#define CC_SIDE_TO_MOVE 768
/* The widest layer and the most layers a network may have here. */
#define CC_MAX_WIDTH 2048
#define CC_MAX_LAYERS 16
/* Layers are stored with their outputs padded with zero columns to a multiple of CC_LANES (whole vectors). */
#define CC_LANES 16

/* A dense layer: outputs[j] = sum_i inputs[i] * weight[i * stride + j] (+ bias[j] when bias is not NULL), for
 * j below outputs; the columns from outputs to stride are zeros. */
typedef struct {
    int inputs, outputs, stride;
    float *weight;               /* [inputs][stride] */
    float *bias;                 /* [stride] or NULL */
} cc_layer;

/* outputs rounded up to whole vectors */
static inline int cc_stride(int outputs) {
    return (outputs + CC_LANES - 1) / CC_LANES * CC_LANES;
}

typedef struct {
    int width;                       /* the first layer's outputs: the accumulator's lanes */
    int64_t *first_weight;           /* [CC_INPUTS][width], fixed point */
    int64_t *first_bias;             /* [width], fixed point */
    double scale;                    /* 2^-bits: fixed point to real */
    int tower_count;                 /* the tower's layers after the first, each followed by a ReLU */
    cc_layer tower[CC_MAX_LAYERS];
    cc_layer projection;             /* the tower's output -> 2 * hidden (its bias: hidden values for row 0, then
                                        zeros) */
    int hidden;                      /* features per row: a position's features are 2 * hidden floats */
    int head_count;                  /* the head's hidden layers after the first, each followed by a ReLU */
    cc_layer head[CC_MAX_LAYERS];
    float *out_weight;               /* [out_inputs]: the two output logits' weight difference */
    int out_inputs;
    double out_bias;                 /* the two output logits' bias difference */
} cc_network;

/* The accumulator of a position from scratch (width lanes). */
void cc_accumulate(const cc_network *net, const cb_position *position, int64_t *accumulator);
/* The accumulator after a move: the parent's (from) plus the rows the move turned on, minus those it turned off,
 * found by comparing the positions before and after it. */
void cc_update(const cc_network *net, const cb_position *before, const cb_position *after, const int64_t *from,
               int64_t *to);
/* A position's 2 * hidden features from its accumulator, into cc_feature_floats floats (the rest: zeros). */
void cc_features(const cc_network *net, const int64_t *accumulator, float *features);

/* The floats to hold a position's features: its two rows padded to whole vectors. */
static inline int cc_feature_floats(const cc_network *net) {
    return net->projection.stride;
}

/* Positions whose features are computed together (the same numbers, fewer trips to memory for the weights). */
#define CC_BATCH 32

/* Memory for computing CC_BATCH positions' features at once. */
typedef struct {
    float *x, *y;                    /* [CC_BATCH][row]: a layer's inputs and outputs */
    uint64_t *masks;                 /* [CC_BATCH][CC_MAX_WIDTH / 64]: the inputs that are not zero */
    int row;                         /* the network's widest layer (padded) */
} cc_workspace;

/* 0, or -1 out of memory. */
int cc_workspace_init(cc_workspace *work, const cc_network *net);
void cc_workspace_free(cc_workspace *work);
/* cc_features of count (at most CC_BATCH) positions: features[i] from accumulators[i]. */
void cc_features_many(const cc_network *net, cc_workspace *work, const int64_t *const *accumulators, int count,
                      float *const *features);
/* P(first better for White than second), symmetrised (see above). */
double cc_prefers_first(const cc_network *net, const float *first, const float *second);

/* A table of features by position, direct mapped (results never depend on it: features are exact). */
typedef struct {
    uint64_t *keys;                  /* [slots]: the hash of the position there, 0: empty (a miss reads only this) */
    uint64_t *checks;                /* [slots][8]: what its features depend on: pieces, White's, corner rights,
                                        the turn */
    float *values;                   /* [slots][size] */
    uint64_t slots;                  /* a power of two, or 0 */
    int size;                        /* floats a slot */
} cc_cache;

/* Slots for megabytes of memory at features of size floats: the largest power of two that fits (at least 256). */
uint64_t cc_cache_slots(double megabytes, int size);
/* 0, or -1 out of memory (the cache is then empty). */
int cc_cache_init(cc_cache *cache, uint64_t slots, int size);
void cc_cache_free(cc_cache *cache);
void cc_cache_clear(cc_cache *cache);
/* Permille of the first 1000 slots in use. */
int cc_cache_permille(const cc_cache *cache);
/* Copy the features of the position into out when the table has them: 1, else 0. */
int cc_cache_get(const cc_cache *cache, const cb_position *position, float *out);
void cc_cache_put(cc_cache *cache, const cb_position *position, const float *features);

#endif
