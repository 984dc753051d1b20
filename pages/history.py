"""History: this session's queries from the audit log; reopen one on Ask exactly as it ran."""

from __future__ import annotations

import streamlit as st

from ui.ask.labels_marks import labelled_texts
from ui.common.corpora import key_label
from ui.common.query_log import open_from_history, recent
from ui.common.session import HistoryState, require_app
from ui.common.text_safety import plain, show_error, shown_time
from ui.common.workspace import sync_workspace

require_app("pages/history.py")
hist = HistoryState()


def _open(query_id: int) -> None:
    hist.pending_open = query_id


def main() -> None:
    st.title("History")
    sync_workspace()  # its queries are listed: the ?ws= workspace of a reload
    st.caption(
        "Every finished question is written to the audit log (SQLite, with its settings, "
        "timings and every hit). This list shows the questions asked in this browser session."
    )
    query_id = hist.take("pending_open")
    if query_id is not None:
        try:
            open_from_history(query_id)
        except (KeyError, ValueError) as exc:
            show_error(exc, "The audit log no longer has this query.")
        else:
            st.switch_page("pages/ask.py")
    entries = recent()
    if not entries:
        st.info("No questions yet: ask one on the Ask page.", icon=":material/forum:")
        st.page_link("pages/ask.py", label="Go to Ask", icon=":material/forum:")
        return
    labelled = labelled_texts()  # issue 26: the workspace's labelled questions
    st.caption(f"{len(entries)} question(s), newest first. 🏷 = labelled (its evidence is marked).")
    for e in entries:
        corpus = key_label(e["corpus"])
        c1, c2, c3 = st.columns([6, 2.4, 1.4], vertical_alignment="center")  # "Open" whole
        tag = " 🏷 labelled" if " ".join(e["question"].split()) in labelled else ""
        c1.markdown(f"`#{e['id']}` {plain(e['question'])}{tag}")
        c2.caption(
            f"{shown_time(e['created_at'])} · {plain(e['strategy'])} · "
            f"{plain(e['locator'] or '-')} · {corpus}"
        )
        c3.button(
            "Open",
            key=f"open_{e['id']}",
            on_click=_open,
            args=(e["id"],),
            icon=":material/open_in_new:",
            width="stretch",
        )


main()
