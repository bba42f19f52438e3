"""The DeepChess pipeline (David, Netanyahu and Wolf, ICANN 2016), with sibling pairs.

By concern, as the ResNet side (training.resnet): :mod:`~training.deepchess.pairs` (the won-vs-lost
and sibling pairs it learns from), :mod:`~training.deepchess.data` (won and lost
positions by their evals or their game's result, sibling parents, what is held out),
:mod:`~training.deepchess.valset` (a fixed, named validation set),
:mod:`~training.deepchess.model` (the Siamese comparator, ensembles,
checkpoints), :mod:`~training.deepchess.train` (Pos2Vec pretraining, the
comparator, distillation, the whole run), :mod:`~training.deepchess.accuracy`
(the engine's symmetrised comparison on a validation set), :mod:`~training.deepchess.reference` (a reference
UCI engine on the same pairs), :mod:`~training.deepchess.values` (a policy-value network's values: the teacher of
value pairs, and a reference on the same pairs) and :mod:`~training.deepchess.export`
(the engine's comparator files); a run's settings are
``training.configs.DeepChessConfig``. Every network is measured on the run's
validation set (``validation.npz``) and on any named validation set.
"""

from training.configs import DeepChessConfig
from training.deepchess.data import prepare_data, read_games
from training.deepchess.accuracy import evaluate, evaluate_all
from training.deepchess.model import SiameseComparator, load_comparator, load_network
from training.deepchess.train import run_pipeline

__all__ = ["DeepChessConfig", "SiameseComparator", "evaluate", "evaluate_all", "load_comparator", "load_network",
           "prepare_data", "read_games", "run_pipeline"]
