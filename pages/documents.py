"""Documents: upload into this session's own workspace, see each heading tree, remove, rebuild."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from treerag_core import corpus_stats
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import info_of
from ui.common.corpora import SAMPLES, UPLOADS, corpus_label
from ui.common.inspector import inspector, node_picker
from ui.common.ktype_card import document_ktype
from ui.common.leaf_graph_panel import graph_stats, inspected_leaf_graph
from ui.common.page_view import original_pdf
from ui.common.resources import EMBEDDER_CHOICES, sample_corpus, sample_paths
from ui.common.score_tables import outline_frame
from ui.common.session import DocsState, WorkspaceState, require_app
from ui.common.text_safety import plain, show_error
from ui.common.tree_graph import GraphMarks, TreeGraph, graph_legend, graph_view, heading_matches
from ui.common.vector_store import vector_store_panel
from ui.common.workspace import (
    current_corpus,
    merge_sources,
    sources_of,
    sync_workspace,
    workspace_folder,
    workspace_settings,
)
from ui.documents.hirag_build import hirag_panel
from ui.documents.upload import build, uploader

require_app("pages/documents.py")
# IndexSettings fields the "Built with" line always names, and the limits on which files are
# read (not how their trees are shaped), which it leaves out.
_IN_LINE = ("max_depth", "chunk_size", "chunk_overlap", "embedder")
_LIMITS = ("max_file_bytes", "max_pages")
docs = DocsState()
GRAPH = TreeGraph("doc_graph")


def _copy_samples() -> None:
    docs.pending_copy = True


def _workspace_table(index) -> None:
    rows = []
    for doc in index.documents:
        nodes = [n for n in index.nodes.values() if n.doc_id == doc.doc_id]
        rows.append(
            {
                "document": doc.name,
                "title": doc.title,
                "language": doc.language,
                "characters": doc.size_chars,
                "nodes": len(nodes),
                "leaves": sum(1 for n in nodes if n.is_leaf),
                "chunks": sum(1 for c in index.chunks if c.doc_id == doc.doc_id),
            }
        )
    # Bounded name and title: a long title pushed the counts off-screen at 1280 px.
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        width="stretch",
        key="ws_table",
        column_config={
            "document": st.column_config.TextColumn("document", width=180),
            "title": st.column_config.TextColumn("title", width=200),
        },
    )


def _index_number(name: str, value: int, slider: bool = False) -> int:
    """A number widget for IndexSettings field `name`, its label, help and range declared there."""
    info = info_of(IndexSettings, name)
    low, high = (int(v) for v in info.widget_range)
    high = max(high, value)  # an index built by the CLI may sit above the widget's top
    step = int(info.step or 1)
    widget = st.slider if slider else st.number_input
    return int(widget(info.label, low, high, value, step=step, help=_sentence(info.help)))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _rebuild_form(index) -> None:
    s = index.settings
    with st.expander("Rebuild with other settings"), st.form("rebuild"):
        depth = _index_number("max_depth", s.max_depth, slider=True)
        size = _index_number("chunk_size", s.chunk_size)
        overlap = _index_number("chunk_overlap", s.chunk_overlap)
        graphs = _index_number("graph_min_leaf_chars", s.graph_min_leaf_chars)
        articles_info = info_of(IndexSettings, "article_leaves")
        articles = st.checkbox(
            articles_info.label, s.article_leaves, help=_sentence(articles_info.help)
        )
        embedder_info = info_of(IndexSettings, "embedder")
        embedder = st.selectbox(
            embedder_info.label,
            list(dict.fromkeys([index.embedder_name, *EMBEDDER_CHOICES])),
            help=_sentence(embedder_info.help),
        )
        go = st.form_submit_button("Rebuild", icon=":material/refresh:")
    if not go:
        return
    try:
        # Only what the form shows changes; every other setting of the index is kept.
        new = replace(
            s,
            max_depth=depth,
            chunk_size=size,
            chunk_overlap=overlap,
            embedder=embedder,
            graph_min_leaf_chars=graphs,
            article_leaves=articles,
        )
    except ValueError as exc:
        show_error(exc, "Change the value named above and rebuild.")
        return
    seconds = build(sources_of(index), new, "rebuilt")
    if seconds is not None:
        docs.inspect = None
        st.toast(f"Rebuilt in {seconds:.1f} s")
        st.rerun()


def _left(count: int) -> str:
    return f"{count} document{'' if count == 1 else 's'} left"


def _confirm_remove(index) -> None:
    """The removal the user asked for, held until confirmed: it cannot be undone."""
    ids = {d.doc_id for d in index.documents}
    names = [n for n in docs.removing or [] if n in ids]
    if not names:
        docs.removing = None
        return
    left = len(ids) - len(names)
    st.warning(
        f"Remove **{plain(', '.join(names))}** from your workspace? {_left(left)}"
        + (" (the workspace will be empty)" if left == 0 else "")
        + ". This cannot be undone: to get a document back, upload it again.",
        icon=":material/delete:",
    )
    yes, no, _ = st.columns([1, 1, 2])
    if yes.button("Yes, remove", type="primary", key="ws_remove_yes", width="stretch"):
        keep = [src for src in sources_of(index) if src.name not in set(names)]
        if build(keep, index.settings, "removed") is not None:
            docs.removing, docs.inspect = None, None
            docs.notice = f"Removed {', '.join(names)} ({_left(left)})."
            st.rerun()
    if no.button("Cancel", key="ws_remove_no", width="stretch"):
        docs.removing = None
        st.rerun()


def _workspace() -> None:
    st.subheader("Your workspace")
    notice = docs.take("notice")
    if notice:
        st.success(plain(notice), icon=":material/check_circle:")
    index = WorkspaceState().index
    if docs.take("pending_copy"):
        samples = sample_corpus()
        if samples is not None:
            merged, _ = merge_sources(sources_of(index), sources_of(samples.index))
            if build(merged, workspace_settings(), "copied") is not None:
                docs.corpus = UPLOADS
                st.rerun()
    if index is None:
        st.info(
            "Empty. Upload files above, or copy the sample documents in to remove, "
            "re-chunk or re-embed them.",
            icon=":material/inbox:",
        )
        st.button(
            "Copy the sample documents into my workspace",
            on_click=_copy_samples,
            icon=":material/content_copy:",
            disabled=sample_corpus() is None,
        )
        return
    _workspace_table(index)
    s = index.settings
    # The other settings that shape the tree, when not at their default, by their declared
    # labels: a rebuild with article leaves or leaf graphs shows here, not only in a toast.
    others = s.changed(skip=(*_IN_LINE, *_LIMITS))
    st.caption(
        f"Built with depth cap {s.max_depth}, chunks of {s.chunk_size} characters "
        f"(overlap {s.chunk_overlap}), embedder {index.embedder_name} ({index.dim}-d)"
        + "".join(f", {name}" for name in others)
        + "."
    )
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    doomed = c1.multiselect(
        "Remove documents", [d.doc_id for d in index.documents], key="ws_remove"
    )
    if c2.button(
        "Remove…",
        icon=":material/delete:",
        disabled=not doomed,
        key="ws_remove_go",
        width="stretch",
    ):
        docs.removing = list(doomed)
    _confirm_remove(index)
    st.button(
        "Copy the sample documents into my workspace",
        on_click=_copy_samples,
        icon=":material/content_copy:",
        disabled=sample_corpus() is None,
        key="ws_copy_more",
        help="Adds them beside your documents (a same-named document is replaced), so you "
        "can rebuild them with other settings.",
    )
    _rebuild_form(index)
    vector_store_panel(index)
    hirag_panel(index, workspace_folder() / "index")


def _outline(index, doc_id: str) -> None:
    frame = outline_frame(index, doc_id)
    event = st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key="doc_outline",
        column_config={
            "summary": st.column_config.TextColumn("summary", width="large"),
            "level": st.column_config.NumberColumn("level", width="small"),
        },
    )
    rows = getattr(getattr(event, "selection", None), "rows", None) or []
    if rows:
        picked = str(frame.iloc[rows[0]]["node"])
        if picked != docs.outline_seen:
            docs.outline_seen = picked
            docs.inspect = picked


def _preview() -> None:
    st.subheader("Tree preview")
    choices = {}
    if WorkspaceState().index is not None:
        choices[UPLOADS] = corpus_label(UPLOADS)
    if sample_paths():
        choices[SAMPLES] = corpus_label(SAMPLES)
    if not choices:
        st.info("No documents yet.")
        return
    if docs.corpus not in choices:
        docs.corpus = next(iter(choices))
    c1, c2 = st.columns([1, 2])
    c1.radio("Corpus", list(choices), key="doc_corpus", format_func=choices.get, horizontal=True)
    corpus = current_corpus(docs.corpus)
    if corpus is None:
        return
    index = corpus.index
    by_id = {d.doc_id: d for d in index.documents}
    if docs.pick not in by_id:
        docs.pick = next(iter(by_id))
    c2.selectbox(
        "Document", list(by_id), key="doc_pick", format_func=lambda d: f"{by_id[d].title} ({d})"
    )
    doc = by_id[docs.pick]
    nodes = [n for n in index.nodes.values() if n.doc_id == doc.doc_id]
    leaves = [n for n in nodes if n.is_leaf]
    chunks = sum(len(index.leaf_rows(n.node_id)) for n in leaves)
    inferred = sum(n.inferred for n in nodes)
    st.caption(
        f"{len(nodes)} nodes · {len(leaves)} leaves · {chunks} chunks · language {doc.language} · "
        f"{doc.size_chars:,} characters · corpus: {corpus_stats(index)['documents']} document(s)"
        + (
            f" · {inferred} inferred sections (no headings: cut where the topic shifts, named "
            "by their first line)"
            if inferred
            else ""
        )
    )
    graph_stats(index, doc.doc_id, corpus.kind)
    document_ktype(index, doc.doc_id)
    if docs.inspect not in index.nodes or index.nodes[docs.inspect].doc_id != doc.doc_id:
        docs.inspect = None
    GRAPH.take_click(index, docs)
    graph_tab, outline_tab = st.tabs(["Graph", "Outline"])
    with graph_tab:
        c3, c4 = st.columns([3, 1], vertical_alignment="bottom")
        find = c3.text_input("Find a heading", key="doc_find")
        full = c4.toggle("Whole tree", key="doc_full")
        marks = GraphMarks(
            matches=frozenset(heading_matches(index, [doc.doc_id], find)),
            selected=docs.inspect,
            expanded=frozenset(docs.expanded),
        )
        view = graph_view(index, [doc.doc_id], marks, full=full)
        st.session_state.doc_graph_view = view  # tests read what was drawn
        GRAPH.draw(index, view, docs)
        graph_legend(view, query_marks=False)
    with outline_tab:
        _outline(index, doc.doc_id)
    options = [n.node_id for n in nodes]

    def _pick(node_id: str | None) -> None:
        docs.inspect = node_id

    node_picker(
        index,
        options,
        docs.inspect,
        _pick,
        key="doc_inspect_pick",
        placeholder="Click a node, pick an outline row, or choose here",
    )
    if docs.inspect:
        inspector(
            index,
            docs.inspect,
            key="doc_inspector",
            pdf=lambda doc_id: original_pdf(corpus.kind, doc_id),
        )
        inspected_leaf_graph(corpus, docs.inspect)


def main() -> None:
    st.title("Documents")
    sync_workspace()
    unreadable = st.session_state.pop("ws_restore_error", None)
    if unreadable is not None:
        message, old_id = unreadable
        st.error(
            f"The workspace named in the link could not be opened: {message}. To try it "
            f"again later, open this page with `?ws={old_id}`. This is a new, empty one.",
            icon=":material/error:",
        )
    note = st.session_state.pop("ws_restore_note", None)  # a malformed or expired link
    if note:
        st.info(note, icon=":material/info:")
    uploader()
    try:
        _workspace()
        st.divider()
        _preview()
    except TreeRAGError as exc:  # e.g. the embedder of the samples cannot load
        show_error(exc, "Install the package named above, or use another embedder.")


main()
