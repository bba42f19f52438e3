"""The policy-value network (a residual tower with a policy and a W/D/L head, AlphaZero / Leela design), trained
on labelled positions.

By concern: :mod:`~training.resnet.model` (the network), :mod:`~training.resnet.weights` (its checkpoint and
weights files), :mod:`~training.resnet.losses`, :mod:`~training.resnet.train` (supervised training, ``train`` and
``validate``), :mod:`~training.resnet.metrics` (its figures on labelled positions, ``evaluate``),
:mod:`~training.resnet.swa` (weight averages), :mod:`~training.resnet.grow` (a larger network from a smaller),
:mod:`~training.resnet.distil` (teachers' policies into the targets), :mod:`~training.resnet.export` and
:mod:`~training.resnet.quantize` (the engine's fp32 and int8 files), :mod:`~training.resnet.onnx_import` (weights
back from an exported file) and :mod:`~training.resnet.leela_import` (from a Leela network), both through
:mod:`~training.resnet.folded` (batch norm split out again), :mod:`~training.resnet.played` (networks' policies on
the moves of held-out games, ``policy-agreement``). Reinforcement learning trains the same network (training.rl).
"""
