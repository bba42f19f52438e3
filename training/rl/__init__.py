"""Reinforcement-learning trainers: DQN (:mod:`.dqn`), PPO with MCTS (:mod:`.ppo`) and AlphaZero-style
self-play with gating (:mod:`.alphazero`), with the games between networks, searches, a random mover and
Stockfish that all three play (:mod:`.arena`) and the run directory DQN and PPO start from (:mod:`.run`)."""
