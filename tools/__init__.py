"""User tools around the engine, run from a checkout: matches and their statistics, test suites, perft, latency,
mutation checks of the tests, and OpenVINO against onnxruntime (each module and script says what it is for)."""
