"""DeepChess training learns, and the engine plays the comparator it exports with training's preferences."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from tests.conftest import FIXTURES  # noqa: E402
from tests.exported import assert_engine_plays_comparator  # noqa: E402
from training.deepchess import read_games  # noqa: E402
from training.deepchess.accuracy import evaluate  # noqa: E402
from training.deepchess.export import export_comparator  # noqa: E402
from training.deepchess.model import STUDENT_HEAD, STUDENT_LAYERS, SiameseComparator, save_comparator  # noqa: E402
from training.deepchess.pairs import PairSampler, SiblingSet, won_lost_pairs  # noqa: E402
from training.deepchess.train import train_comparator  # noqa: E402
from training.deepchess.valset import ValidationSet  # noqa: E402

FIXTURE = FIXTURES / "games.pgn"


def no_siblings() -> SiblingSet:
    return SiblingSet(np.zeros((0, 97), np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int32),
                      np.zeros(0, "S5"), np.zeros(0, bool), np.zeros(0, np.uint64), np.zeros(0, "S92"))


def test_the_comparator_fits_won_and_lost_positions_and_the_engine_plays_its_export(tmp_path, driver):
    """Learning: the engine's comparator (773-100-100-100, head 200-100-2), trained from scratch on won-vs-lost
    pairs of the fixture games' decisive positions, tells the won position from the lost one in 400 pairs of them
    (seeds 0 and 1: every pair after the first epoch; untrained: 77% and 39%, chance 50%). The margin: 90%."""
    positions = read_games([FIXTURE]).positions
    assert 0 < positions.white_won.sum() < len(positions.white_won)
    torch.manual_seed(0)
    model = SiameseComparator(STUDENT_LAYERS, STUDENT_HEAD)
    fit = ValidationSet("fit", *won_lost_pairs(positions, 400, np.random.default_rng(7)), no_siblings(),
                        np.zeros(0, np.uint64), 0.05)
    history = train_comparator(model, PairSampler(positions, no_siblings(), 0.05, 0.0), fit, epochs=2,
                               pairs_per_epoch=1000, lr=1e-3, seed=0, log=lambda line: None)
    assert history[-1]["won_lost"] >= 0.9, history
    assert evaluate(model, fit) == history[-1]  # what training reported is the network's
    save_comparator(model, tmp_path / "fitted.pt", {})
    onnx = export_comparator(tmp_path / "fitted.pt", tmp_path / "fitted.onnx", command="pytest")
    assert_engine_plays_comparator(driver, onnx, tmp_path / "fitted.pt")
