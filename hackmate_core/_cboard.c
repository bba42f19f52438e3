/* hackmate_core._cboard: the compiled chess board (cboard.h) as a Python type.
 *
 * Board.from_board(board, history=True) and Board.from_fen(fen, chess960=False) build one from python-chess
 * (ValueError for a position it does not take: the caller then stays on the pure-Python path); moves are
 * 16-bit codes from | to << 6 | promotion << 12 in python-chess's order. Every method checks its
 * arguments: a move code must be one of the position's legal moves.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "binding.h"
#include "cboard.h"

/* The module's dotted name, which its types' names begin with (binding.h's HB_TYPE). */
#define HB_MODULE "hackmate_core._cboard"
/* Raised in the API version when a method changes, so that hackmate_core.compiled refuses a stale build. */
#define API_VERSION 2
/* Deeper perft would run for days; the bound keeps the C recursion small. */
#define MAX_PERFT_DEPTH 32

typedef struct {
    PyObject_HEAD
    cb_board board;
    int legal_count;                 /* -1: not generated for the current position */
    cb_move legal[CB_MAX_MOVES];
} BoardObject;

static PyTypeObject BoardType;
static PyObject *chess_board_class;  /* chess.Board, imported on first use */

static PyObject *chess_board(void) {
    if (!chess_board_class) {
        PyObject *chess = PyImport_ImportModule("chess");
        if (!chess) return NULL;
        chess_board_class = PyObject_GetAttrString(chess, "Board");
        Py_DECREF(chess);
    }
    return chess_board_class;
}

static BoardObject *new_board(void) {
    BoardObject *self = (BoardObject *)BoardType.tp_alloc(&BoardType, 0);
    if (!self) return NULL;
    self->legal_count = -1;
    return self;
}

