"""The flat family: structure-blind baselines (hybrid, dense, BM25) over the whole scope."""
