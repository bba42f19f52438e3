"""What the DQN and PPO trainers start alike: a run directory that holds the checkpoint they resume from, and the
device they train on."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from training.configs import DQNConfig, PPOConfig
from training.device import start_device


class RunTrainer:
    """A trainer's run directory (made if need be) and device; the subclass builds its networks on them."""

    def __init__(self, config: Union[DQNConfig, PPOConfig]) -> None:
        self.config = config
        self.out = Path(config.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = start_device(config.device, config.threads)

    @property
    def checkpoint(self) -> Path:
        """The run's checkpoint: written at every save, resumed from when it exists."""
        return self.out / "checkpoint.pt"
