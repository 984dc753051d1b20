"""History: this session's logged queries; reopen one on the Ask view exactly as it ran."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import state
from pages import widgets as w

ss = st.session_state
state.require_app("pages/history.py")


def _open(query_id: int) -> None:
    ss.pending_open = query_id


def main() -> None:
    st.title("History")
    st.caption(
        "Every finished question is written to the audit log (SQLite, with its settings, "
        "timings and every hit). This list shows the questions of this browser session only."
    )
    query_id = ss.pop("pending_open", None)
    if query_id is not None:
        try:
            state.open_from_history(query_id)
        except (KeyError, StopIteration, ValueError) as exc:
            w.show_error(exc, "The audit log no longer has this query.")
        else:
            st.switch_page("pages/ask.py")
    entries = list(reversed(ss.history))
    if not entries:
        st.info("No questions yet: ask one on the Ask page.", icon=":material/forum:")
        st.page_link("pages/ask.py", label="Go to Ask", icon=":material/forum:")
        return
    frame = pd.DataFrame(
        [
            {
                "id": e["id"],
                "time (UTC)": e["created_at"].replace("T", " ")[:19],
                "question": e["question"],
                "strategy": e["strategy"],
                "locator": e["locator"],
                "corpus": "samples" if e["corpus"].startswith("samples") else "my uploads",
            }
            for e in entries
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch", key="history_table")
    for e in entries[:50]:
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.markdown(f"`#{e['id']}` {w.plain(e['question'])}")
        c2.button(
            "Open",
            key=f"open_{e['id']}",
            on_click=_open,
            args=(e["id"],),
            icon=":material/open_in_new:",
            width="stretch",
        )


main()
