"""Training package (PyTorch, the optional ``training`` extra).

PGN/EPD data pipelines, supervised policy-value training, the DeepChess
pipeline, self-play and engine annotation, and ONNX export with the metadata
the engine needs. Entry point: ``python -m training --help``.
"""