static void Board_dealloc(BoardObject *self) {
    cb_board_free(&self->board);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static const cb_move *legal_moves(BoardObject *self) {
    if (self->legal_count < 0) self->legal_count = cb_legal_moves(&self->board.position, self->legal);
    return self->legal;
}

static int is_legal(BoardObject *self, long code) {
    const cb_move *moves = legal_moves(self);
    for (int i = 0; i < self->legal_count; i++)
        if (moves[i] == code) return 1;
    return 0;
}

/* A move code from a Python int: -1 with ValueError when it is not one of the position's legal moves. */
static long legal_code(BoardObject *self, PyObject *object) {
    long code = PyLong_AsLong(object);
    if (code == -1 && PyErr_Occurred()) return -1;
    if (code < 0 || code > 0xFFFF || !is_legal(self, code)) {
        PyErr_Format(PyExc_ValueError, "move code %ld is not a legal move in this position", code);
        return -1;
    }
    return code;
}

/* ------------------------------------------------------------------ reading python-chess */

/* The end of reading board.<name> (value: the attribute, NULL when it is missing): 0, or -1 with the exception,
 * a conversion's replaced by ValueError saying the attribute is not what (when what is given). */
static int read_attribute_done(PyObject *value, const char *name, const char *what) {
    if (!value) return -1;
    Py_DECREF(value);
    if (!PyErr_Occurred()) return 0;
    if (what) PyErr_Format(PyExc_ValueError, "board.%s is not %s", name, what);
    return -1;
}

static int read_bitboard(PyObject *board, const char *name, cb_bitboard *out) {
    PyObject *value = PyObject_GetAttrString(board, name);
    if (value) *out = PyLong_AsUnsignedLongLong(value);
    return read_attribute_done(value, name, "a bitboard");
}

/* An integer attribute, None as -1. */
static int read_long(PyObject *board, const char *name, long *out) {
    PyObject *value = PyObject_GetAttrString(board, name);
    if (value) *out = value == Py_None ? -1 : PyLong_AsLong(value);
    return read_attribute_done(value, name, "a small integer");
}

static int read_flag(PyObject *board, const char *name, int *out) {
    PyObject *value = PyObject_GetAttrString(board, name);
    if (value) *out = PyObject_IsTrue(value);
    return read_attribute_done(value, name, NULL);
}

/* The position of a chess.Board (not a variant): 0, or -1 with ValueError (TypeError: not a board). */
static int read_position(PyObject *board, cb_position *position) {
    PyObject *board_class = chess_board();
    if (!board_class) return -1;
    if ((PyObject *)Py_TYPE(board) != board_class) {
        int instance = PyObject_IsInstance(board, board_class);
        if (instance < 0) return -1;
        if (instance) PyErr_SetString(PyExc_ValueError, "a chess.Board subclass (variant rules) is not supported");
        else PyErr_Format(PyExc_TypeError, "expected a chess.Board, not %.100s", Py_TYPE(board)->tp_name);
        return -1;
    }
    static const char *const names[7] = {NULL, "pawns", "knights", "bishops", "rooks", "queens", "kings"};
    cb_bitboard pieces[7] = {0}, colors[2], promoted, castling;
    for (int type = CB_PAWN; type <= CB_KING; type++)
        if (read_bitboard(board, names[type], &pieces[type]) < 0) return -1;
    if (read_bitboard(board, "promoted", &promoted) < 0) return -1;
    PyObject *occupied_co = PyObject_GetAttrString(board, "occupied_co");
    if (!occupied_co) return -1;
    PyObject *sequence = PySequence_Fast(occupied_co, "board.occupied_co is not a sequence");
    Py_DECREF(occupied_co);
    if (!sequence) return -1;
    if (PySequence_Fast_GET_SIZE(sequence) != 2) {
        Py_DECREF(sequence);
        PyErr_SetString(PyExc_ValueError, "board.occupied_co does not hold two bitboards");
        return -1;
    }
    for (int color = 0; color < 2; color++) colors[color] = PyLong_AsUnsignedLongLong(
        PySequence_Fast_GET_ITEM(sequence, color));
    Py_DECREF(sequence);
    if (PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "board.occupied_co is not a pair of bitboards");
        return -1;
    }
    PyObject *rights = PyObject_CallMethod(board, "clean_castling_rights", NULL);
    if (!rights) return -1;
    castling = PyLong_AsUnsignedLongLong(rights);
    Py_DECREF(rights);
    if (PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "board.clean_castling_rights() is not a bitboard");
        return -1;
    }
    long ep_square, halfmove_clock, fullmove_number;
    int turn, chess960;
    if (read_long(board, "ep_square", &ep_square) < 0 || read_long(board, "halfmove_clock", &halfmove_clock) < 0
        || read_long(board, "fullmove_number", &fullmove_number) < 0 || read_flag(board, "turn", &turn) < 0
        || read_flag(board, "chess960", &chess960) < 0)
        return -1;
    if (promoted & pieces[CB_KING]) {
        PyErr_SetString(PyExc_ValueError, "a promoted king");
        return -1;
    }
    return hb_set_position(position, pieces, colors[CB_WHITE], colors[CB_BLACK], turn, castling, ep_square,
                           halfmove_clock, fullmove_number, chess960);
}

static int same_position(const cb_position *a, const cb_position *b) {
    return !memcmp(a->pieces, b->pieces, sizeof a->pieces) && !memcmp(a->colors, b->colors, sizeof a->colors)
           && a->castling == b->castling && a->ep_square == b->ep_square && a->turn == b->turn
           && a->halfmove_clock == b->halfmove_clock && a->fullmove_number == b->fullmove_number;
}

/* Replay a python-chess board's move stack from its root(), so that repetitions see the game's history. */
static int replay_history(BoardObject *self, PyObject *board, const cb_position *current) {
    PyObject *root = PyObject_CallMethod(board, "root", NULL);
    if (!root) return -1;
    cb_position start;
    int status = read_position(root, &start);
    Py_DECREF(root);
    if (status < 0) return -1;
    cb_board_init(&self->board, &start);
    PyObject *stack = PyObject_GetAttrString(board, "move_stack");
    if (!stack) return -1;
    PyObject *moves = PySequence_Fast(stack, "board.move_stack is not a sequence");
    Py_DECREF(stack);
    if (!moves) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(moves);
    for (Py_ssize_t i = 0; i < count && status == 0; i++) {
        PyObject *move = PySequence_Fast_GET_ITEM(moves, i);
        long from, to, promotion, drop;
        if (read_long(move, "from_square", &from) < 0 || read_long(move, "to_square", &to) < 0
            || read_long(move, "promotion", &promotion) < 0 || read_long(move, "drop", &drop) < 0) {
            status = -1;
        } else if (drop != -1 || from < 0 || from > 63 || to < 0 || to > 63 || promotion < -1 || promotion > 6
                   || !is_legal(self, CB_MOVE(from, to, promotion < 0 ? 0 : promotion))) {
            PyErr_Format(PyExc_ValueError, "the move stack's move %zd is not legal (a null move or a drop?)", i + 1);
            status = -1;
        } else if (cb_board_push(&self->board, CB_MOVE(from, to, promotion < 0 ? 0 : promotion)) < 0) {
            PyErr_NoMemory();
            status = -1;
        }
        self->legal_count = -1;
    }
    Py_DECREF(moves);
    if (status == 0 && !same_position(&self->board.position, current)) {
        PyErr_SetString(PyExc_ValueError, "the move stack does not lead from the root to the position");
        status = -1;
    }
    return status;
}

