"""The shipped weights/resnet.pt is the network of weights/resnet.onnx, and import-onnx rebuilds one from the other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES, ROOT  # noqa: E402
from training.resnet.export import export_resnet  # noqa: E402
from training.resnet.onnx_import import calibration_boards, import_onnx  # noqa: E402
from training.resnet.weights import load_network  # noqa: E402

SHIPPED_ONNX = ROOT / "weights" / "resnet.onnx"
SHIPPED_PT = ROOT / "weights" / "resnet.pt"


def _outputs(path: Path, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return tuple(session.run(["policy", "wdl"], {"planes": inputs}))  # type: ignore[return-value]


def _metadata(path: Path) -> dict:
    import onnx
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props if p.key != "command"}


def _inputs() -> np.ndarray:
    from evaluators.encoding import get_encoding
    encoding = get_encoding("planes18")
    return np.stack([encoding.encode(board) for board in calibration_boards(FIXTURES / "games.pgn", 64, every=3)])


def test_export_of_the_shipped_pt_reproduces_the_shipped_onnx(tmp_path):
    exported = export_resnet(SHIPPED_PT, tmp_path / "resnet.onnx")
    inputs = _inputs()
    for mine, shipped in zip(_outputs(exported, inputs), _outputs(SHIPPED_ONNX, inputs)):
        # logits reach about 40: float32 rounding of re-derived BatchNorm statistics stays far below 1e-6 relative
        np.testing.assert_allclose(mine, shipped, rtol=1e-5, atol=1e-4)
    assert _metadata(exported) == _metadata(SHIPPED_ONNX)


def test_import_onnx_rebuilds_the_function_and_usable_batchnorm_statistics():
    from evaluators.encoding import get_encoding
    boards = calibration_boards(FIXTURES / "games.pgn", 128, every=1)
    weights = import_onnx(SHIPPED_ONNX, boards)
    model, _ = load_network(SHIPPED_PT)  # same class and shape as the rebuilt one
    model.load_state_dict(weights["model"])
    encoding = get_encoding("planes18")
    calibration = torch.from_numpy(np.stack([encoding.encode(board) for board in boards]))
    with torch.no_grad():
        evaluation = model.eval()(calibration)[0]
        training_mode = model.train()(calibration)[0]
    np.testing.assert_allclose(evaluation.numpy(), _outputs(SHIPPED_ONNX, calibration.numpy())[0],
                               rtol=1e-5, atol=1e-4)
    # on the calibration batch, batch statistics are the stored ones: training mode computes the same function,
    # so fine-tuning starts from the shipped network instead of a disturbed one
    np.testing.assert_allclose(training_mode.numpy(), evaluation.numpy(), rtol=1e-4, atol=1e-3)
    assert weights["meta"]["encoding"] == "planes18"
