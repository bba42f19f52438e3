/* hackmate_core._ccomparison: the compiled comparator (ccomp.h) and comparison search (ccsearch.h) as Python types.
 *
 * - Network(...) holds a comparator's weights, handed over as arrays (any object with the buffer protocol) by
 *   evaluators/comparator.py, the one reader of the weights file; features(state, chess960) and
 *   prefers_first(first, second) compute what ComparatorEvaluator computes, bit for bit.
 * - Accumulator(network, state, chess960) follows moves with the incremental first layer (push, pop), as the
 *   search does: its features() are what the search sees.
 * - Searcher(network, best_moves, feature_megabytes, transpositions) is search/comparison.py's search: start() sets
 *   the root,
 *   each search(depth, ...) is one iteration. It holds the GIL and calls back into Python every
 *   CHECK_NODES_EVERY nodes (stopped(nodes)), which also lets other threads run, so a `stop` is answered within
 *   milliseconds. With threads=2 a second thread of its own, which never touches Python, searches
 *   root moves beside it (ccsearch.h's cs_search_root_split).
 *
 * Every argument is checked: nothing a caller passes can make it read or write out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "ccomp.h"
#include "ccsearch.h"

/* The module's dotted name, which its types' names begin with (binding.h's HB_TYPE). */
#define HB_MODULE "hackmate_core._ccomparison"
/* Raised when a method changes, so that hackmate_core.compiled refuses a stale build. */
#define API_VERSION 8
/* The largest best-move table (entries) and features table (megabytes) asked for. */
#define MAX_BEST_MOVES ((1LL << 31) - 1)
#define MAX_FEATURE_MEGABYTES (1 << 20)

/* ------------------------------------------------------------------ reading arguments */

/* A C-contiguous array of itemsize-byte numbers of kind 'f' (float) or 'i' (signed integer) with the given shape
 * (-1: any length, returned in *found): a copy in newly allocated memory, or NULL with an exception. */
static void *read_array(PyObject *object, const char *what, char kind, Py_ssize_t itemsize, int ndim,
                        const Py_ssize_t *shape, Py_ssize_t *found) {
    Py_buffer view;
    if (PyObject_GetBuffer(object, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    const char *format = view.format ? view.format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
    int kind_ok = kind == 'f' ? strcmp(format, "f") == 0 : strcmp(format, "l") == 0 || strcmp(format, "q") == 0;
    if (!kind_ok || view.itemsize != itemsize || view.ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected a %d-dimensional array of %zd-byte %s", what, ndim, itemsize,
                     kind == 'f' ? "floats" : "integers");
        PyBuffer_Release(&view);
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        Py_ssize_t expected = shape[i] >= 0 ? shape[i] : -1;
        if ((expected >= 0 && view.shape[i] != expected) || view.shape[i] < 1 || view.shape[i] > CC_MAX_WIDTH * 2) {
            PyErr_Format(PyExc_ValueError, "%s: dimension %d is %zd, not %zd", what, i, view.shape[i], expected);
            PyBuffer_Release(&view);
            return NULL;
        }
        if (found) found[i] = view.shape[i];
    }
    void *copy = PyMem_Malloc((size_t)view.len);
    if (!copy) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memcpy(copy, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return copy;
}

static float *read_floats(PyObject *object, const char *what, int ndim, const Py_ssize_t *shape, Py_ssize_t *found) {
    return read_array(object, what, 'f', sizeof(float), ndim, shape, found);
}

/* A dense layer (weight, bias) of the given inputs, its outputs padded to whole vectors with zero columns: 0, or
 * -1 with an exception. */
static int read_layer(PyObject *pair, const char *what, int inputs, cc_layer *layer) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_ValueError, "%s: expected a (weight, bias) pair", what);
        return -1;
    }
    Py_ssize_t shape[2] = {inputs, -1}, found[2];
    float *weight = read_floats(PyTuple_GET_ITEM(pair, 0), what, 2, shape, found);
    if (!weight) return -1;
    Py_ssize_t bias_shape[1] = {found[1]};
    float *bias = found[1] <= CC_MAX_WIDTH ? read_floats(PyTuple_GET_ITEM(pair, 1), what, 1, bias_shape, NULL) : NULL;
    if (!bias) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: wider than %d", what, CC_MAX_WIDTH);
        PyMem_Free(weight);
        return -1;
    }
    int outputs = (int)found[1], stride = cc_stride(outputs);
    layer->weight = PyMem_Calloc((size_t)inputs * stride, sizeof(float));
    layer->bias = PyMem_Calloc((size_t)stride, sizeof(float));
    if (layer->weight && layer->bias) {
        for (int i = 0; i < inputs; i++)
            memcpy(layer->weight + (size_t)i * stride, weight + (size_t)i * outputs, (size_t)outputs * sizeof(float));
        memcpy(layer->bias, bias, (size_t)outputs * sizeof(float));
    }
    PyMem_Free(weight);
    PyMem_Free(bias);
    if (!layer->weight || !layer->bias) {
        PyErr_NoMemory();
        return -1;
    }
    layer->inputs = inputs;
    layer->outputs = outputs;
    layer->stride = stride;
    return 0;
}

