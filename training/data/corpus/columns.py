"""A corpus column: one ``.npy`` file written in chunks under a temporary name, its final shape written at the end."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from training.data import cache
from training.data.corpus.config import CorpusError


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A version 1.0 .npy header of fixed length (128 bytes), so that it can be rewritten with the final shape."""
    text = repr({"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape})
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + (text.ljust(117) + "\n").encode("latin1")


class ColumnWriter:
    """One .npy file written in chunks under a temporary name; ``close`` writes its shape and renames it."""

    def __init__(self, path: Path, dtype: np.dtype, row_shape: tuple[int, ...] = ()) -> None:
        self.path, self.dtype, self.row_shape, self.rows = path, dtype, row_shape, 0
        self.handle = open(cache.temporary_name(path), "wb")
        self.handle.write(_npy_header(dtype, (0, *row_shape)))

    def append(self, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array, dtype=self.dtype)
        if array.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path.name}: rows of shape {array.shape[1:]}, expected {self.row_shape}")
        try:
            array.tofile(self.handle)
        except OSError as error:  # not a damaged input: READ_ERRORS must not catch it
            raise CorpusError(f"{self.path}: cannot write ({error})") from None
        self.rows += len(array)

    def close(self) -> None:
        try:
            self.handle.seek(0)
            self.handle.write(_npy_header(self.dtype, (self.rows, *self.row_shape)))
            self.handle.close()
            os.replace(cache.temporary_name(self.path), self.path)
        except OSError as error:
            raise CorpusError(f"{self.path}: cannot write ({error})") from None

