"""Names of evaluators and searches, and how to build a working pair from them.

Concrete classes are imported lazily so that a missing optional runtime (or a
broken weights file) only affects the backend that needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from evaluators.base import AnyEvaluator, Comparator, Evaluator
from search.base import Search

from hackmate_weights import WEIGHTS_DIR  # weights/, installed as package data (pyproject.toml)
DEFAULT_WEIGHTS = {"resnet": WEIGHTS_DIR / "resnet.onnx", "comparator": WEIGHTS_DIR / "comparator.onnx",
                   "dqn": WEIGHTS_DIR / "dqn.onnx"}

EVALUATOR_NAMES = ["material", "pst", "resnet", "comparator", "dqn"]
SEARCH_NAMES = ["alphabeta", "puct", "comparison"]
#: The search each evaluator plays best with.
NATURAL_SEARCH = {"material": "alphabeta", "pst": "alphabeta", "resnet": "puct", "comparator": "comparison",
                  "dqn": "puct"}
DEFAULT_EVALUATOR = "resnet"


class BackendError(Exception):
    """The requested evaluator/search pair cannot be built."""


def weights_path(evaluator: str, weights: Optional[str]) -> Path:
    """The network file of ``weights``: a path, or the bare name of a file shipped in weights/
    (``resnet-int8.onnx``, found wherever the engine is installed or started); None: the evaluator's default."""
    if not weights:
        return DEFAULT_WEIGHTS[evaluator]
    path = Path(weights)
    shipped = WEIGHTS_DIR / path.name
    return shipped if not path.exists() and path.parent == Path(".") and shipped.exists() else path


def build_evaluator(name: str, weights: Optional[str] = None, threads: int = 1, lazy: bool = False) -> AnyEvaluator:
    """Instantiate an evaluator by name, composed with its wrappers; BackendError (or LoadError) if impossible.

    "resnet" is the bare network inside the heuristic blend inside a cache:
    cache(blend(network)), so that cached evaluations are the blended ones.
    The comparator gets a feature cache. ``threads`` is the Threads option;
    ``lazy`` leaves the default network's weights unread until ``load()`` or first use.
    """
    if name == "material":
        from evaluators.material import MaterialEvaluator
        return MaterialEvaluator()
    if name == "pst":
        from evaluators.material import PstEvaluator
        return PstEvaluator()
    if name == "resnet":
        from evaluators.blend import BlendedEvaluator
        from evaluators.cache import CachedEvaluator
        from evaluators.resnet import ResNetEvaluator
        network = ResNetEvaluator(weights_path("resnet", weights), threads, lazy)
        return CachedEvaluator(BlendedEvaluator(network))
    if name == "comparator":
        from evaluators.cache import CachedComparator
        from evaluators.comparator import ComparatorEvaluator
        return CachedComparator(ComparatorEvaluator(weights_path("comparator", weights)))
    if name == "dqn":
        from evaluators.cache import CachedEvaluator
        from evaluators.dqn import DQNEvaluator
        return CachedEvaluator(DQNEvaluator(weights_path("dqn", weights), threads))
    raise BackendError(f"unknown evaluator {name!r} (choose from {', '.join(EVALUATOR_NAMES)})")


def build_search(name: str, evaluator: AnyEvaluator) -> Search:
    """Instantiate a search over ``evaluator``; raises BackendError if they do not fit together."""
    if name in ("alphabeta", "puct"):
        if not isinstance(evaluator, Evaluator):
            raise BackendError(f"search {name} needs a scalar evaluator; {evaluator.name} only compares "
                               f"positions (use search comparison)")
        if name == "alphabeta":
            from search.alphabeta import AlphaBetaSearch
            return AlphaBetaSearch(evaluator)
        from search.puct import PuctSearch
        return PuctSearch(evaluator)
    if name == "comparison":
        if not isinstance(evaluator, Comparator):
            raise BackendError(f"search comparison needs a comparator evaluator, not {evaluator.name}")
        from search.comparison import ComparisonSearch
        return ComparisonSearch(evaluator)
    raise BackendError(f"unknown search {name!r} (choose from {', '.join(SEARCH_NAMES)})")


#: Share of Hash that goes to the evaluator's cache when the search keeps a table too.
CACHE_SHARE = 0.25


def apply_hash(megabytes: float, search: Search, evaluator: AnyEvaluator) -> None:
    """Split ``Hash`` between the search's table and the evaluator's cache (safe while searching).

    A search without a table of its own leaves it all to the cache; an
    evaluator without a cache (material, pst) leaves it all to the search;
    otherwise (alpha-beta's and the comparison search's tables, PUCT's tree)
    the cache gets CACHE_SHARE.
    """
    from evaluators.cache import find_cache
    cache = find_cache(evaluator)
    cache_mb = 0.0 if cache is None else megabytes if not search.uses_hash else megabytes * CACHE_SHARE
    search.set_hash(megabytes - cache_mb)
    if cache is not None:
        cache.resize(cache_mb)
