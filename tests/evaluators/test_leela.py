"""Leela Chess Zero networks (.pb.gz) played by the ResNet evaluator: read, converted to ONNX once, cached.

Small networks with random weights (tests/leela_files.py writes them) in every supported layout give the
priors and value of a plain numpy forward pass over the same weights and Lc0's own input planes; files the
engine cannot play are refused with a message naming why, through UCI too; the Maia networks of ../shared (when
present) play as Lc0 plays them.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import chess
import numpy as np
import pytest

from evaluators import leela_convert
from evaluators.base import LoadError, unwrap
from evaluators.lc0_policy import conv_policy_map, lc0_moves
from evaluators.moves import KING_TAKES_ROOK, OWN_SLOT, PolicySlots, move_to_index
from evaluators.resnet import ResNetEvaluator
from hackmate_core.user_cache import ENVIRONMENT
from tests.conftest import ROOT
from tests.leela_files import (LC0_CONV_MAP_SHA256, LC0_MOVES_SHA256, Spec, Writer, bytes_field, lc0_conv_map,
                               lc0_move_strings, net_bytes, network_format, reference_evaluation, uint_field,
                               write_network)

SHARED_LC0 = ROOT.parent / "shared" / "data" / "lc0"
needs_maia = pytest.mark.skipif(not (SHARED_LC0 / "maia-1900.pb.gz").is_file(),
                                reason=f"the Maia networks are not in {SHARED_LC0} (../shared/data/lc0 beside the "
                                       "repository)")

#: Games as (root FEN or None for the start position, moves): history, Black to move, castling rights, en passant.
GAMES = {
    "italian": (None, "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5"),
    "en passant": (None, "e2e4 g8f6 e4e5 d7d5"),
    "black, short game": (None, "d2d4 d7d5 c2c4"),
    "fen with en passant": ("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3", ""),
    "repetition": (None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1"),
    "promotions": ("r1n5/1P5R/8/8/8/8/5k2/7K w - - 0 1", ""),
    "black promotions, repeated": ("7k/5K2/8/8/8/8/1p5r/R1N5 b - - 0 1", "h2h3 f7e7 h3h2 e7f7"),
    "black castles": ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 4 8", "h7h6 h2h3"),
    "rule50": ("4k3/8/3q4/8/8/3Q4/8/4K3 w - - 73 90", "d3d4 d6d5"),
    "castling rights apart": ("r3k2r/p6p/8/8/8/8/P6P/R3K2R w Kq - 0 1", "a2a3 h7h6"),
    "en passant in the fen, then back": ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
                                         "g8f6 g1f3 f6g8 f3g1"),
}

SPECS = {
    "se, convolution policy, wdl, linear16": Spec(se=True, policy="convolution", value="wdl"),
    "dense policy, scalar value, float16": Spec(se=False, policy="classical", value="classical", encoding="FLOAT16",
                                                seed=2),
    "se, dense, wdl, bfloat16, mish, old batch norm": Spec(policy="classical", encoding="BFLOAT16",
                                                           activation="mish", old_batch_norm=True, seed=3),
    "convolution, scalar, float32, moves left": Spec(se=False, value="classical", encoding="FLOAT32",
                                                     moves_left=True, seed=4),
    "no network format (the oldest files)": Spec(se=False, policy="classical", value="classical", no_format=True,
                                                 seed=5),
}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """HACKMATE_CACHE pointed at a temporary directory (never the real ~/.cache)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(ENVIRONMENT, str(directory))
    return directory


def game(name: str) -> tuple[chess.Board, list[chess.Move]]:
    fen, moves = GAMES[name]
    root = chess.Board(fen) if fen else chess.Board()
    return root, [chess.Move.from_uci(move) for move in moves.split()]


def played(root: chess.Board, moves: list[chess.Move]) -> chess.Board:
    board = root.copy()
    for move in moves:
        board.push(move)
    return board