/* A sequence of layers from inputs wide: their number, or -1 with an exception; *outputs: the last width. */
static int read_layers(PyObject *object, const char *what, int inputs, cc_layer *layers, int *outputs) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    if (count > CC_MAX_LAYERS) {
        PyErr_Format(PyExc_ValueError, "%s: more than %d layers", what, CC_MAX_LAYERS);
        Py_DECREF(sequence);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (read_layer(PySequence_Fast_GET_ITEM(sequence, i), what, inputs, &layers[i]) < 0) {
            Py_DECREF(sequence);
            return -1;
        }
        inputs = layers[i].outputs;
    }
    Py_DECREF(sequence);
    *outputs = inputs;
    return (int)count;
}

static PyObject *features_bytes(const float *features, int size) {
    return PyBytes_FromStringAndSize((const char *)features, (Py_ssize_t)size * (Py_ssize_t)sizeof(float));
}

/* ------------------------------------------------------------------ Network */

typedef struct {
    PyObject_HEAD
    cc_network net;
} NetworkObject;

static PyTypeObject NetworkType;

static void free_layers(cc_layer *layers, int count) {
    for (int i = 0; i < count; i++) {
        PyMem_Free(layers[i].weight);
        PyMem_Free(layers[i].bias);
    }
}

static void Network_dealloc(NetworkObject *self) {
    cc_network *net = &self->net;
    PyMem_Free(net->first_weight);
    PyMem_Free(net->first_bias);
    free_layers(net->tower, CC_MAX_LAYERS);
    free_layers(&net->projection, 1);
    free_layers(net->head, CC_MAX_LAYERS);
    PyMem_Free(net->out_weight);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Network_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"first_weight", "first_bias", "scale", "tower", "projection", "head", "out_weight",
                               "out_bias", NULL};
    PyObject *first_weight, *first_bias, *tower, *projection, *head, *out_weight;
    double scale, out_bias;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOdOOOOd:Network", keywords, &first_weight, &first_bias, &scale,
                                     &tower, &projection, &head, &out_weight, &out_bias))
        return NULL;
    if (!isfinite(scale) || scale <= 0 || !isfinite(out_bias)) {
        PyErr_SetString(PyExc_ValueError, "scale and out_bias must be finite, scale positive");
        return NULL;
    }
    NetworkObject *self = (NetworkObject *)type->tp_alloc(type, 0);   /* zeroed: dealloc frees what was read */
    if (!self) return NULL;
    cc_network *net = &self->net;
    Py_ssize_t first_shape[2] = {CC_INPUTS, -1}, found[2];
    net->first_weight = read_array(first_weight, "first_weight", 'i', 8, 2, first_shape, found);
    if (!net->first_weight) goto fail;
    if (found[1] > CC_MAX_WIDTH) {
        PyErr_Format(PyExc_ValueError, "first_weight: wider than %d", CC_MAX_WIDTH);
        goto fail;
    }
    net->width = (int)found[1];
    Py_ssize_t bias_shape[1] = {net->width};
    net->first_bias = read_array(first_bias, "first_bias", 'i', 8, 1, bias_shape, NULL);
    if (!net->first_bias) goto fail;
    net->scale = scale;
    int width;
    net->tower_count = read_layers(tower, "tower", net->width, net->tower, &width);
    if (net->tower_count < 0) goto fail;
    if (read_layer(projection, "projection", width, &net->projection) < 0) goto fail;
    if (net->projection.outputs % 2) {
        PyErr_SetString(PyExc_ValueError, "projection: its outputs must be two rows");
        goto fail;
    }
    net->hidden = net->projection.outputs / 2;
    net->head_count = read_layers(head, "head", net->hidden, net->head, &width);
    if (net->head_count < 0) goto fail;
    Py_ssize_t out_shape[1] = {width};
    net->out_weight = read_floats(out_weight, "out_weight", 1, out_shape, NULL);
    if (!net->out_weight) goto fail;
    net->out_inputs = width;
    net->out_bias = out_bias;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* Features given as bytes (or any buffer) of 2 * hidden float32: a pointer into view, or NULL with an exception. */
