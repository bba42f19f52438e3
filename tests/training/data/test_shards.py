"""Shard directories read in another encoding than they were written in (a network measured on the test set)."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np

from evaluators.encoding import get_encoding
from training.data import shards

TESTSET = Path(__file__).resolve().parents[3] / "testset"


def test_a_test_set_is_encoded_anew_from_its_fens_for_another_encoding():
    stored, meta = shards.load_dir(TESTSET)
    same, same_meta = shards.load_dir_encoded(TESTSET, get_encoding(meta["encoding"]))
    assert same_meta == meta and all(np.array_equal(same[name], stored[name]) for name in stored)
    features36 = get_encoding("features36")
    recoded, recoded_meta = shards.load_dir_encoded(TESTSET, features36)
    assert recoded["planes"].shape == (len(stored["key"]), features36.binary_planes * 8)
    assert "no game before them" in recoded_meta["planes"]
    # features36 begins with planes18's 17 binary planes, in the same order
    assert np.array_equal(recoded["planes"][:, :17 * 8], stored["planes"][:, :17 * 8])
    for row in (0, len(stored["key"]) // 2, len(stored["key"]) - 1):
        board = chess.Board(stored["fen"][row].decode())
        expected = np.packbits(features36.binary(board).reshape(-1), bitorder="little")
        assert np.array_equal(recoded["planes"][row], expected)
    assert all(np.array_equal(recoded[name], stored[name]) for name in stored if name != "planes")