def fp32(path: Path) -> ResNetEvaluator:
    evaluator = ResNetEvaluator(path)
    evaluator.set_option("Precision", "fp32")
    return evaluator


@pytest.mark.parametrize("spec_name", list(SPECS))
def test_a_leela_network_evaluates_as_its_numpy_forward_pass(tmp_path, spec_name):
    spec = SPECS[spec_name]
    path = tmp_path / ("net.pb.gz" if spec.seed % 2 else "net.pb")
    layers = write_network(path, spec)
    evaluator = fp32(path)
    assert evaluator.metadata["castling"] == KING_TAKES_ROOK and evaluator.encoding.name == "lc0-112"
    for name in GAMES:
        root, moves = game(name)
        board = played(root, moves)
        expected_priors, expected_value, expected_draw = reference_evaluation(spec, layers, root, moves)
        evaluation = evaluator.evaluate(board)
        assert evaluation.priors is not None and set(evaluation.priors) == set(expected_priors), name
        got = np.array([evaluation.priors[move] for move in expected_priors])
        np.testing.assert_allclose(got, list(expected_priors.values()), rtol=2e-3, atol=1e-5, err_msg=name)
        assert evaluation.value == pytest.approx(expected_value, abs=1e-4), name
        assert evaluation.draw == pytest.approx(expected_draw, abs=1e-4), name


def test_a_batch_with_history_evaluates_each_position_as_alone(tmp_path):
    path = tmp_path / "net.pb.gz"
    write_network(path, Spec(seed=6))
    evaluator = fp32(path)
    boards = [played(*game(name)) for name in GAMES]
    for board, together in zip(boards, evaluator.evaluate_batch(boards)):
        alone = evaluator.evaluate(board)
        assert together.priors == pytest.approx(alone.priors, abs=1e-6) and together.value == pytest.approx(
            alone.value, abs=1e-6)


def test_lc0_move_tables_are_lc0s():
    """The engine's tables and the tests' own equal Lc0's kMoveStrs and kConvPolicyMap (SHA-256 of Lc0's
    sources)."""
    engine_moves = [chess.Move(f, t, p).uci() for f, t, p in lc0_moves()]
    assert engine_moves == lc0_move_strings()
    assert hashlib.sha256(" ".join(engine_moves).encode()).hexdigest() == LC0_MOVES_SHA256
    engine_map = conv_policy_map()[:73 * 64].tolist()
    assert engine_map == lc0_conv_map() and (conv_policy_map()[73 * 64:] == -1).all()
    assert hashlib.sha256(" ".join(map(str, engine_map)).encode()).hexdigest() == LC0_CONV_MAP_SHA256


def random_boards(count: int, seed: int, chess960: bool = False):
    rng = np.random.default_rng(seed)
    board = chess.Board.from_chess960_pos(int(rng.integers(960))) if chess960 else chess.Board()
    for _ in range(count):
        moves = list(board.legal_moves)
        if not moves or board.ply() > 150:
            board = chess.Board.from_chess960_pos(int(rng.integers(960))) if chess960 else chess.Board()
            continue
        yield board
        board.push(moves[int(rng.integers(len(moves)))])


@pytest.mark.parametrize("chess960", [False, True])
def test_policy_slots_of_leela_networks_are_distinct_and_castle_onto_the_rook(chess960):
    lc0, default = PolicySlots(KING_TAKES_ROOK, OWN_SLOT), PolicySlots()
    castles = promotions = 0
    for board in random_boards(3000, seed=5, chess960=chess960):
        moves = list(board.legal_moves)
        slots = lc0.slots(board, moves)
        assert slots == [lc0.slot(board, move) for move in moves] and len(set(slots)) == len(moves)
        assert default.slots(board, moves) == [default.slot(board, move) for move in moves]
        for move, slot in zip(moves, slots):
            if board.is_castling(move):
                rook = move.to_square if chess960 else chess.square(7 if move.to_square > move.from_square else 0,
                                                                    chess.square_rank(move.from_square))
                assert slot == move_to_index(chess.Move(move.from_square, rook), board.turn)
                castles += 1
            promotions += move.promotion is not None
    assert castles > 20 and (chess960 or promotions > 0)


