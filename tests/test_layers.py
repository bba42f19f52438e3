"""The packages stay layered: no module imports from a package above its own, and packages form no import cycle.

Read from the source with ``ast`` (nothing is imported), lazy imports inside functions included: a lazy
import is still a dependency, only a later one. Levels, top to bottom: tools and training (beside each other,
neither importing the other), engine, search, evaluators, and the ground floor: hackmate_core, with the
shipped networks (hackmate_weights, the folder weights/).

Inside training the floors are declared the same way (TRAINING_LEVELS), top to bottom: the command line, the GPU
recipe, reinforcement learning, the three families beside each other (the policy-value network, DeepChess, UCI
engines at work), the settings, the data, and the ground (errors, devices, network files, options, figures,
processes, starting UCI engines); and its modules import each other in no cycle.
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
#: The floors inside training: a module (or every module of a subpackage) and its level; a module imports from
#: its own level and below.
TRAINING_LEVELS = {"training.__main__": 6, "training.recipes": 5, "training.rl": 4,
                   "training.resnet": 3, "training.deepchess": 3, "training.uci": 3,
                   "training.configs": 2, "training.data": 1,
                   "training": 0, "training.errors": 0, "training.device": 0, "training.network_files": 0,
                   "training.onnx_metadata": 0, "training.config_cli": 0, "training.readable": 0,
                   "training.processes": 0, "training.engines": 0}
#: Floors of training on the same level that must not import each other.
TRAINING_APART = {frozenset({"training.resnet", "training.deepchess"}), frozenset({"training.resnet", "training.uci"}),
                  frozenset({"training.deepchess", "training.uci"})}


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


def training_modules() -> dict[str, Path]:
    """Every module of training by its dotted name (a package by its own name), with its file."""
    folder = ROOT / "training"
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = ["training", *path.relative_to(folder).with_suffix("").parts]
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def training_floor(module: str) -> str:
    """The key of TRAINING_LEVELS that holds ``module``: the longest that is the module or a package above it
    (the bare ``training`` only for the package's own __init__)."""
    keys = [key for key in TRAINING_LEVELS if module == key or (key != "training" and module.startswith(key + "."))]
    assert keys, f"give {module} a floor in TRAINING_LEVELS (tests/test_layers.py)"
    return max(keys, key=len)


def training_dependencies() -> list[tuple[str, int, str]]:
    """(module, line, module imported) for every import of a training module by another, ``from P import M``
    counted as an import of the module P.M where there is one."""
    modules = training_modules()
    edges = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.lineno: [alias.name for alias in node.names] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
        for line, imported in imported_modules(path.read_text(encoding="utf-8"), module, is_package):
            if imported.split(".")[0] != "training":
                continue
            targets = [f"{imported}.{name}" for name in names.get(line, []) if f"{imported}.{name}" in modules]
            edges += [(module, line, target) for target in targets or [imported]]
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


def test_every_training_module_has_a_floor():
    for module in training_modules():
        training_floor(module)


def test_no_training_module_imports_from_a_floor_above_its_own():
    wrong = []
    for module, line, imported in training_dependencies():
        own, other = training_floor(module), training_floor(imported)
        if TRAINING_LEVELS[other] > TRAINING_LEVELS[own]:
            wrong.append(f"{module}:{line} imports {imported}: {other} is above {own}")
        elif frozenset({own, other}) in TRAINING_APART:
            wrong.append(f"{module}:{line} imports {imported}: {own} and {other} stay apart")
    assert not wrong, "\n".join(wrong)


def test_training_modules_import_each_other_in_no_cycle():
    found = cycles({(module, imported) for module, _, imported in training_dependencies() if module != imported})
    assert not found, "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_training_floors_are_found_by_module():
    assert training_floor("training.data.corpus.join") == "training.data"
    assert training_floor("training.rl") == "training.rl" and training_floor("training") == "training"
    assert training_floor("training.errors") == "training.errors"