static const float *read_features(const cc_network *net, PyObject *object, Py_buffer *view) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (view->len != (Py_ssize_t)(2 * net->hidden * sizeof(float))) {
        PyErr_Format(PyExc_ValueError, "features: expected %d float32 values", 2 * net->hidden);
        PyBuffer_Release(view);
        return NULL;
    }
    return view->buf;
}

static PyObject *Network_features(NetworkObject *self, PyObject *args) {
    PyObject *state;
    int chess960 = 0;
    if (!PyArg_ParseTuple(args, "O|p:features", &state, &chess960)) return NULL;
    cb_position position;
    if (hb_read_state(state, chess960, &position) < 0) return NULL;
    int64_t *accumulator = PyMem_Malloc((size_t)self->net.width * sizeof *accumulator);
    float *features = PyMem_Malloc((size_t)cc_feature_floats(&self->net) * sizeof *features);
    PyObject *result = NULL;
    if (accumulator && features) {
        cc_accumulate(&self->net, &position, accumulator);
        cc_features(&self->net, accumulator, features);
        result = features_bytes(features, 2 * self->net.hidden);
    } else {
        PyErr_NoMemory();
    }
    PyMem_Free(accumulator);
    PyMem_Free(features);
    return result;
}

static PyObject *Network_prefers_first(NetworkObject *self, PyObject *args) {
    PyObject *first, *second;
    if (!PyArg_ParseTuple(args, "OO:prefers_first", &first, &second)) return NULL;
    Py_buffer a, b;
    const float *fa = read_features(&self->net, first, &a);
    if (!fa) return NULL;
    const float *fb = read_features(&self->net, second, &b);
    if (!fb) {
        PyBuffer_Release(&a);
        return NULL;
    }
    double p = cc_prefers_first(&self->net, fa, fb);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyFloat_FromDouble(p);
}

static PyObject *Network_get_hidden(NetworkObject *self, void *unused) {
    return PyLong_FromLong(self->net.hidden);
}

static PyMethodDef Network_methods[] = {
    HB_METHOD("features", Network_features, METH_VARARGS,
              "features(state, chess960=False): the position's features (bytes of 2 * hidden float32), its "
              "accumulator computed from scratch."),
    HB_METHOD("prefers_first", Network_prefers_first, METH_VARARGS,
              "prefers_first(first, second): P(first better for White), both given as features."),
    HB_END,
};

