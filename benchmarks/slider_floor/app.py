"""The floor of a slider move in Streamlit on this machine (`bench_ui.py --slider ... --floor`):
one "Final top-k" slider and one small table in a fragment, nothing else. What the explorer's
move costs above this is the explorer's; this much is Streamlit's and the browser's."""

import numpy as np
import pandas as pd
import streamlit as st

st.title("Slider floor")


@st.fragment
def story() -> None:
    k = st.slider("Final top-k", 1, 10, 5)
    scores = np.random.default_rng(k).random(k)
    rows = pd.DataFrame(
        {
            "rank": range(1, k + 1),
            "passage": [f"passage {i} about the question " * 4 for i in range(k)],
            "score": scores,
        }
    )
    with st.container(key="rerank_table"):  # where bench_ui.py reads the table's text
        st.dataframe(rows)


story()
