"""Ingest stage: files to documents (converters, parsing, chunking, tree edits, node summaries)."""
