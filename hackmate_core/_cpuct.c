/* hackmate_core._cpuct: PUCT's per-leaf work (cpuct.h) as Python types.
 *
 * Position: a compiled board position (cb_position) kept in a tree node; only this module makes them, from
 * python-chess's public state (position()) or by playing a legal move (Position.make()), so that every
 * position the C code sees is one cb_set() accepted or one reached from it by legal moves.
 * Game: what a search's leaves take from the game before its root, made once per search by game(): the positions
 * the repetition rules look back on, and for the lc0-112 input the root's history, for the features36 input the
 * root's last moves, as Python encodes them.
 * Leaf: a new leaf of the search tree made by leaf(): its position, legal moves and result by rule, with what
 * the evaluators take from it (cache key, tactical gains, planes18, lc0-112 or features36 planes, policy slots).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <math.h>

#include "binding.h"
#include "cboard.h"
#include "cexchange.h"
#include "cpuct.h"

/* The module's dotted name, which its types' names begin with (binding.h's HB_TYPE). */
#define HB_MODULE "hackmate_core._cpuct"
/* Raised when the module's Python API changes, so that search.puct refuses a stale build. */
#define API_VERSION 9

typedef struct {
    PyObject_HEAD
    cb_position position;
    int last_move;                   /* the code of the move that made it (Position.make, Leaf.state); -1: none */
} PositionObject;

typedef struct {
    PyObject_HEAD
    cb_position position;
    int result;                      /* CB_ONGOING, CB_DRAWN or CB_CHECKMATED */
    int mate_in_one;                 /* -1: not looked for yet */
    PyObject *moves;                 /* the list of move codes, made on first request */
    int count;
    cb_move legal[CB_MAX_MOVES];
    int code;                        /* the code of the move that made it; -1: none (the root alone, a FEN) */
    int has_lc0;                     /* whether lc0 and digest are set (a game with history, an ongoing game) */
    uint64_t digest;                 /* cp_digest of lc0 */
    uint64_t lc0[CP_LC0_PLANES];     /* the lc0-112 bitboards, before the flip for Black */
    int has_last_moves;              /* whether last_moves is set (a game with the root's last moves) */
    int8_t last_moves[2 * CP_LAST_MOVES];  /* features36's last moves: cp_move_squares of each, the last first */
} LeafObject;

typedef struct {
    PyObject_HEAD
    cb_position *positions;          /* the game's positions before the root, oldest first */
    int known;
    int first;                       /* whether the oldest of them (the root when there are none) began the game */
    int has_history;
    uint64_t history[CP_LC0_HISTORY][CP_LC0_BLOCK];  /* evaluators.encoding.lc0_history of the root */
    int has_last_moves;
    int8_t last_moves[2 * CP_LAST_MOVES];  /* evaluators.encoding.last_move_squares of the root */
} GameObject;

static PyTypeObject PositionType, LeafType, GameType;
static PyObject *state_name;         /* "state", interned */
static PyObject *chess_module;

static PositionObject *new_position(const cb_position *position, int last_move) {
    PositionObject *self = PyObject_New(PositionObject, &PositionType);
    if (self) {
        self->position = *position;
        self->last_move = last_move;
    }
    return self;
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
    if (hb_set_position(&position, bitboards, white, black, turn, castling, ep_square, halfmove_clock,
                        fullmove_number, chess960) < 0)
        return NULL;
    return (PyObject *)new_position(&position, -1);
}

static PyObject *Position_make(PositionObject *self, PyObject *object) {
    cb_move move;
    if (hb_read_legal_move(object, &self->position, &move) < 0) return NULL;
    cb_position child = self->position;
    cb_make(&child, move, 1);
    return (PyObject *)new_position(&child, (int)move);
}

static PyObject *Position_state(PositionObject *self, PyObject *unused) { return hb_state_tuple(&self->position, 1); }

static PyObject *Position_get_key(PositionObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->position.key);
}

static PyMethodDef Position_methods[] = {
    HB_METHOD("make", Position_make, METH_O,
              "make(code): the position after a legal move (ValueError for any other code)."),
    HB_STATE_METHOD(Position_state, ", chess960"),
    HB_END,
};

static PyGetSetDef Position_getset[] = {
    HB_GETTER("key", Position_get_key, "the 64-bit transposition key (cboard.h)"),
    HB_END,
};

HB_TYPE(Position,
        "A compiled board position kept in a PUCT node (made by position() or Position.make()).",
        NULL, NULL, Position_methods, Position_getset);

/* ------------------------------------------------------------------ Leaf */

static const PositionObject *node_position(PyObject *node) {
    PyObject *state = PyObject_GetAttr(node, state_name);
    if (!state) return NULL;
    Py_DECREF(state);  /* the node keeps it */
    if (Py_TYPE(state) != &PositionType) {
        PyErr_SetString(PyExc_TypeError, "a node on the path has no compiled position");
        return NULL;
    }
    return (const PositionObject *)state;
}

/* ------------------------------------------------------------------ Game */

