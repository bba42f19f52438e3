"""Recipes: whole runs from data to a network in resumable steps, and the GPU calls that ran them.

:mod:`~training.recipes.gpu` is the GPU recipe (``python -m training gpu-recipe``, docs/gpu-recipe.md); the
``gpu-*.sh`` scripts beside it are the calls of GPU rentals that produced the shipped networks, each with a toy
scale for two CPU cores in its header.
"""
