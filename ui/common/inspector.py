"""The node inspector: heading path, summary, text (with a cited span marked), chunks, override."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import streamlit as st

from treerag_core import CorpusIndex
from treerag_core.base.pagemap import format_pages
from ui.common.page_view import PassageMarks, page_panel
from ui.common.score_tables import chunk_frame
from ui.common.text_safety import plain
from ui.common.tree_labels import INFERRED_HELP, INFERRED_PREFIX, node_kind

MAX_LEAVES = 5  # step 1 picks at most this many leaves (LocateSettings refuses more)


def weakest_pick(picked: Sequence[str], scores: Mapping[str, float | None]) -> str:
    """The pick an added leaf replaces when step 1's limit is reached: the lowest-scored one;
    unscored picks (added by hand) count as lowest, and ties go to the later in step 1's order."""
    order = {leaf: i for i, leaf in enumerate(picked)}

    def strength(leaf: str) -> tuple[float, int]:
        score = scores.get(leaf)
        return (float("-inf") if score is None else score, -order[leaf])

    return min(picked, key=strength)


def marked_text(text: str, start: int, end: int) -> str:
    """`text` as HTML-escaped preformatted text with text[start:end] in a <mark>."""
    start, end = max(0, start), min(len(text), end)
    if start >= end:
        body = html.escape(text)
    else:
        body = (
            html.escape(text[:start])
            + '<mark id="cited">'
            + html.escape(text[start:end])
            + "</mark>"
            + html.escape(text[end:])
        )
    # No raw line breaks: Markdown ends an HTML block at a blank line and would read the rest
    # of the document as Markdown ("[x](https://…)" a live link, "![](…)" a remote image).
    # As character references they still break lines under pre-wrap.
    body = body.replace("\r", "").replace("\n", "&#10;")
    return f'<div style="white-space: pre-wrap; font-size: 0.92em">{body}</div>'


def node_picker(
    index: CorpusIndex,
    options: Sequence[str],
    current: str | None,
    on_pick: Callable[[str | None], None],
    *,
    key: str,
    placeholder: str,
) -> None:
    """The "Inspect a node" select box: shows `current` (a click in the tree or a citation
    may have changed it since the last run) and hands a choice made here to `on_pick`."""
    st.session_state[key] = current if current in options else None
    st.selectbox(
        "Inspect a node",
        options,
        key=key,
        on_change=lambda: on_pick(st.session_state[key]),
        placeholder=placeholder,
        format_func=lambda i: node_option(index, i),
    )


def node_option(index: CorpusIndex, node_id: str) -> str:
    """A node as the select box lists it: "0003 · path", with the graph's "~" before an
    inferred section's name (no heading there: named by its first line)."""
    node = index.nodes[node_id]
    mark = INFERRED_PREFIX if node.inferred else ""
    return f"{node_id} · {mark}{node.heading_path or node.heading}"


