"""`training quantize`: an int8 copy of a network that the engine loads like the fp32 one, and the comparison."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import FIXTURES, ROOT

pytest.importorskip("onnx", reason="quantisation needs the training extra (onnx)")


def test_quantized_network_loads_in_the_engine_and_stays_close(tiny_network, tmp_path, driver):
    from engine.network_comparison import outputs, pgn_positions
    from tests.exported import engine_network
    from training.resnet.quantize import quantize
    network = tiny_network[2]
    boards = pgn_positions(FIXTURES / "games.pgn", 200)
    quantized = tmp_path / "int8.onnx"
    quantize(network, quantized, boards[:100])
    evaluation = engine_network(driver, "resnet", quantized).evaluate(boards[150])  # metadata kept: it loads
    assert set(evaluation.priors) == set(boards[150].legal_moves)
    assert sum(evaluation.priors.values()) == pytest.approx(1.0, abs=1e-5)
    tops, values = outputs(network, boards[100:])
    int8_tops, int8_values = outputs(quantized, boards[100:])
    assert np.abs(values - int8_values).mean() < 0.05
    assert np.mean([a == b for a, b in zip(tops, int8_tops)]) > 0.5


def test_shipped_int8_network_is_the_shipped_network_quantised():
    from evaluators.resnet import INT8_OF_KEY, ResNetEvaluator, file_digest
    from engine.network_comparison import outputs, pgn_positions
    fp32, int8 = ROOT / "weights" / "resnet.onnx", ROOT / "weights" / "resnet-int8.onnx"
    ours = {key: value for key, value in ResNetEvaluator(int8).metadata.items() if not key.startswith("onnx.")}
    assert ours.pop(INT8_OF_KEY) == file_digest(fp32)  # what mixed precision pairs it by
    assert ours == ResNetEvaluator(fp32).metadata  # same network and encoding; onnxruntime adds its own keys
    boards = pgn_positions(FIXTURES / "games.pgn", 200)
    tops, values = outputs(fp32, boards)
    int8_tops, int8_values = outputs(int8, boards)
    # The shipped int8 copies keep fp32's move on 93.9-96.1% of 10,000 Carlsen positions (docs/record/networks.md);
    # 200 positions resolve about 1.7 points, so 85% fails a broken copy, not a network that quantises a little worse.
    assert np.mean([a == b for a, b in zip(tops, int8_tops)]) > 0.85
    assert np.abs(values - int8_values).mean() < 0.06


def test_mixed_precision_asks_fp32_exactly_where_int8_is_unsure_and_refuses_another_networks_copy(tiny_network,
                                                                                                      tmp_path):
    import shutil

    import chess

    from evaluators.resnet import MIXED_MARGIN, ResNetEvaluator, int8_companion
    from tests.uci_inprocess import Driver
    from engine.network_comparison import mixed_outputs, pgn_positions
    from training.resnet.quantize import quantize
    network = tmp_path / "net.onnx"
    shutil.copyfile(tiny_network[2], network)
    boards = pgn_positions(FIXTURES / "games.pgn", 300)
    quantize(network, int8_companion(network), boards[:100])
    test_boards = boards[100:]

    def evaluations(precision: str) -> list:
        evaluator = ResNetEvaluator(network)
        evaluator.set_option("Precision", precision)
        assert not [notice for notice in evaluator.notices() if notice.startswith("Precision")]
        return evaluator.evaluate_batch(test_boards)

    fp32, int8, mixed = evaluations("fp32"), evaluations("int8"), evaluations("mixed")
    plain = ResNetEvaluator(network, int8=tmp_path / "absent.onnx").evaluate_batch(test_boards)
    assert [e.value for e in fp32] == [e.value for e in plain]  # Precision fp32 is the file alone
    asked = 0
    for board, exact, quantised, result in zip(test_boards, fp32, int8, mixed):
        ranked = sorted(quantised.priors.values(), reverse=True)
        if len(ranked) > 1 and np.log(ranked[0] / ranked[1]) < MIXED_MARGIN:  # unsure: fp32 evaluated it again
            asked += 1
            assert result.priors == pytest.approx(exact.priors, abs=1e-6) and result.value == pytest.approx(exact.value)
        else:
            assert result.priors == pytest.approx(quantised.priors, abs=1e-6)
            assert result.value == pytest.approx(quantised.value, abs=1e-6)
    assert 0 < asked < len(test_boards)
    assert mixed_outputs(network, int8_companion(network), test_boards)[2] == asked / len(test_boards)
    assert [e.value for e in int8] != [e.value for e in fp32]
    assert any("net-int8.onnx is itself an int8 copy" in notice
               for notice in ResNetEvaluator(int8_companion(network)).notices())

    import onnx  # an int8 copy of another network is refused, with a notice, and fp32 plays
    other = tmp_path / "other.onnx"
    model = onnx.load(str(network))
    model.metadata_props.add(key="note", value="another file")
    onnx.save(model, str(other))
    shutil.copyfile(int8_companion(network), int8_companion(other))
    evaluator = ResNetEvaluator(other)
    evaluator.set_option("Precision", "mixed")
    assert not evaluator.runs_int8
    assert any("was not quantised from" in notice for notice in evaluator.notices())
    int8_companion(other).unlink()
    driver = Driver("--eval", "resnet", "--weights", str(other))
    try:
        driver.send("uci", "setoption name Precision value int8", "isready")
        driver.out.wait_for("readyok")
        assert any("Precision int8: no int8 copy other-int8.onnx" in line for line in driver.strings())
        assert driver.go("go nodes 30").split()[1] in {m.uci() for m in chess.Board().legal_moves}
        told = len(driver.strings())
        driver.send("setoption name CPuct value 250")  # another knob: the notice is not told again
        driver.send("setoption name Precision value mixed")  # a new setting that still fails: told once
        assert [line for line in driver.strings()[told:] if "no int8 copy" in line] == \
            [next(line for line in driver.strings()[told:] if "Precision mixed" in line)]
    finally:
        driver.close()


def test_openvino_comparison_matches_onnxruntime_in_f32(tiny_network, monkeypatch):
    from click.testing import CliRunner

    from tools import openvino_compare
    from engine.network_comparison import outputs, pgn_positions
    network = tiny_network[2]
    monkeypatch.setitem(__import__("sys").modules, "openvino", None)  # as on a machine without it
    result = CliRunner().invoke(openvino_compare.main, [str(network), "--positions", str(FIXTURES / "games.pgn")])
    assert result.exit_code != 0 and "OpenVINO is not installed (pip install openvino)" in result.output
    monkeypatch.undo()
    pytest.importorskip("openvino", reason="OpenVINO is optional (pip install openvino)")
    boards = pgn_positions(FIXTURES / "games.pgn", 40)
    tops, values = outputs(network, boards)
    ov_tops, ov_values = openvino_compare.openvino_outputs(network, "f32", boards)
    assert ov_tops == tops and np.abs(ov_values - values).max() < 1e-4


def test_positions_come_from_compressed_games_too(tmp_path):
    import lzma
    from engine.network_comparison import pgn_positions
    packed = tmp_path / "games.pgn.xz"
    packed.write_bytes(lzma.compress((FIXTURES / "games.pgn").read_bytes()))
    assert [b.fen() for b in pgn_positions(packed, 50)] == [b.fen() for b in pgn_positions(FIXTURES / "games.pgn", 50)]