def test_queen_promotions_have_their_own_slot_apart_from_a_rooks_step():
    board = chess.Board(GAMES["promotions"][0])
    lc0 = PolicySlots(KING_TAKES_ROOK, OWN_SLOT)
    queen, rook_step = chess.Move.from_uci("b7b8q"), chess.Move.from_uci("h7h8")
    assert lc0.slot(board, queen) != move_to_index(chess.Move.from_uci("b7b8"), chess.WHITE)
    assert lc0.slot(board, rook_step) == move_to_index(rook_step, chess.WHITE)
    assert PolicySlots().slot(board, queen) == move_to_index(chess.Move.from_uci("b7b8"), chess.WHITE)


# ---------------------------------------------------------------- bad files


def good_file(tmp_path: Path, name: str = "good.pb.gz") -> Path:
    path = tmp_path / name
    write_network(path, Spec(seed=7))
    return path


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files the engine must refuse, with what its message says."""
    good = gzip.decompress(good_file(tmp_path).read_bytes())
    files: dict[str, tuple[bytes, str, str]] = {}
    packed = gzip.compress(good)
    files["truncated gzip"] = (packed[:len(packed) // 2], ".pb.gz", "corrupt gzip")
    files["truncated"] = (good[:len(good) - 100], ".pb", "truncated")
    damaged = bytearray(packed)
    damaged[len(damaged) // 2:len(damaged) // 2 + 8] = bytes(8)
    files["corrupt gzip"] = (bytes(damaged), ".pb.gz", "corrupt gzip")
    files["not gzip, not protobuf"] = (b"\xff" * 64, ".pb", "not a Leela network")
    files["an ONNX file named .pb"] = ((ROOT / "weights" / "comparator.onnx").read_bytes(), ".pb",
                                       r"not a Leela network \(no magic number\)")
    spec = Spec(seed=7)
    files["wrong magic"] = (net_bytes(spec, Writer(spec).weights(), magic=0x1C1), ".pb", r"magic 0x1c1")
    narrow = Writer(Spec(filters=4, seed=8))
    extra_block = bytes_field(2, bytes_field(1, narrow.conv_block("x1", 4, 4, 3))
                              + bytes_field(2, narrow.conv_block("x2", 4, 4, 3)))
    files["wrong tensor sizes"] = (net_bytes(spec, Writer(spec).weights(), extra_weights=extra_block), ".pb",
                                   r"wrong tensor size: the residual block 2 conv1 weights hold 144 values, "
                                   r"expected 576 \(8 x 8 x 3 x 3\)")
    files["attention body"] = (net_bytes(spec, Writer(spec).weights(), format_fields=network_format(spec, network=6),
                                         extra_weights=bytes_field(27, b"") + uint_field(28, 8)), ".pb.gz",
                               "unsupported Leela network: an attention body")
    files["attention body, format alone"] = (
        net_bytes(spec, Writer(spec).weights(), format_fields=network_format(spec, network=7)), ".pb",
        "unsupported Leela network: network structure NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT")
    files["attention policy"] = (net_bytes(spec, Writer(spec).weights(), format_fields=network_format(spec, policy=3),
                                           extra_weights=bytes_field(17, b"")), ".pb.gz",
                                 "unsupported Leela network: an attention policy")
    files["canonical input"] = (net_bytes(spec, Writer(spec).weights(), format_fields=network_format(spec, input=3)),
                                ".pb", "unsupported Leela network: input format INPUT_112_WITH_CANONICALIZATION")
    out = {}
    for index, (name, (data, suffix, message)) in enumerate(files.items()):
        path = tmp_path / f"bad{index}{suffix}"
        path.write_bytes(gzip.compress(data) if suffix == ".pb.gz" and not data.startswith(b"\x1f\x8b") else data)
        out[name] = (path, message)
    return out


def test_files_it_cannot_play_are_refused_with_what_is_wrong(tmp_path):
    for name, (path, message) in bad_files(tmp_path).items():
        with pytest.raises(LoadError, match=message):
            ResNetEvaluator(path)
    assert not any((tmp_path / "cache").rglob("*.onnx"))  # nothing half made is cached


def test_a_refused_file_through_uci_says_why_and_keeps_the_network(driver, tmp_path, lenient):
    good = good_file(tmp_path)
    engine = driver("--eval", "resnet")
    engine.send(f"setoption name Weights value {good}", "isready")
    assert unwrap(engine.engine.evaluator).source == good
    for name, (path, message) in bad_files(tmp_path).items():
        start = len(engine.lines)
        engine.send(f"setoption name Weights value {path}", "isready")
        said = [line for line in engine.lines[start:] if line.startswith("info string")]
        assert any("cannot load Weights" in line and path.name in line and f"keeping '{good}'" in line
                   for line in said), (name, said)
        assert any(re.search(message, line) for line in said), (name, said)
        assert unwrap(engine.engine.evaluator).source == good and engine.engine.options.get("Weights") == str(good)
    move = engine.go("go nodes 20").split()[1]
    assert chess.Move.from_uci(move) in chess.Board().legal_moves


# -------------------------------------------------------------------- cache


def test_a_conversion_is_made_once_and_keyed_by_content(tmp_path, cache_dir, monkeypatch):
    first = good_file(tmp_path, "first.pb.gz")
    converted = fp32(first).path
    assert converted.parent == cache_dir / leela_convert.FOLDER and converted.suffix == ".onnx"
    assert hashlib.sha256(first.read_bytes()).hexdigest() in converted.name
    written = converted.stat().st_mtime_ns

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(leela_convert, "read_network", no_conversion)
    copy = tmp_path / "copy-of-first.pb.gz"
    copy.write_bytes(first.read_bytes())
    for path in (first, copy):  # the same content under any name: the cached file, opened as it is
        assert fp32(path).path == converted and converted.stat().st_mtime_ns == written
    monkeypatch.undo()
    monkeypatch.setenv(ENVIRONMENT, str(cache_dir))
    other = tmp_path / "other.pb.gz"
    write_network(other, Spec(seed=9))
    assert fp32(other).path != converted and len(list(converted.parent.glob("*.onnx"))) == 2


def test_a_leela_network_runs_alone_without_an_int8_copy(tmp_path):
    evaluator = ResNetEvaluator(good_file(tmp_path))
    assert not evaluator.runs_int8 and evaluator.takes_leaves()
    assert ("Precision mixed: good.pb.gz is a Leela network, converted without an int8 copy; good.pb.gz runs alone"
            in evaluator.notices())


def test_the_cache_key_tells_histories_apart(tmp_path):
    """Two games reaching one position by the same last seven moves, whose positions repeated earlier ones in one
    game only: the network sees them differently, and the evaluation cache keeps them apart."""
    evaluator = fp32(good_file(tmp_path))
    common = " g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1"
    one, other = from_moves("g1f3 g8f6 f3g1 f6g8" + common), from_moves("b1c3 b8c6 c3b1 c6b8" + common)
    assert one.fen() == other.fen() and one.move_stack[-7:] == other.move_stack[-7:]
    assert not np.array_equal(evaluator.encoding.binary(one), evaluator.encoding.binary(other))
    assert evaluator.cache_key(one) != evaluator.cache_key(other)
    assert evaluator.cache_key(one) == evaluator.cache_key(one.copy())


# --------------------------------------------------------------------- Maia


@pytest.fixture(scope="module")
def maia(tmp_path_factory) -> ResNetEvaluator:
    """maia-1900, converted into a cache of this module's."""
    if not (SHARED_LC0 / "maia-1900.pb.gz").is_file():
        pytest.skip(f"the Maia networks are not in {SHARED_LC0}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENVIRONMENT, str(tmp_path_factory.mktemp("maia-cache")))
        return fp32(SHARED_LC0 / "maia-1900.pb.gz")


def top(evaluation, count: int = 1) -> list[str]:
    return [move.uci() for move in sorted(evaluation.priors, key=evaluation.priors.get, reverse=True)[:count]]


def from_moves(moves: str, fen: str | None = None) -> chess.Board:
    return played(chess.Board(fen) if fen else chess.Board(), [chess.Move.from_uci(m) for m in moves.split()])


@needs_maia
def test_maia_opens_with_e4_and_d4(maia):
    assert set(top(maia.evaluate(chess.Board()), 2)) == {"e2e4", "d2d4"}


@needs_maia
def test_maia_takes_a_free_queen(maia):
    assert top(maia.evaluate(from_moves("e2e4 e7e5 d2d3 d8g5"))) == ["c1g5"]
    assert top(maia.evaluate(from_moves("d2d4 e7e5 d1d3 e5d4 d3h7"))) == ["h8h7"]


@needs_maia
def test_maia_castles_by_the_kings_move(maia):
    white = maia.evaluate(from_moves("e2e4 e7e5 g1f3 b8c6 f1c4 f8c5"))
    assert white.priors[chess.Move.from_uci("e1g1")] > 0.2
    black = maia.evaluate(from_moves("e2e4 e7e5 g1f3 b8c6 f1c4 f8c5 e1g1 g8f6 d2d3"))
    assert black.priors[chess.Move.from_uci("e8g8")] > 0.2


@needs_maia
def test_maia_sees_a_game_and_its_colour_flipped_twin_alike(maia):
    """A game from a FEN and its mirror image (colours swapped, every move mirrored) have the same planes but the
    side-to-move plane, and mirrored priors: the same two best moves, each prior within what that plane changes
    for Maia (trained on human games, where White and Black play differently)."""
    root = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    moves = [chess.Move.from_uci(m) for m in "f1b5 a7a6 b5a4 g8f6 e1g1 f8e7 f1e1 b7b5 a4b3".split()]
    twin_moves = [chess.Move(chess.square_mirror(m.from_square), chess.square_mirror(m.to_square)) for m in moves]
    board, twin = played(root, moves), played(root.mirror(), twin_moves)
    assert twin.fen().split()[:4] == board.mirror().fen().split()[:4]
    planes, twin_planes = maia.encoding.encode(board), maia.encoding.encode(twin)
    assert [i for i in range(112) if not np.array_equal(planes[i], twin_planes[i])] == [108]
    own, mirrored = maia.evaluate(board), maia.evaluate(twin)
    images = {move: chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square))
              for move in own.priors}
    assert set(images.values()) == set(mirrored.priors)
    assert [images[chess.Move.from_uci(move)].uci() for move in top(own, 2)] == top(mirrored, 2) == ["e1g1", "d2d3"]
    assert max(abs(mirrored.priors[images[move]] - prior) for move, prior in own.priors.items()) < 0.15
    assert mirrored.value == pytest.approx(own.value, abs=0.05)


@needs_maia
def test_limit_strength_plays_maia_through_uci(driver, tmp_path, monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "uci-cache"))
    engine = driver("--eval", "material", "--search", "alphabeta")
    engine.send(f"setoption name RatingNetworks value {SHARED_LC0}", "setoption name UCI_LimitStrength value true",
                "setoption name UCI_Elo value 1900", "isready", "position startpos")
    assert unwrap(engine.engine.evaluator).source == SHARED_LC0 / "maia-1900.pb.gz"
    assert engine.go("go wtime 60000 btime 60000").split()[1] in ("e2e4", "d2d4")
