"""The compiled core, optional C extensions (everything else is in pyproject.toml): the chess board
(hackmate_core._cboard), alpha-beta for the material and pst evaluations (_calphabeta), PUCT's per-leaf work
(_cpuct) and the DeepChess comparator with its comparison search (_ccomparison).

Without a C compiler the build goes on without them and the engine runs on the pure-Python path
(hackmate_core.compiled says why).
"""

import sys

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "hackmate_core._cboard",
    sources=["hackmate_core/_cboard.c", "hackmate_core/cboard.c"],
    depends=["hackmate_core/binding.h", "hackmate_core/cboard.h", "hackmate_core/polyglot_keys.h"],
    optional=True,
), Extension(
    "hackmate_core._calphabeta",  # search/alphabeta.py's search for the material and pst evaluations
    sources=["hackmate_core/_calphabeta.c", "hackmate_core/cab.c", "hackmate_core/cboard.c"],
    depends=["hackmate_core/binding.h", "hackmate_core/cab.h", "hackmate_core/cboard.h", "hackmate_core/cexchange.h",
             "hackmate_core/ckillers.h", "hackmate_core/polyglot_keys.h"],
    optional=True,
), Extension(
    "hackmate_core._cpuct",
    sources=["hackmate_core/_cpuct.c", "hackmate_core/cpuct.c", "hackmate_core/cboard.c"],
    depends=["hackmate_core/binding.h", "hackmate_core/cpuct.h", "hackmate_core/cboard.h", "hackmate_core/cexchange.h",
             "hackmate_core/polyglot_keys.h"],
    # no fused multiply-add: the tactical gains must round as Python's arithmetic does (MSVC does not fuse)
    extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off"],
    optional=True,
), Extension(
    "hackmate_core._ccomparison",  # search/comparison.py's search with evaluators/comparator.py's network
    sources=["hackmate_core/_ccomparison.c", "hackmate_core/ccomp.c", "hackmate_core/ccsearch.c",
             "hackmate_core/cboard.c"],
    depends=["hackmate_core/binding.h", "hackmate_core/ccomp.h", "hackmate_core/ccsearch.h", "hackmate_core/cboard.h",
             "hackmate_core/cexchange.h", "hackmate_core/ckillers.h", "hackmate_core/polyglot_keys.h"],
    # no fused multiply-add: the network must round as numpy does, product by product
    extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off"],
    optional=True,
)])