def inspector(
    index: CorpusIndex,
    node_id: str,
    *,
    picked: Sequence[str] | None = None,
    on_toggle: Callable[[list[str]], None] | None = None,
    scores: Mapping[str, float | None] | None = None,
    highlight: tuple[int, int] | None = None,
    key: str = "inspector",
    pdf: Callable[[str], bytes | None] | None = None,
    page_marks: PassageMarks | None = None,
) -> None:
    """Heading path, summary, content and chunks (with offsets) of one node.

    With `picked` and `on_toggle`, a leaf gets a button that adds it to or removes it from
    the picked leaves; `on_toggle` receives the new leaf list (at the limit, an added leaf
    replaces the lowest of the picks' step-1 `scores`). `highlight` (document offsets,
    e.g. a cited passage) is marked inside the node's text. A row picked in the chunk table
    is marked instead. With `pdf` (document -> its original PDF, or None), a marked passage
    of a PDF is also shown on its rendered page, with `page_marks` under it.
    """
    node = index.nodes.get(node_id)
    if node is None:
        st.info(f"Node {node_id} is not in this index (the documents changed since).")
        return
    kind = node_kind(node, root="document root")
    with st.container(border=True):
        st.markdown(f"**{plain(node.heading)}** `{node_id}` · {kind} · {plain(node.doc_id)}")
        st.caption(plain(node.heading_path))
        if node.inferred:
            st.caption(INFERRED_HELP)
        if picked is not None and on_toggle is not None and node.is_leaf:
            _toggle_button(index, node_id, list(picked), scores or {}, on_toggle, key)
        st.markdown("**Summary**")
        st.text(node.summary or "(no summary)")
        rows = index.leaf_rows(node_id)
        # The table's key names the node and the opened passage, so a new citation starts
        # with no row picked (a row picked for another node never marks this one).
        table_key = f"{key}_chunks_{node_id}_{highlight[0] if highlight else ''}"
        chosen = _chosen_chunk(index, rows.tolist(), table_key)
        if chosen is not None:  # a row picked in the chunk table: that passage is marked
            highlight = chosen
        st.markdown(f"**Content** · characters {node.start}–{node.end} of the document")
        with st.container(height=240):
            if not node.content:
                st.text("(no text of its own: see its children)")
            elif highlight is not None and node.start <= highlight[0] < node.end:
                st.markdown(
                    marked_text(node.content, highlight[0] - node.start, highlight[1] - node.start),
                    unsafe_allow_html=True,  # every piece of document text is escaped above
                )
            else:
                st.text(node.content)
        data = (
            pdf(node.doc_id)
            if pdf is not None and index.document(node.doc_id).page_starts
            else None
        )
        if data is not None:
            span = (
                highlight
                if highlight is not None and node.start <= highlight[0] < node.end
                else None
            )
            st.markdown(
                "**Page** · "
                + ("the marked passage on its page" if span else "where this section begins")
            )
            page_panel(
                index,
                node.doc_id,
                span or (node.start, node.start),
                data,
                key=f"{key}_pdf",
                marks=page_marks,
            )
        if node.is_leaf:
            st.markdown(
                f"**Chunks** ({len(rows)}) · pick a row to mark it"
                + (" on its page" if data else "")
            )
            frame = chunk_frame(index, node_id)
            # A PDF's chunks say which pages they come from ("" for other formats).
            frame.insert(
                3,
                "pages",
                [
                    format_pages(index.chunks[r].page_start, index.chunks[r].page_end)
                    for r in rows.tolist()
                ],
            )
            st.dataframe(
                frame,
                hide_index=True,
                width="stretch",
                column_config={"text": st.column_config.TextColumn("text", width="large")},
                key=table_key,
                on_select="rerun",
                selection_mode="single-row",
            )
        else:
            children = [index.nodes[c] for c in node.children]
            st.markdown(f"**Children** ({len(children)})")
            st.dataframe(
                pd.DataFrame(
                    [{"node": c.node_id, "heading": c.heading, "leaf": c.is_leaf} for c in children]
                ),
                hide_index=True,
                width="stretch",
                key=f"{key}_children",
            )


def _chosen_chunk(index: CorpusIndex, rows: list[int], key: str) -> tuple[int, int] | None:
    """The document span of the chunk picked in the chunk table (by its row), or None."""
    state = st.session_state.get(key)
    try:
        picked = state["selection"]["rows"] if state else []
    except (KeyError, TypeError):
        return None
    if not picked or not 0 <= picked[0] < len(rows):
        return None
    chunk = index.chunks[rows[picked[0]]]
    return chunk.start, chunk.end


def _toggle_button(
    index: CorpusIndex,
    node_id: str,
    picked: list[str],
    scores: Mapping[str, float | None],
    on_toggle: Callable[[list[str]], None],
    key: str,
) -> None:
    """Add or remove this leaf; what a click will do beyond that is said beside the button."""
    if node_id in picked:
        last = len(picked) == 1
        st.button(
            "Remove from the picked leaves and rerun",
            key=f"{key}_remove",
            icon=":material/remove:",
            disabled=last,
            on_click=on_toggle,
            args=([i for i in picked if i != node_id],),
        )
        if last:
            st.caption("At least one leaf must stay picked.")
    elif len(picked) >= MAX_LEAVES:
        # Step 1 (and the settings) allow at most MAX_LEAVES: the user's pick wins over the
        # weakest of step 1's, and the button says which one goes before it is pressed.
        weakest = weakest_pick(picked, scores)
        score = scores.get(weakest)
        st.button(
            f"Add in place of {weakest} and rerun",
            key=f"{key}_add",
            icon=":material/swap_horiz:",
            type="primary",
            on_click=on_toggle,
            args=([*(i for i in picked if i != weakest), node_id],),
        )
        said = "added by hand, no score" if score is None else f"score {score:.3f}"
        heading = index.nodes[weakest].heading if weakest in index.nodes else weakest
        st.caption(
            f"Step 1 picks at most {MAX_LEAVES} leaves: adding this one drops "
            f"**{plain(heading)}** `{weakest}`, the lowest-scored pick ({said})."
        )
    else:
        st.button(
            "Add to the picked leaves and rerun",
            key=f"{key}_add",
            icon=":material/add:",
            type="primary",
            on_click=on_toggle,
            args=([*picked, node_id],),
        )
