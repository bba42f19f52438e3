"""The backends registry: every evaluator and search the engine can build, found through entry points.

Each evaluator and search declares itself once, on its class (:class:`evaluators.base.Pluggable`,
:class:`search.base.Search`): name, natural search, default weights, help, options and the wrappers the
engine composes around it. The registry finds those classes in the entry-point groups ``hackmate.evaluators``
and ``hackmate.searches``, where pyproject.toml declares the built-in ones exactly as a third-party package
declares a plugin (docs/plugins.md), and everything else derives from it: the CLI's choices and help, the UCI
``Evaluator`` and ``Search`` combos, the options listed at `uci` and by ``--list-options``, and bench. Finding a
class imports its module and reads no weights; a network is opened only when the engine builds its backend.
A broken plugin is skipped and said (:attr:`Registry.problems`), and the rest works.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Callable, Iterable, Optional

from engine.options import ENGINE_OPTIONS
from evaluators.base import AnyEvaluator, Comparator, Evaluator, Pluggable
from hackmate_core.options import Option
from search.base import Search

from hackmate_weights import WEIGHTS_DIR  # weights/, installed as package data (pyproject.toml)

EVALUATOR_GROUP = "hackmate.evaluators"
SEARCH_GROUP = "hackmate.searches"
#: pyproject.toml's entry points of those groups, in the order the CLI and the combos list them: they tell
#: Hackmate's own entry points from plugins (without reading each distribution's metadata, which is slow) and stand
#: in for them where they are not installed (tests/engine/test_registry.py keeps the two equal).
BUILT_IN = {
    EVALUATOR_GROUP: {"material": "evaluators.material:MaterialEvaluator", "pst": "evaluators.material:PstEvaluator",
                      "resnet": "evaluators.resnet:ResNetEvaluator",
                      "comparator": "evaluators.comparator:ComparatorEvaluator", "dqn": "evaluators.dqn:DQNEvaluator"},
    SEARCH_GROUP: {"alphabeta": "search.alphabeta:AlphaBetaSearch", "puct": "search.puct:PuctSearch",
                   "comparison": "search.comparison:ComparisonSearch"},
}
DEFAULT_EVALUATOR = "resnet"
#: Option names a backend may not declare: the engine's own.
ENGINE_OPTION_NAMES = frozenset(name.lower() for name in [option.name for option in ENGINE_OPTIONS] +
                                ["Evaluator", "Search"])
FALLBACK_NOTICE = ("Hackmate's own entry points are not installed (a source tree never installed, or installed "
                   "before they existed; bin/setup-env installs them): using its built-in evaluators and searches")


class BackendError(Exception):
    """The requested evaluator/search pair cannot be built."""


class PluginError(Exception):
    """An entry point the registry skips: not an evaluator or search class, named otherwise, or a clash."""


def evaluator_options(cls: type) -> list[Option]:
    """The options of the evaluator ``cls`` as the engine composes it (its wrappers' first), without building it."""
    return [option for part in (*cls.WRAPPERS, cls) for option in part.OPTIONS]


def search_options(cls: type) -> list[Option]:
    return list(cls.OPTIONS)


def _same_declaration(first: Option, second: Option) -> bool:
    """Whether two backends declare an option alike (the attribute each sets is their own business)."""
    return dataclasses.replace(first, attribute="") == dataclasses.replace(second, attribute="")


@dataclass
class Registry:
    """Evaluator and search classes by name, in the order they are listed, and what was wrong with the rest."""

    evaluators: dict[str, type] = field(default_factory=dict)
    searches: dict[str, type] = field(default_factory=dict)
    #: Plugins skipped and why, and the fallback to the built-in declarations: for the engine and the CLI to tell.
    problems: list[str] = field(default_factory=list)

    # ---------------------------------------------------------------- lookups

    def evaluator_class(self, name: str) -> type:
        if name not in self.evaluators:
            raise BackendError(f"unknown evaluator {name!r} (choose from {', '.join(self.evaluators)})")
        return self.evaluators[name]

    def search_class(self, name: str) -> type:
        if name not in self.searches:
            raise BackendError(f"unknown search {name!r} (choose from {', '.join(self.searches)})")
        return self.searches[name]

    def natural_search(self, evaluator: str) -> str:
        """The search ``evaluator`` plays best with (for an unknown name, the declaration's default)."""
        return self.evaluators.get(evaluator, Pluggable).NATURAL_SEARCH

    def tuning_options(self) -> list[tuple[Option, list[str]]]:
        """Every evaluator's and search's option once, with the backends that declare it (evaluators first)."""
        rows: dict[str, tuple[Option, list[str]]] = {}
        for table, options_of in ((self.evaluators, evaluator_options), (self.searches, search_options)):
            for name, cls in table.items():
                for option in options_of(cls):
                    rows.setdefault(option.name, (option, []))[1].append(name)
        return list(rows.values())

    def engine_options(self, evaluator: str = DEFAULT_EVALUATOR, search: Optional[str] = None
                       ) -> tuple[Option, ...]:
        """The engine's own options, the combos ``Evaluator`` and ``Search`` last, showing ``evaluator`` and
        ``search`` (default: its natural one) as their defaults."""
        combos = (Option("Evaluator", "combo", evaluator, choices=tuple(self.evaluators), rebuild=True,
                         help="position evaluator; set alone it brings its natural search, unless Search was set"),
                  Option("Search", "combo", search or self.natural_search(evaluator), choices=tuple(self.searches),
                         rebuild=True, help="search algorithm"))
        return ENGINE_OPTIONS + combos

    def listed_options(self) -> list[tuple[Option, list[str]]]:
        """Every UCI option and who declares it: the engine's own ("engine"), then every backend's."""
        return [(option, ["engine"]) for option in self.engine_options()] + self.tuning_options()

    # --------------------------------------------------------------- building

    def weights_path(self, evaluator: str, weights: Optional[str]) -> Optional[Path]:
        """The network file of ``weights``: a path, or the bare name of a file shipped in weights/
        (``resnet-int8.onnx``, found wherever the engine is installed or started); None: the evaluator's default.
        None for an evaluator that reads no weights."""
        default = self.evaluator_class(evaluator).DEFAULT_WEIGHTS
        if not default:
            return None
        if not weights:
            return WEIGHTS_DIR / default  # an absolute default stays as it is
        path = Path(weights)
        shipped = WEIGHTS_DIR / path.name
        return shipped if not path.exists() and path.parent == Path(".") and shipped.exists() else path

    def build_evaluator(self, name: str, weights: Optional[str] = None, threads: int = 1, lazy: bool = False
                        ) -> AnyEvaluator:
        """The evaluator ``name`` inside its declared wrappers (resnet: cache(blend(network)), so that the cache
        holds blended evaluations); BackendError (or LoadError) if impossible. ``threads`` is the Threads option;
        ``lazy`` leaves a network's weights unread until ``load()`` or first use where the evaluator can."""
        cls = self.evaluator_class(name)
        evaluator = cls.create(self.weights_path(name, weights), threads, lazy)
        for wrapper in reversed(cls.WRAPPERS):
            evaluator = wrapper(evaluator)
        return evaluator

    def build_search(self, name: str, evaluator: AnyEvaluator) -> Search:
        """The search ``name`` over ``evaluator``; BackendError if they do not fit together."""
        cls = self.search_class(name)
        if not isinstance(evaluator, cls.EVALUATES_WITH):
            raise BackendError(f"search {name} searches with a {cls.EVALUATES_WITH.__name__}, which "
                               f"{evaluator.name} is not (its search is {self.natural_search(evaluator.name)})")
        return cls(evaluator)

    # -------------------------------------------------------------- discovery

    def add(self, point: EntryPoint) -> None:
        """Register the class an entry point names; PluginError (or whatever its import raises) if it is broken:
        not importable, not an evaluator or search class, named otherwise, a name or option clash."""
        evaluating = point.group == EVALUATOR_GROUP
        table = self.evaluators if evaluating else self.searches
        if point.name in table:
            raise PluginError(f"the name {point.name!r} is taken by {table[point.name].__module__}."
                             f"{table[point.name].__qualname__}")
        cls = point.load()
        bases = (Evaluator, Comparator) if evaluating else (Search,)
        if not (isinstance(cls, type) and issubclass(cls, bases)):
            raise PluginError(f"{point.value} is not a subclass of {' or '.join(base.__name__ for base in bases)}")
        if cls.name != point.name:
            raise PluginError(f"{point.value} is named {cls.name!r}, not {point.name!r}")
        if evaluating and cls.NATURAL_SEARCH not in self.searches:
            raise PluginError(f"its natural search {cls.NATURAL_SEARCH!r} is not a search "
                             f"({', '.join(self.searches)})")
        declared = {option.name.lower(): option for option, _ in self.tuning_options()}
        for option in (evaluator_options if evaluating else search_options)(cls):
            if option.name.lower() in ENGINE_OPTION_NAMES:
                raise PluginError(f"its option {option.name!r} is one of the engine's")
            other = declared.get(option.name.lower())
            if other is not None and not _same_declaration(option, other):
                raise PluginError(f"its option {option.name!r} is declared otherwise by another backend "
                                 f"({option.uci_line()!r} against {other.uci_line()!r})")
        table[point.name] = cls


def installed_entry_points(group: str) -> Iterable[EntryPoint]:
    return entry_points(group=group)


def discover(found: Callable[[str], Iterable[EntryPoint]] = installed_entry_points) -> Registry:
    """A registry of the entry points ``found`` lists by group: Hackmate's own first (the built-in declarations
    where it has none, said once), then the plugins' by name; the searches before the evaluators that name them."""
    registry = Registry()
    fell_back = False
    for group in (SEARCH_GROUP, EVALUATOR_GROUP):
        points = list(found(group))
        own = [point for point in points if BUILT_IN[group].get(point.name) == point.value]
        if not own:
            own = [EntryPoint(name, value, group) for name, value in BUILT_IN[group].items()]
            fell_back = True
        order = list(BUILT_IN[group])
        own.sort(key=lambda point: order.index(point.name))
        plugins = sorted((point for point in points if point not in own), key=lambda point: point.name)
        for point in own + plugins:
            try:
                registry.add(point)
            except Exception as error:  # a plugin may fail in any way: it is skipped, the engine runs on
                why = str(error) if isinstance(error, PluginError) else f"{type(error).__name__}: {error}"
                registry.problems.append(f"plugin {point.name} = {point.value} ({group}) skipped: {why}")
    if fell_back:
        registry.problems.insert(0, FALLBACK_NOTICE)
    return registry


@functools.lru_cache(maxsize=None)
def registry() -> Registry:
    """The registry of the installed entry points, discovered once per process."""
    return discover()


def build_evaluator(name: str, weights: Optional[str] = None, threads: int = 1, lazy: bool = False
                    ) -> AnyEvaluator:
    """:meth:`Registry.build_evaluator` of the installed registry."""
    return registry().build_evaluator(name, weights, threads, lazy)


def build_search(name: str, evaluator: AnyEvaluator) -> Search:
    """:meth:`Registry.build_search` of the installed registry."""
    return registry().build_search(name, evaluator)


def weights_path(evaluator: str, weights: Optional[str]) -> Optional[Path]:
    """:meth:`Registry.weights_path` of the installed registry."""
    return registry().weights_path(evaluator, weights)


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
