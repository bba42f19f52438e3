"""The compiled floor's copies of Python's tables and its node layout: the tables C repeats (the exchange's piece
values and MVV, the material evaluator's check bonus, the policy's move steps, the encodings' plane counts) equal
Python's, read through ``hackmate_core._cpuct.tables()``; the node layout is the one hackmate_core.tree declares, and
the search's nodes are of it. Without the compiled path only the layout tests run."""

from __future__ import annotations

import chess
import pytest

from evaluators import encoding, material, moves
from hackmate_core import compiled, exchange
from hackmate_core.tree import NODE_SLOTS, TreeNode
from search.puct import Node

needs_compiled = pytest.mark.skipif(compiled.cpuct is None, reason="the compiled path is not in use")


def _by_piece_type(values: dict[int, int]) -> tuple[int, ...]:
    """A table by python-chess piece type as C indexes it (0: no piece)."""
    return tuple(values.get(piece_type, 0) for piece_type in range(7))


@needs_compiled
def test_the_compiled_tables_equal_pythons():
    tables = compiled.cpuct.tables()  # type: ignore[union-attr]
    assert tables["piece_values"] == _by_piece_type(exchange.PIECE_VALUES)
    assert tables["mvv"] == _by_piece_type(exchange.MVV)
    assert tables["check_bonus"] == material.CHECK_BONUS_CP
    assert tables["queen_directions"] == tuple(moves.QUEEN_DIRECTIONS)
    assert tables["knight_deltas"] == tuple(moves.KNIGHT_DELTAS)
    assert tables["binary_planes"] == {name: e.binary_planes for name, e in encoding.ENCODINGS.items()}
    assert tables["lc0_history"] == encoding.LC0_HISTORY == len(encoding.lc0_history(chess.Board()))
    assert tables["lc0_block"] == len(encoding.lc0_history(chess.Board())[0])
    assert tables["last_moves"] == encoding.FEATURES_LAST_MOVES == encoding.ENCODINGS["features36"].last_moves


def test_the_search_nodes_have_the_declared_layout():
    assert TreeNode.__slots__ == NODE_SLOTS
    assert issubclass(Node, TreeNode) and not set(Node.__slots__) & set(NODE_SLOTS)
    node = Node(None, 0.5)
    assert all(hasattr(node, name) for name in NODE_SLOTS)


@needs_compiled
def test_the_compiled_puct_takes_nodes_of_the_layout_only():
    cpuct = compiled.cpuct
    node = Node(None, 1.0)
    cpuct.add_virtual([node], 3)  # type: ignore[union-attr]
    assert node.virtual == 3

    class Stranger:
        __slots__ = NODE_SLOTS

    stranger = Stranger()
    with pytest.raises(TypeError, match="bound nodes only"):
        cpuct.add_virtual([stranger], 1)  # type: ignore[union-attr]


@needs_compiled
def test_a_layout_without_a_slot_is_refused():
    class Partial:
        __slots__ = NODE_SLOTS[:-1]

    with pytest.raises(TypeError, match=NODE_SLOTS[-1]):
        compiled.cpuct.bind_node(Partial)  # type: ignore[union-attr]
