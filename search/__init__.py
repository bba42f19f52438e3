"""Interchangeable searches: alpha-beta, PUCT/MCTS and DeepChess comparison search.

Every search implements :class:`search.base.Search` and talks to the engine
through :class:`search.base.SearchControl` (when to stop) and
:class:`search.base.SearchInfo` (what to report).
"""
