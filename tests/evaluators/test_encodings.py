"""Move and board encodings shared by the engine and training."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from evaluators.encoding import ENCODINGS, get_encoding
from evaluators.moves import MIRROR_FILES, POLICY_SIZE, index_to_move, legal_move_indices, mirror_move, move_to_index


def random_positions(count: int, seed: int = 7, max_ply: int = 120):
    """Up to ``count`` positions of random games (one board, yielded before each move: copy it to keep it), a new
    game after a game's end or ``max_ply``."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(count):
        moves = list(board.legal_moves)
        if not moves or board.ply() > max_ply:
            board = chess.Board()
            continue
        yield board
        board.push(rng.choice(moves))


def test_move_index_is_a_bijection_on_legal_moves():
    checked = 0
    for board in random_positions(3000):
        moves, indices = legal_move_indices(board)
        assert len(set(indices.tolist())) == len(moves)
        assert all(0 <= i < POLICY_SIZE for i in indices)
        for move, index in zip(moves, indices):
            assert index_to_move(int(index), board) == move
        checked += len(moves)
    assert checked > 50000


def test_mirror_table_maps_each_move_to_its_mirror_image():
    assert sorted(MIRROR_FILES.tolist()) == list(range(POLICY_SIZE))  # a permutation
    checked = 0
    for board in random_positions(1500):
        mirrored = board.transform(chess.flip_horizontal)
        for move in board.legal_moves:
            image = mirror_move(move)
            assert mirrored.is_legal(image) or board.has_castling_rights(board.turn)
            assert MIRROR_FILES[move_to_index(move, board.turn)] == move_to_index(image, board.turn)
            checked += 1
    assert checked > 20000


def test_promotions_and_underpromotions_have_distinct_slots():
    board = chess.Board("1n6/P7/8/8/8/8/8/k6K w - - 0 1")
    moves, indices = legal_move_indices(board)
    promotions = [m for m in moves if m.promotion]
    assert len(promotions) == 8  # a8 and xb8, four pieces each
    assert len({move_to_index(m, board.turn) for m in promotions}) == 8


def test_black_moves_are_flipped():
    white = chess.Board()
    black = chess.Board()
    black.push_uci("e2e4")
    assert move_to_index(chess.Move.from_uci("e2e4"), chess.WHITE) == \
        move_to_index(chess.Move.from_uci("e7e5"), chess.BLACK)
    assert white.turn != black.turn


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_colour_flip_gives_identical_planes(name):
    encoding = get_encoding(name)
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")
    mirrored = board.mirror()  # same position, colours swapped, Black to move
    a, b = encoding.encode(board), encoding.encode(mirrored)
    assert a.shape == (encoding.planes, 8, 8)
    if encoding.history == 1:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_array_equal(a[:13], b[:13])  # current position and repetition plane
        np.testing.assert_array_equal(a[104:108], b[104:108])  # castling
        assert a[108].sum() == 0 and b[108].sum() == 64  # colour plane differs


def test_planes18_layout():
    planes = get_encoding("planes18").encode(chess.Board())
    assert planes[0].sum() == 8 and planes[0][1].all()  # own pawns on rank 2
    assert planes[6].sum() == 8 and planes[6][6].all()  # opponent pawns on rank 7
    assert planes[12:16].all()  # all castling rights
    assert planes[16].sum() == 0  # no en passant
    board = chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 50 60")
    assert get_encoding("planes18").encode(board)[17][0][0] == pytest.approx(0.5)


def test_lc0_history_and_repetition_planes():
    encoding = get_encoding("lc0-112")
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    planes = encoding.encode(board)
    assert planes[12].all()  # the current position occurred before
    assert planes[13 + 1].sum() == 2  # one ply ago (after f3g1), our knights: b1 and g1


def test_unknown_encoding_is_refused():
    with pytest.raises(KeyError, match="unknown board encoding"):
        get_encoding("planes42")


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_mover_board_has_the_slots_of_the_encoded_positions_legal_moves(name):
    encoding = get_encoding(name)
    checked = 0
    for board in random_positions(600, seed=11):
        if name == "lc0-112" and board.ep_square is not None and board.has_legal_en_passant():
            continue  # lc0-112 has no en-passant plane (documented)
        decoded = encoding.mover_board(encoding.binary(board))
        assert decoded.turn == chess.WHITE
        assert sorted(legal_move_indices(decoded)[1]) == sorted(legal_move_indices(board)[1]), board.fen()
        checked += 1
    assert checked > 500


def in_lc0_order(planes: np.ndarray) -> np.ndarray:
    """``lc0-112`` planes in Lc0's order: its fifty-move plane (the plies, up to 100 here) before the zeros and
    ones."""
    return np.concatenate([planes[:109], np.rint(planes[111:] * 100), planes[109:111]])


