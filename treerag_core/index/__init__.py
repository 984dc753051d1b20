"""Index stage: embedders, BM25, the corpus index, its folder store, vector stores, workspaces."""
