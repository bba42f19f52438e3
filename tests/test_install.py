"""The package carries its networks: a regular install (a wheel, as `pip install .` makes) loads the default network.

The wheel holds every package of the repository but tools/, which runs from a checkout only (`python -m tools.match`):
a top-level package named `tools` would collide with other distributions' packages of that name.

The wheel is built offline (`pip wheel --no-build-isolation`) from a copy of the sources and installed with
`--no-deps` into a fresh virtual environment in a temporary directory. Its dependencies (chess, numpy,
onnxruntime, click) come from this interpreter's site-packages through a `.pth` file, which adds those
directories without running their `.pth` files, so the editable install of the repository is not active there.
"""

from __future__ import annotations

import importlib.util
import shutil
import site
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import chess
import pytest

from engine.backends import registry
from tests.conftest import lines_until_bestmove

ROOT = Path(__file__).resolve().parent.parent
#: The repository's package folders (tools/ included: the wheel leaves it out by its configuration, not by its absence).
FOLDERS = sorted(path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file() and path.name != "tests")
SOURCES = ["pyproject.toml", "setup.py", "README.md", *FOLDERS]  # setup.py: the wheel carries the compiled core
#: Folders the wheel leaves out, and the folders it installs under another name.
NOT_INSTALLED = {"tools"}
PACKAGE_OF_FOLDER = {"weights": "hackmate_weights"}
NETWORK_SUFFIXES = {".onnx", ".npz", ".pt"}


def test_the_editable_install_serves_the_repository_weights():
    import hackmate_weights

    assert hackmate_weights.WEIGHTS_DIR == ROOT / "weights"
    shipped = [registry().weights_path(name, None) for name, cls in registry().evaluators.items()
               if cls.DEFAULT_WEIGHTS]
    assert len(shipped) == 3 and all(path.parent == ROOT / "weights" and path.is_file() for path in shipped)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment outside the repository with the wheel installed; returns its directory."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("the build backend (setuptools) is not installed: pip install -e '.[test]'")
    work = tmp_path_factory.mktemp("install")
    source = work / "src"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(work / "dist"), str(source)], check=True, capture_output=True, cwd=work)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, cwd=work)
    python = venv / "bin" / "python"
    (wheel,) = (work / "dist").glob("hackmate-*.whl")
    subprocess.run([*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", "--no-compile",
                    str(wheel)], check=True, capture_output=True, cwd=work)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    outer = [*site.getsitepackages(), site.getusersitepackages()]
    (Path(purelib) / "outer-dependencies.pth").write_text("\n".join(outer) + "\n")
    return venv


def test_the_wheel_ships_every_network_and_module(installed):
    (wheel,) = (installed.parent / "dist").glob("hackmate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    networks = [p.name for p in (ROOT / "weights").iterdir() if p.suffix in NETWORK_SUFFIXES]
    assert "resnet.onnx" in networks
    assert {f"hackmate_weights/{name}" for name in networks} <= names
    packages = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    folders = [folder for folder in FOLDERS if folder not in NOT_INSTALLED]
    assert "tools" in FOLDERS and "tools" not in packages
    assert packages == {PACKAGE_OF_FOLDER.get(folder, folder) for folder in folders}, \
        "list new packages in pyproject.toml [tool.setuptools]"
    modules = {f"{PACKAGE_OF_FOLDER.get(folder, folder)}/{path.relative_to(ROOT / folder).as_posix()}"
               for folder in folders for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts}
    missing = sorted(modules - names)
    assert not missing, f"the wheel lacks {missing}: list new packages in pyproject.toml [tool.setuptools]"


def test_the_installed_package_loads_its_networks(installed, tmp_path):
    code = ("import engine, hackmate_weights; from engine.backends import build_evaluator, registry; "
            "assert not registry().problems, registry().problems; "  # the wheel declares the entry points
            "build_evaluator('resnet'); build_evaluator('comparator'); "  # raises if a file is missing
            "print(engine.__file__, hackmate_weights.WEIGHTS_DIR, *(registry().weights_path(name, None) "
            "for name, cls in registry().evaluators.items() if cls.DEFAULT_WEIGHTS))")
    paths = subprocess.run([str(installed / "bin" / "python"), "-c", code], check=True, capture_output=True,
                           text=True, cwd=tmp_path, timeout=60).stdout.split()
    assert len(paths) == 2 + 3  # resnet, comparator, dqn
    assert all(Path(path).is_relative_to(installed) for path in paths), paths


def test_the_hackmate_console_script_plays_with_the_network(installed, tmp_path):
    """`hackmate` is what a GUI points at (pip makes hackmate.exe on Windows)."""
    process = subprocess.Popen([str(installed / "bin" / "hackmate")], cwd=tmp_path, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        lines = lines_until_bestmove(process, "uci\nisready\nposition startpos\ngo nodes 50\n")
        output = "\n".join(lines)
        assert lines and lines[-1].startswith("bestmove"), output
        process.stdin.write("quit\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        assert process.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        process.kill()
    assert "uciok" in lines and "readyok" in lines
    assert "falling back" not in output and "not found" not in output
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
