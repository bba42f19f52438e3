"""int8 static quantisation of a ResNet policy-value network, and the measurement that decides whether it may
replace fp32: top-move agreement and value error on real positions, and network speed on this CPU.

A quantised file has the same inputs, outputs and metadata, plus the SHA-256 of the fp32 file it came from.
Written as ``X-int8.onnx`` beside ``X.onnx`` it is what the engine's ``Precision`` option runs: ``mixed`` (the
default since 25 November 2026) uses it and asks the fp32 file again where its two best moves are close. The rule
for what runs by default: faster here, and the top legal move the same as fp32's on at least 99% of 10,000 real
positions, with no loss in a match; this tool measures the agreement of int8 alone and of mixed (docs/bench.md
has the figures for the shipped network). Needs the training extra (the ``onnx`` package).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import click
import numpy as np

from hackmate_core.textfiles import open_text

#: The layers that stay fp32 by default: the policy's last convolution and the value head's dense layers
#: (quantising the policy head alone cost 8 points of top-move agreement on the shipped 6x64 network).
HEAD_NODES = ("/policy/policy.3/Conv", "/value/value.4/Gemm", "/value/value.6/Gemm")


def pgn_positions(path: Path, count: int, skip_plies: int = 8) -> list[chess.Board]:
    """Up to ``count`` positions of the games in ``path`` (plain or compressed, as the self-play corpus's .xz parts),
    every ply after the first ``skip_plies``."""
    boards: list[chess.Board] = []
    with open_text(path) as handle:
        while len(boards) < count and (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                board.push(move)
                if ply >= skip_plies and not board.is_game_over():
                    boards.append(board.copy(stack=False))
    return boards[:count]


#: Positions per calibration batch; the percentile calibrator needs batches of one size, so a remainder is left out.
CALIBRATION_BATCH = 64
#: Activation-range calibration methods (onnxruntime's): the extremes seen, or their 99.999th percentile, which
#: leaves out the rare outliers that widen a min/max range (96.4% top-move agreement against 95.3% on the
#: shipped network).
METHODS = ("percentile", "minmax")


def quantize(network: Path, out: Path, calibration: list[chess.Board], keep_heads: bool = True,
             method: str = "percentile") -> None:
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
    import onnx
    from evaluators.resnet import INT8_OF_KEY, file_digest
    model = onnx.load(str(int8))
    kept = [entry for entry in model.metadata_props if entry.key != INT8_OF_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    model.metadata_props.add(key=INT8_OF_KEY, value=file_digest(network))
    onnx.save(model, str(int8))


def outputs(network: Path, boards: list[chess.Board]) -> tuple[list[str], np.ndarray]:
    """Each position's top legal move and value W - L, by one network file."""
    return evaluator_outputs(fp32_evaluator(network), boards)


def fp32_evaluator(network: Path) -> Any:
    """The network file alone (``Precision fp32``), whatever int8 copy lies beside it."""
    from evaluators.resnet import ResNetEvaluator
    evaluator = ResNetEvaluator(network)
    evaluator.set_option("Precision", "fp32")
    return evaluator


def mixed_outputs(network: Path, int8: Path, boards: list[chess.Board]) -> tuple[list[str], np.ndarray, float]:
    """:func:`outputs` of ``Precision mixed`` (``int8`` with ``network`` where it is unsure), and the share of
    positions the fp32 network evaluated again."""
    from evaluators.resnet import ResNetEvaluator
    mixed = ResNetEvaluator(network, int8=int8)
    mixed.set_option("Precision", "mixed")
    before = mixed.rechecked  # loading evaluates the start position
    tops, values = evaluator_outputs(mixed, boards)
    return tops, values, (mixed.rechecked - before) / max(1, len(boards))


def evaluator_outputs(evaluator: Any, boards: list[chess.Board]) -> tuple[list[str], np.ndarray]:
    """Each position's top legal move and value W - L, by a ResNet evaluator as the engine uses it."""
    tops, values = [], []
    for start in range(0, len(boards), 256):
        for evaluation in evaluator.evaluate_batch(boards[start:start + 256]):
            priors = evaluation.priors or {}
            tops.append(max(priors, key=priors.__getitem__).uci() if priors else "")
            values.append(evaluation.value)
    return tops, np.array(values)


def throughput(network: Path, threads: int, batch: int = 16, seconds: float = 2.0) -> float:
    """Positions per second of the bare network at ``batch``, as bench measures it."""
    from engine.bench import network_rate
    return network_rate(fp32_evaluator(network), threads, batch, seconds)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("network", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The int8 ONNX file.")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="PGN whose positions calibrate the activation ranges (training-like games).")
@click.option("--positions", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="PGN of held-out games for the agreement measurement.")
@click.option("--calibration-count", default=1024, show_default=True,
              help="Calibration positions (whole batches of 64).")
@click.option("--count", default=10000, show_default=True, help="Positions compared.")
@click.option("--keep-heads/--quantize-heads", default=True, show_default=True,
              help="Keep the policy and value heads' last layers in fp32.")
@click.option("--method", type=click.Choice(METHODS), default="percentile", show_default=True,
              help="Activation-range calibration.")
def main(network: Path, out: Path, calibration: Path, positions: Path, calibration_count: int, count: int,
         keep_heads: bool, method: str) -> None:
    """Quantise NETWORK to int8 and compare it with NETWORK: agreement, value error, speed at batch 16."""
    quantize(network, out, pgn_positions(calibration, calibration_count), keep_heads, method)
    boards = pgn_positions(positions, count)
    reference_tops, reference_values = outputs(network, boards)
    tops, values = outputs(out, boards)
    mixed_tops, mixed_values, asked = mixed_outputs(network, out, boards)
    for name, (tops, values) in (("int8", (tops, values)), ("mixed", (mixed_tops, mixed_values))):
        agreement = np.mean([a == b for a, b in zip(reference_tops, tops)])
        error = np.abs(values - reference_values)
        click.echo(f"{out} {name}: top move as fp32's on {100 * agreement:.2f}% of {len(boards)} positions of "
                   f"{positions.name}; value |{name} - fp32| mean {error.mean():.4f}, 99th percentile "
                   f"{np.percentile(error, 99):.4f}, max {error.max():.4f}" +
                   (f"; fp32 evaluated again {100 * asked:.1f}% of them" if name == "mixed" else ""))
    for threads in (1, 2):
        started = time.perf_counter()
        fp32, int8 = throughput(network, threads), throughput(out, threads)
        click.echo(f"batch 16, {threads} thread{'s' if threads > 1 else ''}: fp32 {fp32:.0f} positions/s, "
                   f"int8 {int8:.0f} ({int8 / fp32:.2f}x; {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