static PyObject *game_new(PyObject *module, PyObject *args) {
    PyObject *positions, *history;
    int first;
    if (!PyArg_ParseTuple(args, "O!pO:game", &PyList_Type, &positions, &first, &history)) return NULL;
    Py_ssize_t known = PyList_GET_SIZE(positions);
    if (known > CB_MAX_PLIES) return PyErr_Format(PyExc_ValueError, "game() takes at most %d positions", CB_MAX_PLIES);
    Py_buffer view = {0};
    if (history != Py_None) {
        if (PyObject_GetBuffer(history, &view, PyBUF_SIMPLE) < 0) return NULL;
        int squares = view.len == (Py_ssize_t)sizeof(((GameObject *)NULL)->last_moves);
        for (Py_ssize_t i = 0; squares && i < view.len; i++)
            if (((const int8_t *)view.buf)[i] < -1 || ((const int8_t *)view.buf)[i] > 63) squares = 0;
        if (view.len != (Py_ssize_t)sizeof(((GameObject *)NULL)->history) && !squares) {
            PyBuffer_Release(&view);
            return PyErr_Format(PyExc_ValueError, "game(): the history is lc0-112's, %d x %d native uint64s, or "
                                "features36's last moves, %d signed bytes from -1 to 63", CP_LC0_HISTORY,
                                CP_LC0_BLOCK, 2 * CP_LAST_MOVES);
        }
    }
    GameObject *self = PyObject_New(GameObject, &GameType);
    if (self) {
        self->positions = PyMem_Malloc((size_t)(known ? known : 1) * sizeof *self->positions);
        self->known = (int)known;
        self->first = first;
        self->has_last_moves = history != Py_None && view.len == (Py_ssize_t)sizeof self->last_moves;
        self->has_history = history != Py_None && !self->has_last_moves;
        if (self->has_history) memcpy(self->history, view.buf, sizeof self->history);
        if (self->has_last_moves) memcpy(self->last_moves, view.buf, sizeof self->last_moves);
        if (!self->positions) {
            PyErr_NoMemory();
            Py_CLEAR(self);
        }
    }
    for (Py_ssize_t i = 0; self && i < known; i++) {
        PyObject *item = PyList_GET_ITEM(positions, i);
        if (Py_TYPE(item) != &PositionType) {
            PyErr_SetString(PyExc_TypeError, "game() takes a list of Positions");
            Py_CLEAR(self);
        } else {
            self->positions[i] = ((PositionObject *)item)->position;
        }
    }
    if (history != Py_None) PyBuffer_Release(&view);
    return (PyObject *)self;
}

static void Game_dealloc(GameObject *self) {
    PyMem_Free(self->positions);
    PyObject_Free(self);
}

HB_TYPE(Game,
        "What a search's leaves take from the game before its root (made by game()).",
        NULL, Game_dealloc, NULL, NULL);

/* ------------------------------------------------------------------ Leaf */

/* Paths up to this long are kept on the stack while a leaf is made. */
#define SHORT_PATH 256

static PyObject *leaf_new(PyObject *module, PyObject *args) {
    PyObject *path;
    long code;
    GameObject *game;
    if (!PyArg_ParseTuple(args, "O!lO!:leaf", &PyList_Type, &path, &code, &GameType, &game)) return NULL;
    Py_ssize_t length = PyList_GET_SIZE(path);
    if (length < 1 || length > CB_MAX_PLIES || (code < 0) != (length == 1))
        return PyErr_Format(PyExc_ValueError, "leaf(path, code, game): a path with its last move's code (-1 for "
                                              "the root alone)");
    const cb_position *short_tree[SHORT_PATH], **tree = short_tree;
    if (length > SHORT_PATH && !(tree = PyMem_Malloc((size_t)length * sizeof *tree))) return PyErr_NoMemory();
    LeafObject *self = NULL;
    const PositionObject *object = NULL;  /* the last node's before the leaf: its parent, or the root alone */
    for (Py_ssize_t i = 0; i < length - (length > 1); i++) {
        if (!(object = node_position(PyList_GET_ITEM(path, i)))) goto done;
        tree[i] = &object->position;
    }
    if (game->has_last_moves && length > 2 && object->last_move < 0) {
        PyErr_SetString(PyExc_ValueError, "a node below the root holds a Position made by position(), not by a "
                                          "move: its last move is unknown");
        goto done;
    }
    const cb_position *parent = tree[length - 1 - (length > 1)];
    if (length > 1 && (code > 0xFFFF || !hb_is_legal(parent, code))) {
        PyErr_Format(PyExc_ValueError, "move code %ld is not a legal move in the leaf's parent", code);
        goto done;
    }
    self = PyObject_New(LeafObject, &LeafType);
    if (!self) goto done;
    self->moves = NULL;
    self->mate_in_one = -1;
    self->has_lc0 = 0;
    self->position = *parent;
    self->code = length > 1 ? (int)code : object->last_move;
    if (length > 1) cb_make(&self->position, (cb_move)code, 1);
    tree[length - 1] = &self->position;
    self->has_last_moves = game->has_last_moves;
    if (self->has_last_moves) {  /* the last moves: the tree's (each from its parent's position), then the root's */
        int depth = (int)length - 1;
        for (int back = 0; back < CP_LAST_MOVES; back++) {
            int ply = depth - back;  /* tree[ply] is the position the move made */
            if (ply >= 1)
                cp_move_squares(tree[ply - 1], (cb_move)(ply == depth ? code : object->last_move),
                                self->last_moves + 2 * back);
            else
                memcpy(self->last_moves + 2 * back, game->last_moves + 2 * (back - depth), 2);
        }
    }
    self->count = cb_legal_moves(&self->position, self->legal);
    self->result = cp_result(&self->position, self->count);
    cp_line line = {game->positions, game->known, tree, (int)length, game->first};
    if (self->result == CB_ONGOING && cp_repetition(&line)) self->result = CB_DRAWN;
    if (self->result == CB_ONGOING && game->has_history) {
        cp_lc0_planes(&line, (const uint64_t (*)[CP_LC0_BLOCK])game->history, self->lc0);
        self->digest = cp_digest(self->lc0, CP_LC0_PLANES);
        self->has_lc0 = 1;
    }
done:
    if (tree != short_tree) PyMem_Free(tree);
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
    if (!self->moves && !(self->moves = hb_list(self->legal, self->count, hb_move_item))) return NULL;
    return Py_NewRef(self->moves);
}

