"""Names of evaluators and searches, and how to build a working pair from them.

Concrete classes are imported lazily so that a missing optional runtime (or a
broken weights file) only affects the backend that needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from evaluators.base import Comparator, Evaluator
from search.base import Search

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
DEFAULT_WEIGHTS = {"resnet": WEIGHTS_DIR / "resnet.onnx", "comparator": WEIGHTS_DIR / "comparator.onnx"}

EVALUATOR_NAMES = ["material", "pst", "resnet", "comparator"]
SEARCH_NAMES = ["alphabeta", "puct", "comparison"]
#: The search each evaluator plays best with.
NATURAL_SEARCH = {"material": "alphabeta", "pst": "alphabeta", "resnet": "puct", "comparator": "comparison"}
DEFAULT_EVALUATOR = "resnet"

AnyEvaluator = Union[Evaluator, Comparator]


class BackendError(Exception):
    """The requested evaluator/search pair cannot be built."""


def build_evaluator(name: str, weights: Optional[str] = None) -> AnyEvaluator:
    """Instantiate an evaluator by name; raises BackendError (or LoadError) with a clear message."""
    if name == "material":
        from evaluators.material import MaterialEvaluator
        return MaterialEvaluator()
    if name == "pst":
        from evaluators.material import PstEvaluator
        return PstEvaluator()
    if name == "resnet":
        from evaluators.resnet import ResNetEvaluator
        return ResNetEvaluator(Path(weights) if weights else DEFAULT_WEIGHTS["resnet"])
    if name == "comparator":
        from evaluators.comparator import ComparatorEvaluator
        return ComparatorEvaluator(Path(weights) if weights else DEFAULT_WEIGHTS["comparator"])
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
