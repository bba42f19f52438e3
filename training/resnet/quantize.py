"""int8 static quantisation of a ResNet policy-value network, and the measurement that decides whether it may
replace fp32: top-move agreement and value error on real positions, and network speed on this CPU.

A quantised file has the same inputs, outputs and metadata, plus the SHA-256 of the fp32 file it came from.
Written as ``X-int8.onnx`` beside ``X.onnx`` it is what the engine's ``Precision`` option runs: ``mixed`` (the
default since 25 November 2026) uses it and asks the fp32 file again where its two best moves are close. The rule
for what runs by default: faster here, and the top legal move the same as fp32's on at least 99% of 10,000 real
positions, with no loss in a match; ``python -m training quantize`` measures the agreement of int8 alone and of
mixed (docs/bench.md has the figures for the shipped network), through engine.network_comparison. Needs the
``onnx`` package, not PyTorch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import chess
import numpy as np

from engine.network_comparison import mixed_outputs, outputs, pgn_positions, throughput
from training.configs import QuantizeConfig
from training.onnx_metadata import read_metadata, write_metadata

#: The layers that stay fp32 by default: the policy's last convolution and the value head's dense layers
#: (quantising the policy head alone cost 8 points of top-move agreement on the shipped 6x64 network).
HEAD_NODES = ("/policy/policy.3/Conv", "/value/value.4/Gemm", "/value/value.6/Gemm")
#: Positions per calibration batch; the percentile calibrator needs batches of one size, so a remainder is left out.
CALIBRATION_BATCH = 64


def quantize(network: Path, out: Path, calibration: list[chess.Board], keep_heads: bool = QuantizeConfig.keep_heads,
             method: str = QuantizeConfig.method) -> None:
    """Per-channel QDQ int8 weights, uint8 activations calibrated on ``calibration`` by ``method``."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from evaluators.resnet import ResNetEvaluator
    encoding = ResNetEvaluator(network).encoding
    usable = len(calibration) // CALIBRATION_BATCH * CALIBRATION_BATCH or len(calibration)
    batches = [np.stack([encoding.encode(board) for board in calibration[i:i + CALIBRATION_BATCH]])
               for i in range(0, usable, CALIBRATION_BATCH)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.pending = iter(batches)

        def get_next(self):
            batch = next(self.pending, None)
            return None if batch is None else {"planes": batch}

    out.parent.mkdir(parents=True, exist_ok=True)
    prepared = out.with_suffix(".pre.onnx")
    quant_pre_process(str(network), str(prepared), skip_symbolic_shape=True)
    try:
        quantize_static(str(prepared), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method={"percentile": CalibrationMethod.Percentile,
                                          "minmax": CalibrationMethod.MinMax}[method],
                        nodes_to_exclude=list(HEAD_NODES) if keep_heads else [])
    finally:
        prepared.unlink(missing_ok=True)
    mark_int8_of(out, network)


def mark_int8_of(int8: Path, network: Path) -> None:
    """Record in ``int8``'s metadata which fp32 file it was quantised from, so that the engine's mixed precision
    never pairs it with another network."""
    from evaluators.resnet import INT8_OF_KEY, file_digest
    metadata = {key: value for key, value in read_metadata(int8).items() if key != INT8_OF_KEY}
    write_metadata(int8, {**metadata, INT8_OF_KEY: file_digest(network)})


def quantize_and_compare(config: QuantizeConfig) -> Iterator[str]:
    """Quantise ``config.network`` into ``config.out`` on positions of the PGN ``calibration``, then compare int8
    and mixed precision with fp32 on positions of the PGN ``positions``: a line of figures at a time, as they are
    measured."""
    network, out, positions = config.network, config.out, config.positions
    quantize(network, out, pgn_positions(config.calibration, config.calibration_count), config.keep_heads,
             config.method)
    boards = pgn_positions(positions, config.count)
    reference_tops, reference_values = outputs(network, boards)
    tops, values = outputs(out, boards)
    mixed_tops, mixed_values, asked = mixed_outputs(network, out, boards)
    for name, (tops, values) in (("int8", (tops, values)), ("mixed", (mixed_tops, mixed_values))):
        agreement = np.mean([a == b for a, b in zip(reference_tops, tops)])
        error = np.abs(values - reference_values)
        yield (f"{out} {name}: top move as fp32's on {100 * agreement:.2f}% of {len(boards)} positions of "
               f"{positions.name}; value |{name} - fp32| mean {error.mean():.4f}, 99th percentile "
               f"{np.percentile(error, 99):.4f}, max {error.max():.4f}" +
               (f"; fp32 evaluated again {100 * asked:.1f}% of them" if name == "mixed" else ""))
    for threads in (1, 2):
        started = time.perf_counter()
        fp32, int8 = throughput(network, threads), throughput(out, threads)
        yield (f"batch 16, {threads} thread{'s' if threads > 1 else ''}: fp32 {fp32:.0f} positions/s, "
               f"int8 {int8:.0f} ({int8 / fp32:.2f}x; {time.perf_counter() - started:.0f} s)")