static PyObject *Leaf_get_state(LeafObject *self, void *unused) {
    return (PyObject *)new_position(&self->position, self->code);
}

static PyObject *Leaf_get_cache_key(LeafObject *self, void *unused) {
    int clock = self->position.halfmove_clock < 100 ? self->position.halfmove_clock : 100;
    if (self->has_lc0)
        return Py_BuildValue("(KiK)", (unsigned long long)self->position.key, clock, (unsigned long long)self->digest);
    return Py_BuildValue("(Ki)", (unsigned long long)self->position.key, clock);
}

static PyObject *Leaf_get_gains(LeafObject *self, void *unused) {
    double gains[CB_MAX_MOVES];
    cp_tactical_gains(&self->position, self->legal, self->count, gains);
    return hb_list(gains, self->count, hb_double_item);
}

static PyObject *Leaf_gain_weights(LeafObject *self, PyObject *temperature) {
    double divisor = PyFloat_AsDouble(temperature);
    if (divisor == -1.0 && PyErr_Occurred()) return NULL;
    double gains[CB_MAX_MOVES], weights[CB_MAX_MOVES];
    cp_tactical_gains(&self->position, self->legal, self->count, gains);
    cp_gain_weights(gains, self->count, divisor, weights);
    return hb_list(weights, self->count, hb_double_item);
}

/* The binary planes as the network takes them, one byte (0 or 1) a square: square s of plane p at p * 64 + s,
 * mirrored vertically (s ^ 56) when Black is to move, as evaluators.encoding.unpack_unflipped makes them. */
static char rank_bytes[256][8];  /* rank_bytes[b][file]: bit `file` of the rank's byte b, set by PyInit */

static PyObject *binary_planes(const uint64_t *bitboards, int count, int black) {
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, count * 64);
    if (!bytes) return NULL;
    char *out = PyBytes_AS_STRING(bytes);
    int flip = black ? 7 : 0;
    for (int plane = 0; plane < count; plane++)
        for (int rank = 0; rank < 8; rank++)
            memcpy(out + plane * 64 + rank * 8, rank_bytes[(bitboards[plane] >> (8 * (rank ^ flip))) & 0xFF], 8);
    return bytes;
}

static PyObject *Leaf_get_planes(LeafObject *self, void *unused) {
    uint64_t bitboards[CP_PLANES18];
    cp_planes18(&self->position, self->legal, self->count, bitboards);
    return binary_planes(bitboards, CP_PLANES18, self->position.turn == CB_BLACK);
}

static PyObject *Leaf_get_lc0_planes(LeafObject *self, void *unused) {
    if (!self->has_lc0)
        return PyErr_Format(PyExc_ValueError, "this leaf has no lc0-112 planes (its game was made without a history, "
                                              "or its result is known by rule)");
    return binary_planes(self->lc0, CP_LC0_PLANES, self->position.turn == CB_BLACK);
}

static PyObject *Leaf_get_feature_planes(LeafObject *self, void *unused) {
    if (!self->has_last_moves)
        return PyErr_Format(PyExc_ValueError, "this leaf has no features36 planes (its game was made without the "
                                              "root's last moves)");
    uint64_t bitboards[CP_FEATURES];
    cp_features(&self->position, self->legal, self->count, self->last_moves, bitboards);
    return binary_planes(bitboards, CP_FEATURES, self->position.turn == CB_BLACK);
}

