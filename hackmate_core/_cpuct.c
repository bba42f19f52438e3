/* hackmate_core._cpuct: PUCT's per-leaf work (cpuct.h) as Python types.
 *
 * Position: a compiled board position (cb_position) kept in a tree node; only this module makes them, from
 * python-chess's public state (position()) or by playing a legal move (Position.make()), so that every
 * position the C code sees is one cb_set() accepted or one reached from it by legal moves.
 * Leaf: a new leaf of the search tree made by leaf(): its position, legal moves and result by rule, with what
 * the evaluators take from it (cache key, tactical gains, planes18 bitboards, policy slots) computed on request.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cboard.h"
#include "cpuct.h"

/* Raised when the module's Python API changes, so that search.puct refuses a stale build. */
#define API_VERSION 1

typedef struct {
    PyObject_HEAD
    cb_position position;
} PositionObject;

typedef struct {
    PyObject_HEAD
    cb_position position;
    int result;                      /* CB_ONGOING, CB_DRAWN or CB_CHECKMATED */
    int mate_in_one;                 /* -1: not looked for yet */
    PyObject *moves;                 /* the list of move codes, made on first request */
    int count;
    cb_move legal[CB_MAX_MOVES];
} LeafObject;

static PyTypeObject PositionType, LeafType;
static PyObject *state_name;         /* "state", interned */
static PyObject *chess_module;

static PositionObject *new_position(const cb_position *position) {
    PositionObject *self = PyObject_New(PositionObject, &PositionType);
    if (self) self->position = *position;
    return self;
}

static int legal_in(const cb_position *position, long code) {
    cb_move moves[CB_MAX_MOVES];
    int count = cb_legal_moves(position, moves);
    for (int i = 0; i < count; i++)
        if (moves[i] == code) return 1;
    return 0;
}

/* ------------------------------------------------------------------ Position */

static PyObject *position_new(PyObject *module, PyObject *args) {
    unsigned long long pieces[7] = {0}, white, black, castling;
    int turn, ep_square, chess960;
    long halfmove_clock, fullmove_number;
    if (!PyArg_ParseTuple(args, "KKKKKKKKpKillp:position", &pieces[CB_PAWN], &pieces[CB_KNIGHT],
                          &pieces[CB_BISHOP], &pieces[CB_ROOK], &pieces[CB_QUEEN], &pieces[CB_KING], &white, &black,
                          &turn, &castling, &ep_square, &halfmove_clock, &fullmove_number, &chess960))
        return NULL;
    cb_bitboard bitboards[7];
    for (int i = 0; i < 7; i++) bitboards[i] = pieces[i];
    cb_position position;
    const char *refusal = cb_set(&position, bitboards, white, black, turn, castling, ep_square, halfmove_clock,
                                 fullmove_number, chess960);
    if (refusal) return PyErr_Format(PyExc_ValueError, "the compiled board does not take this position: %s",
                                     refusal);
    return (PyObject *)new_position(&position);
}

static PyObject *Position_make(PositionObject *self, PyObject *object) {
    long code = PyLong_AsLong(object);
    if (code == -1 && PyErr_Occurred()) return NULL;
    if (code < 0 || code > 0xFFFF || !legal_in(&self->position, code))
        return PyErr_Format(PyExc_ValueError, "move code %ld is not a legal move in this position", code);
    cb_position child = self->position;
    cb_make(&child, (cb_move)code, 1);
    return (PyObject *)new_position(&child);
}

static PyObject *position_state(const cb_position *p) {
    PyObject *ep = p->ep_square < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(p->ep_square);
    if (!ep) return NULL;
    return Py_BuildValue("(KKKKKKKKOKNiiO)", (unsigned long long)p->pieces[CB_PAWN],
                         (unsigned long long)p->pieces[CB_KNIGHT], (unsigned long long)p->pieces[CB_BISHOP],
                         (unsigned long long)p->pieces[CB_ROOK], (unsigned long long)p->pieces[CB_QUEEN],
                         (unsigned long long)p->pieces[CB_KING], (unsigned long long)p->colors[CB_WHITE],
                         (unsigned long long)p->colors[CB_BLACK], p->turn ? Py_True : Py_False,
                         (unsigned long long)p->castling, ep, (int)p->halfmove_clock, (int)p->fullmove_number,
                         p->chess960 ? Py_True : Py_False);
}