static PyGetSetDef Network_getset[] = {
    HB_GETTER("hidden", Network_get_hidden, "features a row (a position has two rows)."),
    HB_END,
};

HB_TYPE(Network,
        "Network(first_weight, first_bias, scale, tower, projection, head, out_weight, out_bias): a DeepChess "
        "comparator as evaluators/comparator.py prepares it: the first layer in fixed point (int64 [773][width] "
        "and [width], times scale); tower and head: (weight [in][out], bias [out]) float32 pairs, projection "
        "one such pair with 2 * hidden outputs (a position's two rows of features); out_weight [in] float32 "
        "and out_bias: the output logits' differences.",
        Network_new, Network_dealloc, Network_methods, Network_getset);

static int read_network(PyObject *object, NetworkObject **out) {
    if (!PyObject_TypeCheck(object, &NetworkType)) {
        PyErr_SetString(PyExc_TypeError, "expected a " HB_MODULE ".Network");
        return -1;
    }
    *out = (NetworkObject *)object;
    return 0;
}

/* ------------------------------------------------------------------ Accumulator */

typedef struct {
    PyObject_HEAD
    NetworkObject *network;
    cb_position *positions;     /* [capacity]: the root, then after each move */
    int64_t *accumulators;      /* [capacity][width] */
    int plies, capacity;
} AccumulatorObject;

static PyTypeObject AccumulatorType;

