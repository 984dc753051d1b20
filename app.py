"""TreeRAG Explorer: page config and navigation; the pages live in pages/, their parts in ui/."""

from __future__ import annotations

import streamlit as st

from ui.common.query_controls import WIDGET_DEFAULTS
from ui.common.resources import freeze_long_lived
from ui.common.session import init_session

st.set_page_config(
    page_title="TreeRAG Explorer",
    page_icon="🌳",
    layout="wide",
    initial_sidebar_state="expanded",
)
init_session(WIDGET_DEFAULTS)

ASK = st.Page("pages/ask.py", title="Ask", icon=":material/forum:", default=True)
DOCUMENTS = st.Page("pages/documents.py", title="Documents", icon=":material/description:")
HISTORY = st.Page("pages/history.py", title="History", icon=":material/history:")
EVALUATE = st.Page("pages/evaluate.py", title="Evaluate", icon=":material/analytics:")

navigation = st.navigation([ASK, DOCUMENTS, HISTORY, EVALUATE])
target = st.session_state.pop("open_page", None)  # a deep link that came in before app.py ran
if target:
    st.switch_page(target)
navigation.run()
freeze_long_lived()  # after the page's imports: Streamlit's after-run GC skips them
