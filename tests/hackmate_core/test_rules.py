"""The shared rules (hackmate_core), the option type, the LRU cache and the heuristic blend."""

from __future__ import annotations

import random

import chess
import chess.polyglot
import pytest

from evaluators.base import Evaluation, Evaluator
from evaluators.blend import BlendedEvaluator, best_exchange_cp
from evaluators.cache import CachedComparator, CachedEvaluator
from hackmate_core.lru import LruCache
from evaluators.material import MaterialEvaluator, quiescence_cp, quiescence_line
from hackmate_core.options import Configurable, Option, OptionError
from hackmate_core.exchange import keeps_material, mvv_lva, see
from hackmate_core.rules import (game_result, insufficient_material, legal_moves, mate_in_one, repetition_draw,
                                 repetition_draw_keys)
from hackmate_core.score import (MATE, TB_WIN_CP, mate_in_moves, mated_score, mating_score, score_wdl,
                                 tablebase_score, uci_score)
from hackmate_core.score import cp_to_q


def play(board: chess.Board, *moves: str) -> chess.Board:
    for uci in moves:
        board.push_uci(uci)
    return board


KNIGHT_DANCE = ("g1f3", "g8f6", "f3g1", "f6g8")


# ------------------------------------------------------------------- repetition

def test_repetition_inside_the_tree_is_a_draw_at_once():
    board = play(chess.Board(), *KNIGHT_DANCE)  # the start position again
    assert repetition_draw(board, tree_plies=4)  # the earlier occurrence is the root: inside the tree
    assert not repetition_draw(board, tree_plies=0)  # both occurrences are game history: only a second one


def test_repetition_against_game_history_needs_a_third_occurrence():
    board = play(chess.Board(), *KNIGHT_DANCE)
    assert not repetition_draw(board, tree_plies=2)
    play(board, *KNIGHT_DANCE)
    assert repetition_draw(board, tree_plies=0)  # third occurrence
    assert board.is_repetition(3)


def test_repetition_counts_only_positions_since_the_last_pawn_move():
    board = play(chess.Board(), "e2e4", "e7e5", *KNIGHT_DANCE)
    assert repetition_draw(board, tree_plies=4)
    board = play(chess.Board(), "g1f3", "g8f6", "e2e4", "f6g8", "f3g1", "g8f6")
    assert not repetition_draw(board, tree_plies=6)  # e2e4 in between: a different position


def test_repetition_needs_same_castling_rights():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    play(board, "e1f1", "e8f8", "f1e1", "f8e8")  # same pieces, but the rights are gone
    assert not repetition_draw(board, tree_plies=4)
    play(board, "e1f1", "e8f8", "f1e1", "f8e8")
    assert repetition_draw(board, tree_plies=4)


def test_key_form_agrees_with_the_board_form_on_random_games():
    rng = random.Random(7)
    draws = 0
    for game in range(30):
        board = chess.Board()
        keys: list[int] = []
        root = rng.randrange(0, 40)
        for ply in range(80):
            moves = [m for m in board.legal_moves if not board.is_capture(m) and
                     board.piece_type_at(m.from_square) != chess.PAWN] if ply > 6 else list(board.legal_moves)
            if not moves:
                break
            keys.append(chess.polyglot.zobrist_hash(board))
            back = chess.Move(board.move_stack[-2].to_square, board.move_stack[-2].from_square) \
                if len(board.move_stack) > 1 else None
            board.push(back if back in moves and rng.random() < 0.5 else rng.choice(moves))  # back and forth
            tree_plies = max(0, len(board.move_stack) - root)
            expected = repetition_draw(board, tree_plies)
            tree_start = min(root, len(keys))
            assert repetition_draw_keys(keys, chess.polyglot.zobrist_hash(board), board.halfmove_clock,
                                        tree_start) == expected, (game, ply, board.fen())
            draws += expected
    assert draws > 10


# -------------------------------------------------------------------- game end

def test_game_result_by_rule():
    mated = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1")
    assert game_result(mated, list(mated.legal_moves), 1) == -1
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert game_result(stalemate, list(stalemate.legal_moves), 1) == 0
    fifty = chess.Board("7k/8/8/8/8/8/8/K6Q b - - 100 80")
    assert game_result(fifty, list(fifty.legal_moves), 1) == 0
    mate_on_the_hundredth = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 100 80")
    assert game_result(mate_on_the_hundredth, list(mate_on_the_hundredth.legal_moves), 1) == -1
    assert game_result(chess.Board(), list(chess.Board().legal_moves), 0) is None