static void Accumulator_dealloc(AccumulatorObject *self) {
    Py_XDECREF(self->network);
    PyMem_Free(self->positions);
    PyMem_Free(self->accumulators);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int reserve_plies(AccumulatorObject *self, int capacity) {
    if (capacity <= self->capacity) return 0;
    if (capacity > CB_MAX_PLIES) {
        PyErr_SetString(PyExc_MemoryError, "too many moves");
        return -1;
    }
    int width = self->network->net.width;
    cb_position *positions = PyMem_Realloc(self->positions, (size_t)capacity * sizeof *positions);
    if (!positions) {
        PyErr_NoMemory();
        return -1;
    }
    self->positions = positions;
    int64_t *accumulators = PyMem_Realloc(self->accumulators, (size_t)capacity * width * sizeof *accumulators);
    if (!accumulators) {
        PyErr_NoMemory();
        return -1;
    }
    self->accumulators = accumulators;
    self->capacity = capacity;
    return 0;
}

static PyObject *Accumulator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"network", "state", "chess960", NULL};
    PyObject *network, *state;
    int chess960 = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:Accumulator", keywords, &network, &state, &chess960))
        return NULL;
    NetworkObject *net;
    if (read_network(network, &net) < 0) return NULL;
    cb_position root;
    if (hb_read_state(state, chess960, &root) < 0) return NULL;
    AccumulatorObject *self = (AccumulatorObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->network = (NetworkObject *)Py_NewRef(network);
    if (reserve_plies(self, 64) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->positions[0] = root;
    cc_accumulate(&net->net, &root, self->accumulators);
    return (PyObject *)self;
}

static PyObject *Accumulator_push(AccumulatorObject *self, PyObject *object) {
    cb_move move;
    if (hb_read_legal_move(object, &self->positions[self->plies], &move) < 0) return NULL;
    if (reserve_plies(self, self->plies + 2 > self->capacity ? 2 * self->capacity : self->capacity) < 0) return NULL;
    int width = self->network->net.width;
    cb_position *before = &self->positions[self->plies], *after = before + 1;
    *after = *before;
    cb_make(after, move, 1);
    cc_update(&self->network->net, before, after, self->accumulators + (size_t)self->plies * width,
              self->accumulators + (size_t)(self->plies + 1) * width);
    self->plies++;
    Py_RETURN_NONE;
}

static PyObject *Accumulator_pop(AccumulatorObject *self, PyObject *unused) {
    if (!self->plies) {
        PyErr_SetString(PyExc_IndexError, "pop from the root");
        return NULL;
    }
    self->plies--;
    Py_RETURN_NONE;
}

static PyObject *Accumulator_features(AccumulatorObject *self, PyObject *unused) {
    const cc_network *net = &self->network->net;
    float *features = PyMem_Malloc((size_t)cc_feature_floats(net) * sizeof *features);
    if (!features) return PyErr_NoMemory();
    cc_features(net, self->accumulators + (size_t)self->plies * net->width, features);
    PyObject *result = features_bytes(features, 2 * net->hidden);
    PyMem_Free(features);
    return result;
}

static PyObject *Accumulator_values(AccumulatorObject *self, PyObject *unused) {
    int width = self->network->net.width;
    return hb_list(self->accumulators + (size_t)self->plies * width, width, hb_int64_item);
}

static PyMethodDef Accumulator_methods[] = {
    HB_METHOD("push", Accumulator_push, METH_O, "push(code): make a legal move, updating the first layer."),
    HB_METHOD("pop", Accumulator_pop, METH_NOARGS, "pop(): unmake the last move."),
    HB_METHOD("features", Accumulator_features, METH_NOARGS,
              "features(): the current position's features (bytes of 2 * hidden float32) from the updated first "
              "layer."),
    HB_METHOD("values", Accumulator_values, METH_NOARGS, "values(): the first layer's fixed-point sums."),
    HB_END,
};

HB_TYPE(Accumulator,
        "Accumulator(network, state, chess960=False): the network's first layer following moves from the "
        "position, as the compiled search updates it on make and unmake.",
        Accumulator_new, Accumulator_dealloc, Accumulator_methods, NULL);

/* ------------------------------------------------------------------ Searcher */

typedef struct {
    PyObject_HEAD
    NetworkObject *network;
    cs_search *search;
    cs_search *helper;           /* the second thread's, made when first asked for, or NULL */
    int helper_outdated;         /* resized or cleared: made anew before its next search */
    hb_driver driver;            /* the search's context */
} SearcherObject;

static PyTypeObject SearcherType;

static int read_sizes(long long best_moves, double feature_megabytes, long long transpositions) {
    if (best_moves < 1 || best_moves > MAX_BEST_MOVES) {
        PyErr_Format(PyExc_ValueError, "best_moves must be between 1 and %lld", (long long)MAX_BEST_MOVES);
        return -1;
    }
    if (transpositions < 1 || transpositions > MAX_BEST_MOVES) {
        PyErr_Format(PyExc_ValueError, "transpositions must be between 1 and %lld", (long long)MAX_BEST_MOVES);
        return -1;
    }
    if (!(feature_megabytes >= 0 && feature_megabytes <= MAX_FEATURE_MEGABYTES)) {
        PyErr_Format(PyExc_ValueError, "feature_megabytes must be between 0 and %d", MAX_FEATURE_MEGABYTES);
        return -1;
    }
    return 0;
}

static PyObject *Searcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"network", "best_moves", "feature_megabytes", "transpositions", NULL};
    PyObject *network;
    long long best_moves, transpositions;
    double feature_megabytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLdL:Searcher", keywords, &network, &best_moves,
                                     &feature_megabytes, &transpositions))
        return NULL;
    NetworkObject *net;
    if (read_network(network, &net) < 0 || read_sizes(best_moves, feature_megabytes, transpositions) < 0)
        return NULL;
    SearcherObject *self = (SearcherObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->network = (NetworkObject *)Py_NewRef(network);
    self->search = cs_create(&net->net, (int32_t)best_moves,
                             cc_cache_slots(feature_megabytes, cc_feature_floats(&net->net)), (int32_t)transpositions);
    if (!self->search) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void Searcher_dealloc(SearcherObject *self) {
    cs_destroy(self->search);
    cs_destroy(self->helper);
    Py_XDECREF(self->network);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Searcher_start(SearcherObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"state", "chess960", "keys", "allowed", "probe_max_pieces", NULL};
    PyObject *state, *keys_object, *allowed;
    int chess960, probe_max_pieces;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OpOOi:start", keywords, &state, &chess960, &keys_object,
                                     &allowed, &probe_max_pieces))
        return NULL;
    if (hb_refuse_while_busy(&self->driver) < 0) return NULL;
    cs_search *s = self->search;
    cb_position root;
    if (hb_read_state(state, chess960, &root) < 0) return NULL;
    int allowed_count = allowed == Py_None ? -1 : hb_read_moves(allowed, "allowed", s->allowed);
    if (allowed_count < 0 && allowed != Py_None) return NULL;
    uint64_t *keys;
    Py_ssize_t count = hb_read_keys(keys_object, "keys: expected a sequence of transposition keys", &keys);
    if (count < 0) return NULL;
    int status = cs_start(s, &root, keys, (int)count);
    if (status == 0 && self->helper) status = cs_start(self->helper, &root, keys, (int)count);
    PyMem_Free(keys);
    if (status < 0) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    s->allowed_count = allowed_count;
    s->hooks.probe_max_pieces = probe_max_pieces;
    self->driver.started = 1;
    Py_RETURN_NONE;
}

