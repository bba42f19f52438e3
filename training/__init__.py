"""Training package (PyTorch, the optional ``training`` extra): ``python -m training --help``.

Its floors, top to bottom (tests/test_layers.py keeps every import running down, and no two modules in a circle):

- ``__main__``: every command of ``python -m training``, its options made from the settings dataclasses;
- ``recipes/``: whole runs in resumable steps (the GPU recipe) and the dated device calls that ran them;
- ``rl/``: reinforcement learning (DQN, PPO with MCTS, AlphaZero-style self-play), its games in ``rl/arena``;
- the three families, beside each other: ``resnet/`` (the policy-value network: supervised training, figures,
  averages, growth, distillation, export and int8), ``deepchess/`` (the comparator, its pairs and validation sets)
  and ``uci/`` (UCI engines at work: labels, self-play and annotated games, measurements of engines);
- ``configs``: the settings of every command, each with its default and help;
- ``data/``: what is trained on, in every format, read through one registry (``data.sources``), with the targets,
  the validation split and the corpus;
- the ground: ``errors`` (the one base class of bad input), ``device`` (devices and bit-packed rows),
  ``network_files`` and ``onnx_metadata`` (network files), ``config_cli`` (options from dataclasses),
  ``readable`` (figures as text) and ``processes`` (worker processes).

A new data format is a reader in ``data/`` registered in ``data.sources``; a new trainer of the policy-value
network goes in ``resnet/`` (or ``rl/``), a new network family gets a folder of its own like ``deepchess/``; every
game is played by ``hackmate_core.games``; every command is written in ``__main__``.
"""
