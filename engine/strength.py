"""Playing weaker on purpose: a rating through a folder of rating networks, and a node cap for any network.

The Maia networks were trained to predict the moves of human players of one rating each (1100 to 1900) and are
meant to be played at one node a move: their policy's top move is their prediction. A GUI asks for a strength
through the two standard options it shows as a strength setting, ``UCI_LimitStrength`` and ``UCI_Elo``; with
``RatingNetworks`` naming a folder of such files (``maia-1100.pb.gz`` ... ``maia-1900.pb.gz``: any file name that
ends in its rating), the engine plays the network nearest the asked rating at one node a move, whatever the
evaluator, search and weights chosen otherwise. Without such a folder it cannot play at a rating: it says so and
plays at its own strength. ``NodeLimit`` caps the nodes of every move for any backend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from hackmate_core.options import Option

#: A rating network's file name: its rating last before the extension (maia-1500.pb.gz, my-net-1750.onnx).
RATED_FILE = re.compile(r"(?<!\d)(\d{3,4})\.(pb\.gz|pb|onnx)$")
#: The ratings the Maia networks cover, which bound UCI_Elo.
MIN_ELO, MAX_ELO = 1100, 1900

#: Tuning a rating network plays with, whatever the GUI set (internal values): its own policy and value, no
#: heuristic mixed in, since the prediction of the human move is the policy's top move.
RATED_TUNING = {"TacticalPriors": 0.0, "MaterialBlend": 0.0}

OPTIONS = (
    Option("UCI_LimitStrength", "check", False, rebuild=True,
           help="play at UCI_Elo with the nearest network of RatingNetworks, one node a move (without "
                "RatingNetworks the engine says it cannot and plays at full strength)"),
    Option("UCI_Elo", "spin", 1500, MIN_ELO, MAX_ELO, rebuild=True,
           help="the rating UCI_LimitStrength plays at: the network of RatingNetworks nearest to it"),
    Option("RatingNetworks", "string", "", rebuild=True,
           help="folder of networks that play like humans of one rating each, the rating ending each file name "
                "(the Maia networks: maia-1100.pb.gz ... maia-1900.pb.gz), for UCI_LimitStrength"),
    Option("NodeLimit", "spin", 0, 0, 2 ** 31 - 1,
           help="nodes a move at most, whatever go allows (0: no cap); 1 plays a policy network's top move"),
)


def rated_networks(folder: str) -> dict[int, Path]:
    """The network files of ``folder`` by the rating that ends their names (OSError if it cannot be listed)."""
    networks: dict[int, Path] = {}
    for path in sorted(Path(folder).expanduser().iterdir()):
        match = RATED_FILE.search(path.name)
        if match and path.is_file():
            networks.setdefault(int(match.group(1)), path)
    return networks


@dataclass(frozen=True)
class Strength:
    """What the strength options ask of the next backend and of every move."""

    #: The rating network to play instead of the chosen backend (None: the chosen backend).
    weights: Optional[Path]
    #: Nodes a move at most (None: no cap).
    nodes: Optional[int]
    #: What to tell the GUI about it (an `info string`), and whether it is a fallback (strength not as asked).
    note: str = ""
    fell_back: bool = False


def strength(limit: bool, elo: int, folder: str, node_limit: int) -> Strength:
    """The :class:`Strength` of the options' values."""
    cap = node_limit or None
    if not limit:
        return Strength(None, cap)
    if not folder:
        return Strength(None, cap, f"UCI_LimitStrength needs RatingNetworks (a folder of Maia networks, "
                                   f"maia-{MIN_ELO}.pb.gz ... maia-{MAX_ELO}.pb.gz): playing at full strength",
                        fell_back=True)
    try:
        networks = rated_networks(folder)
    except OSError as error:
        return Strength(None, cap, f"RatingNetworks: cannot read {folder!r} ({error}): playing at full strength",
                        fell_back=True)
    if not networks:
        return Strength(None, cap, f"RatingNetworks: no file in {folder!r} ends in a rating (maia-1500.pb.gz): "
                                   "playing at full strength", fell_back=True)
    rating = min(networks, key=lambda r: (abs(r - elo), r))
    return Strength(networks[rating], 1, f"UCI_Elo {elo}: playing {networks[rating].name} (rated {rating}) at one "
                                         "node a move")
