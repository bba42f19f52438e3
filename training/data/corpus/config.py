"""The corpus's settings, where its files come from, and its error."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluators.encoding import ENCODINGS as BOARD_ENCODINGS
from training.config_cli import setting
from training.data.pgn import DataError
from training.data.shards import DEFAULT_ENCODING
from training.data.targets import DEFAULT_TEMPERATURE

REPOSITORY = Path(__file__).resolve().parents[3]
SHARED_DATA = REPOSITORY.parent / "shared" / "data"
TESTSET = REPOSITORY / "testset"
#: The link to the newest joined corpus, under the cache root.
CURRENT = "corpus"
#: The folder under the cache root whose game and MultiPV files every corpus joins (CorpusConfig.added).
ADDED = "games"
#: The board encodings a corpus part is prepared in: every encoding of the registry, the default first.
ENCODINGS = (DEFAULT_ENCODING, *(name for name in BOARD_ENCODINGS if name != DEFAULT_ENCODING))


class CorpusError(DataError):
    """A corpus that cannot be used: a part missing or damaged, or another encoding than asked."""


@dataclass
class CorpusConfig:
    """What goes into the corpus and what changes its content."""

    files: list[str] = setting([], "Game (.pgn, .pgn.xz, ...) and MultiPV (.jsonl.gz) files to add to the shared ones.")
    shared: bool = setting(True, "Include every game file of ../shared/data/games and the MultiPV files of "
                                 "../shared/data/labelled.")
    added: bool = setting(True, "Include every game and MultiPV file under $HACKMATE_CACHE/games, at any depth "
                                "(where self-play for the corpus goes: the shared folder is read-only).")
    encoding: str = setting(DEFAULT_ENCODING, "Board encoding.", choices=ENCODINGS)
    skip_plies: int = setting(8, "In games without [%eval] (human games): skip the first N plies. Annotated games "
                                 "keep every engine move and none of the book or random moves.")
    min_rating: int = setting(0, "Skip games with a player rated below this.")
    player: str = setting("", "Only the moves of the player whose name (White or Black header) contains this, "
                              "case-insensitively: a person's own moves; games without them add none.")
    temperature: float = setting(DEFAULT_TEMPERATURE, "Soft-policy temperature of MultiPV labels in centipawns.")
    validation_period: int = setting(20, "Hold out one game in N (by a hash of its moves) as the validation split.")
    exclude: list[str] = setting([], "Shard directory whose positions are left out, besides testset/ (repeatable).",
                                 path="folder", exists=True)
    workers: int = setting(2, "Files prepared at once (one process each).")
