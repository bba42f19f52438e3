"""A reader of the protobuf wire format, enough to read a message whose schema the caller knows by field numbers.

Leela's network files are protobuf messages (lczero-common's ``proto/net.proto``). Rather than generated code and
the protobuf runtime, :class:`Message` splits a message into its fields by number and wire type, and the caller
reads each as the type its schema gives it. Proto2 rules: of an optional scalar seen several times the last
counts, and the occurrences of an embedded message merge (read as one message, their bytes joined).
"""

from __future__ import annotations

import struct
from typing import Optional, Union

Bytes = Union[bytes, memoryview]

#: Wire types.
VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not a protobuf message (truncated, or a wire type the format does not have)."""


def _varint(data: Bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and where the next field starts."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise WireError("truncated (a varint runs past the end)")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise WireError("a varint longer than 10 bytes")


class Message:
    """One message's fields: number -> (wire type, raw value) in the order they came, the value an int for a
    varint and the bytes otherwise."""

    def __init__(self, data: Bytes) -> None:
        view = memoryview(data)
        self.fields: dict[int, list[tuple[int, Union[int, memoryview]]]] = {}
        at = 0
        while at < len(view):
            key, at = _varint(view, at)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise WireError("field number 0")
            value: Union[int, memoryview]
            if wire == VARINT:
                value, at = _varint(view, at)
            elif wire in (FIXED64, FIXED32):
                size = 8 if wire == FIXED64 else 4
                value, at = view[at:at + size], at + size
            elif wire == LENGTH_DELIMITED:
                size, at = _varint(view, at)
                value, at = view[at:at + size], at + size
            else:
                raise WireError(f"wire type {wire} (field {number}) is not in the format")
            if at > len(view):
                raise WireError(f"truncated (field {number} runs past the end)")
            self.fields.setdefault(number, []).append((wire, value))

    def has(self, number: int) -> bool:
        return number in self.fields

    def _values(self, number: int, wire: int, what: str) -> list:
        values = self.fields.get(number, [])
        if any(kind != wire for kind, _ in values):
            raise WireError(f"field {number} is not {what}")
        return [value for _, value in values]

    def uint(self, number: int, default: int = 0) -> int:
        """A varint field (uint32, uint64, enum); the last occurrence counts."""
        values = self._values(number, VARINT, "a varint")
        return values[-1] if values else default

    def fixed32(self, number: int, default: int = 0) -> int:
        values = self._values(number, FIXED32, "a fixed32")
        return int.from_bytes(values[-1], "little") if values else default

    def float32(self, number: int, default: float = 0.0) -> float:
        """A ``float`` field (IEEE single precision)."""
        values = self._values(number, FIXED32, "a float")
        return struct.unpack("<f", values[-1])[0] if values else default

    def raw(self, number: int) -> Optional[memoryview]:
        """A ``bytes`` or ``string`` field (None when absent)."""
        values = self._values(number, LENGTH_DELIMITED, "length-delimited")
        return values[-1] if values else None

    def message(self, number: int) -> Optional["Message"]:
        """An embedded message (its occurrences merged), or None when absent."""
        values = self._values(number, LENGTH_DELIMITED, "a message")
        return Message(b"".join(values)) if values else None

    def messages(self, number: int) -> list["Message"]:
        """A repeated embedded message, in order."""
        return [Message(value) for value in self._values(number, LENGTH_DELIMITED, "a message")]
