"""Streamlit building blocks the pages compose (the engine never imports these); pages/ keeps
only the page scripts."""
