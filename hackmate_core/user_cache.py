"""Where the user's cache lives: ``$HACKMATE_CACHE``, else ``~/.cache/hackmate``.

Work kept between runs, outside the work tree, goes there: training's prepared corpus (``training.data.cache``) and the
engine's conversions of Leela networks (``evaluators.leela_convert``). One definition, so both always agree.
"""

from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT = "HACKMATE_CACHE"


def root() -> Path:
    """The cache directory: $HACKMATE_CACHE, else ~/.cache/hackmate."""
    configured = os.environ.get(ENVIRONMENT)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "hackmate"
