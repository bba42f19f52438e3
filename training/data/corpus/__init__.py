"""The training corpus: every game and labelled file, each prepared once into the cache, joined for training.

``python -m training corpus [FILES...]`` reads every game file of ``../shared/data/games``
(``.pgn``, ``.pgn.xz``), the MultiPV files of ``../shared/data/labelled``, every such file
under ``$HACKMATE_CACHE/games`` (the corpus's own growth: self-play written there joins every
later run) and the files given (:mod:`.files`; the settings: :mod:`.config`). Each file is a *part*: prepared
alone, streaming (a chunk of positions in memory at a time, :mod:`.prepare`), into a cache entry
(training.data.cache) keyed by the file's SHA-256 and the settings that change its content. A part already there
is reused; a new file is prepared alone and joined to the rest.

A part (:mod:`.parts`) holds the shard columns of training.data.shards (``TRAINING_COLUMNS``: no FEN) as
``.npy`` files (:mod:`.columns`) opened memory-mapped, plus ``seen_key``/``seen_game``: the key of every
position of every readable game with the game's identity, kept or not. Rows of a game
file: in games with ``[%eval]`` annotations every annotated (engine) move, its policy
the move played, its W/D/L target the eval through Stockfish's model (the eval also in
``policy_score``); in games without (human games) every move from ``skip_plies`` on, no
engine value. Rows of a MultiPV file: the soft policy and W/D/L of training.data.targets'
``engine_label``. A game's identity is a hash of its moves, the same in every file (training.data.split).

The *join* (:mod:`.join`) works on keys and indices, never on the positions themselves:
- one record per position key, preferring a MultiPV label, then an engine eval, then
  by game identity and ply (so the corpus does not depend on the order of the files);
- the test set's positions (``testset/``) and those of ``--exclude`` directories removed;
- a named validation split of whole games: one game in ``validation_period`` by its
  identity (stable when files are added). A position is held out only if every game it
  occurs in is held out, so no held-out position is trained on; MultiPV positions take
  the split of the games they occur in (by key where no game holds them).
It is a cache entry too (part, row and validation arrays), keyed by its parts and
exclusions (:mod:`.build`); ``ROOT/corpus`` links to the newest, which ``train`` reads
(:mod:`.read`) by gathering its rows from the parts' memory maps. What the cache holds, and pruning what the
current corpus does not read: :mod:`.maintenance`.
"""

from training.data.corpus.build import Corpus, build
from training.data.corpus.config import ADDED, CURRENT, CorpusConfig, CorpusError
from training.data.corpus.join import JOINS
from training.data.corpus.maintenance import info_text, prune_stale
from training.data.corpus.parts import PART_VERSION, PARTS
from training.data.corpus.read import is_corpus, load_for_training, validation_split

__all__ = ["ADDED", "CURRENT", "Corpus", "CorpusConfig", "CorpusError", "JOINS", "PARTS", "PART_VERSION", "build",
           "info_text", "is_corpus", "load_for_training", "prune_stale", "validation_split"]