/* A leaf as (bound, mate_ply, draw, tablebase_ply, features bytes or None, [move codes]). */
static PyObject *leaf_tuple(const cs_search *s, const cs_leaf *leaf) {
    PyObject *pv = hb_list(leaf->pv, leaf->pv_length, hb_move_item);
    if (!pv) return NULL;
    PyObject *features = leaf->features ? features_bytes(leaf->features, 2 * s->net->hidden) : Py_NewRef(Py_None);
    if (!features) {
        Py_DECREF(pv);
        return NULL;
    }
    return Py_BuildValue("(iiOiNN)", leaf->bound, leaf->mate_ply, leaf->draw ? Py_True : Py_False,
                         leaf->tablebase_ply, features, pv);
}

/* The second thread's searcher, on the main one's root and game with tables of the same sizes: 0, or -1 with
 * MemoryError. */
static int prepare_helper(SearcherObject *self) {
    cs_search *s = self->search;
    uint64_t nodes = 0;   /* an outdated helper's, which the search's count goes on from */
    if (self->helper_outdated) {
        nodes = self->helper->hooks.nodes;
        cs_destroy(self->helper);
        self->helper = NULL;
        self->helper_outdated = 0;
    }
    if (self->helper) return 0;
    self->helper = cs_create(s->net, s->best_moves.capacity, s->features.slots, s->transpositions.capacity);
    if (!self->helper || cs_start(self->helper, &s->stack[0], s->keys, s->key_count) < 0) {
        cs_destroy(self->helper);
        self->helper = NULL;
        PyErr_NoMemory();
        return -1;
    }
    self->helper->hooks.nodes = nodes;
    return 0;
}

