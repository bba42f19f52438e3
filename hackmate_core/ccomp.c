/* The DeepChess comparator in C (see ccomp.h): evaluators/comparator.py's arithmetic, operation for operation. */
#include "ccomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The layers' loops compiled for each vector width the machine may have, picked when the module loads. The
 * arithmetic is the same on every path: one rounding per product and one per sum (-ffp-contract=off). */
#if defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define CC_VECTORISED __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CC_VECTORISED
#endif
/* The layers' code goes into each copy above, not into one call of a generic copy. */
#if defined(__GNUC__) || defined(__clang__)
#define CC_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define CC_INLINE static __forceinline
#else
#define CC_INLINE static inline
#endif
#if defined(__GNUC__) && !defined(__clang__)
/* gcc's -O3 would fuse two inputs' passes over a block of outputs into one scalar loop (unroll and jam) */
#pragma GCC optimize("no-loop-unroll-and-jam")
#endif

#if defined(_MSC_VER)
#define restrict __restrict
#endif

#define CORNERS (CB_BIT(0) | CB_BIT(7) | CB_BIT(56) | CB_BIT(63))

/* bits773.CASTLING: the castling rights the encoding has, by rook square */
static const int CASTLING_SQUARES[4] = {7, 0, 63, 56};

static inline int piece_feature(int color, int type, int square) {
    return (color == CB_WHITE ? 0 : 384) + (type - 1) * 64 + square;
}

static inline int lowest(cb_bitboard b) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(b);
#else
    int square = 0;
    while (!(b & 1)) {
        b >>= 1;
        square++;
    }
    return square;
#endif
}

/* ------------------------------------------------------------------ the first layer */

static inline void add_row(const cc_network *net, int64_t *accumulator, int feature, int sign) {
    const int64_t *row = net->first_weight + (size_t)feature * net->width;
    if (sign > 0)
        for (int j = 0; j < net->width; j++) accumulator[j] += row[j];
    else
        for (int j = 0; j < net->width; j++) accumulator[j] -= row[j];
}

void cc_accumulate(const cc_network *net, const cb_position *p, int64_t *accumulator) {
    memcpy(accumulator, net->first_bias, (size_t)net->width * sizeof *accumulator);
    for (int color = CB_BLACK; color <= CB_WHITE; color++)
        for (int type = CB_PAWN; type <= CB_KING; type++)
            for (cb_bitboard b = p->pieces[type] & p->colors[color]; b; b &= b - 1)
                add_row(net, accumulator, piece_feature(color, type, lowest(b)), 1);
    if (p->turn == CB_WHITE) add_row(net, accumulator, CC_SIDE_TO_MOVE, 1);
    for (int i = 0; i < 4; i++)
        if (p->castling & CB_BIT(CASTLING_SQUARES[i])) add_row(net, accumulator, CC_SIDE_TO_MOVE + 1 + i, 1);
}

/* The most input bits two positions can differ by: every square's piece, the side to move, four rights. */
#define MAX_CHANGES (2 * 64 + 5)

void cc_update(const cc_network *net, const cb_position *before, const cb_position *after, const int64_t *from,
               int64_t *to) {
    int features[MAX_CHANGES], signs[MAX_CHANGES], count = 0;
    for (int color = CB_BLACK; color <= CB_WHITE; color++) {
        for (int type = CB_PAWN; type <= CB_KING; type++) {
            cb_bitboard was = before->pieces[type] & before->colors[color];
            cb_bitboard is = after->pieces[type] & after->colors[color];
            for (cb_bitboard b = is ^ was; b; b &= b - 1) {
                features[count] = piece_feature(color, type, lowest(b));
                signs[count++] = is & b & (~b + 1) ? 1 : -1;
            }
        }
    }
    if (before->turn != after->turn) {
        features[count] = CC_SIDE_TO_MOVE;
        signs[count++] = after->turn == CB_WHITE ? 1 : -1;
    }
    for (int i = 0; i < 4; i++) {
        cb_bitboard mask = CB_BIT(CASTLING_SQUARES[i]);
        if ((before->castling ^ after->castling) & mask) {
            features[count] = CC_SIDE_TO_MOVE + 1 + i;
            signs[count++] = after->castling & mask ? 1 : -1;
        }
    }
    if (!count) {
        if (to != from) memcpy(to, from, (size_t)net->width * sizeof *to);
        return;
    }
    const int64_t *first = net->first_weight + (size_t)features[0] * net->width;   /* copied with the first row */
    if (signs[0] > 0)
        for (int j = 0; j < net->width; j++) to[j] = from[j] + first[j];
    else
        for (int j = 0; j < net->width; j++) to[j] = from[j] - first[j];
    for (int k = 1; k < count; k++) add_row(net, to, features[k], signs[k]);
}

