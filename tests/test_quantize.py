"""tools.quantize: an int8 copy of a network that the engine loads like the fp32 one, and the comparison."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import FIXTURES, ROOT

pytest.importorskip("onnx", reason="quantisation needs the training extra (onnx)")


def test_quantized_network_loads_in_the_engine_and_stays_close(tiny_network, tmp_path):
    from evaluators.resnet import ResNetEvaluator
    from tools.quantize import outputs, pgn_positions, quantize
    network = tiny_network[2]
    boards = pgn_positions(FIXTURES / "games.pgn", 200)
    quantized = tmp_path / "int8.onnx"
    quantize(network, quantized, boards[:100])
    evaluation = ResNetEvaluator(quantized).evaluate(boards[150])  # metadata kept: the engine accepts the file
    assert set(evaluation.priors) == set(boards[150].legal_moves)
    assert sum(evaluation.priors.values()) == pytest.approx(1.0, abs=1e-5)
    tops, values = outputs(network, boards[100:])
    int8_tops, int8_values = outputs(quantized, boards[100:])
    assert np.abs(values - int8_values).mean() < 0.05
    assert np.mean([a == b for a, b in zip(tops, int8_tops)]) > 0.5


def test_shipped_int8_network_is_the_shipped_network_quantised():
    from evaluators.resnet import ResNetEvaluator
    from tools.quantize import outputs, pgn_positions
    fp32, int8 = ROOT / "weights" / "resnet.onnx", ROOT / "weights" / "resnet-int8.onnx"
    ours = {key: value for key, value in ResNetEvaluator(int8).metadata.items() if not key.startswith("onnx.")}
    assert ours == ResNetEvaluator(fp32).metadata  # same network and encoding; onnxruntime adds its own keys
    boards = pgn_positions(FIXTURES / "games.pgn", 200)
    tops, values = outputs(fp32, boards)
    int8_tops, int8_values = outputs(int8, boards)
    assert np.mean([a == b for a, b in zip(tops, int8_tops)]) > 0.9  # 96.1% on 10,000 positions (docs/bench.md)
    assert np.abs(values - int8_values).mean() < 0.06


def test_openvino_comparison_matches_onnxruntime_in_f32(tiny_network, monkeypatch):
    from click.testing import CliRunner

    from tools import openvino_compare
    from tools.quantize import outputs, pgn_positions
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
