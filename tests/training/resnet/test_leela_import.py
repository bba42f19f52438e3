"""`python -m training import-leela`: a Leela network as the project's own network (training.resnet.leela_import),
which exports to an ONNX file the engine plays exactly as it plays the original, trains in the project's slot
conventions, and refuses bad files without writing anything; `policy-agreement` measures both side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from click.testing import CliRunner  # noqa: E402

from evaluators.encoding import get_encoding  # noqa: E402
from evaluators.moves import KING_TAKES_ROOK, OWN_SLOT, PolicySlots, move_to_index  # noqa: E402
from evaluators.resnet import ResNetEvaluator  # noqa: E402
from hackmate_core.user_cache import ENVIRONMENT  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.leela_files import Spec, write_network  # noqa: E402
from tests.evaluators.test_leela import GAMES, SHARED_LC0, bad_files, game, needs_maia, played  # noqa: E402
from training.__main__ import cli  # noqa: E402
from training.data.pgn import ReadStats, iter_positions  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.grow import grow  # noqa: E402
from training.resnet.leela_import import import_leela, read_leela  # noqa: E402
from training.resnet.model import NO_MOVE_LOGIT, PolicyValueNet  # noqa: E402
from training.resnet.onnx_import import calibration_boards  # noqa: E402
from training.resnet.weights import WeightsError, inherited_shape, load_network, save_weights  # noqa: E402

SPECS = {
    "se, convolution policy, wdl, linear16": Spec(se=True, policy="convolution", value="wdl", seed=11),
    "dense policy, scalar value, float16": Spec(se=False, policy="classical", value="classical", encoding="FLOAT16",
                                                seed=12),
    "se, dense, wdl, bfloat16, mish, old batch norm": Spec(policy="classical", encoding="BFLOAT16",
                                                           activation="mish", old_batch_norm=True, seed=13),
}
#: Positions where castling and queen promotions are legal, for either side.
SPECIAL = ["r3k2r/pPppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
           "r3k2r/pPppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PpPBBPPP/R3K2R b KQkq - 0 1",
           "1r2k3/1P4P1/8/8/8/8/1p4p1/4K1R1 w - - 0 1", "1r2k3/1P4P1/8/8/8/8/1p4p1/4K1R1 b - - 0 1"]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """HACKMATE_CACHE pointed at a temporary directory (the engine's conversions of Leela files go there)."""
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def calibration() -> list[chess.Board]:
    return calibration_boards(FIXTURES / "games.pgn", 64, every=3)


def boards() -> list[chess.Board]:
    return [played(*game(name)) for name in GAMES] + [chess.Board(fen) for fen in SPECIAL]


def fp32(path: Path) -> ResNetEvaluator:
    evaluator = ResNetEvaluator(path)
    evaluator.set_option("Precision", "fp32")
    return evaluator


def imported(path: Path, calibration: list[chess.Board], out: Path) -> Path:
    network, digest = read_leela(path)
    return save_weights(import_leela(network, {"file": path.name, "sha256": digest}, calibration), out)


def assert_plays_alike(original: Path, exported: Path) -> None:
    """The engine's evaluations of the two files agree on every test position: priors, value and draw."""
    ours, theirs = fp32(exported), fp32(original)
    assert ours.metadata["castling"] == KING_TAKES_ROOK and ours.metadata["queen_promotion"] == OWN_SLOT
    for board in boards():
        mine, reference = ours.evaluate(board), theirs.evaluate(board)
        assert mine.moves == reference.moves
        np.testing.assert_allclose(mine.policy, reference.policy, atol=2e-6, err_msg=board.fen())
        assert mine.value == pytest.approx(reference.value, abs=2e-6)
        assert mine.draw == pytest.approx(reference.draw, abs=2e-6)


@pytest.mark.parametrize("spec_name", list(SPECS))
def test_an_imported_network_exports_to_what_the_engine_reads_in_the_file(tmp_path, calibration, spec_name):
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS[spec_name])
    weights = imported(original, calibration, tmp_path / "net.pt")
    exported = export_resnet(weights, tmp_path / "net.onnx")
    assert_plays_alike(original, exported)
    state = torch.load(weights, weights_only=True)
    assert state["meta"]["encoding"] == "lc0-112" and state["config"]["imported_from"]["file"] == "net.pb.gz"


