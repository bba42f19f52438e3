/* What every binding module (_cboard.c, _calphabeta.c, _cpuct.c, _ccomparison.c) does alike between Python and the
 * compiled board, written once: reading a position (from its parts, or from a compiled board's state() tuple),
 * move codes and keys, building the lists and tuples Python gets back, driving a search's callbacks, and defining
 * the types and the module.
 * Each function returns -1 (or NULL) with a Python exception set when it fails.
 *
 * Header-only (static inline): each extension is built on its own and takes what it uses.
 */
#ifndef HACKMATE_BINDING_H
#define HACKMATE_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "cboard.h"

/* ------------------------------------------------------------------ types and modules */

/* The static type Name##Type of a binding module, whose objects are Name##Object structs, named HB_MODULE "." #Name
 * (each binding module defines HB_MODULE, its dotted name, before its types): its docstring, constructor,
 * destructor, methods and attributes (NULL: none, the default). */
#define HB_TYPE(Name, doc, new, dealloc, methods, getset)                                                             \
    static PyTypeObject Name##Type = {                                                                                \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = HB_MODULE "." #Name, .tp_doc = (doc),                                \
        .tp_basicsize = sizeof(Name##Object), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = (new),                        \
        .tp_dealloc = (destructor)(dealloc), .tp_methods = (methods), .tp_getset = (getset)}

/* Entries of a type's method table and attribute table (PyMethodDef, PyGetSetDef), and the entry that ends either.
 * A method's function is cast through void (*)(void), which any of the calling conventions (METH_KEYWORDS's three
 * arguments too) takes without a warning; an attribute without a setter is read-only. */
#define HB_METHOD(name, function, flags, doc) {(name), (PyCFunction)(void (*)(void))(function), (flags), (doc)}
#define HB_ATTRIBUTE(name, get, set, doc) {(name), (getter)(get), (setter)(set), (doc), NULL}
#define HB_GETTER(name, get, doc) HB_ATTRIBUTE(name, get, NULL, doc)
#define HB_END {NULL}

/* An integer constant of a module. */
typedef struct {
    const char *name;
    long value;
} hb_constant;

/* A binding module's PyInit: the board's tables set up, the module made with its name, docstring and functions
 * (NULL: none), its types (NULL-terminated) readied and added under their last names, and its constants added:
 * API_VERSION, the version of its interface hackmate_core.compiled checks, then the others (until a NULL name);
 * the module, or NULL with an exception. Each extension has its own copy of the definition. */