static PyObject *Leaf_slots(LeafObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "slots(king_takes_rook, own_queen_slot) takes 2 arguments");
    int king_takes_rook = PyObject_IsTrue(args[0]), own_queen_slot = PyObject_IsTrue(args[1]);
    if (king_takes_rook < 0 || own_queen_slot < 0) return NULL;
    int conventions = (king_takes_rook ? CP_KING_TAKES_ROOK : 0) | (own_queen_slot ? CP_OWN_QUEEN_SLOT : 0);
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, self->count * (Py_ssize_t)sizeof(int16_t));
    if (!bytes) return NULL;
    int16_t *slots = (int16_t *)PyBytes_AS_STRING(bytes);
    for (int i = 0; i < self->count; i++)
        slots[i] = (int16_t)cp_policy_slot(&self->position, self->legal[i], conventions);
    return bytes;
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
    HB_METHOD("gain_weights", Leaf_gain_weights, METH_O,
              "gain_weights(temperature): evaluators.material.gain_softmax's weights of the gains before the "
              "normalisation (exp((gain - top) / temperature)), the same floats."),
    HB_METHOD("slots", Leaf_slots, METH_FASTCALL,
              "slots(king_takes_rook, own_queen_slot): the network's policy slot of each legal move under its "
              "conventions (evaluators.moves.PolicySlots), as native int16s (bytes: numpy joins a batch's without a "
              "Python int each)."),
    HB_METHOD("board", Leaf_board, METH_NOARGS,
              "board(): the leaf's position as a chess.Board without history (tablebases, the material blend)."),
    HB_END,
};

static PyGetSetDef Leaf_getset[] = {
    HB_GETTER("result", Leaf_get_result,
              "hackmate_core.rules.game_result: -1 checkmated, 0 drawn by rule, None while the game goes on."),
    HB_GETTER("mate_in_one", Leaf_get_mate_in_one, "True when the side to move mates in one."),
    HB_GETTER("moves", Leaf_get_moves, "the legal moves' codes in python-chess's order."),
    HB_GETTER("state", Leaf_get_state, "the leaf's Position (for its node)."),
    HB_GETTER("cache_key", Leaf_get_cache_key,
              "(key, min(halfmove_clock, 100)): the evaluation cache's key; with the game's history, a digest of the "
              "lc0-112 bitboards too (what ResNetEvaluator.cache_key tells apart; features36's last moves are not in "
              "it)."),
    HB_GETTER("gains", Leaf_get_gains, "evaluators.material.tactical_gains of the legal moves (checks included)."),
    HB_GETTER("planes", Leaf_get_planes,
              "the 17 binary planes as bytes, flipped for Black (17 x 64, one byte a square)."),
    HB_GETTER("lc0_planes", Leaf_get_lc0_planes,
              "the 111 binary planes of lc0-112 as bytes, flipped for Black (111 x 64, one byte a square); "
              "ValueError where the game has no history."),
    HB_GETTER("feature_planes", Leaf_get_feature_planes,
              "the 35 binary planes of features36 as bytes, flipped for Black (35 x 64, one byte a square); "
              "ValueError where the game has not the root's last moves."),
    HB_GETTER("rule50", Leaf_get_rule50, "the halfmove clock."),
    HB_GETTER("pieces", Leaf_get_pieces, "pieces on the board (tablebase coverage)."),
    HB_GETTER("castling", Leaf_get_castling, "True when a castling right remains."),
    HB_END,
};

HB_TYPE(Leaf,
        "A new leaf of a PUCT tree (made by leaf()).",
        NULL, Leaf_dealloc, Leaf_methods, Leaf_getset);

/* ------------------------------------------------------------------ selection */

/* The node layout hackmate_core.tree declares (TreeNode's slots, NODE_SLOTS), read at their offsets in any instance
 * of the class bind_node() was given (hackmate_core.compiled binds TreeNode once; a search's nodes derive from it). */
enum { SLOT_PRIOR, SLOT_MOVES, SLOT_PRIORS, SLOT_CHILDREN, SLOT_VISITS, SLOT_VALUE_SUM, SLOT_DRAW_SUM, SLOT_VIRTUAL,
       SLOT_VISITED_POLICY, SLOT_TERMINAL, SLOT_COUNT };
static const char *const SLOT_NAMES[SLOT_COUNT] = {"prior", "moves", "priors", "children", "visits", "value_sum",
                                                   "draw_sum", "virtual", "visited_policy", "terminal"};
static PyObject *array_type;         /* array.array */
static PyTypeObject *node_type;
static Py_ssize_t slot_offsets[SLOT_COUNT];

