"""UCI engines at work for training: labelling positions, self-play and annotated games, and measuring engines.

:mod:`~training.engines` starts every engine; :mod:`~training.uci.label` labels positions with an engine's
MultiPV lines (and measures how often a labelling setting names a test set's moves);
:mod:`~training.uci.selfplay` plays and annotates games through hackmate_core.games;
:mod:`~training.uci.agreement` measures the engine's move against Stockfish's or the game's, and :mod:`~training.uci.speed` the
labelling speed.
"""