/* ------------------------------------------------------------------ construction */

static PyObject *Board_from_board(PyObject *cls, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"board", "history", NULL};
    PyObject *board;
    int history = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:from_board", keywords, &board, &history)) return NULL;
    cb_position position;
    if (read_position(board, &position) < 0) return NULL;
    BoardObject *self = new_board();
    if (!self) return NULL;
    if (history) {
        if (replay_history(self, board, &position) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    } else {
        cb_board_init(&self->board, &position);
    }
    return (PyObject *)self;
}

static PyObject *Board_from_fen(PyObject *cls, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"fen", "chess960", NULL};
    PyObject *fen;
    int chess960 = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|p:from_fen", keywords, &fen, &chess960)) return NULL;
    PyObject *board_class = chess_board();
    if (!board_class) return NULL;
    PyObject *positional = PyTuple_Pack(1, fen);
    PyObject *keywords_given = Py_BuildValue("{s:O}", "chess960", chess960 ? Py_True : Py_False);
    PyObject *board = positional && keywords_given ? PyObject_Call(board_class, positional, keywords_given) : NULL;
    Py_XDECREF(positional);
    Py_XDECREF(keywords_given);
    if (!board) return NULL;
    cb_position position;
    int status = read_position(board, &position);
    Py_DECREF(board);
    if (status < 0) return NULL;
    BoardObject *self = new_board();
    if (!self) return NULL;
    cb_board_init(&self->board, &position);
    return (PyObject *)self;
}

static PyObject *Board_copy(BoardObject *self, PyObject *unused) {
    BoardObject *copy = new_board();
    if (!copy) return NULL;
    cb_board_init(&copy->board, &self->board.position);
    if (cb_board_copy(&copy->board, &self->board) < 0) {
        Py_DECREF(copy);
        return PyErr_NoMemory();
    }
    return (PyObject *)copy;
}

/* ------------------------------------------------------------------ moves */

static PyObject *Board_legal_moves(BoardObject *self, PyObject *unused) {
    const cb_move *moves = legal_moves(self);
    return hb_list(moves, self->legal_count, hb_move_item);
}

static PyObject *Board_push(BoardObject *self, PyObject *object) {
    long code = legal_code(self, object);
    if (code < 0) return NULL;
    if (cb_board_push(&self->board, (cb_move)code) < 0) {
        PyErr_SetString(PyExc_MemoryError, "the board's history is full");
        return NULL;
    }
    self->legal_count = -1;
    Py_RETURN_NONE;
}

static PyObject *Board_push_null(BoardObject *self, PyObject *unused) {
    if (cb_checkers(&self->board.position)) {
        PyErr_SetString(PyExc_ValueError, "no null move in check: the side not to move would be in check");
        return NULL;
    }
    if (cb_board_push(&self->board, 0) < 0) {
        PyErr_SetString(PyExc_MemoryError, "the board's history is full");
        return NULL;
    }
    self->legal_count = -1;
    Py_RETURN_NONE;
}

static PyObject *Board_pop(BoardObject *self, PyObject *unused) {
    int move = cb_board_pop(&self->board);
    if (move < 0) {
        PyErr_SetString(PyExc_IndexError, "pop from a board without moves");
        return NULL;
    }
    self->legal_count = -1;
    return PyLong_FromLong(move);
}

