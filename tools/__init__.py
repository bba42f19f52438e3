"""Tools around the engine: the match runner and its statistics."""
