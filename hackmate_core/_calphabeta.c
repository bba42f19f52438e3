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

#include "cab.h"

/* Raised when a method changes, so that hackmate_core.compiled refuses a stale build. */
#define API_VERSION 1
/* A table of more slots would not fit in memory anyway; the bound keeps size * entry size in range. */
#define MAX_SLOTS ((uint64_t)1 << 36)
#define HISTORY_SIZE (64 * 64)
#define EVALUATION_SIZE (2 * 7 * 64)

typedef struct {
    PyObject_HEAD
    cab_table table;
    cab_search *search;
    int started;                 /* start() has set a root */
    int busy;                    /* a search() is running (callbacks may call back in) */
    PyObject *stopped;           /* borrowed from search()'s arguments while it runs */
    PyObject *probe;
} SearcherObject;

static PyTypeObject SearcherType;

/* ------------------------------------------------------------------ callbacks */

static int call_stopped(void *context, uint64_t nodes) {
    SearcherObject *self = context;
    PyObject *result = PyObject_CallFunction(self->stopped, "K", (unsigned long long)nodes);
    if (!result) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

static int call_probe(void *context, const cb_position *p, int *outcome) {
    SearcherObject *self = context;
    PyObject *ep = p->ep_square < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(p->ep_square);
    if (!ep) return -1;
    PyObject *result = PyObject_CallFunction(
        self->probe, "((KKKKKKKKONi))", (unsigned long long)p->pieces[CB_PAWN], (unsigned long long)p->pieces[CB_KNIGHT],
        (unsigned long long)p->pieces[CB_BISHOP], (unsigned long long)p->pieces[CB_ROOK],
        (unsigned long long)p->pieces[CB_QUEEN], (unsigned long long)p->pieces[CB_KING],
        (unsigned long long)p->colors[CB_WHITE], (unsigned long long)p->colors[CB_BLACK],
        p->turn ? Py_True : Py_False, ep, (int)p->halfmove_clock);
    if (!result) return -1;
    if (result == Py_None) {
        Py_DECREF(result);
        return 0;
    }
    long value = PyLong_AsLong(result);
    Py_DECREF(result);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (value < -1 || value > 1) {
        PyErr_Format(PyExc_ValueError, "a tablebase result must be -1, 0, 1 or None, not %ld", value);
        return -1;
    }
    *outcome = (int)value;
    return 1;
}

/* ------------------------------------------------------------------ reading arguments */

/* count integers of a sequence into values (as int64); -1 with an exception unless it holds exactly count. */
static int read_integers(PyObject *object, const char *what, int64_t *values, Py_ssize_t count) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    if (PySequence_Fast_GET_SIZE(sequence) != count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd integers, got %zd", what, count,
                     PySequence_Fast_GET_SIZE(sequence));
        Py_DECREF(sequence);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        values[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sequence, i));
        if (values[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(sequence);
            return -1;
        }
    }
    Py_DECREF(sequence);
    return 0;
}

/* Move codes into moves[CB_MAX_MOVES]: their number, or -1 with an exception. */
static int read_moves(PyObject *object, const char *what, cb_move *moves) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    if (count > CB_MAX_MOVES) {
        PyErr_Format(PyExc_ValueError, "%s: more than %d moves", what, CB_MAX_MOVES);
        Py_DECREF(sequence);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        long code = PyLong_AsLong(PySequence_Fast_GET_ITEM(sequence, i));
        if (code == -1 && PyErr_Occurred()) {
            Py_DECREF(sequence);
            return -1;
        }
        if (code < 0 || code > 0xFFFF) {
            PyErr_Format(PyExc_ValueError, "%s: %ld is not a move code", what, code);
            Py_DECREF(sequence);
            return -1;
        }
        moves[i] = (cb_move)code;
    }
    Py_DECREF(sequence);
    return (int)count;
}

static int read_bitboard(PyObject *object, cb_bitboard *out) {
    *out = PyLong_AsUnsignedLongLong(object);
    return PyErr_Occurred() ? -1 : 0;
}