/* ------------------------------------------------------------------ float32 layers */

/* Words of a mask with a bit for each input of the widest layer. */
#define MASK_WORDS ((CC_MAX_WIDTH + 63) / 64)

/* size outputs from weight's first column on: each the float32 sum of the products of the inputs set in mask
 * (those that are not zero), in input order (a zero input adds nothing: skipping it can only change the sign of
 * a zero sum). The sums stay in vector registers while the inputs go by. */
#define DENSE_BLOCK(name, size)                                                                                \
    CC_INLINE void name(const float *restrict x, const uint64_t *restrict mask, int words,                    \
                        const float *restrict weight, int stride, float *restrict y) {                        \
        float sums[size];                                                                                    \
        for (int j = 0; j < size; j++) sums[j] = 0.0f;                                                       \
        for (int word = 0; word < words; word++) {                                                           \
            for (uint64_t bits = mask[word]; bits; bits &= bits - 1) {                                       \
                const int i = word * 64 + lowest(bits);                                                      \
                const float xi = x[i];                                                                       \
                const float *restrict w = weight + (size_t)i * stride;                                       \
                for (int j = 0; j < size; j++) sums[j] += xi * w[j];                                         \
            }                                                                                                \
        }                                                                                                    \
        for (int j = 0; j < size; j++) y[j] = sums[j];                                                       \
    }
DENSE_BLOCK(dense_16, 16)
DENSE_BLOCK(dense_32, 32)
DENSE_BLOCK(dense_48, 48)
DENSE_BLOCK(dense_64, 64)

/* Outputs a pass computes: 64 (or the last 16 to 48), whose weights (inputs x 64 floats) stay in the first-level
 * cache while the pass runs over every position of a batch. */
#define PASS 64

/* A bit for each of x's n values above zero (a ReLU's output: those not zero): the mask's words in use. A byte for
 * each first (a loop the compiler vectorises), then eight bytes of 0 or 1 into eight bits by one multiplication. */
CC_INLINE int nonzero_inputs(const float *restrict x, int n, uint64_t *restrict mask) {
    unsigned char flags[64];
    int words = (n + 63) / 64;
    for (int word = 0; word < words; word++) {
        int base = word * 64, end = n - base < 64 ? n - base : 64;
        for (int j = 0; j < end; j++) flags[j] = x[base + j] > 0.0f;
        for (int j = end; j < 64; j++) flags[j] = 0;
        uint64_t bits = 0;
        for (int k = 0; k < 8; k++) {
            uint64_t eight;
            memcpy(&eight, flags + 8 * k, sizeof eight);
            bits |= (eight * 0x0102040810204080ULL >> 56) << (8 * k);
        }
        mask[word] = bits;
    }
    return words;
}

CC_INLINE void relu(float *x, int n) {
    for (int j = 0; j < n; j++) x[j] = x[j] > 0.0f ? x[j] : 0.0f;
}

/* The layer of rows positions: y[r] (stride values) from x's rows (row floats apart), whose non-zero inputs are
 * set in masks (MASK_WORDS apart, words of each in use); with the ReLU after it when relu_after. */
