"""Records: a trace as JSON, the terminal render, the audit record and the SQLite audit log."""