/* A compiled board's state() tuple and chess960 flag into a position the board accepts. */
static int read_state(PyObject *state, int chess960, cb_position *position) {
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != 13) {
        PyErr_SetString(PyExc_ValueError, "state: expected the 13-tuple of hackmate_core._cboard.Board.state()");
        return -1;
    }
    cb_bitboard pieces[7] = {0}, white, black, castling;
    for (int type = CB_PAWN; type <= CB_KING; type++)
        if (read_bitboard(PyTuple_GET_ITEM(state, type - 1), &pieces[type]) < 0) return -1;
    if (read_bitboard(PyTuple_GET_ITEM(state, 6), &white) < 0 || read_bitboard(PyTuple_GET_ITEM(state, 7), &black) < 0
        || read_bitboard(PyTuple_GET_ITEM(state, 9), &castling) < 0)
        return -1;
    int turn = PyObject_IsTrue(PyTuple_GET_ITEM(state, 8));
    if (turn < 0) return -1;
    PyObject *ep_object = PyTuple_GET_ITEM(state, 10);
    long ep = ep_object == Py_None ? -1 : PyLong_AsLong(ep_object);
    long halfmove_clock = PyLong_AsLong(PyTuple_GET_ITEM(state, 11));
    long fullmove_number = PyLong_AsLong(PyTuple_GET_ITEM(state, 12));
    if (PyErr_Occurred()) return -1;
    if (ep < -1 || ep > 63) {
        PyErr_SetString(PyExc_ValueError, "state: an en-passant square off the board");
        return -1;
    }
    const char *refusal = cb_set(position, pieces, white, black, turn, castling, (int)ep, halfmove_clock,
                                 fullmove_number, chess960);
    if (refusal) {
        PyErr_Format(PyExc_ValueError, "the compiled board does not take this position: %s", refusal);
        return -1;
    }
    return 0;
}

static int refuse_while_busy(SearcherObject *self) {
    if (!self->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the searcher is searching");
    return -1;
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
    if (refuse_while_busy(self) < 0) return NULL;
    cab_search *s = self->search;
    cb_position root;
    if (read_state(state, chess960, &root) < 0) return NULL;
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
    PyObject *key_sequence = PySequence_Fast(keys_object, "keys: expected a sequence of Polyglot keys");
    if (!key_sequence) {
        PyMem_Free(history);
        return NULL;
    }
    Py_ssize_t key_count = PySequence_Fast_GET_SIZE(key_sequence);
    uint64_t *keys = key_count < CB_MAX_PLIES ? PyMem_Malloc((size_t)(key_count + 1) * sizeof *keys) : NULL;
    if (!keys) {
        Py_DECREF(key_sequence);
        PyMem_Free(history);
        return key_count < CB_MAX_PLIES ? PyErr_NoMemory() : PyErr_Format(PyExc_ValueError, "keys: too many");
    }
    for (Py_ssize_t i = 0; i < key_count; i++) {
        keys[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(key_sequence, i));
        if (PyErr_Occurred()) break;
    }
    Py_DECREF(key_sequence);
    int status = PyErr_Occurred() ? -1 : cab_set_keys(s, keys, (int)key_count);
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
    s->probe_max_pieces = probe_max_pieces;
    s->nodes = 0;
    s->seldepth = 0;
    memset(s->killers, 0, sizeof s->killers);
    self->table.generation = (self->table.generation + 1) & 0xFF;
    self->started = 1;
    Py_RETURN_NONE;
}

static PyObject *Searcher_search(SearcherObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"depth", "excluded", "allowed", "stopped", "probe", NULL};
    int depth;
    PyObject *excluded, *allowed, *stopped, *probe;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iOOOO:search", keywords, &depth, &excluded, &allowed, &stopped,
                                     &probe))
        return NULL;
    if (refuse_while_busy(self) < 0) return NULL;
    if (!self->started) {
        PyErr_SetString(PyExc_RuntimeError, "search() before start()");
        return NULL;
    }
    if (depth < 1 || depth >= CAB_MAX_PLY) {
        PyErr_Format(PyExc_ValueError, "depth must be between 1 and %d", CAB_MAX_PLY - 1);
        return NULL;
    }
    if (!PyCallable_Check(stopped) || (probe != Py_None && !PyCallable_Check(probe))) {
        PyErr_SetString(PyExc_TypeError, "stopped must be callable, probe callable or None");
        return NULL;
    }
    cab_search *s = self->search;
    int excluded_count = read_moves(excluded, "excluded", s->excluded);
    if (excluded_count < 0) return NULL;
    int allowed_count = allowed == Py_None ? -1 : read_moves(allowed, "allowed", s->allowed);
    if (allowed_count < 0 && allowed != Py_None) return NULL;
    s->excluded_count = excluded_count;
    s->allowed_count = allowed_count;
    self->stopped = stopped;
    self->probe = probe == Py_None ? NULL : probe;
    s->stop = call_stopped;
    s->probe = self->probe ? call_probe : NULL;
    s->context = self;
    self->busy = 1;
    int score = cab_search_root(s, depth);
    self->busy = 0;
    self->stopped = self->probe = NULL;
    if (s->failed) return NULL;
    if (s->aborted) Py_RETURN_NONE;
    PyObject *pv = PyList_New(s->pv_length[0]);
    if (!pv) return NULL;
    for (int i = 0; i < s->pv_length[0]; i++) {
        PyObject *code = PyLong_FromLong(s->pv[0][i]);
        if (!code) {
            Py_DECREF(pv);
            return NULL;
        }
        PyList_SET_ITEM(pv, i, code);
    }
    return Py_BuildValue("(iN)", score, pv);
}

