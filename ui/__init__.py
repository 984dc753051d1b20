"""The explorer's UI components (Streamlit); pages/ holds only the page scripts."""
