"""The networks Hackmate ships, installed as the package ``hackmate_weights`` (pyproject maps it to weights/).

Being package data, they travel with a regular ``pip install .`` or a wheel, not only with a checkout.
Wheels install unpacked, so the directory holds real files that onnxruntime and numpy can open.
"""

from importlib.resources import files
from pathlib import Path

WEIGHTS_DIR = Path(str(files(__name__)))