static PyObject *Searcher_history(SearcherObject *self, PyObject *unused) {
    PyObject *list = PyList_New(HISTORY_SIZE);
    if (!list) return NULL;
    for (int i = 0; i < HISTORY_SIZE; i++) {
        PyObject *value = PyLong_FromLongLong(self->search->history[i / 64][i % 64]);
        if (!value) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, value);
    }
    return list;
}

static PyObject *Searcher_clear(SearcherObject *self, PyObject *unused) {
    cab_table_clear(&self->table);  /* safe mid-search: the search keeps no pointer into the table across calls */
    Py_RETURN_NONE;
}

static PyObject *Searcher_hashfull(SearcherObject *self, PyObject *unused) {
    return PyLong_FromLong(cab_table_hashfull(&self->table));
}

static PyObject *Searcher_get_nodes(SearcherObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->search->nodes);
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
    {"start", (PyCFunction)(void (*)(void))Searcher_start, METH_VARARGS | METH_KEYWORDS,
     "start(state, chess960, keys, evaluation, history, max_nodes, probe_max_pieces): a new search of the root "
     "state (hackmate_core._cboard.Board.state()); keys: the Polyglot keys of the game's positions before it "
     "since the last irreversible move; evaluation: 896 centipawns [colour][piece type 0..6][square]; history: "
     "4096 counts [from * 64 + to]; max_nodes: None or the node budget; tablebases are probed at up to "
     "probe_max_pieces pieces. ValueError for a position the compiled board does not take."},
    {"search", (PyCFunction)(void (*)(void))Searcher_search, METH_VARARGS | METH_KEYWORDS,
     "search(depth, excluded, allowed, stopped, probe): one root search at depth: (score, pv codes), or None when "
     "stopped(nodes) or the node budget stopped it. excluded: root move codes to skip; allowed: None or the only "
     "root move codes to search; probe(state) -> +1 / 0 / -1 / None: a tablebase result, or None for no tables."},
    {"history", (PyCFunction)Searcher_history, METH_NOARGS, "history(): the 4096 history counts [from * 64 + to]."},
    {"clear", (PyCFunction)Searcher_clear, METH_NOARGS, "clear(): empty the transposition table."},
    {"hashfull", (PyCFunction)Searcher_hashfull, METH_NOARGS,
     "hashfull(): permille of the first 1000 slots used by the current search."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Searcher_getset[] = {
    {"nodes", (getter)Searcher_get_nodes, NULL, "nodes searched since start().", NULL},
    {"seldepth", (getter)Searcher_get_seldepth, (setter)Searcher_set_seldepth, "the deepest ply reached.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SearcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hackmate_core._calphabeta.Searcher",
    .tp_doc = "Searcher(slots): search/alphabeta.py's principal variation search in C, with a transposition "
              "table of that many slots.",
    .tp_basicsize = sizeof(SearcherObject),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Searcher_new,
    .tp_dealloc = (destructor)Searcher_dealloc,
    .tp_methods = Searcher_methods,
    .tp_getset = Searcher_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "hackmate_core._calphabeta",
    .m_doc = "The compiled alpha-beta search of search/alphabeta.py (material and piece-square evaluations).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__calphabeta(void) {
    cb_init();
    if (PyType_Ready(&SearcherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&SearcherType);
    if (PyModule_AddObject(m, "Searcher", (PyObject *)&SearcherType) < 0
        || PyModule_AddIntConstant(m, "API_VERSION", API_VERSION) < 0
        || PyModule_AddIntConstant(m, "MAX_PLY", CAB_MAX_PLY) < 0
        || PyModule_AddIntConstant(m, "CHECK_NODES_EVERY", CAB_CHECK_NODES_EVERY) < 0
        || PyModule_AddIntConstant(m, "MATE", CAB_MATE) < 0) {
        Py_DECREF(&SearcherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
