"""A PDF passage on its rendered page: the page image with the passage's lines marked, and
previous / next page buttons (in the inspector, for every chunk of an uploaded PDF)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from treerag_core import CorpusIndex, PageImage, load_original, render_page
from treerag_core.base.config import max_file_bytes
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.pagemap import page_of, span_on_page
from ui.common.corpora import UPLOADS

# Draws verdict marks for the passage shown: (document, start, end), document offsets.
PassageMarks = Callable[[str, int, int], None]
PAGE_PX = 900  # rendered width; the image is scaled to its column
FOUND_NOTE = 0.6  # below this share of the passage's letters found, say the mark is partial


def original_pdf(kind: str, doc_id: str) -> bytes | None:
    """The original PDF of an uploaded document (kept at upload), or None."""
    if kind != UPLOADS:
        return None
    from ui.common.workspace import workspace_folder  # the workspace module imports the UI stack

    return load_original(workspace_folder(), doc_id, max_file_bytes())


@st.cache_data(max_entries=48, show_spinner=False)
def _rendered(doc_key: str, page: int, passage: str, _data: bytes) -> PageImage:
    """One page render, cached by document, page and marked passage (the bytes are not
    hashed: `doc_key` names them)."""
    return render_page(_data, page, passage, PAGE_PX)


def page_panel(
    index: CorpusIndex,
    doc_id: str,
    span: tuple[int, int],
    data: bytes,
    *,
    key: str,
    marks: PassageMarks | None = None,
) -> None:
    """The page holding `span` (document offsets), the span's text marked on it; previous and
    next buttons walk the document's pages (the mark stays on the pages it lies on). With
    `marks`, a passage (a non-empty span) gets them under its page."""
    doc = index.document(doc_id)
    starts = doc.page_starts
    if not starts:
        return
    first = page_of(starts, span[0]) or 1
    state_key = f"{key}_page"
    anchor = (doc_id, span)
    if st.session_state.get(f"{state_key}_anchor") != anchor:  # a new passage: its own page
        st.session_state[f"{state_key}_anchor"] = anchor
        st.session_state[state_key] = first
    page = int(st.session_state.get(state_key, first))
    n_pages = len(starts)
    lo, hi = span_on_page(starts, span[0], span[1], page)
    passage = index.texts[doc_id][lo:hi]
    prev_col, label_col, next_col = st.columns([1, 2, 1], vertical_alignment="center")
    prev_col.button(
        "◀ Previous page",
        key=f"{key}_prev",
        disabled=page <= 1,
        on_click=lambda: st.session_state.__setitem__(state_key, max(1, page - 1)),
        width="stretch",
    )
    next_col.button(
        "Next page ▶",
        key=f"{key}_next",
        disabled=page >= n_pages,
        on_click=lambda: st.session_state.__setitem__(state_key, min(n_pages, page + 1)),
        width="stretch",
    )
    try:
        image = _rendered(f"{doc_id}:{doc.sha256}", page, passage, data)
    except (TreeRAGError, ValueError) as exc:
        st.warning(f"This page cannot be shown: {exc}", icon=":material/error:")
        return
    marked = "the passage marked" if image.boxes else "the passage is not on this page"
    if span[1] <= span[0]:  # no passage (a section opened at its start): nothing to mark
        marked = "where the section begins" if page == first else ""
    elif image.boxes and image.found < FOUND_NOTE:
        marked = f"the passage partly marked ({image.found:.0%} of its text found on the page)"
    label_col.markdown(
        f"<div class='pdf-page-label' style='text-align:center'><b>Page {page}</b> of "
        f"{image.n_pages}{' · ' + marked if marked else ''}</div>",
        unsafe_allow_html=True,  # numbers and fixed words only
    )
    with st.container(key=f"{key}_image"):
        st.image(image.png, width="stretch")
    if marks is not None and span[1] > span[0]:
        marks(doc_id, span[0], span[1])
