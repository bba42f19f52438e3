/* hackmate_core._calphabeta: the compiled alpha-beta search (cab.h) as a Python type.
 *
 * search/alphabeta.py drives it: Searcher(slots) keeps the transposition table, start() sets the root
 * (a compiled board's state() tuple), the game's Polyglot keys, the evaluation table, the history table and
 * the node limit; each search(depth, ...) is one root search of an iteration, with the MultiPV lines already
 * found excluded. The search holds the GIL and calls back into Python every CHECK_NODES_EVERY nodes
 * (stopped(nodes)), which also lets other threads run, so a `stop` is answered within milliseconds.
 * Every argument is checked: nothing a caller passes can make it read or write out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include "binding.h"
#include "cab.h"

/* The module's dotted name, which its types' names begin with (binding.h's HB_TYPE). */
#define HB_MODULE "hackmate_core._calphabeta"
/* Raised when a method changes, so that hackmate_core.compiled refuses a stale build. */
#define API_VERSION 2
/* A table of more slots would not fit in memory anyway; the bound keeps size * entry size in range. */
#define MAX_SLOTS ((uint64_t)1 << 36)
#define HISTORY_SIZE (64 * 64)
#define EVALUATION_SIZE (2 * 7 * 64)

typedef struct {
    PyObject_HEAD
    cab_table table;
    cab_search *search;
    hb_driver driver;            /* the search's context */
} SearcherObject;

static PyTypeObject SearcherType;

/* ------------------------------------------------------------------ reading arguments */

/* count integers of a sequence into values (as int64); -1 with an exception unless it holds exactly count. */
static int read_integers(PyObject *object, const char *what, int64_t *values, Py_ssize_t count) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    int status = 0;
    if (PySequence_Fast_GET_SIZE(sequence) != count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd integers, got %zd", what, count,
                     PySequence_Fast_GET_SIZE(sequence));
        status = -1;
    }
    for (Py_ssize_t i = 0; i < count && status == 0; i++) {
        values[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sequence, i));
        if (values[i] == -1 && PyErr_Occurred()) status = -1;
    }
    Py_DECREF(sequence);
    return status;
}

/* ------------------------------------------------------------------ the type */

