"""`Backend`: the network on a GPU where one works, on the CPU otherwise, and said either way."""

from __future__ import annotations

import chess
import pytest

from evaluators.base import unwrap
from evaluators.onnx_model import CPU_PROVIDER, providers
from evaluators.resnet import ResNetEvaluator
from tests.conftest import ROOT

SHIPPED = ROOT / "weights" / "resnet.onnx"
HAS_CUDA = "CUDAExecutionProvider" in providers("cuda")
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a GPU: this onnxruntime has no CUDA provider "
                                                    "(pip install '.[gpu]' on a machine with an NVIDIA GPU)")


def test_cpu_asks_for_the_cpu_alone():
    assert providers("cpu") == [CPU_PROVIDER]
    assert providers("auto")[-1] == providers("tensorrt")[-1] == CPU_PROVIDER


def test_the_engine_says_where_the_network_runs(driver):
    engine = driver()
    engine.send("setoption name Backend value cpu", "isready")
    assert unwrap(engine.engine.evaluator).provider == CPU_PROVIDER
    assert any(line == f"info string Backend cpu: the network runs on {CPU_PROVIDER}" for line in engine.strings())
    assert engine.go("go nodes 50").split()[1] != "0000"


def test_a_changed_backend_opens_the_network_again():
    network = ResNetEvaluator(SHIPPED, threads=1)
    session = network.session
    network.set_option("Backend", "cpu")
    assert network.session is not session and network.provider == CPU_PROVIDER
    assert network.evaluate(chess.Board()).value == pytest.approx(ResNetEvaluator(SHIPPED).evaluate(
        chess.Board()).value, abs=1e-4)


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a working CUDA provider")
def test_a_gpu_asked_for_where_none_works_falls_back_to_the_cpu_and_says_so(driver, lenient):
    engine = driver()
    engine.send("setoption name Backend value cuda", "isready")
    assert unwrap(engine.engine.evaluator).provider == CPU_PROVIDER
    assert any("Backend cuda: no working GPU provider" in line and "runs on the CPU" in line
               for line in engine.strings())
    assert engine.go("go nodes 50").split()[1] != "0000"


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a working CUDA provider")
def test_under_strict_mode_a_missing_gpu_is_a_failure(driver):
    engine = driver()
    with pytest.raises(AssertionError, match="fell back under strict mode.*Backend cuda"):
        engine.send("setoption name Backend value cuda", "isready")
    engine.engine.strict_failures.clear()


@needs_gpu
def test_auto_runs_the_network_on_the_gpu(driver):
    engine = driver()
    engine.send("isready")
    assert unwrap(engine.engine.evaluator).provider == "CUDAExecutionProvider"
    assert engine.go("go nodes 400").split()[1] != "0000"
