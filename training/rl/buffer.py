"""The DQN replay buffer and the transitions it holds: (state, move, reward, next state, done).

A transition's next state is the position where the same player moves again,
after the opponent's reply: the opponent is part of the environment, so one
Q-network from the side to move's point of view learns from both colours of a
game. The reward is the game's result for the mover (+1/0/-1) on the
transition that ends the game, and optionally, on every transition, the
change of the mover's material from its move to its next turn (piece values
1/3/3/5/9, a pawn worth :data:`MATERIAL_REWARD_SCALE`).

States are stored bit-packed (136 bytes in planes18) together with the legal
moves of the state and of the next state as 4672-bit masks (584 bytes each),
which the expert margin and the target's max need; 100,000 transitions take
about 150 MB.

The buffer can keep its expert transitions for good (as DQfD keeps its
demonstrations): self-play then overwrites only its own oldest transitions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import chess
import numpy as np

from evaluators.encoding import Encoding
from evaluators.moves import POLICY_SIZE, legal_move_indices

#: Pawn units of the optional material reward (the king counts nothing).
MATERIAL = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
#: Reward of one pawn of material, so that a queen (0.9) is worth a little less than the win (1).
MATERIAL_REWARD_SCALE = 0.1
MASK_BYTES = POLICY_SIZE // 8


def white_material(board: chess.Board) -> int:
    """White's material minus Black's, in pawn units."""
    total = 0
    for piece_type, value in MATERIAL.items():
        pieces = board.pieces_mask(piece_type, chess.WHITE), board.pieces_mask(piece_type, chess.BLACK)
        total += value * (chess.popcount(pieces[0]) - chess.popcount(pieces[1]))
    return total


def pack_mask(indices: np.ndarray) -> np.ndarray:
    """Policy indices -> a bit-packed 4672-slot mask (bitorder little)."""
    mask = np.zeros(POLICY_SIZE, dtype=bool)
    mask[indices] = True
    return np.packbits(mask, bitorder="little")


@dataclass
class State:
    """A position as the buffer stores it, with what acting in it needs."""

    planes: np.ndarray  # packed binary planes
    rule50: int
    moves: list[chess.Move]
    indices: np.ndarray  # policy index of each legal move
    material: int  # white_material
    turn: chess.Color


def observe(board: chess.Board, encoding: Encoding) -> State:
    moves, indices = legal_move_indices(board)
    planes = encoding.packed(board)
    return State(planes, min(255, board.halfmove_clock), moves, indices, white_material(board), board.turn)


def game_transitions(states: list[State], actions: list[int], final_material: int, white_score: float,
                     material_rewards: bool) -> dict[str, np.ndarray]:
    """The transitions of one finished game: ``states[t]`` where ``actions[t]`` (a policy index) was played.

    ``white_score`` (1, 0.5, 0) is the result; a game cut short (a resignation
    in a PGN, a ply limit) ends where the moves end, like a finished one.
    """
    n = len(actions)
    materials = [s.material for s in states] + [final_material]
    out = _empty(n, len(states[0].planes) if states else 0)
    for t in range(n):
        sign = 1 if states[t].turn == chess.WHITE else -1
        done = t + 2 >= n
        reward = 0.0
        if done:
            reward += sign * (2 * white_score - 1)
        if material_rewards:
            reward += MATERIAL_REWARD_SCALE * sign * (materials[min(t + 2, n)] - materials[t])
        out["state"][t], out["rule50"][t], out["action"][t] = states[t].planes, states[t].rule50, actions[t]
        out["legal"][t] = pack_mask(states[t].indices)
        out["reward"][t], out["done"][t] = reward, done
        if not done:
            following = states[t + 2]
            out["next_state"][t], out["next_rule50"][t] = following.planes, following.rule50
            out["next_legal"][t] = pack_mask(following.indices)
    return out


def _empty(n: int, state_bytes: int) -> dict[str, np.ndarray]:
    return {"state": np.zeros((n, state_bytes), np.uint8), "rule50": np.zeros(n, np.uint8),
            "legal": np.zeros((n, MASK_BYTES), np.uint8),
            "action": np.zeros(n, np.int16), "reward": np.zeros(n, np.float32),
            "next_state": np.zeros((n, state_bytes), np.uint8), "next_rule50": np.zeros(n, np.uint8),
            "next_legal": np.zeros((n, MASK_BYTES), np.uint8), "done": np.zeros(n, bool)}


def expert_transitions(paths: list[Path], encoding: Encoding, limit: int, material_rewards: bool
                       ) -> Iterator[dict[str, np.ndarray]]:
    """Transitions of every move of the PGN games (decided or drawn, any result but `*`), up to ``limit``."""
    from training.data.pgn import RESULT_WHITE, ReadStats, iter_games
    produced = 0
    for path in paths:
        for _, game in iter_games(path, ReadStats()):
            result = RESULT_WHITE.get(game.headers.get("Result", "*"))
            if result is None:
                continue
            board = game.board()
            states, actions = [], []
            for move in game.mainline_moves():
                state = observe(board, encoding)
                states.append(state)
                actions.append(int(state.indices[state.moves.index(move)]))
                board.push(move)
            if not actions:
                continue
            transitions = game_transitions(states, actions, white_material(board), (result + 1) / 2,
                                           material_rewards)
            take = min(len(actions), limit - produced)
            yield {k: v[:take] for k, v in transitions.items()}
            produced += take
            if produced >= limit:
                return


class ReplayBuffer:
    """A ring buffer of transitions: the oldest are overwritten first, except those kept for good.

    Transitions added with ``keep=True`` (the expert ones, before any other) take
    the first ``kept`` slots, which the ring never overwrites.
    """

    def __init__(self, capacity: int, state_bytes: int) -> None:
        self.capacity = capacity
        self.arrays = _empty(capacity, state_bytes)
        self.arrays["expert"] = np.zeros(capacity, bool)
        self.size = 0
        self.position = 0
        #: Slots at the start that are never overwritten.
        self.kept = 0

    def __len__(self) -> int:
        return self.size

    def add(self, transitions: dict[str, np.ndarray], expert: bool = False, keep: bool = False) -> None:
        n = len(transitions["action"])
        if keep:
            if self.size != self.kept:
                raise ValueError("transitions kept for good go into the buffer before any other")
            n = min(n, self.capacity - self.kept - 1)  # the ring keeps at least one slot
            transitions = {name: values[:n] for name, values in transitions.items()}
        ring = self.capacity - self.kept
        for start in range(0, n, ring):
            chunk = min(n - start, ring)
            index = self.kept + (self.position - self.kept + np.arange(chunk)) % ring
            for name, values in transitions.items():
                self.arrays[name][index] = values[start:start + chunk]
            self.arrays["expert"][index] = expert
            self.position = int(self.kept + (self.position - self.kept + chunk) % ring)
            self.size = min(self.capacity, self.size + chunk)
        if keep:
            self.kept = self.position = self.size

    def sample(self, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        index = rng.integers(0, self.size, size=batch)
        return {name: values[index] for name, values in self.arrays.items()}

    def expert_share(self) -> float:
        return float(self.arrays["expert"][:self.size].mean()) if self.size else 0.0

    def save(self, path: Path) -> None:
        """Write atomically (a temporary file renamed), so that an interruption never leaves half a buffer."""
        temporary = path.with_name(path.name + ".tmp.npz")
        np.savez(temporary, size=self.size, position=self.position, kept=self.kept, **self.arrays)
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path, capacity: Optional[int] = None) -> "ReplayBuffer":
        """A saved buffer: the kept transitions, then the others oldest first (only the newest that fit when
        ``capacity`` is smaller)."""
        with np.load(path) as data:
            if "legal" not in data.files:
                raise ValueError(f"{path}: a replay buffer of an older format (no legal-move masks): start a new "
                                 f"run directory")
            buffer = cls(capacity or len(data["action"]), data["state"].shape[1])
            size, position = int(data["size"]), int(data["position"])
            kept = int(data["kept"]) if "kept" in data.files else 0
            ring = len(data["action"]) - kept
            recent = kept + (np.arange(size - kept) + (position - kept) - (size - kept)) % ring
            names = [k for k in buffer.arrays if k != "expert"]
            if kept:
                buffer.add({k: data[k][:kept] for k in names}, expert=True, keep=True)
                buffer.arrays["expert"][:buffer.kept] = data["expert"][:buffer.kept]
            recent = recent[len(recent) - min(len(recent), buffer.capacity - buffer.kept):]
            start = buffer.size
            buffer.add({k: data[k][recent] for k in names})
            buffer.arrays["expert"][start:start + len(recent)] = data["expert"][recent]
        return buffer