@pytest.mark.parametrize("fen,insufficient", [("8/8/4k3/8/8/3BK3/8/8 w - - 0 1", True),
                                               ("8/8/4k3/8/8/3NK3/8/8 w - - 0 1", True),
                                               ("8/8/4k3/8/2b5/3BK3/8/8 w - - 0 1", True),  # same-coloured bishops
                                               ("8/8/4k3/8/8/2NBK3/8/8 w - - 0 1", False),
                                               ("8/8/4k3/8/8/3PK3/8/8 w - - 0 1", False)])
def test_insufficient_material(fen, insufficient):
    assert insufficient_material(chess.Board(fen)) == insufficient


# ---------------------------------------------------------------------- scores

def test_mate_and_tablebase_scores_convert_to_uci():
    assert uci_score(mating_score(1)) == ("mate", 1)
    assert uci_score(mating_score(3)) == ("mate", 2)
    assert uci_score(mated_score(2)) == ("mate", -1)
    assert uci_score(mated_score(0)) == ("mate", 0)
    assert mate_in_moves(123) is None
    assert uci_score(tablebase_score(1, 3)) == ("cp", TB_WIN_CP - 3)
    assert uci_score(tablebase_score(-1, 3)) == ("cp", -TB_WIN_CP + 3)
    assert uci_score(tablebase_score(0, 3)) == ("cp", 0)
    assert uci_score(-57) == ("cp", -57)
    assert score_wdl(tablebase_score(1, 5)) == (1000, 0, 0) and score_wdl(mated_score(4)) == (0, 0, 1000)
    assert score_wdl(0) == (0, 1000, 0)
    assert mating_score(1) < MATE


# ------------------------------------------------------------ capture ordering

@pytest.mark.parametrize("fen,move,value", [
    ("4k3/8/8/3p4/8/8/3Q4/4K3 w - - 0 1", "d2d5", 100),  # free pawn
    ("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1", "d2d5", 100 - 900),  # defended pawn
    ("4k3/8/4p3/3p4/4P3/8/3Q4/4K3 w - - 0 1", "e4d5", 100),  # recapturing would lose the e-pawn to the queen
    ("4k3/3r4/8/3r4/8/8/3R4/3RK3 w - - 0 1", "d2d5", 500),  # two rooks each: Black stops after one trade
    ("4k3/8/8/1q1r4/2P5/8/8/R2QK3 w - - 0 1", "d1d5", 500),  # QxR, QxQ, PxQ
    ("4k3/8/4b3/3n4/8/8/3R4/4K3 w - - 0 1", "d2d5", 320 - 500),  # knight defended by a bishop
    ("4k3/8/8/8/8/8/3q4/3RK3 b - - 0 1", "d2d1", 500 - 900),  # the king recaptures
    ("3rk3/8/8/8/8/8/3q4/3RK3 b - - 0 1", "d2d1", 500),  # ... unless the rook behind (x-ray) guards d1
    ("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1", "e5d6", 100),  # en passant
])
def test_static_exchange_evaluation(fen, move, value):
    assert see(chess.Board(fen), chess.Move.from_uci(move)) == value


@pytest.mark.parametrize("fen,move,keeps", [
    ("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1", "d2d5", False),  # queen for a defended pawn
    ("4k3/8/4b3/3n4/8/8/3R4/4K3 w - - 0 1", "d2d5", False),  # rook for a defended knight
    ("4k3/8/4p3/3p4/4P3/8/3Q4/4K3 w - - 0 1", "e4d5", True),  # pawn for pawn, whatever follows
    ("4k3/8/8/3p4/8/8/3Q4/4K3 w - - 0 1", "d2d5", True),  # a free pawn
])
def test_keeps_material(fen, move, keeps):
    assert keeps_material(chess.Board(fen), chess.Move.from_uci(move)) is keeps


def test_mvv_lva_prefers_big_victims_then_small_attackers():
    board = chess.Board("4k3/8/8/1q1r4/2P5/8/8/R2QK3 w - - 0 1")
    captures = sorted(board.generate_legal_captures(), key=lambda m: mvv_lva(board, m), reverse=True)
    assert [m.uci() for m in captures] == ["c4b5", "c4d5", "d1d5"]


