"""The explorer's pages (ask, documents, history) and their shared state and widgets."""