static PyObject *Board_gives_check(BoardObject *self, PyObject *object) {
    PyObject *sequence = PySequence_Fast(object, "gives_check() takes a sequence of move codes");
    if (!sequence) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    PyObject *flags = PyList_New(count);
    if (!flags) {
        Py_DECREF(sequence);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        long code = legal_code(self, PySequence_Fast_GET_ITEM(sequence, i));
        if (code < 0) {
            Py_DECREF(sequence);
            Py_DECREF(flags);
            return NULL;
        }
        PyObject *flag = cb_gives_check(&self->board.position, (cb_move)code) ? Py_True : Py_False;
        Py_INCREF(flag);
        PyList_SET_ITEM(flags, i, flag);
    }
    Py_DECREF(sequence);
    return flags;
}

/* ------------------------------------------------------------------ perft */

static int perft_depth(PyObject *object, int *depth) {
    long value = PyLong_AsLong(object);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (value < 0 || value > MAX_PERFT_DEPTH) {
        PyErr_Format(PyExc_ValueError, "perft depth must be between 0 and %d, not %ld", MAX_PERFT_DEPTH, value);
        return -1;
    }
    *depth = (int)value;
    return 0;
}

static PyObject *Board_perft(BoardObject *self, PyObject *object) {
    int depth;
    if (perft_depth(object, &depth) < 0) return NULL;
    cb_position position = self->board.position;  /* a copy: the GIL is released while it counts */
    uint64_t nodes;
    Py_BEGIN_ALLOW_THREADS
    nodes = cb_perft(&position, depth);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(nodes);
}