static PyObject *Searcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"slots", NULL};
    unsigned long long slots;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "K:Searcher", keywords, &slots)) return NULL;
    if (slots < 1 || slots > MAX_SLOTS) {
        PyErr_Format(PyExc_ValueError, "slots must be between 1 and %llu", (unsigned long long)MAX_SLOTS);
        return NULL;
    }
    SearcherObject *self = (SearcherObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->search = calloc(1, sizeof *self->search);
    if (!self->search || cab_table_init(&self->table, slots) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->search->table = &self->table;
    return (PyObject *)self;
}

static void Searcher_dealloc(SearcherObject *self) {
    if (self->search) free(self->search->keys);
    free(self->search);
    cab_table_free(&self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Searcher_start(SearcherObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"state", "chess960", "keys", "evaluation", "history", "max_nodes",
                               "probe_max_pieces", NULL};
    PyObject *state, *keys_object, *evaluation_object, *history_object, *max_nodes_object;
    int chess960, probe_max_pieces;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OpOOOOi:start", keywords, &state, &chess960, &keys_object,
                                     &evaluation_object, &history_object, &max_nodes_object, &probe_max_pieces))
        return NULL;
    if (hb_refuse_while_busy(&self->driver) < 0) return NULL;
    cab_search *s = self->search;
    cb_position root;
    if (hb_read_state(state, chess960, &root) < 0) return NULL;
    int64_t evaluation[EVALUATION_SIZE], max_nodes = -1;
    if (read_integers(evaluation_object, "evaluation", evaluation, EVALUATION_SIZE) < 0) return NULL;
    int32_t table[2][7][64];
    for (int i = 0; i < EVALUATION_SIZE; i++) {
        if (evaluation[i] < -CAB_TB_BOUND / 64 || evaluation[i] > CAB_TB_BOUND / 64) {
            PyErr_SetString(PyExc_ValueError, "evaluation: a value beyond what 32 pieces can sum below the "
                                              "tablebase scores");
            return NULL;
        }
        table[i / 448][i / 64 % 7][i % 64] = (int32_t)evaluation[i];
    }
    int64_t *history = PyMem_Malloc(HISTORY_SIZE * sizeof *history);
    if (!history) return PyErr_NoMemory();
    if (read_integers(history_object, "history", history, HISTORY_SIZE) < 0) {
        PyMem_Free(history);
        return NULL;
    }
    if (max_nodes_object != Py_None) {
        max_nodes = PyLong_AsLongLong(max_nodes_object);
        if (max_nodes == -1 && PyErr_Occurred()) {
            PyMem_Free(history);
            return NULL;
        }
        if (max_nodes < 0) max_nodes = 0;
    }
    uint64_t *keys;
    Py_ssize_t key_count = hb_read_keys(keys_object, "keys: expected a sequence of Polyglot keys", &keys);
    if (key_count < 0) {
        PyMem_Free(history);
        return NULL;
    }
    int status = cab_set_keys(s, keys, (int)key_count);
    PyMem_Free(keys);
    if (status < 0) {
        PyMem_Free(history);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    memcpy(s->history, history, sizeof s->history);
    PyMem_Free(history);
    cab_set_evaluation(s, (const int32_t(*)[7][64])table);
    s->root = root;
    s->max_nodes = max_nodes;
    s->hooks.probe_max_pieces = probe_max_pieces;
    s->hooks.nodes = 0;
    s->seldepth = 0;
    memset(s->killers, 0, sizeof s->killers);
    self->table.generation = (self->table.generation + 1) & 0xFF;
    self->driver.started = 1;
    Py_RETURN_NONE;
}

static PyObject *Searcher_search(SearcherObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"depth", "excluded", "allowed", "stopped", "probe", NULL};
    int depth;
    PyObject *excluded, *allowed, *stopped, *probe;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iOOOO:search", keywords, &depth, &excluded, &allowed, &stopped,
                                     &probe))
        return NULL;
    if (depth < 1 || depth >= CAB_MAX_PLY) {
        PyErr_Format(PyExc_ValueError, "depth must be between 1 and %d", CAB_MAX_PLY - 1);
        return NULL;
    }
    if (hb_enter(&self->driver, stopped, probe) < 0) return NULL;
    cab_search *s = self->search;
    int excluded_count = hb_read_moves(excluded, "excluded", s->excluded);
    int allowed_count = allowed == Py_None || excluded_count < 0 ? -1 : hb_read_moves(allowed, "allowed", s->allowed);
    if (excluded_count < 0 || (allowed_count < 0 && allowed != Py_None)) {
        hb_leave(&self->driver);
        return NULL;
    }
    s->excluded_count = excluded_count;
    s->allowed_count = allowed_count;
    s->hooks.stop = hb_call_stopped;
    s->hooks.probe = self->driver.probe ? hb_call_probe : NULL;
    s->hooks.context = &self->driver;
    int score = cab_search_root(s, depth);
    hb_leave(&self->driver);
    if (s->hooks.failed) return NULL;
    if (s->hooks.aborted) Py_RETURN_NONE;
    return Py_BuildValue("(iN)", score, hb_list(s->pv[0], s->pv_length[0], hb_move_item));
}

static PyObject *Searcher_partial(SearcherObject *self, PyObject *unused) {
    cab_search *s = self->search;
    if (!s->pv_length[0]) Py_RETURN_NONE;
    return Py_BuildValue("(iN)", s->root_score, hb_list(s->pv[0], s->pv_length[0], hb_move_item));
}

static PyObject *Searcher_history(SearcherObject *self, PyObject *unused) {
    return hb_list(self->search->history, HISTORY_SIZE, hb_int64_item);
}

