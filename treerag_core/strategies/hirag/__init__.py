"""HiRAG: a corpus entity graph, hierarchical communities, reports and five retrieval modes."""
