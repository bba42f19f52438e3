"""The comparison search's capture quiescence, with a comparator that counts material.

A transparent comparator makes the horizon effect visible: without
quiescence a depth-1 search grabs a pawn defended by a pawn with its queen,
because it never sees the recapture; with quiescence it does not.
"""

from __future__ import annotations

import chess
import pytest

from evaluators.base import Comparator
from evaluators.material import PIECE_VALUES
from search.base import SearchControl
from search.comparison import ComparisonSearch


class MaterialComparator(Comparator):
    """Prefers the position with more material for White (ties: 0.5)."""

    name = "material-comparator"

    def features(self, board: chess.Board) -> float:
        return float(sum(PIECE_VALUES[p.piece_type] * (1 if p.color == chess.WHITE else -1)
                         for p in board.piece_map().values() if p.piece_type != chess.KING))

    def prefers_first(self, first: float, second: float) -> float:
        return 1.0 if first > second else 0.0 if first < second else 0.5


# White's queen can take the d5 pawn, which the e6 pawn defends.
POISONED = "4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1"


@pytest.mark.parametrize("quiescence,takes", [(False, True), (True, False)])
def test_quiescence_sees_the_recapture(quiescence, takes):
    search = ComparisonSearch(MaterialComparator())
    search.set_option("Quiescence", quiescence)
    result = search.search(chess.Board(POISONED), SearchControl(max_depth=1), lambda info: None)
    assert (result.best_move == chess.Move.from_uci("d2d5")) == takes


def test_quiescence_takes_a_free_piece_and_sees_mate():
    search = ComparisonSearch(MaterialComparator())
    free_rook = chess.Board("4k3/8/8/3r4/8/8/3Q4/4K3 w - - 0 1")
    assert search.search(free_rook, SearchControl(max_depth=1), lambda info: None).best_move.uci() == "d2d5"
    infos = []
    back_rank = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    assert search.search(back_rank, SearchControl(max_depth=2), infos.append).best_move.uci() == "a1a8"
    assert infos[-1].mate == 1
