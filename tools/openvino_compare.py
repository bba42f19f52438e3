"""OpenVINO against onnxruntime for a ResNet policy-value network: agreement and speed on this CPU.

The issue that tuned the network runtime named OpenVINO in bf16 as a candidate for CPUs with AVX-512 BF16.
This measures it the way ``python -m training quantize`` measures int8: the policy's top legal move and the value W - L
against onnxruntime fp32 on real positions, and positions per second at batch 16 with 1 and 2 threads, for
OpenVINO's f32, bf16 and f16 inference precisions. OpenVINO is not a dependency: ``pip install openvino``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import chess
import click
import numpy as np

from evaluators.resnet import ResNetEvaluator
from engine.network_comparison import evaluator_outputs, outputs, pgn_positions, throughput

PRECISIONS = ("f32", "bf16", "f16")
BATCH = 16


class OpenVinoSession:
    """onnxruntime's ``InferenceSession.run`` over an OpenVINO model compiled for the CPU, so that the engine's
    own evaluator runs on it unchanged. ``batch``: a fixed batch size (faster), or None for any."""

    def __init__(self, network: Path, threads: int, precision: str, batch: Optional[int] = None) -> None:
        import openvino
        core = openvino.Core()
        model = core.read_model(str(network))
        if batch is not None:
            planes = model.inputs[0]
            model.reshape({planes.get_any_name(): [batch, *planes.get_partial_shape()[1:].to_shape()]})
        self.compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                          "INFERENCE_PRECISION_HINT": precision,
                                                          "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
        self.request = self.compiled.create_infer_request()

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        results = self.request.infer({0: next(iter(feeds.values()))})
        return [results[self.compiled.output(name)] for name in names]


class OpenVinoResNet(ResNetEvaluator):
    """The engine's ResNet evaluator (metadata checks, move slots, softmax) with OpenVINO running the network."""

    def __init__(self, network: Path, precision: str) -> None:
        self.openvino = OpenVinoSession(network, 1, precision)
        super().__init__(network)

    @property
    def session(self) -> Any:
        self.load()
        return self.openvino


def openvino_outputs(network: Path, precision: str, boards: list[chess.Board]) -> tuple[list[str], np.ndarray]:
    """Each position's top legal move and value W - L by OpenVINO at ``precision`` (as network_comparison.outputs)."""
    return evaluator_outputs(OpenVinoResNet(network, precision), boards)


def openvino_throughput(network: Path, threads: int, precision: str, seconds: float = 2.0) -> float:
    """Positions per second of OpenVINO at batch BATCH on random binary planes."""
    session = OpenVinoSession(network, threads, precision, BATCH)
    planes = ResNetEvaluator(network).encoding.planes
    feeds = {"planes": np.random.default_rng(1).integers(0, 2, (BATCH, planes, 8, 8)).astype(np.float32)}
    session.run(["policy", "wdl"], feeds)
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        session.run(["policy", "wdl"], feeds)
        count += BATCH
    return count / (time.perf_counter() - started)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("network", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--positions", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="PGN of held-out games for the agreement measurement.")
@click.option("--count", default=10000, show_default=True, help="Positions compared.")
def main(network: Path, positions: Path, count: int) -> None:
    """Compare OpenVINO (f32, bf16, f16) with onnxruntime fp32 on NETWORK: agreement, value error, speed."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        raise click.ClickException("OpenVINO is not installed (pip install openvino)") from None
    boards = pgn_positions(positions, count)
    reference_tops, reference_values = outputs(network, boards)
    speeds = {threads: throughput(network, threads) for threads in (1, 2)}
    click.echo(f"onnxruntime fp32: batch {BATCH}, {speeds[1]:.0f} positions/s with 1 thread, {speeds[2]:.0f} with 2")
    for precision in PRECISIONS:
        tops, values = openvino_outputs(network, precision, boards)
        agreement = np.mean([a == b for a, b in zip(reference_tops, tops)])
        error = np.abs(values - reference_values)
        rates = [openvino_throughput(network, threads, precision) for threads in (1, 2)]
        click.echo(f"openvino {precision}: top move as onnxruntime fp32's on {100 * agreement:.2f}% of {len(boards)} "
                   f"positions; value error mean {error.mean():.4f}, max {error.max():.4f}; "
                   f"{rates[0]:.0f} positions/s with 1 thread ({rates[0] / speeds[1]:.2f}x), "
                   f"{rates[1]:.0f} with 2 ({rates[1] / speeds[2]:.2f}x)")


if __name__ == "__main__":
    main()