static PyObject *Board_divide(BoardObject *self, PyObject *object) {
    int depth;
    if (perft_depth(object, &depth) < 0) return NULL;
    if (depth < 1) {
        PyErr_SetString(PyExc_ValueError, "divide needs a depth of at least 1");
        return NULL;
    }
    cb_position position = self->board.position;
    cb_move moves[CB_MAX_MOVES];
    uint64_t nodes[CB_MAX_MOVES];
    int count;
    Py_BEGIN_ALLOW_THREADS
    count = cb_legal_moves(&position, moves);
    for (int i = 0; i < count; i++) {
        cb_position child = position;
        cb_make(&child, moves[i], 0);
        nodes[i] = cb_perft(&child, depth - 1);
    }
    Py_END_ALLOW_THREADS
    PyObject *list = PyList_New(count);
    if (!list) return NULL;
    for (int i = 0; i < count; i++) {
        PyObject *pair = Py_BuildValue("(iK)", (int)moves[i], (unsigned long long)nodes[i]);
        if (!pair) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* ------------------------------------------------------------------ game end */

static int tree_plies(PyObject *args, const char *format, int *plies) {
    *plies = 0;
    return PyArg_ParseTuple(args, format, plies) ? 0 : -1;
}

static PyObject *Board_result(BoardObject *self, PyObject *args) {
    int plies;
    if (tree_plies(args, "|i:result", &plies) < 0) return NULL;
    legal_moves(self);
    int result = cb_board_result(&self->board, self->legal_count, plies);
    if (result == CB_ONGOING) Py_RETURN_NONE;
    return PyLong_FromLong(result);
}

static PyObject *Board_is_repetition(BoardObject *self, PyObject *args) {
    int plies;
    if (tree_plies(args, "|i:is_repetition", &plies) < 0) return NULL;
    return PyBool_FromLong(cb_board_repetition(&self->board, plies));
}

static PyObject *Board_is_check(BoardObject *self, PyObject *unused) {
    return PyBool_FromLong(cb_checkers(&self->board.position) != 0);
}

static PyObject *Board_is_insufficient_material(BoardObject *self, PyObject *unused) {
    return PyBool_FromLong(cb_insufficient_material(&self->board.position));
}

/* ------------------------------------------------------------------ state */

static PyObject *Board_state(BoardObject *self, PyObject *unused) {
    return hb_state_tuple(&self->board.position, 0);
}

static PyObject *Board_get_key(BoardObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->board.position.key);
}

static PyObject *Board_get_polyglot_key(BoardObject *self, void *unused) {
    return PyLong_FromUnsignedLongLong(cb_polyglot_key(&self->board.position));
}

static PyObject *Board_get_turn(BoardObject *self, void *unused) {
    return PyBool_FromLong(self->board.position.turn);
}

static PyObject *Board_get_halfmove_clock(BoardObject *self, void *unused) {
    return PyLong_FromLong(self->board.position.halfmove_clock);
}

static PyObject *Board_get_chess960(BoardObject *self, void *unused) {
    return PyBool_FromLong(self->board.position.chess960);
}

static PyObject *Board_get_ply(BoardObject *self, void *unused) {
    return PyLong_FromLong(self->board.plies);
}

static PyMethodDef Board_methods[] = {
    HB_METHOD("from_board", Board_from_board, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
              "from_board(board, history=True): the position of a chess.Board; with history its move stack is "
              "replayed from board.root() so that repetitions count the game's earlier positions. ValueError for a "
              "position the compiled board does not take (variants, no or two kings of a side, pawns on a back rank, "
              "more than 16 pieces of a side, the side not to move in check, unclean castling rights or en-passant "
              "square, null moves)."),
    HB_METHOD("from_fen", Board_from_fen, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
              "from_fen(fen, chess960=False): chess.Board(fen, chess960=chess960) as a compiled board."),
    HB_METHOD("copy", Board_copy, METH_NOARGS, "copy(): an independent board with the same history."),
    HB_METHOD("legal_moves", Board_legal_moves, METH_NOARGS,
              "legal_moves(): the move codes from | to << 6 | promotion << 12 in python-chess's "
              "generate_legal_moves() order."),
    HB_METHOD("push", Board_push, METH_O, "push(code): make a legal move (ValueError for any other code)."),
    HB_METHOD("push_null", Board_push_null, METH_NOARGS,
              "push_null(): pass, as chess.Board.push(chess.Move.null()) (ValueError in check); pop() returns 0."),
    HB_METHOD("pop", Board_pop, METH_NOARGS, "pop(): unmake the last move and return its code (IndexError)."),
    HB_METHOD("gives_check", Board_gives_check, METH_O,
              "gives_check(codes): for each legal move code, whether it checks (chess.Board.gives_check)."),
    HB_METHOD("perft", Board_perft, METH_O, "perft(depth): leaf nodes depth plies below the position."),
    HB_METHOD("divide", Board_divide, METH_O,
              "divide(depth): [(code, perft(depth - 1) after it)] for each legal move, in order."),
    HB_METHOD("result", Board_result, METH_VARARGS,
              "result(tree_plies=0): hackmate_core.rules.game_result: -1 checkmated, 0 drawn, None going on; the "
              "last tree_plies moves were made inside the search tree."),
    HB_METHOD("is_repetition", Board_is_repetition, METH_VARARGS,
              "is_repetition(tree_plies=0): hackmate_core.rules.repetition_draw."),
    HB_METHOD("is_check", Board_is_check, METH_NOARGS, "is_check(): the side to move is in check."),
    HB_METHOD("is_insufficient_material", Board_is_insufficient_material, METH_NOARGS,
              "is_insufficient_material(): chess.Board.is_insufficient_material."),
    HB_STATE_METHOD(Board_state, ""),
    HB_END,
};

static PyGetSetDef Board_getset[] = {
    HB_GETTER("key", Board_get_key,
              "64-bit Zobrist key of the position as python-chess's _transposition_key sees it (every castling "
              "right, the en-passant file only when the capture is legal): equal positions for repetitions."),
    HB_GETTER("polyglot_key", Board_get_polyglot_key, "chess.polyglot.zobrist_hash of the position."),
    HB_GETTER("turn", Board_get_turn, "True: white to move."),
    HB_GETTER("halfmove_clock", Board_get_halfmove_clock, "half-moves since the last capture or pawn move."),
    HB_GETTER("chess960", Board_get_chess960, "castling moves are encoded as king takes rook."),
    HB_GETTER("ply", Board_get_ply, "moves in the board's history (replayed ones included)."),
    HB_END,
};

HB_TYPE(Board,
        "A chess position with its history, python-chess's rules in C. Build one with Board.from_board "
        "or Board.from_fen.",
        NULL, Board_dealloc, Board_methods, Board_getset);

PyMODINIT_FUNC PyInit__cboard(void) {
    static PyTypeObject *const types[] = {&BoardType, NULL};
    static const hb_constant constants[] = {{"MAX_MOVES", CB_MAX_MOVES}, {"MAX_PERFT_DEPTH", MAX_PERFT_DEPTH},
                                            {NULL, 0}};
    return hb_create_module(HB_MODULE, "The compiled chess board of hackmate_core (python-chess's rules in C).",
                            API_VERSION, NULL, types, constants);
}