CC_INLINE void dense_rows(const cc_layer *layer, int rows, int row, const float *x, const uint64_t *masks,
                          int words, float *const *y, int relu_after) {
    const int stride = layer->stride;
    for (int start = 0; start < stride; start += PASS) {
        const float *w = layer->weight + start;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * row;
            const uint64_t *mask = masks + (size_t)r * MASK_WORDS;
            float *out = y[r] + start;
            switch (stride - start < PASS ? stride - start : PASS) {
            case 16: dense_16(xr, mask, words, w, stride, out); break;
            case 32: dense_32(xr, mask, words, w, stride, out); break;
            case 48: dense_48(xr, mask, words, w, stride, out); break;
            default: dense_64(xr, mask, words, w, stride, out); break;
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float *out = y[r];
        if (layer->bias)
            for (int j = 0; j < stride; j++) out[j] += layer->bias[j];
        if (relu_after) relu(out, stride);
    }
}

/* The tower of rows positions from their accumulators into features (cc_feature_floats each), in the buffers x,
 * y (rows of row floats) and masks. */
CC_INLINE void tower(const cc_network *net, int rows, int row, const int64_t *const *accumulators,
                     float *const *features, float *x, float *y, uint64_t *masks) {
    float *outputs[CC_BATCH];
    for (int r = 0; r < rows; r++) {
        float *xr = x + (size_t)r * row;
        for (int j = 0; j < net->width; j++) xr[j] = (float)((double)accumulators[r][j] * net->scale);
        relu(xr, net->width);
    }
    for (int layer = 0; layer <= net->tower_count; layer++) {
        const cc_layer *l = layer < net->tower_count ? &net->tower[layer] : &net->projection;
        int words = 0, last = layer == net->tower_count;
        for (int r = 0; r < rows; r++) {
            words = nonzero_inputs(x + (size_t)r * row, l->inputs, masks + (size_t)r * MASK_WORDS);
            outputs[r] = last ? features[r] : y + (size_t)r * row;
        }
        dense_rows(l, rows, row, x, masks, words, outputs, !last);
        float *swap = x;
        x = y;
        y = swap;
    }
}

CC_VECTORISED
void cc_features(const cc_network *net, const int64_t *accumulator, float *features) {
    float x[CC_MAX_WIDTH + CC_LANES], y[CC_MAX_WIDTH + CC_LANES];
    uint64_t mask[MASK_WORDS];
    tower(net, 1, CC_MAX_WIDTH + CC_LANES, &accumulator, &features, x, y, mask);
}

CC_VECTORISED
void cc_features_many(const cc_network *net, cc_workspace *work, const int64_t *const *accumulators, int count,
                      float *const *features) {
    tower(net, count, work->row, accumulators, features, work->x, work->y, work->masks);
}

int cc_workspace_init(cc_workspace *work, const cc_network *net) {
    int row = net->width;
    for (int layer = 0; layer < net->tower_count; layer++)
        if (net->tower[layer].stride > row) row = net->tower[layer].stride;
    if (net->projection.stride > row) row = net->projection.stride;
    work->row = row;
    work->x = malloc((size_t)CC_BATCH * row * sizeof(float));
    work->y = malloc((size_t)CC_BATCH * row * sizeof(float));
    work->masks = malloc((size_t)CC_BATCH * MASK_WORDS * sizeof(uint64_t));
    if (work->x && work->y && work->masks) return 0;
    cc_workspace_free(work);
    return -1;
}

void cc_workspace_free(cc_workspace *work) {
    free(work->x);
    free(work->y);
    free(work->masks);
    *work = (cc_workspace){0};
}

/* The float32 sum of the products of x and weight (n values): lane l adds those of inputs l, l + CC_LANES, ... in
 * order, then the lanes are added in order (evaluators/comparator.py's _dot). */
CC_INLINE float lane_dot(const float *restrict x, const float *restrict weight, int n) {
    float lanes[CC_LANES];
    for (int l = 0; l < CC_LANES; l++) lanes[l] = 0.0f;
    int full = n / CC_LANES * CC_LANES;
    for (int c = 0; c < full; c += CC_LANES)
        for (int l = 0; l < CC_LANES; l++) lanes[l] += x[c + l] * weight[c + l];
    for (int i = full; i < n; i++) lanes[i - full] += x[i] * weight[i];
    float sum = lanes[0];
    for (int l = 1; l < CC_LANES; l++) sum += lanes[l];
    return sum;
}

/* The head's output (before its bias) for the pair row relu(first_half + second_half): through the hidden
 * layers, then the last layer's sum. */
CC_INLINE float head(const cc_network *net, const float *first_half, const float *second_half) {
    float a[CC_MAX_WIDTH + CC_LANES], b[CC_MAX_WIDTH + CC_LANES];
    float *x = a, *y = b;
    uint64_t mask[MASK_WORDS];
    for (int j = 0; j < net->hidden; j++) x[j] = first_half[j] + second_half[j];
    relu(x, net->hidden);
    for (int layer = 0; layer < net->head_count; layer++) {
        int words = nonzero_inputs(x, net->head[layer].inputs, mask);
        dense_rows(&net->head[layer], 1, CC_MAX_WIDTH + CC_LANES, x, mask, words, &y, 1);
        float *swap = x;
        x = y;
        y = swap;
    }
    return lane_dot(x, net->out_weight, net->out_inputs);
}

/* evaluators/comparator.py's _sigmoid */
static double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double z = exp(x);
    return z / (1.0 + z);
}