def test_quiescence_uses_the_shared_ordering_and_sees_recaptures():
    evaluator = MaterialEvaluator()
    assert quiescence_cp(evaluator, chess.Board("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1")) == 900 - 200
    assert quiescence_cp(evaluator, chess.Board("4k3/8/8/3p4/8/8/3Q4/4K3 w - - 0 1")) == 900


def test_quiescence_line_is_the_capture_sequence_behind_its_score():
    evaluator = MaterialEvaluator()
    # Nxd5 wins the queen; Black recaptures (losing the pawn to Rxd5 is better than staying a rook down)
    board = chess.Board("4k3/8/2p5/3q4/8/2N5/8/3RK3 w - - 0 1")
    assert quiescence_line(evaluator, board) == (quiescence_cp(evaluator, board),
                                                 [chess.Move.from_uci(m) for m in ("c3d5", "c6d5", "d1d5")])
    assert quiescence_line(evaluator, board)[0] == 500
    # the same pawn guarding a pawn: Nxd5 cxd5 Rxd5 would give a knight for two pawns, so White stands pat
    board = chess.Board("4k3/8/2p5/3p4/8/2N5/8/3RK3 w - - 0 1")
    assert quiescence_line(evaluator, board) == (evaluator.centipawns(board), [])
    assert quiescence_line(evaluator, chess.Board()) == (0, [])


# ----------------------------------------------------------------- mate in one

def _mates(board: chess.Board) -> list[chess.Move]:
    """Every mating move, by playing each legal move."""
    found = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            found.append(move)
        board.pop()
    return found


@pytest.mark.parametrize("fen,mates", [
    ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", ["a1a8"]),  # back rank
    ("4r1k1/3R1ppp/8/8/8/8/5PPP/6K1 b - - 0 1", ["e8e1"]),
    ("6rk/7p/8/4N3/8/8/8/B5K1 w - - 0 1", ["e5g6"]),  # double check
    # only discovered checks mate: the knight itself checks from nowhere
    ("6bk/5P1p/6P1/4N3/8/8/8/B5K1 w - - 0 1", ["e5d7", "e5c6", "e5g4", "e5c4", "e5f3", "e5d3"]),
    ("8/8/8/8/8/8/R7/R3K2k w Q - 0 1", ["e1c1"]),  # castling long
    ("6nb/7k/8/5pP1/6N1/8/K7/1B6 w - f6 0 1", ["g5f6"]),  # en passant opens the bishop's diagonal
    ("k7/2P5/1K6/8/8/8/8/8 w - - 0 1", ["c7c8q", "c7c8r"]),  # promotion
    ("k7/1p6/1K6/8/8/8/8/7Q w - - 0 1", ["h1b7", "h1h8"]),  # a capture next to the king, defended by ours
    ("k7/8/K7/8/8/8/8/1R6 w - - 0 1", []),  # the king's only way out: taking the undefended checker
    ("3k4/8/3K4/8/8/8/8/8 w - - 0 1", []),
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", []),
])
def test_mate_in_one_finds_every_kind_of_mate(fen, mates):
    board = chess.Board(fen)
    assert board.is_valid()
    assert sorted(m.uci() for m in _mates(board)) == sorted(mates)
    found = mate_in_one(board)
    assert (found.uci() if found else None) in (mates or [None])
    assert mate_in_one(board, list(board.legal_moves)) == found  # with the moves given


def test_mate_in_one_agrees_with_brute_force_on_random_positions():
    rng = random.Random(3)
    checked = mates = 0
    for _ in range(60):
        board = chess.Board()
        for _ in range(rng.randrange(10, 90)):
            moves = list(board.legal_moves)
            if not moves:
                break
            # prefer checks and captures so that mating nets appear
            forcing = [m for m in moves if board.is_capture(m) or board.gives_check(m)]
            board.push(rng.choice(forcing if forcing and rng.random() < 0.5 else moves))
            expected = _mates(board)
            found = mate_in_one(board)
            assert (found in expected) if expected else found is None, board.fen()
            checked += 1
            mates += bool(expected)
    assert checked > 1000 and mates > 0


# ----------------------------------------------------------------- legal moves