static inline PyObject *hb_create_module(const char *name, const char *doc, long api_version, PyMethodDef *functions,
                                         PyTypeObject *const types[], const hb_constant constants[]) {
    static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, .m_size = -1};
    definition.m_name = name;
    definition.m_doc = doc;
    definition.m_methods = functions;
    cb_init();
    for (int i = 0; types[i]; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *module = PyModule_Create(&definition);
    if (!module) return NULL;
    for (int i = 0; types[i]; i++) {
        const char *dot = strrchr(types[i]->tp_name, '.');
        if (PyModule_AddObjectRef(module, dot ? dot + 1 : types[i]->tp_name, (PyObject *)types[i]) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(module, "API_VERSION", api_version) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    for (int i = 0; constants[i].name; i++) {
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    return module;
}

/* ------------------------------------------------------------------ reading positions */

/* cb_set with its refusal as ValueError; ep: the en-passant square or -1 (any long: one off the board is refused). */
static inline int hb_set_position(cb_position *position, const cb_bitboard pieces[7], cb_bitboard white,
                                  cb_bitboard black, int turn, cb_bitboard castling, long ep, long halfmove_clock,
                                  long fullmove_number, int chess960) {
    int ep_square = ep < -1 || ep > 63 ? 64 : (int)ep;
    const char *refusal = cb_set(position, pieces, white, black, turn, castling, ep_square, halfmove_clock,
                                 fullmove_number, chess960);
    if (!refusal) return 0;
    PyErr_Format(PyExc_ValueError, "the compiled board does not take this position: %s", refusal);
    return -1;
}

static inline int hb_read_bitboard(PyObject *object, cb_bitboard *out) {
    *out = PyLong_AsUnsignedLongLong(object);
    return PyErr_Occurred() ? -1 : 0;
}

/* A compiled board's state() tuple (hackmate_core._cboard.Board.state()) and chess960 flag into a position. */
static inline int hb_read_state(PyObject *state, int chess960, cb_position *position) {
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != 13) {
        PyErr_SetString(PyExc_ValueError, "state: expected the 13-tuple of hackmate_core._cboard.Board.state()");
        return -1;
    }
    cb_bitboard pieces[7] = {0}, white, black, castling;
    for (int type = CB_PAWN; type <= CB_KING; type++)
        if (hb_read_bitboard(PyTuple_GET_ITEM(state, type - 1), &pieces[type]) < 0) return -1;
    if (hb_read_bitboard(PyTuple_GET_ITEM(state, 6), &white) < 0
        || hb_read_bitboard(PyTuple_GET_ITEM(state, 7), &black) < 0
        || hb_read_bitboard(PyTuple_GET_ITEM(state, 9), &castling) < 0)
        return -1;
    int turn = PyObject_IsTrue(PyTuple_GET_ITEM(state, 8));
    if (turn < 0) return -1;
    PyObject *ep_object = PyTuple_GET_ITEM(state, 10);
    long ep = ep_object == Py_None ? -1 : PyLong_AsLong(ep_object);
    long halfmove_clock = PyLong_AsLong(PyTuple_GET_ITEM(state, 11));
    long fullmove_number = PyLong_AsLong(PyTuple_GET_ITEM(state, 12));
    if (PyErr_Occurred()) return -1;
    return hb_set_position(position, pieces, white, black, turn, castling, ep, halfmove_clock, fullmove_number,
                           chess960);
}

/* The state() tuple of a position: (pawns .. kings, white, black, turn, castling_rights, ep_square or None,
 * halfmove_clock, fullmove_number), with chess960 after them when with_chess960 is set. HB_STATE_METHOD is the
 * method-table entry of a state() method that returns it, its docstring naming the fields here, once:
 * chess960_field is "" or ", chess960" as the method's with_chess960. */
#define HB_STATE_FIELDS                                                                                               \
    "pawns, knights, bishops, rooks, queens, kings, white, black, turn, castling_rights, ep_square, "                \
    "halfmove_clock, fullmove_number"
#define HB_STATE_METHOD(function, chess960_field)                                                                     \
    HB_METHOD("state", function, METH_NOARGS,                                                                         \
              "state(): (" HB_STATE_FIELDS chess960_field ") as python-chess holds them.")
static inline PyObject *hb_state_tuple(const cb_position *p, int with_chess960) {
    PyObject *ep = p->ep_square < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(p->ep_square);
    if (!ep) return NULL;
    return Py_BuildValue(with_chess960 ? "(KKKKKKKKOKNiiO)" : "(KKKKKKKKOKNii)",
                         (unsigned long long)p->pieces[CB_PAWN], (unsigned long long)p->pieces[CB_KNIGHT],
                         (unsigned long long)p->pieces[CB_BISHOP], (unsigned long long)p->pieces[CB_ROOK],
                         (unsigned long long)p->pieces[CB_QUEEN], (unsigned long long)p->pieces[CB_KING],
                         (unsigned long long)p->colors[CB_WHITE], (unsigned long long)p->colors[CB_BLACK],
                         p->turn ? Py_True : Py_False, (unsigned long long)p->castling, ep, (int)p->halfmove_clock,
                         (int)p->fullmove_number, p->chess960 ? Py_True : Py_False);
}

/* ------------------------------------------------------------------ reading moves and keys */

/* Whether code is one of the position's legal moves. */
static inline int hb_is_legal(const cb_position *position, long code) {
    cb_move moves[CB_MAX_MOVES];
    int count = cb_legal_moves(position, moves);
    for (int i = 0; i < count; i++)
        if (moves[i] == code) return 1;
    return 0;
}

/* A legal move code of the position from a Python int: 0, or -1 with ValueError. */
static inline int hb_read_legal_move(PyObject *object, const cb_position *position, cb_move *move) {
    long code = PyLong_AsLong(object);
    if (code == -1 && PyErr_Occurred()) return -1;
    if (code < 0 || code > 0xFFFF || !hb_is_legal(position, code)) {
        PyErr_Format(PyExc_ValueError, "move code %ld is not a legal move in this position", code);
        return -1;
    }
    *move = (cb_move)code;
    return 0;
}

/* Move codes into moves[CB_MAX_MOVES]: their number, or -1 with an exception. */
static inline int hb_read_moves(PyObject *object, const char *what, cb_move *moves) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    int status = 0;
    if (count > CB_MAX_MOVES) {
        PyErr_Format(PyExc_ValueError, "%s: more than %d moves", what, CB_MAX_MOVES);
        status = -1;
    }
    for (Py_ssize_t i = 0; i < count && status == 0; i++) {
        long code = PyLong_AsLong(PySequence_Fast_GET_ITEM(sequence, i));
        if (code == -1 && PyErr_Occurred()) {
            status = -1;
        } else if (code < 0 || code > 0xFFFF) {
            PyErr_Format(PyExc_ValueError, "%s: %ld is not a move code", what, code);
            status = -1;
        } else {
            moves[i] = (cb_move)code;
        }
    }
    Py_DECREF(sequence);
    return status < 0 ? -1 : (int)count;
}

/* A sequence of 64-bit keys (fewer than CB_MAX_PLIES) into *keys, newly allocated with room for one more (free with
 * PyMem_Free): their number, or -1 with an exception. */
static inline Py_ssize_t hb_read_keys(PyObject *object, const char *what, uint64_t **keys) {
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    *keys = count < CB_MAX_PLIES ? PyMem_Malloc((size_t)(count + 1) * sizeof **keys) : NULL;
    if (!*keys) {
        Py_DECREF(sequence);
        if (count < CB_MAX_PLIES) PyErr_NoMemory();
        else PyErr_Format(PyExc_ValueError, "keys: too many");
        return -1;
    }
    for (Py_ssize_t i = 0; i < count && !PyErr_Occurred(); i++)
        (*keys)[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(sequence, i));
    Py_DECREF(sequence);
    if (!PyErr_Occurred()) return count;
    PyMem_Free(*keys);
    *keys = NULL;
    return -1;
}

/* ------------------------------------------------------------------ building lists */

/* The Python object of values[index] (a new reference), for hb_list. */
typedef PyObject *(*hb_item)(const void *values, int index);

static inline PyObject *hb_move_item(const void *values, int index) {
    return PyLong_FromLong(((const cb_move *)values)[index]);
}

static inline PyObject *hb_int64_item(const void *values, int index) {
    return PyLong_FromLongLong(((const int64_t *)values)[index]);
}

static inline PyObject *hb_double_item(const void *values, int index) {
    return PyFloat_FromDouble(((const double *)values)[index]);
}

/* A list of count values, each made by item. */
static inline PyObject *hb_list(const void *values, int count, hb_item item) {
    PyObject *list = PyList_New(count);
    if (!list) return NULL;
    for (int i = 0; i < count; i++) {
        PyObject *value = item(values, i);
        if (!value) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, value);
    }
    return list;
}