static PyObject *Searcher_clear(SearcherObject *self, PyObject *unused) {
    cab_table_clear(&self->table);  /* safe mid-search: the search keeps no pointer into the table across calls */
    Py_RETURN_NONE;
}

static PyObject *Searcher_hashfull(SearcherObject *self, PyObject *unused) {
    return PyLong_FromLong(cab_table_hashfull(&self->table));
}

static PyObject *Searcher_get_nodes(SearcherObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->search->hooks.nodes);
}

static PyObject *Searcher_get_seldepth(SearcherObject *self, void *unused) {
    return PyLong_FromLong(self->search->seldepth);
}

static int Searcher_set_seldepth(SearcherObject *self, PyObject *value, void *unused) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "seldepth cannot be deleted");
        return -1;
    }
    long seldepth = PyLong_AsLong(value);
    if (seldepth == -1 && PyErr_Occurred()) return -1;
    self->search->seldepth = seldepth < 0 ? 0 : seldepth > CAB_MAX_PLY ? CAB_MAX_PLY : (int)seldepth;
    return 0;
}

static PyMethodDef Searcher_methods[] = {
    HB_METHOD("start", Searcher_start, METH_VARARGS | METH_KEYWORDS,
              "start(state, chess960, keys, evaluation, history, max_nodes, probe_max_pieces): a new search of the "
              "root state (hackmate_core._cboard.Board.state()); keys: the Polyglot keys of the game's positions "
              "before it since the last irreversible move; evaluation: 896 centipawns [colour][piece type "
              "0..6][square]; history: 4096 counts [from * 64 + to]; max_nodes: None or the node budget; tablebases "
              "are probed at up to probe_max_pieces pieces. ValueError for a position the compiled board does not "
              "take."),
    HB_METHOD("search", Searcher_search, METH_VARARGS | METH_KEYWORDS,
              "search(depth, excluded, allowed, stopped, probe): one root search at depth: (score, pv codes), or "
              "None when stopped(nodes) or the node budget stopped it. excluded: root move codes to skip; allowed: "
              "None or the only root move codes to search; probe(state) -> +1 / 0 / -1 / None: a tablebase result, "
              "or None for no tables."),
    HB_METHOD("partial", Searcher_partial, METH_NOARGS,
              "partial(): after a stopped search, the best root move it finished: (score, pv codes), or None."),
    HB_METHOD("history", Searcher_history, METH_NOARGS, "history(): the 4096 history counts [from * 64 + to]."),
    HB_METHOD("clear", Searcher_clear, METH_NOARGS, "clear(): empty the transposition table."),
    HB_METHOD("hashfull", Searcher_hashfull, METH_NOARGS,
              "hashfull(): permille of the first 1000 slots used by the current search."),
    HB_END,
};

static PyGetSetDef Searcher_getset[] = {
    HB_GETTER("nodes", Searcher_get_nodes, "nodes searched since start()."),
    HB_ATTRIBUTE("seldepth", Searcher_get_seldepth, Searcher_set_seldepth, "the deepest ply reached."),
    HB_END,
};

HB_TYPE(Searcher,
        "Searcher(slots): search/alphabeta.py's principal variation search in C, with a transposition "
        "table of that many slots.",
        Searcher_new, Searcher_dealloc, Searcher_methods, Searcher_getset);

PyMODINIT_FUNC PyInit__calphabeta(void) {
    static PyTypeObject *const types[] = {&SearcherType, NULL};
    static const hb_constant constants[] = {{"MAX_PLY", CAB_MAX_PLY}, {"CHECK_NODES_EVERY", CAB_CHECK_NODES_EVERY},
                                            {"MATE", CAB_MATE}, {NULL, 0}};
    return hb_create_module(HB_MODULE,
                            "The compiled alpha-beta search of search/alphabeta.py (material and piece-square evaluations).",
                            API_VERSION, NULL, types, constants);
}
