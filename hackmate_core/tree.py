"""The layout of a PUCT tree node, declared on the ground floor so that the compiled PUCT (``hackmate_core._cpuct``)
reads and writes nodes without knowing the search that keeps them.

:class:`TreeNode` holds the slots the compiled selection, expansion and backup use; a search's node class derives
from it (adding slots of its own) and its instances are what ``_cpuct`` takes. :mod:`hackmate_core.compiled` binds
the layout when it loads ``_cpuct`` (a slot missing on either side is a TypeError there, at import).
"""

from __future__ import annotations

from typing import Optional, Sequence

#: The slots the compiled PUCT reads and writes (by name: hackmate_core/_cpuct.c's slot table).
NODE_SLOTS = ("prior", "moves", "priors", "children", "visits", "value_sum", "draw_sum", "virtual", "visited_policy",
              "terminal")


class TreeNode:
    """What every PUCT node holds: ``prior`` (its move's prior), once expanded the legal ``moves`` (16-bit codes) and
    their ``priors`` sorted by prior and ``children`` (the nodes of the first ``len(children)`` moves), ``visits``,
    ``value_sum`` and ``draw_sum`` (from the point of view of the side that moved into it), ``virtual`` (the virtual
    loss), ``visited_policy`` (the priors of the children visited at least once) and ``terminal`` ((value, draw) for
    the side to move when the result is known exactly). The search's node class sets them in its ``__init__``."""

    __slots__ = NODE_SLOTS

    prior: float
    moves: Optional[Sequence[int]]
    priors: Sequence[float]
    children: list
    visits: int
    value_sum: float
    draw_sum: float
    virtual: int
    visited_policy: float
    terminal: Optional[tuple[float, float]]
