"""TreeRAG engine: tree-routed hybrid retrieval over long structured documents (no Streamlit)."""