LC0_GAMES = {
    "start position, a short game: nothing before the start": (None, "e2e4 c7c5 g1f3"),
    "black to move": (None, "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4 d1c2 e8g8 a2a3"),
    "a FEN without moves, en passant": ("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3", ""),
    "a FEN after White's double step, then knights out and back": (
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", "g8f6 g1f3 f6g8 f3g1 g8f6"),
    "a FEN without en passant, Black to move": ("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 5 40", "a8b8 e1f1"),
    "repetitions": (None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8 b1c3"),
    "repetitions cut by a pawn move": (None, "g1f3 g8f6 f3g1 f6g8 e2e3 b8c6 g1f3 c6b8 f3g1 b8c6 g1f3"),
    "the start position by a FEN with Black to move": ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1",
                                                       "g8f6 b1c3"),
}


@pytest.mark.parametrize("name", list(LC0_GAMES))
def test_lc0_planes_are_lc0s(name):
    from tests.leela_files import lc0_planes
    fen, moves = LC0_GAMES[name]
    root = chess.Board(fen) if fen else chess.Board()
    board = root.copy()
    played = []
    for move in [chess.Move.from_uci(uci) for uci in moves.split()]:
        board.push(move)
        played.append(move)
        np.testing.assert_array_equal(in_lc0_order(get_encoding("lc0-112").encode(board)),
                                      lc0_planes(root, played), err_msg=f"{name}: {board.fen()}")
    np.testing.assert_array_equal(in_lc0_order(get_encoding("lc0-112").encode(board)), lc0_planes(root, played))


def test_lc0_planes_of_random_games_are_lc0s():
    """Random games from the start and from positions of other games given as FENs (their history dropped)."""
    from tests.leela_files import lc0_planes
    rng = random.Random(5)
    encoding = get_encoding("lc0-112")
    checked = 0
    for game in range(24):
        root = chess.Board()
        if game % 2:  # a FEN from a random game's middle
            for _ in range(rng.randrange(4, 40)):
                moves = list(root.legal_moves)
                if not moves:
                    break
                root.push(rng.choice(moves))
            root = chess.Board(root.fen())
        board, played = root.copy(), []
        for _ in range(rng.randrange(0, 14)):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = rng.choice(moves)
            board.push(move)
            played.append(move)
        np.testing.assert_array_equal(in_lc0_order(encoding.encode(board)), lc0_planes(root, played),
                                      err_msg=f"{root.fen()} {[m.uci() for m in played]}")
        checked += 1
    assert checked == 24


def features(fen: str, ucis: str = "", chess960: bool = False) -> np.ndarray:
    board = chess.Board(fen, chess960=chess960)
    for uci in ucis.split():
        board.push_uci(uci)
    return get_encoding("features36").encode(board)


def squares_of(plane: np.ndarray) -> set[str]:
    """The squares set in a plane as the network sees it (row 0 is the side to move's first rank)."""
    return {chess.square_name(chess.square(file, rank)) for rank, file in zip(*np.nonzero(plane))}


def test_features36_begins_as_planes18_and_ends_with_the_fifty_move_plane():
    for board in random_positions(300, seed=13):
        old, new = get_encoding("planes18").encode(board), get_encoding("features36").encode(board)
        np.testing.assert_array_equal(new[:17], old[:17])
        np.testing.assert_array_equal(new[35], old[17])
        assert set(np.unique(new[:35])) <= {0.0, 1.0}


def test_features36_pieces_checkers_and_bishops():
    planes = features("4r1k1/8/3b4/8/8/3n4/3B4/4K3 w - - 0 1")  # double check: the rook e8, the knight d3
    assert squares_of(planes[17]) == {"d2", "e1"} and squares_of(planes[18]) == {"d3", "d6", "e8", "g8"}
    assert squares_of(planes[19]) == {"d3", "e8"}
    assert not planes[20].any()  # d2 and d6: both light
    planes = features("6k1/8/3b4/8/8/8/4B3/4K3 b - - 0 1")  # e2 dark, d6 light; Black to move, flipped
    assert planes[20].all() and not planes[19].any()
    assert squares_of(planes[17]) == {"g1", "d3"} and squares_of(planes[18]) == {"e7", "e8"}
    assert not features("6k1/8/3b4/8/8/8/3BB3/4K3 w - - 0 1")[20].any()  # two bishops against one
    assert squares_of(features("4k3/8/8/8/8/8/8/4K2r w - - 0 1")[19]) == {"h1"}  # a single check


def test_features36_material_comparisons():
    # White: 2 pawns, a knight, a rook; Black: 1 pawn, 2 bishops, a queen; Black to move sees itself first
    planes = features("3qk3/8/8/2b1b3/5p2/8/PP6/1N2K2R b - - 0 1")
    more, fewer = planes[21:26].all(axis=(1, 2)).tolist(), planes[26:31].all(axis=(1, 2)).tolist()
    assert more == [False, False, True, False, True]  # pawns, knights, bishops, rooks, queens
    assert fewer == [True, True, False, True, False]
    assert not (planes[21:31].any(axis=(1, 2)) & ~planes[21:31].all(axis=(1, 2))).any()  # all or nothing


def test_features36_last_moves():
    planes = features(chess.STARTING_FEN, "e2e4 e7e5")
    assert [squares_of(planes[31 + i]) for i in range(4)] == [{"e7"}, {"e5"}, {"e2"}, {"e4"}]
    planes = features(chess.STARTING_FEN, "e2e4")  # Black to move: flipped, the last move is White's e2e4
    assert [squares_of(planes[31 + i]) for i in range(4)] == [{"e7"}, {"e5"}, set(), set()]
    assert not features(chess.STARTING_FEN)[31:35].any()  # a game without moves
    assert not features("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3")[31:35].any()  # a FEN
    null = chess.Board()
    null.push(chess.Move.null())
    assert not get_encoding("features36").encode(null)[31:33].any()
    # castling as the king's move to the g-file, whichever way python-chess keeps it
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    standard, chess960 = features(fen, "e1g1"), features(fen, "e1h1", chess960=True)
    np.testing.assert_array_equal(standard, chess960)
    assert squares_of(standard[31]) == {"e8"} and squares_of(standard[32]) == {"g8"}  # flipped for Black
    planes = features("bqnbrk1r/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEhe - 0 1", "f1h1", chess960=True)
    assert squares_of(planes[31]) == {"f8"} and squares_of(planes[32]) == {"g8"}  # a one-file king move
