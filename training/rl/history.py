"""What every trainer logs: a list of records, written as history.json and plotted as curves.png."""

from __future__ import annotations

import json
import math
from pathlib import Path


def save_history(history: list[dict], out: Path, x: str, panels: dict[str, list[str]]) -> None:
    """``out``/history.json, and ``out``/curves.png with one plot per panel (its keys against ``x``)."""
    (out / "history.json").write_text(json.dumps(history, indent=2))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (title, keys) in zip(axes[0], panels.items()):
        for key in keys:
            points = [(h[x], h[key]) for h in history if h.get(key) is not None and not _nan(h[key])]
            if points:
                axis.plot(*zip(*points), marker="o" if len(points) < 30 else None, label=key)
        axis.set_title(title)
        axis.set_xlabel(x)
        if axis.has_data():
            axis.legend()
    fig.tight_layout()
    fig.savefig(out / "curves.png")
    plt.close(fig)


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