CC_VECTORISED
double cc_prefers_first(const cc_network *net, const float *first, const float *second) {
    int h = net->hidden;
    float forward = head(net, first, second + h), backward = head(net, second, first + h);
    /* ComparatorEvaluator._probability */
    return 0.5 + 0.5 * (sigmoid((double)forward + net->out_bias) - sigmoid((double)backward + net->out_bias));
}

/* ------------------------------------------------------------------ the features table */

uint64_t cc_cache_slots(double megabytes, int size) {
    double bytes = megabytes * 1024.0 * 1024.0, slot = (double)size * sizeof(float) + 9 * sizeof(uint64_t);
    uint64_t slots = 256;
    while (slots < ((uint64_t)1 << 40) && (double)(slots * 2) * slot <= bytes) slots *= 2;
    return slots;
}

int cc_cache_init(cc_cache *cache, uint64_t slots, int size) {
    cache->keys = calloc((size_t)slots, sizeof *cache->keys);
    cache->checks = cache->keys ? malloc((size_t)slots * 8 * sizeof *cache->checks) : NULL;
    cache->values = cache->checks ? malloc((size_t)slots * (size_t)size * sizeof(float)) : NULL;
    if (!cache->values) {
        cc_cache_free(cache);
        return -1;
    }
    cache->slots = slots;
    cache->size = size;
    return 0;
}

void cc_cache_free(cc_cache *cache) {
    free(cache->keys);
    free(cache->checks);
    free(cache->values);
    *cache = (cc_cache){0};
}

void cc_cache_clear(cc_cache *cache) {
    if (cache->slots) memset(cache->keys, 0, (size_t)cache->slots * sizeof *cache->keys);
}

int cc_cache_permille(const cc_cache *cache) {
    uint64_t sample = cache->slots < 1000 ? cache->slots : 1000, used = 0;
    for (uint64_t i = 0; i < sample; i++) used += cache->keys[i] != 0;
    return sample ? (int)(used * 1000 / sample) : 0;
}

/* What a position's features depend on (its 773 bits), and its hash (never 0: 0 marks an empty slot). */
static uint64_t describe(const cb_position *p, uint64_t check[8]) {
    for (int type = CB_PAWN; type <= CB_KING; type++) check[type - 1] = p->pieces[type];
    check[6] = p->colors[CB_WHITE];
    check[7] = (p->castling & CORNERS) | (uint64_t)p->turn << 1;
    uint64_t hash = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 8; i++) {
        hash ^= check[i] + 0x9E3779B97F4A7C15ULL + (hash << 6) + (hash >> 2);
        hash *= 0xBF58476D1CE4E5B9ULL;
    }
    return (hash ^ hash >> 31) | 1;
}

int cc_cache_get(const cc_cache *cache, const cb_position *p, float *out) {
    if (!cache->slots) return 0;
    uint64_t check[8], key = describe(p, check), slot = key & (cache->slots - 1);
    if (cache->keys[slot] != key || memcmp(cache->checks + slot * 8, check, sizeof check)) return 0;
    memcpy(out, cache->values + slot * (uint64_t)cache->size, (size_t)cache->size * sizeof(float));
    return 1;
}

void cc_cache_put(cc_cache *cache, const cb_position *p, const float *features) {
    if (!cache->slots) return;
    uint64_t check[8], key = describe(p, check), slot = key & (cache->slots - 1);
    cache->keys[slot] = key;
    memcpy(cache->checks + slot * 8, check, sizeof check);
    memcpy(cache->values + slot * (uint64_t)cache->size, features, (size_t)cache->size * sizeof(float));
}