/* ------------------------------------------------------------------ driving a search */

/* A compiled search's Python side: whether start() has set a root, whether a search() runs (its callbacks may call
 * back in), and the callbacks it was given (borrowed from its arguments while it runs). The search's context. */
typedef struct {
    int started;
    int busy;
    PyObject *stopped;
    PyObject *probe;
} hb_driver;

static inline int hb_refuse_while_busy(const hb_driver *driver) {
    if (!driver->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the searcher is searching");
    return -1;
}

/* search(): refused while busy, before start(), or with callbacks that cannot be called; else the callbacks are
 * kept until hb_leave. */
static inline int hb_enter(hb_driver *driver, PyObject *stopped, PyObject *probe) {
    if (hb_refuse_while_busy(driver) < 0) return -1;
    if (!driver->started) {
        PyErr_SetString(PyExc_RuntimeError, "search() before start()");
        return -1;
    }
    if (!PyCallable_Check(stopped) || (probe != Py_None && !PyCallable_Check(probe))) {
        PyErr_SetString(PyExc_TypeError, "stopped must be callable, probe callable or None");
        return -1;
    }
    driver->stopped = stopped;
    driver->probe = probe == Py_None ? NULL : probe;
    driver->busy = 1;
    return 0;
}

static inline void hb_leave(hb_driver *driver) {
    driver->busy = 0;
    driver->stopped = driver->probe = NULL;
}

/* The stop callback (context: the hb_driver): stopped(nodes)'s truth, or -1 with its exception. */
static inline int hb_call_stopped(void *context, uint64_t nodes) {
    hb_driver *driver = context;
    PyObject *result = PyObject_CallFunction(driver->stopped, "K", (unsigned long long)nodes);
    if (!result) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* The tablebase callback (context: the hb_driver): probe((pawns .. kings, white, black, turn, ep, clock)) gives
 * +1 / 0 / -1 into *outcome (return 1) or None (return 0); -1 with an exception. */
static inline int hb_call_probe(void *context, const cb_position *p, int *outcome) {
    hb_driver *driver = context;
    PyObject *ep = p->ep_square < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(p->ep_square);
    if (!ep) return -1;
    PyObject *result = PyObject_CallFunction(
        driver->probe, "((KKKKKKKKONi))", (unsigned long long)p->pieces[CB_PAWN],
        (unsigned long long)p->pieces[CB_KNIGHT], (unsigned long long)p->pieces[CB_BISHOP],
        (unsigned long long)p->pieces[CB_ROOK], (unsigned long long)p->pieces[CB_QUEEN],
        (unsigned long long)p->pieces[CB_KING], (unsigned long long)p->colors[CB_WHITE],
        (unsigned long long)p->colors[CB_BLACK], p->turn ? Py_True : Py_False, ep, (int)p->halfmove_clock);
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

#endif
