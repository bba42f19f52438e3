"""What training reads and writes: positions with their targets, in every format, and the rules about them.

- :mod:`~training.data.shards`: label shards, the one training-data format (arrays of positions, sparse soft
  policies, W/D/L targets) that every other format is read as;
- :mod:`~training.data.targets`: engine scores as targets (the soft policy, the W/D/L model), made only there;
- :mod:`~training.data.split`: which games, and which positions, are held out for validation;
- :mod:`~training.data.heldout`: the positions of held-out games whose moves a player is measured against;
- the formats: :mod:`~training.data.pgn` (PGN and EPD files), :mod:`~training.data.multipv` (MultiPV label
  files), :mod:`~training.data.prepared` (old one-hot datasets), :mod:`~training.data.corpus` (every file joined
  in the cache), :mod:`~training.data.pack` (a corpus in one file, its planes stored as moves by
  :mod:`~training.data.successors`), each read for training through the registry of :mod:`~training.data.sources`;
- :mod:`~training.data.cache`: entries kept between runs, outside the work tree.

No module here runs a network or prints for a command: the trainers above read through it, and
``python -m training`` owns the command lines.
"""
