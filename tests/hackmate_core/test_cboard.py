"""The compiled board (hackmate_core._cboard) against python-chess: it loads, it falls back, it agrees move for move.

The load test fails, rather than skips, when the extension is missing and HACKMATE_PURE_PYTHON is not set:
CI must really build it. With HACKMATE_PURE_PYTHON=1 the other tests are skipped.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import chess
import chess.polyglot
import chess.variant
import pytest

from hackmate_core import compiled, rules
from hackmate_core.compiled import code_move, move_code

FORCED_PURE = os.environ.get(compiled.PURE_PYTHON_VARIABLE, "") not in ("", "0")


@pytest.fixture(scope="module")
def cboard():
    """The extension module; a failure (not a skip) when it did not load unless the pure path is forced."""
    if FORCED_PURE:
        pytest.skip(f"{compiled.PURE_PYTHON_VARIABLE} is set")
    assert compiled.ACTIVE, compiled.why_not
    return compiled.cboard


def test_the_compiled_path_loads_unless_the_pure_path_is_forced():
    if FORCED_PURE:
        assert not compiled.ACTIVE and compiled.PURE_PYTHON_VARIABLE in compiled.why_not
    else:
        assert compiled.ACTIVE, f"the compiled board did not load: {compiled.why_not}"
        assert compiled.why_not is None


def test_the_environment_variable_forces_the_pure_python_path():
    code = ("import chess; from hackmate_core import compiled, perft; "
            "print(compiled.ACTIVE); print(compiled.why_not); print(perft.perft(chess.Board(), 2))")
    environment = dict(os.environ, **{compiled.PURE_PYTHON_VARIABLE: "1"})
    output = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    assert output[0] == "False"
    assert compiled.PURE_PYTHON_VARIABLE in output[1] and "pure-Python" in output[1]
    assert output[2] == "400"


def state(board: chess.Board) -> tuple:
    return (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.turn,
            board.clean_castling_rights(), board.ep_square, board.halfmove_clock, board.fullmove_number)


def assert_same(board: chess.Board, fast, tree_plies: int) -> None:
    moves = list(board.generate_legal_moves())
    codes = fast.legal_moves()
    assert [code_move(code) for code in codes] == moves, board.fen()
    assert fast.state() == state(board), board.fen()
    assert fast.polyglot_key == chess.polyglot.zobrist_hash(board), board.fen()
    assert fast.key == type(fast).from_board(board, history=False).key, board.fen()
    assert fast.is_check() == board.is_check()
    assert fast.result(tree_plies) == rules.game_result(board, moves, tree_plies), board.fen()
    assert fast.gives_check(codes) == [board.gives_check(move) for move in moves], board.fen()


def test_random_games_agree_with_python_chess_move_for_move(cboard):
    """About 3,000 positions of random games (standard and Chess960), pushed on both boards along the game."""
    rng = random.Random(7)
    positions = 0
    while positions < 3000:
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if rng.random() < 0.3 else chess.Board()
        fast = cboard.Board.from_board(board)
        for _ in range(rng.randrange(20, 160)):
            assert_same(board, fast, rng.randrange(12))
            positions += 1
            moves = list(board.generate_legal_moves())
            if not moves:
                break
            captures = [move for move in moves if board.is_capture(move) or move.promotion]
            move = rng.choice(captures if captures and rng.random() < 0.5 else moves)
            board.push(move)
            fast.push(move_code(move))


SPECIAL_POSITIONS = [
    # checks, double checks, pins, en passant (legal, and pseudo-legal only), promotions, castling
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", False),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", False),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", False),
    ("8/8/8/KPp4r/8/8/8/6k1 w - c6 0 2", False),             # en passant exposes the king along the rank
    ("8/8/8/4k3/2pP4/8/8/7K b - d3 0 1", False),              # the pushed pawn checks; capturing it en passant
    ("8/8/3k4/8/2pP4/8/8/3RK3 b - d3 0 1", False),            # the capturing pawn takes the shield's place
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", False),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", False),
    ("1r2k2r/8/8/8/8/8/8/R3K1R1 w Qk - 0 1", False),          # rooks and kings where castling is odd
    ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", False),
    ("3rkr2/8/8/8/8/8/8/R3K2R w KQ - 0 1", False),            # castling through and into attacked squares
    ("4k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1", False),
    ("4k3/8/8/8/8/8/8/4K1r1 w - - 0 1", False),
    ("4k3/8/5N2/1b6/8/8/8/4K2R b K - 0 1", False),           # check by a knight
    ("1k6/8/8/8/8/8/1r6/RK4r1 w A - 0 1", True),             # Chess960: the king's castling path attacked
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", True),
    ("2r1k3/8/8/8/8/8/8/1RK4R w HB - 0 1", True),
    ("rk5r/8/8/8/8/8/8/RK5R w AHah - 0 1", True),             # king next to its a-side rook
    ("4k3/8/8/8/8/8/8/QQQQKQQQ w - - 0 1", False),            # seven queens
    ("QQQQkQQQ/QQQQQQQQ/8/8/8/8/8/4K3 b - - 0 1", False),     # fifteen queens: checkmate
    ("4k3/4r3/8/8/8/5n2/8/4K3 w - - 0 1", False),             # double check
    ("4k3/8/8/8/8/2n2n2/3r4/1b1rKr2 w - - 0 1", False),       # three checkers, an impossible check
    ("8/8/8/8/8/5k2/8/4K2R w K - 150 90", False),             # fifty-move counter far above 100
    ("8/8/8/8/8/2k5/8/K1N5 w - - 0 1", False),                # insufficient material
    ("8/8/8/8/8/2k5/2b5/K1B5 w - - 0 1", False),
]


@pytest.mark.parametrize("fen,chess960", SPECIAL_POSITIONS)
def test_special_positions_and_every_move_from_them_agree(cboard, fen, chess960):
    board = chess.Board(fen, chess960=chess960)
    fast = cboard.Board.from_fen(fen, chess960)
    assert_same(board, fast, 0)
    replies = 0
    for move in list(board.generate_legal_moves()):
        board.push(move)
        fast.push(move_code(move))
        assert_same(board, fast, 1)
        replies += board.legal_moves.count()
        fast.pop()
        board.pop()
    assert fast.state() == state(board)
    assert fast.perft(2) == replies


REFUSED = [
    ("4k3/8/8/8/8/8/8/8 w - - 0 1", "without a king"),
    ("4k3/8/8/8/8/8/8/3KK3 w - - 0 1", "without a king or with more than one"),
    ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "back rank"),
    ("4k3/8/8/8/8/8/8/r3K3 b - - 0 1", "not to move is in check"),
    ("4k3/8/8/8/8/8/8/4K3 w - e6 0 1", "en-passant"),
    ("QQQQkQQQ/QQQQQQQQ/Q7/8/8/8/8/4K3 b - - 0 1", "more than 16"),
]


@pytest.mark.parametrize("fen,reason", REFUSED)
def test_positions_it_does_not_take_are_refused_with_a_reason(cboard, fen, reason):
    with pytest.raises(ValueError, match=reason):
        cboard.Board.from_fen(fen)


def test_castling_rights_are_taken_as_python_chess_cleans_them(cboard):
    board = chess.Board("4k3/8/8/8/8/8/8/4K2R w KQkq - 0 1")  # Q, k and q name no rook: cleaned away
    assert cboard.Board.from_board(board).state()[9] == chess.BB_H1
    board.push_uci("e1f1")
    board.castling_rights = chess.BB_A1  # raw rights python-chess would use as they stand: refused
    with pytest.raises(ValueError, match="castling"):
        cboard.Board.from_board(board, history=False)


def test_bad_arguments_raise_and_never_crash(cboard):
    fast = cboard.Board.from_board(chess.Board())
    with pytest.raises(ValueError):
        fast.push(0)
    with pytest.raises(ValueError):
        fast.push(-1)
    with pytest.raises(ValueError):
        fast.push(1 << 40)
    with pytest.raises(TypeError):
        fast.push("e2e4")
    with pytest.raises(ValueError):
        fast.gives_check([move_code(chess.Move.from_uci("e2e5"))])
    with pytest.raises(IndexError):
        fast.pop()
    with pytest.raises(ValueError):
        fast.perft(-1)
    with pytest.raises(ValueError):
        fast.perft(1000)
    with pytest.raises(ValueError):
        fast.divide(0)
    with pytest.raises(TypeError):
        cboard.Board.from_board("not a board")
    with pytest.raises(TypeError):
        cboard.Board()
    with pytest.raises(ValueError):
        cboard.Board.from_fen("not a fen")
    with pytest.raises(ValueError, match="variant"):
        cboard.Board.from_board(chess.variant.AtomicBoard())
    assert fast.legal_moves() == [move_code(move) for move in chess.Board().generate_legal_moves()]


def test_the_history_is_replayed_and_a_null_move_refused(cboard):
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"):
        board.push_uci(uci)
    fast = cboard.Board.from_board(board)
    assert fast.ply == 7 and fast.state() == state(board)
    fast.push(move_code(chess.Move.from_uci("f6g8")))
    board.push_uci("f6g8")  # the start position a third time, all of it before the root
    for tree_plies in range(9):
        assert fast.is_repetition(tree_plies) == rules.repetition_draw(board, tree_plies)
    assert fast.result(0) == 0
    fast.pop()
    fast.pop()
    assert fast.result(2) is None and fast.ply == 6
    board.push(chess.Move.null())
    with pytest.raises(ValueError, match="null move"):
        cboard.Board.from_board(board)
    assert cboard.Board.from_board(board, history=False).ply == 0


def test_null_moves_agree_with_python_chess(cboard):
    """Random games with passes (chess.Board.push(chess.Move.null())) where the side to move is not in check: the
    state, the keys, repetitions and results agree after each; pop() gives back the pass as 0; no pass in check."""
    rng = random.Random(11)
    for _ in range(40):
        board = chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1")
        fast = cboard.Board.from_board(board)
        for _ in range(rng.randrange(10, 60)):
            moves = list(board.generate_legal_moves())
            if not moves:
                break
            if not board.is_check() and rng.random() < 0.3:
                board.push(chess.Move.null())
                fast.push_null()
            else:
                move = rng.choice(moves)
                board.push(move)
                fast.push(move_code(move))
            assert_same(board, fast, rng.randrange(12))
        while board.move_stack:
            assert fast.pop() == move_code(board.pop())
        assert fast.state() == state(board)
    checked = cboard.Board.from_board(chess.Board("4k3/8/5N2/1b6/8/8/8/4K2R b K - 0 1"))
    with pytest.raises(ValueError, match="in check"):
        checked.push_null()


def test_repetitions_inside_the_tree_count_once(cboard):
    board = chess.Board()
    fast = cboard.Board.from_board(board)
    for ply, uci in enumerate(("b1c3", "b8c6", "c3b1", "c6b8", "b1c3", "b8c6", "c3b1", "c6b8"), 1):
        board.push_uci(uci)
        fast.push(move_code(chess.Move.from_uci(uci)))
        for tree_plies in range(ply + 1):
            assert fast.is_repetition(tree_plies) == rules.repetition_draw(board, tree_plies), (ply, tree_plies)
            moves = list(board.generate_legal_moves())
            assert fast.result(tree_plies) == rules.game_result(board, moves, tree_plies)
        if ply == 4:  # the start position again: a draw when inside the tree, not yet when before it
            assert fast.is_repetition(4) and not fast.is_repetition(3)
    assert fast.is_repetition(0)  # a third time


def test_the_key_ignores_an_en_passant_square_no_legal_capture_uses(cboard):
    pinned = chess.Board("8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1")  # e4xd3 would leave the king in check
    assert pinned.has_pseudo_legal_en_passant() and not pinned.has_legal_en_passant()
    without = chess.Board("8/8/8/8/k2Pp2Q/8/8/3K4 b - - 0 1")
    fast, plain = cboard.Board.from_board(pinned), cboard.Board.from_board(without)
    assert fast.key == plain.key  # the same position for repetitions, as python-chess's transposition key
    assert fast.polyglot_key == chess.polyglot.zobrist_hash(pinned) != plain.polyglot_key


def test_a_copy_is_independent(cboard):
    fast = cboard.Board.from_board(chess.Board())
    fast.push(move_code(chess.Move.from_uci("e2e4")))
    copy = fast.copy()
    copy.push(move_code(chess.Move.from_uci("e7e5")))
    assert fast.ply == 1 and copy.ply == 2
    assert copy.pop() == move_code(chess.Move.from_uci("e7e5"))
    assert copy.state() == fast.state() and copy.key == fast.key
