"""The UCI engine: protocol front-end, time management, bench and configuration."""

NAME = "Hackmate"
AUTHOR = "the Hackmate developers"
__version__ = "0.1.0"
