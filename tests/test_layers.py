"""The packages stay layered: no module imports from a package above its own, and packages form no import cycle.

Read from the source with ``ast`` (nothing is imported), lazy imports inside functions included: a lazy
import is still a dependency, only a later one. Levels, top to bottom: tools and training (beside each other,
neither importing the other), engine, search, evaluators, and the ground floor: hackmate_core, with the
shipped networks (hackmate_weights, the folder weights/).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Each package's level: a module imports from its own level and below.
LEVELS = {"tools": 4, "training": 4, "engine": 3, "search": 2, "evaluators": 1, "hackmate_core": 0,
          "hackmate_weights": 0}
#: Packages on the same level that must not import each other either.
APART = {frozenset({"tools", "training"})}
#: Folders that install under another name (pyproject.toml's [tool.setuptools.package-dir]).
PACKAGE_OF_FOLDER = {"weights": "hackmate_weights"}
#: Folders with an __init__.py that are not packages of the project.
NOT_PACKAGES = {"tests"}


def packages() -> dict[str, Path]:
    """Every top-level package of the repository, by name, with its folder."""
    return {PACKAGE_OF_FOLDER.get(folder.name, folder.name): folder for folder in sorted(ROOT.iterdir())
            if (folder / "__init__.py").is_file() and folder.name not in NOT_PACKAGES}


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module name) of every import in ``source``, the text of ``module`` (relative imports resolved)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            found.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found.append((node.lineno, node.module or ""))
    return found


def dependencies() -> list[tuple[str, str, int, str, str]]:
    """(package, file, line, module imported, its package) for every import of one of our packages by another."""
    ours = packages()
    edges = []
    for package, folder in ours.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_package else parts)
            for line, imported in imported_modules(path.read_text(encoding="utf-8"), module, is_package):
                target = imported.split(".")[0]
                if target in ours and target != package:
                    edges.append((package, path.relative_to(ROOT).as_posix(), line, imported, target))
    return edges


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The import cycles of a package graph, each as the packages along it (the first repeated at the end)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    found: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for target in sorted(graph.get(path[-1], ())):
            if target == path[0]:
                found.append([*path, target])
            elif target not in path and target > path[0]:  # each cycle once, from its smallest package
                walk([*path, target])

    for start in sorted(graph):
        walk([start])
    return found


def test_every_package_has_a_level():
    assert set(packages()) == set(LEVELS), "give a new package its level in tests/test_layers.py"


def test_no_module_imports_from_a_package_above_its_own():
    wrong = [f"{path}:{line} imports {imported}: " + (f"{target} is above {package}"
                                                      if LEVELS[target] > LEVELS[package] else
                                                      f"{package} and {target} stay apart")
             for package, path, line, imported, target in dependencies()
             if LEVELS[target] > LEVELS[package] or frozenset({package, target}) in APART]
    assert not wrong, "\n".join(wrong)


def test_packages_import_each_other_in_no_cycle():
    found = cycles({(package, target) for package, _, _, _, target in dependencies()})
    assert not found, "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_checks_see_lazy_and_relative_imports_and_cycles():
    source = "import chess.pgn\n\ndef late():\n    from tools.match import cli\n    from . import sibling\n"
    assert imported_modules(source, "training.rl.arena", False) == [(1, "chess.pgn"), (4, "tools.match"),
                                                                    (5, "training.rl")]
    assert imported_modules("from .. import x\n", "training.rl", True) == [(1, "training")]
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c", "a"]]
    assert cycles({("a", "b"), ("b", "c")}) == []