static PyObject *Searcher_search(SearcherObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"depth", "options", "stopped", "probe", "threads", NULL};
    int depth, threads = 1;
    cs_options options;
    PyObject *stopped, *probe;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i(pippppppppp)OO|i:search", keywords, &depth,
                                     &options.quiescence, &options.ordering, &options.hash_move,
                                     &options.check_extension, &options.late_move_reductions, &options.killer_moves,
                                     &options.null_move, &options.deeper_reductions, &options.late_move_pruning,
                                     &options.history_near_leaves, &options.transposition_table, &stopped, &probe,
                                     &threads))
        return NULL;
    if (depth < 1 || depth > CS_MAX_PLY) {
        PyErr_Format(PyExc_ValueError, "depth must be between 1 and %d", CS_MAX_PLY);
        return NULL;
    }
    if (options.ordering < CS_ORDER_CAPTURES_COMPARATOR || options.ordering > CS_ORDER_CAPTURES_HISTORY) {
        PyErr_SetString(PyExc_ValueError, "ordering must be 0 (captures+comparator), 1 (comparator), 2 (captures) "
                                          "or 3 (captures+history)");
        return NULL;
    }
    if (threads < 1) {
        PyErr_SetString(PyExc_ValueError, "threads must be at least 1");
        return NULL;
    }
    if (hb_refuse_while_busy(&self->driver) < 0) return NULL;
    if (threads > 1 && CS_SPLIT && prepare_helper(self) < 0) return NULL;
    if (hb_enter(&self->driver, stopped, probe) < 0) return NULL;
    cs_search *s = self->search;
    s->options = options;
    s->hooks.stop = hb_call_stopped;
    s->hooks.probe = self->driver.probe ? hb_call_probe : NULL;
    s->hooks.context = &self->driver;
    Py_INCREF(self);   /* a callback may drop the last other reference */
    cs_leaf leaf;
    int stopped_early = threads > 1 && CS_SPLIT ? cs_search_root_split(s, self->helper, depth, &leaf)
                                                : cs_search_root(s, depth, &leaf);
    hb_leave(&self->driver);
    PyObject *result = s->hooks.failed ? NULL : stopped_early ? Py_NewRef(Py_None) : leaf_tuple(s, &leaf);
    Py_DECREF(self);
    return result;
}

static PyObject *Searcher_root_best(SearcherObject *self, PyObject *unused) {
    const cs_search *s = self->search;
    if (!s->root_first) Py_RETURN_NONE;
    return leaf_tuple(s, &s->root_best);
}

/* The helper's tables go with the main one's: it is made anew before its next search (its thread may be running
 * now), its node count kept. */
static void forget_helper(SearcherObject *self) {
    self->helper_outdated = self->helper != NULL;
}

static PyObject *Searcher_resize(SearcherObject *self, PyObject *args) {
    long long best_moves, transpositions;
    double feature_megabytes;
    if (!PyArg_ParseTuple(args, "LdL:resize", &best_moves, &feature_megabytes, &transpositions)) return NULL;
    if (read_sizes(best_moves, feature_megabytes, transpositions) < 0) return NULL;
    /* safe mid-search (from a callback): the search keeps no pointer into a table across calls (the leaf a
     * transposition gave is copied by its parent before the search can call back) */
    cs_search *s = self->search;
    if (cs_lru_resize(&s->best_moves, (int32_t)best_moves) < 0
        || cs_transpositions_resize(s, (int32_t)transpositions) < 0)
        return PyErr_NoMemory();
    forget_helper(self);
    uint64_t slots = cc_cache_slots(feature_megabytes, s->size);
    if (slots != s->features.slots) {
        cc_cache_free(&s->features);
        cc_cache_init(&s->features, slots, s->size);   /* without memory for it: no table, same search */
    }
    Py_RETURN_NONE;
}

static PyObject *Searcher_clear(SearcherObject *self, PyObject *unused) {
    forget_helper(self);
    cs_lru_clear(&self->search->best_moves);
    cs_lru_clear(&self->search->transpositions);
    cc_cache_clear(&self->search->features);
    Py_RETURN_NONE;
}

static PyObject *Searcher_hashfull(SearcherObject *self, PyObject *unused) {
    return PyLong_FromLong(cc_cache_permille(&self->search->features));
}

static PyObject *Searcher_get_nodes(SearcherObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->search->hooks.nodes + (self->helper ? self->helper->hooks.nodes : 0));
}

static PyObject *Searcher_get_helper_nodes(SearcherObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->helper ? self->helper->hooks.nodes : 0);
}

static PyObject *Searcher_get_seldepth(SearcherObject *self, void *unused) {
    return PyLong_FromLong(self->search->seldepth);
}