def test_training_sees_castling_and_promotions_in_the_projects_slots(tmp_path, calibration):
    """What the network trains on (its forward pass) gives each legal move of every position, castling and queen
    promotions included, the logit that the export gives it in Lc0's slots; the slots castling and promotions
    leave hold no move's logit; and in training mode, on the calibration positions, the network computes what it
    computes in evaluation."""
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS["se, convolution policy, wdl, linear16"])
    net, _ = load_network(imported(original, calibration, tmp_path / "net.pt"))
    encoding = get_encoding("lc0-112")
    positions = boards()
    x = torch.from_numpy(np.stack([encoding.encode(board) for board in positions]))
    with torch.no_grad():
        projects, own = net(x)[0].numpy(), net.policy_and_value(x, own_slots=True)[0].numpy()
    lc0, default = PolicySlots(KING_TAKES_ROOK, OWN_SLOT), PolicySlots()
    castles = promotions = 0
    for row, board in enumerate(positions):
        moves = list(board.legal_moves)
        np.testing.assert_array_equal(projects[row, default.slots(board, moves)], own[row, lc0.slots(board, moves)])
        for move in moves:
            if board.is_castling(move):
                castles += 1
                rook = chess.square(7 if move.to_square > move.from_square else 0, chess.square_rank(move.from_square))
                assert projects[row, move_to_index(chess.Move(move.from_square, rook), board.turn)] == NO_MOVE_LOGIT
            promotions += move.promotion == chess.QUEEN
    assert castles >= 4 and promotions >= 6
    inputs = torch.from_numpy(np.stack([encoding.encode(board) for board in calibration]))
    with torch.no_grad():
        evaluation, training = net.eval()(inputs), net.train()(inputs)
    for mode_eval, mode_train in zip(evaluation, training):
        np.testing.assert_allclose(mode_train.numpy(), mode_eval.numpy(), atol=1e-4)


def test_a_run_that_continues_it_learns_castling_where_the_export_plays_it(tmp_path, calibration):
    """The network a training run builds for --init (the settings' shape, the rest inherited from the file) takes
    the imported weights; a few steps towards castling in the project's slot raise castling's prior in the
    export, which reads it from Lc0's slot."""
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS["dense policy, scalar value, float16"])
    path = imported(original, calibration, tmp_path / "net.pt")
    state = torch.load(path, weights_only=True)
    model = PolicyValueNet(112, 2, 8, **inherited_shape(state))
    model.load_state_dict(state["model"])
    board = played(chess.Board(SPECIAL[0]), [])
    castle = chess.Move.from_uci("e1g1")
    before = fp32(original).evaluate(board).priors[castle]  # the export's before training (tested above)
    x = torch.from_numpy(get_encoding("lc0-112").encode(board)[None])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model.train()
    for _ in range(5):
        optimizer.zero_grad()
        loss = -torch.log_softmax(model(x)[0], dim=1)[0, move_to_index(castle, chess.WHITE)]
        loss.backward()
        optimizer.step()
    trained = save_weights({**state, "model": model.state_dict()}, tmp_path / "trained.pt")
    after = fp32(export_resnet(trained, tmp_path / "after.onnx")).evaluate(board).priors[castle]
    assert after > before + 0.1
    with pytest.raises(ValueError, match="does not grow"):
        grow(load_network(path)[0], 3, 8)