@pytest.mark.parametrize("fen", [
    "4k3/8/8/8/4r3/8/4R3/4K3 w - - 0 1",  # a pinned rook moves along the pin only
    "4k3/8/8/1b6/8/3P4/8/5K2 w - - 0 1",  # ... a pinned pawn neither
    "4k3/8/8/1b6/2P5/8/4N3/5K2 w - - 0 1",
    "4k3/8/6b1/8/4P3/8/2K5/8 w - - 0 1",  # a pawn pinned on a diagonal captures the pinner only
    "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 1",  # en passant would uncover a rook check
    "4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 1",
    "r3k2r/1P6/8/8/8/8/6p1/R3K2R b KQkq - 0 1",  # promotions, captures into the corner, castling
    "r3k2r/8/8/8/8/8/8/R3K1rR w KQkq - 0 1",  # in check: evasions
    "8/8/8/8/8/3k4/8/3K4 w - - 0 1",
    "4k3/8/8/8/8/8/r7/K3K3 w - - 0 1",  # two white kings: not a legal position, but python-chess's answer
    "4k3/8/8/8/8/8/8/P3K3 w - - 0 1",  # pawns on a back rank (python-chess lets them step two squares)
    "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",
    "p3k3/8/8/8/8/8/8/4K3 b - - 0 1",
])
def test_legal_moves_are_python_chess_moves_in_its_order(fen):
    board = chess.Board(fen)
    assert legal_moves(board) == list(board.generate_legal_moves())


def test_legal_moves_agree_with_python_chess_on_random_games():
    rng = random.Random(5)
    positions = 0
    for game in range(60):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 3 == 0 else chess.Board()
        for _ in range(160):
            expected = list(board.generate_legal_moves())
            assert legal_moves(board) == expected, board.fen()
            positions += 1
            if not expected:
                break
            forcing = [m for m in expected if board.is_capture(m) or m.promotion or board.gives_check(m)]
            board.push(rng.choice(forcing if forcing and rng.random() < 0.4 else expected))
    assert positions > 5000


# --------------------------------------------------------------------- options

class Knobs(Configurable):
    OPTIONS = (Option("Share", "spin", 40, 0, 100, scale=100, attribute="share"),
               Option("Flag", "check", True, attribute="flag"))


def test_options_are_declared_once_and_scaled():
    knobs = Knobs()
    assert knobs.share == 0.4 and knobs.flag is True
    share = knobs.options()[0]
    assert share.uci_line() == "option name Share type spin default 40 min 0 max 100"
    assert share.parse("25") == 0.25
    with pytest.raises(OptionError, match="between 0 and 100"):
        share.parse("101")
    with pytest.raises(OptionError, match="integer"):
        share.parse("1e3")
    assert knobs.set_option("Share", 0.25) and knobs.share == 0.25
    assert not knobs.set_option("Nope", 1)
    with pytest.raises(ValueError):
        Option("Bad", "spin", 5, 0, 3)


# ----------------------------------------------------------------------- caches

def test_lru_cache_evicts_the_least_recently_used():
    cache = LruCache(0, bytes_per_entry=1)
    cache.capacity = 2
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    generation = cache.generation
    cache.clear()
    cache.put("d", 4, generation)  # computed before the clear: not stored
    assert cache.get("d") is None and len(cache) == 0


class CountingEvaluator(MaterialEvaluator):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def evaluate(self, board, moves=None):
        self.calls += 1
        return super().evaluate(board, moves)


def test_cached_evaluator_and_comparator_use_the_same_lru_order():
    inner = CountingEvaluator()
    cached = CachedEvaluator(inner)
    cached.cache.capacity = 2
    a, b, c = chess.Board(), play(chess.Board(), "e2e4"), play(chess.Board(), "d2d4")
    for board in (a, b, a, c, a):  # a stays recent, so b is evicted by c
        cached.evaluate(board)
    assert inner.calls == 3
    cached.evaluate(b)
    assert inner.calls == 4

    from tests.search.test_comparison_quiescence import MaterialComparator

    class Counting(MaterialComparator):
        calls = 0

        def features(self, board):
            Counting.calls += 1
            return super().features(board)

    comparator = CachedComparator(Counting())
    comparator.cache.capacity = 2
    for board in (a, b, a, c, a, b):
        comparator.features(board)
    assert Counting.calls == 4