static PyObject *bind_node(PyObject *module, PyObject *type) {
    if (!PyType_Check(type)) return PyErr_Format(PyExc_TypeError, "bind_node() takes the node layout's class");
    Py_ssize_t offsets[SLOT_COUNT];
    for (int i = 0; i < SLOT_COUNT; i++) {
        PyObject *descr = PyDict_GetItemString(((PyTypeObject *)type)->tp_dict, SLOT_NAMES[i]);
        if (!descr || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX)
            return PyErr_Format(PyExc_TypeError, "the node class has no slot %s", SLOT_NAMES[i]);
        offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    if (!array_type) {
        PyObject *array = PyImport_ImportModule("array");
        if (!array) return NULL;
        array_type = PyObject_GetAttrString(array, "array");
        Py_DECREF(array);
        if (!array_type) return NULL;
    }
    Py_XSETREF(node_type, (PyTypeObject *)Py_NewRef(type));
    memcpy(slot_offsets, offsets, sizeof offsets);
    Py_RETURN_NONE;
}

/* Whether object is a node of the bound layout (an instance of the bound class or of a class derived from it). */
static inline int is_node(PyObject *object) {
    return node_type && (Py_TYPE(object) == node_type || PyType_IsSubtype(Py_TYPE(object), node_type));
}

/* A node's slot (borrowed), NULL with an exception when it is unset. */
static PyObject *slot(PyObject *node, int index) {
    PyObject *value = *(PyObject **)((char *)node + slot_offsets[index]);
    if (!value) PyErr_Format(PyExc_AttributeError, "a node's %s is not set", SLOT_NAMES[index]);
    return value;
}

static int slot_double(PyObject *node, int index, double *out) {
    PyObject *value = slot(node, index);
    if (!value) return -1;
    *out = PyFloat_CheckExact(value) ? PyFloat_AS_DOUBLE(value) : PyFloat_AsDouble(value);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int slot_long(PyObject *node, int index, long *out) {
    PyObject *value = slot(node, index);
    if (!value) return -1;
    *out = PyLong_AsLong(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* search.puct.PuctSearch._pick_child with the same double operations in the same order: the picked child (a new
 * reference), Py_None when there is none, NULL on error; create(node, index) makes the child of moves[index]. */
static PyObject *pick_child(PyObject *node, int full, double cpuct, double fpu_reduction, PyObject *create) {
    long visits, virtual_loss;
    double value_sum, visited_policy;
    PyObject *children = slot(node, SLOT_CHILDREN), *moves = slot(node, SLOT_MOVES);
    if (!children || !moves || slot_long(node, SLOT_VISITS, &visits) < 0
        || slot_long(node, SLOT_VIRTUAL, &virtual_loss) < 0 || slot_double(node, SLOT_VALUE_SUM, &value_sum) < 0
        || slot_double(node, SLOT_VISITED_POLICY, &visited_policy) < 0)
        return NULL;
    if (!PyList_CheckExact(children)) return PyErr_Format(PyExc_TypeError, "a node's children are not a list");
    long parent_visits = visits + virtual_loss;
    double sqrt_n = parent_visits > 1 ? sqrt((double)parent_visits) : 1.0;
    double fpu = (visits ? -value_sum / (double)visits : 0.0) - fpu_reduction * sqrt(visited_policy);
    PyObject *best = NULL;
    double best_score = -INFINITY;
    Py_ssize_t created = PyList_GET_SIZE(children);
    for (Py_ssize_t i = 0; i < created; i++) {
        PyObject *child = PyList_GET_ITEM(children, i);
        if (!is_node(child)) return PyErr_Format(PyExc_TypeError, "a child is not a node");
        PyObject *terminal = slot(child, SLOT_TERMINAL);
        if (!terminal) return NULL;
        if (terminal != Py_None) {
            if (!PyTuple_Check(terminal) || PyTuple_GET_SIZE(terminal) < 1)
                return PyErr_Format(PyExc_TypeError, "a node's terminal is not a (value, draw) pair");
            double value = PyFloat_AsDouble(PyTuple_GET_ITEM(terminal, 0));
            if (value == -1.0 && PyErr_Occurred()) return NULL;
            if (value == 1.0) continue;  /* proven lost: never worth a visit */
        }
        long child_visits, child_virtual;
        double child_value_sum, prior, score;
        if (slot_long(child, SLOT_VISITS, &child_visits) < 0 || slot_long(child, SLOT_VIRTUAL, &child_virtual) < 0
            || slot_double(child, SLOT_VALUE_SUM, &child_value_sum) < 0 || slot_double(child, SLOT_PRIOR, &prior) < 0)
            return NULL;
        long n = child_visits + child_virtual;
        if (n) score = (child_value_sum - (double)child_virtual) / (double)n + cpuct * prior * sqrt_n / (double)(1 + n);
        else score = fpu + cpuct * prior * sqrt_n;
        if (score > best_score) {
            best = child;
            best_score = score;
        }
    }
    if (!full && moves != Py_None) {
        Py_ssize_t count = PyObject_Length(moves);
        if (count < 0) return NULL;
        if (created < count) {
            PyObject *priors = slot(node, SLOT_PRIORS);
            PyObject *item = priors ? PySequence_GetItem(priors, created) : NULL;
            if (!item) return NULL;
            double prior = PyFloat_AsDouble(item);
            Py_DECREF(item);
            if (prior == -1.0 && PyErr_Occurred()) return NULL;
            if (fpu + cpuct * prior * sqrt_n > best_score || !best)
                return PyObject_CallFunction(create, "On", node, created);
        }
    }
    return Py_NewRef(best ? best : Py_None);
}

/* Replace a node's slot with a new reference (stolen); -1 when value is NULL. */
static int set_slot(PyObject *node, int index, PyObject *value) {
    if (!value) return -1;
    PyObject **field = (PyObject **)((char *)node + slot_offsets[index]);
    Py_XSETREF(*field, value);
    return 0;
}

/* search.puct.PuctSearch._backup: value from the leaf's side to move, flipped at each ply going up; 0, or -1 with an
 * exception (path: a list). */
static int backup_path(PyObject *path, double value, double draw) {
    Py_ssize_t length = PyList_GET_SIZE(path);
    for (Py_ssize_t i = 0; i < length; i++)
        if (!is_node(PyList_GET_ITEM(path, i))) {
            PyErr_SetString(PyExc_TypeError, "a path holds bound nodes only");
            return -1;
        }
    for (Py_ssize_t index = length - 1; index >= 0; index--) {
        PyObject *node = PyList_GET_ITEM(path, index);
        long visits;
        double value_sum, draw_sum;
        if (slot_long(node, SLOT_VISITS, &visits) < 0 || slot_double(node, SLOT_VALUE_SUM, &value_sum) < 0
            || slot_double(node, SLOT_DRAW_SUM, &draw_sum) < 0)
            return -1;
        if (!visits && index) {
            PyObject *parent = PyList_GET_ITEM(path, index - 1);
            double prior, visited_policy;
            if (slot_double(node, SLOT_PRIOR, &prior) < 0 || slot_double(parent, SLOT_VISITED_POLICY, &visited_policy) < 0
                || set_slot(parent, SLOT_VISITED_POLICY, PyFloat_FromDouble(visited_policy + prior)) < 0)
                return -1;
        }
        value = -value;
        if (set_slot(node, SLOT_VISITS, PyLong_FromLong(visits + 1)) < 0
            || set_slot(node, SLOT_VALUE_SUM, PyFloat_FromDouble(value_sum + value)) < 0
            || set_slot(node, SLOT_DRAW_SUM, PyFloat_FromDouble(draw_sum + draw)) < 0)
            return -1;
    }
    return 0;
}

static PyObject *backup(PyObject *module, PyObject *args) {
    PyObject *path;
    double value, draw;
    if (!PyArg_ParseTuple(args, "O!dd:backup", &PyList_Type, &path, &value, &draw)) return NULL;
    if (backup_path(path, value, draw) < 0) return NULL;
    Py_RETURN_NONE;
}

/* search.puct.PuctSearch._expand for move codes: the moves sorted by prior, highest first, ties in their order
 * (Python's stable sort), as array("H") and array("f"). */
static int expand_node(PyObject *node, PyObject *codes, PyObject *policy) {
    if (!is_node(node)) {
        PyErr_SetString(PyExc_TypeError, "expand() takes a bound node");
        return -1;
    }
    if (!PyList_Check(codes) || !PyList_Check(policy)) {
        PyErr_SetString(PyExc_TypeError, "expand() takes the move codes and their priors as lists");
        return -1;
    }
    Py_ssize_t count = PyList_GET_SIZE(codes);
    if (count != PyList_GET_SIZE(policy) || count > CB_MAX_MOVES) {
        PyErr_Format(PyExc_ValueError, "expand() takes as many priors as moves, at most %d", CB_MAX_MOVES);
        return -1;
    }
    double priors[CB_MAX_MOVES];
    int order[CB_MAX_MOVES];
    uint16_t sorted_codes[CB_MAX_MOVES];
    float sorted_priors[CB_MAX_MOVES];
    for (Py_ssize_t i = 0; i < count; i++) {
        priors[i] = PyFloat_AsDouble(PyList_GET_ITEM(policy, i));
        long code = PyLong_AsLong(PyList_GET_ITEM(codes, i));
        if (PyErr_Occurred()) return -1;
        if (code < 0 || code > 0xFFFF) {
            PyErr_Format(PyExc_ValueError, "move code %ld out of range", code);
            return -1;
        }
        sorted_codes[i] = (uint16_t)code;
        int j = (int)i;  /* insertion: before the earlier moves of strictly lower prior only */
        for (; j > 0 && priors[order[j - 1]] < priors[i]; j--) order[j] = order[j - 1];
        order[j] = (int)i;
    }
    uint16_t unsorted[CB_MAX_MOVES];
    memcpy(unsorted, sorted_codes, (size_t)count * sizeof *unsorted);
    for (Py_ssize_t i = 0; i < count; i++) {
        sorted_codes[i] = unsorted[order[i]];
        sorted_priors[i] = (float)priors[order[i]];
    }
    PyObject *move_array = PyObject_CallFunction(array_type, "sy#", "H", (const char *)sorted_codes,
                                                 count * (Py_ssize_t)sizeof *sorted_codes);
    PyObject *prior_array = move_array ? PyObject_CallFunction(array_type, "sy#", "f", (const char *)sorted_priors,
                                                               count * (Py_ssize_t)sizeof *sorted_priors) : NULL;
    if (!prior_array) {
        Py_XDECREF(move_array);
        return -1;
    }
    set_slot(node, SLOT_MOVES, move_array);
    set_slot(node, SLOT_PRIORS, prior_array);
    return 0;
}

static PyObject *expand(PyObject *module, PyObject *args) {
    PyObject *node, *codes, *policy;
    if (!PyArg_ParseTuple(args, "OO!O!:expand", &node, &PyList_Type, &codes, &PyList_Type, &policy)) return NULL;
    if (expand_node(node, codes, policy) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Add amount to the virtual loss of every node of a path (a list of bound nodes). */
static int add_virtual(PyObject *path, long amount) {
    if (!PyList_Check(path)) {
        PyErr_SetString(PyExc_TypeError, "a path is a list of nodes");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path); i++) {
        PyObject *node = PyList_GET_ITEM(path, i);
        long virtual_loss;
        if (!is_node(node)) {
            PyErr_SetString(PyExc_TypeError, "a path holds bound nodes only");
            return -1;
        }
        if (slot_long(node, SLOT_VIRTUAL, &virtual_loss) < 0
            || set_slot(node, SLOT_VIRTUAL, PyLong_FromLong(virtual_loss + amount)) < 0)
            return -1;
    }
    return 0;
}

static PyObject *evaluation_name[4];  /* "value", "draw", "moves", "policy", interned */

/* search.puct.PuctSearch._complete's work once the evaluations are back: every path loses its virtual loss, then
 * each leaf is expanded (when unexpanded and room is true) with its evaluation's moves and policy and its value
 * backed up, in the batch's order. */
static PyObject *settle(PyObject *module, PyObject *args) {
    PyObject *paths, *evaluations;
    long virtual_loss;
    int room;
    if (!PyArg_ParseTuple(args, "O!O!lp:settle", &PyList_Type, &paths, &PyList_Type, &evaluations, &virtual_loss,
                          &room))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(paths);
    if (PyList_GET_SIZE(evaluations) != count)
        return PyErr_Format(PyExc_ValueError, "settle() takes one evaluation per path");
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *path = PyList_GET_ITEM(paths, i);
        if (!PyList_Check(path) || PyList_GET_SIZE(path) < 1)
            return PyErr_Format(PyExc_TypeError, "settle() takes paths as non-empty lists of nodes");
        if (add_virtual(path, -virtual_loss) < 0) return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *path = PyList_GET_ITEM(paths, i), *evaluation = PyList_GET_ITEM(evaluations, i);
        PyObject *fields[4] = {NULL, NULL, NULL, NULL};
        int status = 0;
        for (int f = 0; f < 4 && status == 0; f++)
            if (!(fields[f] = PyObject_GetAttr(evaluation, evaluation_name[f]))) status = -1;
        double value = 0.0, draw = 0.0;
        if (status == 0) {
            value = PyFloat_AsDouble(fields[0]);
            if (fields[1] != Py_None) draw = PyFloat_AsDouble(fields[1]);
            if (PyErr_Occurred()) status = -1;
        }
        if (status == 0) {
            /* the path was checked above; its leaf is a bound node */
            PyObject *leaf = PyList_GET_ITEM(path, PyList_GET_SIZE(path) - 1);
            PyObject *moves = slot(leaf, SLOT_MOVES);
            if (!moves) status = -1;
            else if (moves == Py_None && room) status = expand_node(leaf, fields[2], fields[3]);
        }
        if (status == 0) status = backup_path(path, value, draw);
        for (int f = 0; f < 4; f++) Py_XDECREF(fields[f]);
        if (status < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *add_virtual_loss(PyObject *module, PyObject *args) {
    PyObject *path;
    long amount;
    if (!PyArg_ParseTuple(args, "O!l:add_virtual", &PyList_Type, &path, &amount)) return NULL;
    if (add_virtual(path, amount) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *select_path(PyObject *module, PyObject *args) {
    PyObject *root, *create;
    int full;
    double cpuct, fpu_reduction;
    if (!PyArg_ParseTuple(args, "OpddO:select", &root, &full, &cpuct, &fpu_reduction, &create)) return NULL;
    if (!is_node(root)) return PyErr_Format(PyExc_TypeError, "select() takes a bound node");
    PyObject *path = PyList_New(1);
    if (!path) return NULL;
    PyList_SET_ITEM(path, 0, Py_NewRef(root));
    PyObject *node = root;
    for (;;) {
        PyObject *moves = slot(node, SLOT_MOVES), *terminal = slot(node, SLOT_TERMINAL);
        if (!moves || !terminal) goto fail;
        if (moves == Py_None || terminal != Py_None) break;
        PyObject *child = pick_child(node, full, cpuct, fpu_reduction, create);
        if (!child) goto fail;
        if (child == Py_None) {
            Py_DECREF(child);
            break;  /* a full tree and nothing created here yet: this node is the leaf */
        }
        if (!is_node(child)) {
            Py_DECREF(child);
            PyErr_SetString(PyExc_TypeError, "create() did not return a node");
            goto fail;
        }
        int status = PyList_Append(path, child);
        Py_DECREF(child);  /* the path and the parent's children hold it */
        if (status < 0) goto fail;
        node = child;
    }
    return path;
fail:
    Py_DECREF(path);
    return NULL;
}

/* ------------------------------------------------------------------ tables */

static PyObject *int_tuple(const int *values, int count) {
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple && i < count; i++) {
        PyObject *value = PyLong_FromLong(values[i]);
        if (!value) Py_CLEAR(tuple);
        else PyTuple_SET_ITEM(tuple, i, value);
    }
    return tuple;
}

static PyObject *step_tuple(const int steps[8][2]) {
    PyObject *tuple = PyTuple_New(8);
    for (int i = 0; tuple && i < 8; i++) {
        PyObject *step = int_tuple(steps[i], 2);
        if (!step) Py_CLEAR(tuple);
        else PyTuple_SET_ITEM(tuple, i, step);
    }
    return tuple;
}

/* The tables the C repeats from Python, for the test that holds them equal
 * (tests/hackmate_core/test_compiled_tables.py). */
static PyObject *tables(PyObject *module, PyObject *unused) {
    return Py_BuildValue("{s:N,s:N,s:d,s:N,s:N,s:{s:i,s:i,s:i},s:i,s:i,s:i}",
                         "piece_values", int_tuple(CX_PIECE_VALUES, 7), "mvv", int_tuple(CX_MVV, 7),
                         "check_bonus", CP_CHECK_BONUS_CP, "queen_directions", step_tuple(CP_QUEEN_DIRECTIONS),
                         "knight_deltas", step_tuple(CP_KNIGHT_DELTAS), "binary_planes", "planes18", CP_PLANES18,
                         "lc0-112", CP_LC0_PLANES, "features36", CP_FEATURES, "lc0_history", CP_LC0_HISTORY,
                         "lc0_block", CP_LC0_BLOCK, "last_moves", CP_LAST_MOVES);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef module_methods[] = {
    HB_METHOD("position", position_new, METH_VARARGS,
              "position(pawns, knights, bishops, rooks, queens, kings, white, black, turn, castling_rights, "
              "ep_square, halfmove_clock, fullmove_number, chess960): a Position from python-chess's public state "
              "(ep_square -1: none); ValueError for a position the compiled board does not take."),
    HB_METHOD("game", game_new, METH_VARARGS,
              "game(positions, first, history): a Game for the leaves of a search: positions, the Positions of the "
              "game before the root within its fifty-move clock, oldest first; first, whether the oldest of them "
              "(the root when there are none) is the game's first position; history, None, "
              "evaluators.encoding.lc0_history of the root as 8 x 13 native uint64s (then the leaves have lc0-112 "
              "planes) or evaluators.encoding.last_move_squares of the root as 4 signed bytes (then the leaves have "
              "features36 planes)."),
    HB_METHOD("leaf", leaf_new, METH_VARARGS,
              "leaf(path, code, game): the Leaf reached by the move code from the position of path[-2] (nodes with a "
              "`state` Position from the root on; code -1 with a path of the root alone: the root itself); game: the "
              "search's Game (the repetition rules, the history planes)."),
    HB_METHOD("bind_node", bind_node, METH_O,
              "bind_node(cls): the class of the node layout (hackmate_core.tree.TreeNode) whose slots select(), "
              "expand(), backup(), add_virtual() and settle() read and write, in its instances and those of classes "
              "derived from it; TypeError where it lacks one of them."),
    HB_METHOD("backup", backup, METH_VARARGS,
              "backup(path, value, draw): search.puct.PuctSearch._backup's updates of the path's nodes (value from "
              "the leaf's side to move)."),
    HB_METHOD("expand", expand, METH_VARARGS,
              "expand(node, codes, policy): node.moves and node.priors, the move codes sorted by prior as "
              "search.puct.PuctSearch._expand sorts them (ties in their order)."),
    HB_METHOD("settle", settle, METH_VARARGS,
              "settle(paths, evaluations, virtual_loss, room): a batch back from the evaluator: every path loses its "
              "virtual loss, then in order each leaf is expanded with its evaluation's move codes and policy (when "
              "unexpanded and room is true) and its value and draw backed up, as search.puct.PuctSearch._complete "
              "does."),
    HB_METHOD("add_virtual", add_virtual_loss, METH_VARARGS,
              "add_virtual(path, amount): amount added to the virtual loss of every node of the path."),
    HB_METHOD("select", select_path, METH_VARARGS,
              "select(root, full, cpuct, fpu_reduction, create): the path of nodes from root to the leaf PUCT "
              "selection reaches, as search.puct.PuctSearch._pick_child picks each child (the same arithmetic); "
              "create(node, index) makes and returns the child of node.moves[index] when its first visit comes."),
    HB_METHOD("tables", tables, METH_NOARGS,
              "tables(): the tables the C repeats from Python: piece_values and mvv by piece type "
              "(hackmate_core.exchange), check_bonus (evaluators.material.CHECK_BONUS_CP), queen_directions and "
              "knight_deltas as (rank, file) steps (evaluators.moves), binary_planes by encoding, lc0_history and "
              "lc0_block (evaluators.encoding.lc0_history's positions and bitboards each), last_moves "
              "(evaluators.encoding.FEATURES_LAST_MOVES)."),
    HB_END,
};

PyMODINIT_FUNC PyInit__cpuct(void) {
    for (int byte = 0; byte < 256; byte++)
        for (int file = 0; file < 8; file++) rank_bytes[byte][file] = (char)((byte >> file) & 1);
    if (!(state_name = PyUnicode_InternFromString("state"))) return NULL;
    static const char *const evaluation_names[4] = {"value", "draw", "moves", "policy"};
    for (int i = 0; i < 4; i++)
        if (!(evaluation_name[i] = PyUnicode_InternFromString(evaluation_names[i]))) return NULL;
    static PyTypeObject *const types[] = {&PositionType, &LeafType, &GameType, NULL};  /* made by the functions */
    static const hb_constant constants[] = {{NULL, 0}};
    return hb_create_module(HB_MODULE, "PUCT's per-leaf work on the compiled chess board.",
                            API_VERSION, module_methods, types, constants);
}