def test_train_continues_an_imported_network_and_its_export_plays(tmp_path, calibration):
    """`train --init` on an imported file builds the imported network (its policy head, SE gate and value head
    come from the file, --blocks, --filters and --squeeze are checked against it), and the run's export plays."""
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS["se, convolution policy, wdl, linear16"])
    path = imported(original, calibration, tmp_path / "net.pt")
    shape = torch.load(path, weights_only=True)["shape"]
    data = tmp_path / "data"
    result = CliRunner().invoke(cli, ["prepare", str(FIXTURES / "games.pgn"), "--out", str(data), "--encoding",
                                      "lc0-112", "--workers", "1"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    result = CliRunner().invoke(cli, ["train", str(data), "--init", str(path), "--blocks", "2", "--filters", "8",
                                      "--squeeze", str(shape["squeeze"]), "--epochs", "1", "--batch-size", "32",
                                      "--lr", "1e-4", "--out", str(run)])
    assert result.exit_code == 0, result.output
    trained = torch.load(run / "checkpoint.pt", weights_only=False)
    assert {key: trained["shape"][key] for key in shape} == shape
    board = played(chess.Board(SPECIAL[0]), [])
    evaluation = fp32(export_resnet(run / "checkpoint.pt", tmp_path / "trained.onnx")).evaluate(board)
    assert sum(evaluation.priors.values()) == pytest.approx(1, abs=1e-4)
    result = CliRunner().invoke(cli, ["train", str(data), "--init", str(path), "--blocks", "3", "--filters", "8",
                                      "--squeeze", str(shape["squeeze"]), "--epochs", "1", "--out", str(tmp_path / "r2")])
    assert result.exit_code == 1 and "not the requested" in result.output, result.output


def test_files_it_cannot_import_are_refused_and_nothing_is_written(tmp_path):
    for name, (path, message) in bad_files(tmp_path).items():
        out = tmp_path / f"{path.stem}.pt"
        result = CliRunner().invoke(cli, ["import-leela", str(path), "--calibration", str(FIXTURES / "games.pgn"),
                                          "--out", str(out)])
        assert result.exit_code == 1 and "Traceback" not in result.output, (name, result.output)
        assert path.name in result.output and re.search(message, result.output), (name, result.output)
        assert not out.exists() and not list(tmp_path.glob("*.pt*")), name


def test_policy_agreement_measures_the_original_and_its_export_alike(tmp_path, calibration):
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS["se, convolution policy, wdl, linear16"])
    exported = export_resnet(imported(original, calibration, tmp_path / "net.pt"), tmp_path / "net.onnx")
    result = CliRunner().invoke(cli, ["policy-agreement", str(FIXTURES / "games.pgn"), "--played", "--all-games",
                                      "--from-ply", "10", "--count", "40", "--network", str(original), "--network",
                                      str(exported), "--threads", "1", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    first, second = figures["networks"][str(original)], figures["networks"][str(exported)]
    assert figures["positions"] == 40 and first["top1"] <= first["top3"]
    assert first["top1"] * 40 / 100 == pytest.approx(round(first["top1"] * 40 / 100), abs=1e-6)  # a count of 40
    assert (second["top1"], second["top3"]) == (first["top1"], first["top3"]) and second["top1_gain"] == 0
    assert second["cross_entropy"] == pytest.approx(first["cross_entropy"], abs=1e-5)


def test_prepare_keeps_the_game_that_lc0_112_reads(tmp_path):
    """Positions read for `prepare` carry as much of their game as lc0-112's planes read: a repetition of a
    position more than eight plies back included (in a game whose last pawn move is long past)."""
    shuffle = "g1f3 g8f6 f3g1 f6g8 b1c3 b8c6 c3b1 c6b8 " * 2
    pgn = tmp_path / "shuffle.pgn"
    game = chess.pgn.Game.from_board(played(chess.Board(), [chess.Move.from_uci(m)
                                                            for m in ("e2e4 e7e5 " + shuffle).split()]))
    game.headers["Result"] = "1/2-1/2"
    pgn.write_text(str(game) + "\n")
    encoding = get_encoding("lc0-112")
    board, differs = chess.Board(), 0
    for position, node in zip(iter_positions(pgn, ReadStats()), game.mainline()):
        np.testing.assert_array_equal(encoding.binary(position.board), encoding.binary(board))
        differs += not np.array_equal(encoding.binary(board.copy(stack=8)), encoding.binary(board))
        board.push(node.move)
    assert differs > 0  # eight plies of the game would not do


@needs_maia
def test_maia_imports_exactly(tmp_path, calibration):
    original = SHARED_LC0 / "maia-1900.pb.gz"
    exported = export_resnet(imported(original, calibration, tmp_path / "maia.pt"), tmp_path / "maia.onnx")
    assert_plays_alike(original, exported)


def test_corpus_parts_of_lc0_112_made_before_it_was_lc0s_input_are_prepared_again(tmp_path):
    from training.data.corpus import CorpusConfig
    from training.data.corpus.parts import part_settings
    games = FIXTURES / "games.pgn"
    assert part_settings(games, CorpusConfig(encoding="lc0-112"))["encoding_revision"] == 2
    assert "encoding_revision" not in part_settings(games, CorpusConfig(encoding="planes18"))  # their parts stay


def test_evaluate_refuses_an_export_in_lc0s_slots(tmp_path, calibration):
    from training.resnet.metrics import Network
    original = tmp_path / "net.pb.gz"
    write_network(original, SPECS["se, convolution policy, wdl, linear16"])
    exported = export_resnet(imported(original, calibration, tmp_path / "net.pt"), tmp_path / "net.onnx")
    with pytest.raises(WeightsError, match="Lc0's conventions"):
        Network(exported)