def test_cache_key_includes_the_fifty_move_clock():
    inner = CountingEvaluator()
    cached = CachedEvaluator(inner)
    cached.evaluate(chess.Board("4k3/8/8/8/8/8/8/4K2R w - - 0 1"))
    cached.evaluate(chess.Board("4k3/8/8/8/8/8/8/4K2R w - - 30 40"))
    assert inner.calls == 2


def test_caches_tell_apart_positions_whose_bitboards_hash_alike():
    # Python hashes an int modulo 2**61 - 1: a rook on f8 (bit 61) hashes like one on a1 (bit 0), so keys built
    # with hash() merged these two positions and PUCT expanded one with the other's moves (seen in real games)
    f8 = chess.Board("5R2/8/8/8/4k2p/2p5/2r4p/7K w - - 0 60")
    a1 = chess.Board("8/8/8/8/4k2p/2p5/2r4p/R6K w - - 0 60")
    inner = CountingEvaluator()
    cached = CachedEvaluator(inner)
    cached.evaluate(f8)
    cached.evaluate(a1)
    assert inner.calls == 2
    from tests.search.test_comparison_quiescence import MaterialComparator
    comparator = CachedComparator(MaterialComparator())
    assert comparator.features(f8) is not comparator.features(a1)


class FlatNetwork(Evaluator):
    """A 'network' with uniform priors and a fixed value: the blend's effect is all that moves."""

    name = "flat"
    has_policy = True

    def centipawns(self, board):
        return 0

    def evaluate(self, board, moves=None):
        moves = list(board.legal_moves) if moves is None else moves
        return Evaluation(0.0, draw=0.5, priors={m: 1 / len(moves) for m in moves})


def test_blend_is_a_separate_wrapper_and_its_options_clear_the_cache():
    blended = BlendedEvaluator(FlatNetwork())
    assert blended.material_blend == 0.0  # the default since the network of 23 November 2026
    assert blended.set_option("MaterialBlend", 0.6)
    hanging_queen = chess.Board("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1")
    evaluation = blended.evaluate(hanging_queen)
    capture = chess.Move.from_uci("d2d5")
    assert max(evaluation.priors, key=evaluation.priors.get) == capture
    moves = list(hanging_queen.legal_moves)
    exchange = MaterialEvaluator().centipawns(hanging_queen) + best_exchange_cp(hanging_queen, moves)
    assert exchange == 500 and evaluation.value == pytest.approx(0.6 * cp_to_q(exchange))
    assert sum(evaluation.priors.values()) == pytest.approx(1.0)
    cached = CachedEvaluator(blended)
    cached.evaluate(hanging_queen)
    assert {o.name for o in cached.options()} == {"TacticalPriors", "MaterialBlend", "BlendQuiescence"}
    assert cached.set_option("MaterialBlend", 0.0)
    assert len(cached.cache) == 0
    plain = cached.evaluate(hanging_queen)
    assert plain.value == 0.0 and plain.draw == 0.5
    assert cached.set_option("TacticalPriors", 0.0)
    assert cached.evaluate(hanging_queen).priors[capture] == pytest.approx(1 / len(list(hanging_queen.legal_moves)))


def test_blend_quiescence_sees_what_a_capture_leaves_hanging():
    # White to move wins the bishop (Nxe5, +330 by static exchange), but the knight on b6 then takes the queen:
    # the capture search stands pat at the material balance (+570), the best exchange says +900
    board = chess.Board("7k/8/1n6/4b3/Q7/5N2/8/6K1 w - - 0 1")
    moves = list(board.legal_moves)
    assert MaterialEvaluator().centipawns(board) + best_exchange_cp(board, moves) == 900
    assert quiescence_cp(MaterialEvaluator(), board) == 570
    assert board.fen() == "7k/8/1n6/4b3/Q7/5N2/8/6K1 w - - 0 1"  # the search leaves the board as it was
    blended = BlendedEvaluator(FlatNetwork())
    assert blended.set_option("MaterialBlend", 0.6)
    assert blended.evaluate(board).value == pytest.approx(0.6 * cp_to_q(900))
    assert blended.set_option("BlendQuiescence", True)
    assert blended.evaluate(board).value == pytest.approx(0.6 * cp_to_q(570))
