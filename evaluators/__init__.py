"""Position evaluators behind one small interface (see :mod:`evaluators.base`).

Board and move encodings shared with the training package also live here.
"""
