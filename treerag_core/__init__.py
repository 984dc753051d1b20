"""TreeRAG engine: tree-routed hybrid retrieval over long structured documents. No Streamlit here."""