static PyObject *Position_state(PositionObject *self, PyObject *unused) { return position_state(&self->position); }

static PyObject *Position_get_key(PositionObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->position.key);
}

static PyMethodDef Position_methods[] = {
    {"make", (PyCFunction)Position_make, METH_O,
     "make(code): the position after a legal move (ValueError for any other code)."},
    {"state", (PyCFunction)Position_state, METH_NOARGS,
     "state(): (pawns, knights, bishops, rooks, queens, kings, white, black, turn, castling_rights, ep_square, "
     "halfmove_clock, fullmove_number, chess960) as python-chess holds them."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Position_getset[] = {
    {"key", (getter)Position_get_key, NULL, "the 64-bit transposition key (cboard.h)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PositionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hackmate_core._cpuct.Position",
    .tp_doc = "A compiled board position kept in a PUCT node (made by position() or Position.make()).",
    .tp_basicsize = sizeof(PositionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = Position_methods,
    .tp_getset = Position_getset,
};

/* ------------------------------------------------------------------ Leaf */

static const cb_position *node_position(PyObject *node) {
    PyObject *state = PyObject_GetAttr(node, state_name);
    if (!state) return NULL;
    Py_DECREF(state);  /* the node keeps it */
    if (Py_TYPE(state) != &PositionType) {
        PyErr_SetString(PyExc_TypeError, "a node on the path has no compiled position");
        return NULL;
    }
    return &((PositionObject *)state)->position;
}

/* The keys of the positions before a leaf: the game's (a uint64 buffer), then the path's nodes'. */
typedef struct {
    const uint64_t *game;
    int known;
    PyObject *path;
} key_context;

static uint64_t key_at(void *context, int index) {
    key_context *keys = context;
    if (index < keys->known) return keys->game[index];
    /* leaf_new checked that every node of the path before the leaf holds a Position */
    PyObject *state = PyObject_GetAttr(PyList_GET_ITEM(keys->path, index - keys->known), state_name);
    uint64_t key = 0;
    if (state && Py_TYPE(state) == &PositionType) key = ((PositionObject *)state)->position.key;
    Py_XDECREF(state);
    PyErr_Clear();
    return key;
}

static PyObject *leaf_new(PyObject *module, PyObject *args) {
    PyObject *path;
    long code;
    Py_buffer game;
    if (!PyArg_ParseTuple(args, "O!ly*:leaf", &PyList_Type, &path, &code, &game)) return NULL;
    Py_ssize_t length = PyList_GET_SIZE(path);
    LeafObject *self = NULL;
    if (length < 1 || length > CB_MAX_PLIES || (code < 0) != (length == 1) || game.len % sizeof(uint64_t)
        || game.len / (Py_ssize_t)sizeof(uint64_t) > CB_MAX_PLIES) {
        PyErr_SetString(PyExc_ValueError, "leaf(path, code, game_keys): a path with its last move's code (-1 "
                                          "for the root alone) and whole uint64 keys");
        goto done;
    }
    const cb_position *position = NULL;
    for (Py_ssize_t i = 0; i < length - (length > 1); i++) {
        position = node_position(PyList_GET_ITEM(path, i));
        if (!position) goto done;
    }
    if (length > 1 && (code > 0xFFFF || !legal_in(position, code))) {
        PyErr_Format(PyExc_ValueError, "move code %ld is not a legal move in the leaf's parent", code);
        goto done;
    }
    self = PyObject_New(LeafObject, &LeafType);
    if (!self) goto done;
    self->moves = NULL;
    self->mate_in_one = -1;
    self->position = *position;
    if (length > 1) cb_make(&self->position, (cb_move)code, 1);
    self->count = cb_legal_moves(&self->position, self->legal);
    self->result = cp_result(&self->position, self->count);
    if (self->result == CB_ONGOING) {
        int tree_plies = (int)length - 1;
        key_context keys = {game.buf, (int)(game.len / (Py_ssize_t)sizeof(uint64_t)), path};
        if (cp_repetition(&self->position, key_at, &keys, keys.known + tree_plies, tree_plies))
            self->result = CB_DRAWN;
    }
done:
    PyBuffer_Release(&game);
    return (PyObject *)self;
}

static void Leaf_dealloc(LeafObject *self) {
    Py_XDECREF(self->moves);
    PyObject_Free(self);
}

static PyObject *Leaf_get_result(LeafObject *self, void *unused) {
    if (self->result == CB_ONGOING) Py_RETURN_NONE;
    return PyLong_FromLong(self->result);
}

static PyObject *Leaf_get_mate_in_one(LeafObject *self, void *unused) {
    if (self->mate_in_one < 0) self->mate_in_one = cp_mate_in_one(&self->position, self->legal, self->count);
    return PyBool_FromLong(self->mate_in_one);
}

static PyObject *Leaf_get_moves(LeafObject *self, void *unused) {
    if (!self->moves) {
        PyObject *list = PyList_New(self->count);
        if (!list) return NULL;
        for (int i = 0; i < self->count; i++) {
            PyObject *item = PyLong_FromLong(self->legal[i]);
            if (!item) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
        }
        self->moves = list;
    }
    return Py_NewRef(self->moves);
}

static PyObject *Leaf_get_state(LeafObject *self, void *unused) { return (PyObject *)new_position(&self->position); }

static PyObject *Leaf_get_cache_key(LeafObject *self, void *unused) {
    int clock = self->position.halfmove_clock < 100 ? self->position.halfmove_clock : 100;
    return Py_BuildValue("(Ki)", (unsigned long long)self->position.key, clock);
}

static PyObject *Leaf_get_gains(LeafObject *self, void *unused) {
    double gains[CB_MAX_MOVES];
    cp_tactical_gains(&self->position, self->legal, self->count, gains);
    PyObject *list = PyList_New(self->count);
    if (!list) return NULL;
    for (int i = 0; i < self->count; i++) {
        PyObject *item = PyFloat_FromDouble(gains[i]);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *Leaf_get_bitboards(LeafObject *self, void *unused) {
    uint64_t bitboards[CP_PLANES18];
    cp_planes18(&self->position, self->legal, self->count, bitboards);
    PyObject *tuple = PyTuple_New(CP_PLANES18);
    if (!tuple) return NULL;
    for (int i = 0; i < CP_PLANES18; i++) {
        PyObject *item = PyLong_FromUnsignedLongLong(bitboards[i]);
        if (!item) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

static PyObject *Leaf_get_slots(LeafObject *self, void *unused) {
    PyObject *list = PyList_New(self->count);
    if (!list) return NULL;
    for (int i = 0; i < self->count; i++) {
        PyObject *item = PyLong_FromLong(cp_policy_slot(&self->position, self->legal[i]));
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *Leaf_get_black(LeafObject *self, void *unused) {
    return PyBool_FromLong(self->position.turn == CB_BLACK);
}

static PyObject *Leaf_get_rule50(LeafObject *self, void *unused) {
    return PyLong_FromLong(self->position.halfmove_clock);
}

static PyObject *Leaf_get_pieces(LeafObject *self, void *unused) {
    int count = 0;
    for (cb_bitboard b = self->position.pieces[0]; b; b &= b - 1) count++;
    return PyLong_FromLong(count);
}

static PyObject *Leaf_get_castling(LeafObject *self, void *unused) {
    return PyBool_FromLong(self->position.castling != 0);
}

/* A python-chess board of the leaf's position, without history, for the rare Python-only work. */
static PyObject *Leaf_board(LeafObject *self, PyObject *unused) {
    const cb_position *p = &self->position;
    if (!chess_module && !(chess_module = PyImport_ImportModule("chess"))) return NULL;
    PyObject *board = PyObject_CallMethod(chess_module, "Board", "(O)", Py_None);
    if (!board) return NULL;
    static const char *const names[7] = {"occupied", "pawns", "knights", "bishops", "rooks", "queens", "kings"};
    int status = 0;
    for (int type = 0; type <= CB_KING && status == 0; type++) {
        PyObject *value = PyLong_FromUnsignedLongLong(p->pieces[type]);
        status = value ? PyObject_SetAttrString(board, names[type], value) : -1;
        Py_XDECREF(value);
    }
    PyObject *colors = status == 0 ? Py_BuildValue("[KK]", (unsigned long long)p->colors[CB_BLACK],
                                                   (unsigned long long)p->colors[CB_WHITE]) : NULL;
    PyObject *castling = PyLong_FromUnsignedLongLong(p->castling);
    PyObject *ep = p->ep_square < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(p->ep_square);
    PyObject *halfmove = PyLong_FromLong(p->halfmove_clock), *fullmove = PyLong_FromLong(p->fullmove_number);
    if (!colors || !castling || !ep || !halfmove || !fullmove || PyObject_SetAttrString(board, "occupied_co", colors)
        || PyObject_SetAttrString(board, "turn", p->turn ? Py_True : Py_False)
        || PyObject_SetAttrString(board, "castling_rights", castling) || PyObject_SetAttrString(board, "ep_square", ep)
        || PyObject_SetAttrString(board, "halfmove_clock", halfmove)
        || PyObject_SetAttrString(board, "fullmove_number", fullmove)
        || PyObject_SetAttrString(board, "chess960", p->chess960 ? Py_True : Py_False))
        status = -1;
    Py_XDECREF(colors);
    Py_XDECREF(castling);
    Py_XDECREF(ep);
    Py_XDECREF(halfmove);
    Py_XDECREF(fullmove);
    if (status < 0) Py_CLEAR(board);
    return board;
}

static PyMethodDef Leaf_methods[] = {
    {"board", (PyCFunction)Leaf_board, METH_NOARGS,
     "board(): the leaf's position as a chess.Board without history (tablebases, the material blend)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Leaf_getset[] = {
    {"result", (getter)Leaf_get_result, NULL,
     "hackmate_core.rules.game_result: -1 checkmated, 0 drawn by rule, None while the game goes on.", NULL},
    {"mate_in_one", (getter)Leaf_get_mate_in_one, NULL, "True when the side to move mates in one.", NULL},
    {"moves", (getter)Leaf_get_moves, NULL, "the legal moves' codes in python-chess's order.", NULL},
    {"state", (getter)Leaf_get_state, NULL, "the leaf's Position (for its node).", NULL},
    {"cache_key", (getter)Leaf_get_cache_key, NULL, "(key, min(halfmove_clock, 100)): the evaluation cache's key.",
     NULL},
    {"gains", (getter)Leaf_get_gains, NULL, "evaluators.material.tactical_gains of the legal moves (checks "
     "included).", NULL},
    {"bitboards", (getter)Leaf_get_bitboards, NULL, "evaluators.encoding.unflipped_bitboards (17 integers).", NULL},
    {"slots", (getter)Leaf_get_slots, NULL, "the network's policy slot of each legal move.", NULL},
    {"black", (getter)Leaf_get_black, NULL, "True when Black is to move.", NULL},
    {"rule50", (getter)Leaf_get_rule50, NULL, "the halfmove clock.", NULL},
    {"pieces", (getter)Leaf_get_pieces, NULL, "pieces on the board (tablebase coverage).", NULL},
    {"castling", (getter)Leaf_get_castling, NULL, "True when a castling right remains.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LeafType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hackmate_core._cpuct.Leaf",
    .tp_doc = "A new leaf of a PUCT tree (made by leaf()).",
    .tp_basicsize = sizeof(LeafObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Leaf_dealloc,
    .tp_methods = Leaf_methods,
    .tp_getset = Leaf_getset,
};

/* ------------------------------------------------------------------ module */

static PyMethodDef module_methods[] = {
    {"position", position_new, METH_VARARGS,
     "position(pawns, knights, bishops, rooks, queens, kings, white, black, turn, castling_rights, ep_square, "
     "halfmove_clock, fullmove_number, chess960): a Position from python-chess's public state (ep_square -1: "
     "none); ValueError for a position the compiled board does not take."},
    {"leaf", leaf_new, METH_VARARGS,
     "leaf(path, code, game_keys): the Leaf reached by the move code from the position of path[-2] (nodes "
     "with a `state` Position from the root on; code -1 with a path of the root alone: the root itself); "
     "game_keys: the transposition keys of the game's positions before the root within its fifty-move clock, "
     "as native uint64 bytes (the repetition rule)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "hackmate_core._cpuct",
    .m_doc = "PUCT's per-leaf work on the compiled chess board.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__cpuct(void) {
    cb_init();
    if (PyType_Ready(&PositionType) < 0 || PyType_Ready(&LeafType) < 0) return NULL;
    state_name = PyUnicode_InternFromString("state");
    if (!state_name) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "API_VERSION", API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