static PyObject *Searcher_get_network(SearcherObject *self, void *unused) {
    return Py_NewRef((PyObject *)self->network);
}

static PyObject *Searcher_get_root_first(SearcherObject *self, void *unused) {
    if (!self->search->root_first) Py_RETURN_NONE;
    return PyLong_FromLong(self->search->root_first);
}

static PyMethodDef Searcher_methods[] = {
    HB_METHOD("start", Searcher_start, METH_VARARGS | METH_KEYWORDS,
              "start(state, chess960, keys, allowed, probe_max_pieces): a new search of the root state "
              "(hackmate_core._cboard.Board.state()); keys: the transposition keys of the game's positions before it "
              "(oldest first) since the last irreversible move; allowed: None or the only root move codes to search; "
              "tablebases are probed at up to probe_max_pieces pieces. ValueError for a position the compiled board "
              "does not take."),
    HB_METHOD("search", Searcher_search, METH_VARARGS | METH_KEYWORDS,
              "search(depth, options, stopped, probe, threads=1): one iteration at depth: the best leaf (bound, "
              "mate_ply, draw, tablebase_ply, features bytes or None, pv codes), or None when stopped(nodes) said so. "
              "options: (quiescence, ordering 0-3 as MoveOrdering's choices, hash_move, check_extension, "
              "late_move_reductions, killer_moves, null_move, deeper_reductions, late_move_pruning, "
              "history_near_leaves, transposition_table); probe(state) -> +1 / 0 / -1 / None: a tablebase result, or None for no "
              "tables; threads: 2 or more searches the root's moves on two threads where this build can (SPLIT), "
              "one otherwise."),
    HB_METHOD("root_best", Searcher_root_best, METH_NOARGS,
              "root_best(): the last iteration's best leaf so far (a stopped one's too), or None."),
    HB_METHOD("resize", Searcher_resize, METH_VARARGS,
              "resize(best_moves, feature_megabytes, transpositions): the tables' new sizes (the best-move table "
              "keeps its newest, the transposition table starts empty)."),
    HB_METHOD("clear", Searcher_clear, METH_NOARGS,
              "clear(): empty the best-move, transposition and features tables."),
    HB_METHOD("hashfull", Searcher_hashfull, METH_NOARGS,
              "hashfull(): permille of the features table in use (its first 1000 slots)."),
    HB_END,
};

static PyGetSetDef Searcher_getset[] = {
    HB_GETTER("nodes", Searcher_get_nodes, "nodes searched since start(), by both threads."),
    HB_GETTER("helper_nodes", Searcher_get_helper_nodes, "of those, the second thread's."),
    HB_GETTER("seldepth", Searcher_get_seldepth, "the deepest ply reached in the last iteration."),
    HB_GETTER("network", Searcher_get_network, "the Network it searches with."),
    HB_GETTER("root_first", Searcher_get_root_first,
              "the first root move that improved in the last iteration (code), or None."),
    HB_END,
};

HB_TYPE(Searcher,
        "Searcher(network, best_moves, feature_megabytes, transpositions): search/comparison.py's search in C, "
        "with a best-move table of that many entries, a features table of that many megabytes and a transposition "
        "table of that many entries.",
        Searcher_new, Searcher_dealloc, Searcher_methods, Searcher_getset);

/* ------------------------------------------------------------------ the module */

PyMODINIT_FUNC PyInit__ccomparison(void) {
    static PyTypeObject *const types[] = {&NetworkType, &AccumulatorType, &SearcherType, NULL};
    static const hb_constant constants[] = {{"MAX_PLY", CS_MAX_PLY}, {"CHECK_NODES_EVERY", CS_CHECK_NODES_EVERY},
                                            {"SPLIT", CS_SPLIT},
                                            {NULL, 0}};
    return hb_create_module(HB_MODULE,
                            "The compiled DeepChess comparator and comparison search of search/comparison.py.",
                            API_VERSION, NULL, types, constants);
}
