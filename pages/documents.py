"""Documents: upload into this session's own workspace, see each heading tree, remove, rebuild."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from pages import state
from pages import widgets as w
from treerag_core.config import IndexSettings
from treerag_core.errors import TreeRAGError
from treerag_core.index import corpus_stats
from treerag_core.ingest import sources_from_uploads

ss = st.session_state
state.require_app("pages/documents.py")
GRAPH_KEY = "doc_graph"
STAGES = {
    "parse": (0.0, 0.15, "Parsing"),
    "embed": (0.15, 0.95, "Embedding"),
    "index": (0.95, 1.0, "Indexing"),
}


def _progress_bar():
    """A progress bar and the engine callback that drives it (parse → embed → index)."""
    bar = st.progress(0.0, text="Parsing…")

    def update(stage: str, done: int, total: int) -> None:
        low, high, label = STAGES.get(stage, (0.0, 1.0, stage))
        share = done / total if total else 1.0
        unit = "document" if stage == "parse" else "chunk"
        bar.progress(
            min(1.0, low + (high - low) * share), text=f"{label}: {done:,} / {total:,} {unit}s"
        )

    return bar, update


def _build(sources, settings: IndexSettings, verb: str) -> float | None:
    """(Re)build the workspace, showing progress; returns seconds, or None after an error."""
    bar, update = _progress_bar()
    started = time.perf_counter()
    try:
        state.set_workspace(sources, settings, update)
    except (TreeRAGError, OSError, ValueError) as exc:
        bar.empty()
        w.show_error(exc, f"Nothing was {verb}; your workspace is unchanged.")
        return None
    bar.empty()
    return time.perf_counter() - started


def _ingest(uploads: Sequence[tuple[str, bytes]]) -> None:
    settings = state.workspace_settings()
    sources, rejected = sources_from_uploads(uploads, settings.max_file_bytes)
    report = {
        "added": [s.name for s in sources],
        "replaced": [],
        "rejected": [(r.name, r.reason) for r in rejected],
        "seconds": None,
        "failed": False,
    }
    if sources:
        merged, replaced = state.merge_sources(state.sources_of(ss.ws_index), sources)
        report["replaced"] = replaced
        seconds = _build(merged, settings, "added")
        report["seconds"] = seconds
        report["failed"] = seconds is None
        if seconds is not None:
            ss.doc_corpus = state.UPLOADS
            ss.doc_pick = sources[0].name
            ss.doc_inspect = None
    ss.upload_report = report
    ss.uploader_round += 1  # a fresh uploader: the processed files leave the drop zone
    if not report["failed"]:
        st.rerun()


def _report() -> None:
    report = ss.get("upload_report")
    if not report:
        return
    added = [n for n in report["added"] if n not in report["replaced"]]
    if report["seconds"] is not None and report["added"]:
        parts = []
        if added:
            parts.append(f"added {len(added)}: {', '.join(added)}")
        if report["replaced"]:
            parts.append(f"updated {len(report['replaced'])}: {', '.join(report['replaced'])}")
        st.success(
            w.plain("; ".join(parts)) + f" ({report['seconds']:.1f} s)",
            icon=":material/check_circle:",
        )
    for name, reason in report["rejected"]:
        reason = reason.removeprefix(f"{name}: ")  # the engine's message starts with the name
        st.error(f"**{w.plain(name)}** was not added: {w.plain(reason)}", icon=":material/block:")


def _upload() -> None:
    st.subheader("Add documents to your workspace")
    st.caption(
        "Only you see this workspace: it belongs to this browser session (saved on the server "
        "under a random id). Markdown or plain text, up to 20 MB a file; headings (#, ##, …) "
        "become the tree."
    )
    files = st.file_uploader(
        "Drop .md, .markdown or .txt files",
        type=["md", "markdown", "txt"],
        accept_multiple_files=True,
        key=f"uploader_{ss.uploader_round}",
    )
    if files:
        _ingest([(f.name, f.getvalue()) for f in files])
    _report()


def _copy_samples() -> None:
    samples = state.sample_corpus()
    if samples is None:
        return
    ss.pending_copy = True


def _workspace() -> None:
    st.subheader("Your workspace")
    index = ss.ws_index
    if ss.pop("pending_copy", False):
        samples = state.sample_corpus()
        if samples is not None:
            merged, _ = state.merge_sources(
                state.sources_of(index), state.sources_of(samples.index)
            )
            if _build(merged, state.workspace_settings(), "copied") is not None:
                ss.doc_corpus = state.UPLOADS
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
            disabled=state.sample_corpus() is None,
        )
        return
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
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="ws_table")
    s = index.settings
    st.caption(
        f"Built with depth cap {s.max_depth}, chunks of {s.chunk_size} characters "
        f"(overlap {s.chunk_overlap}), embedder {index.embedder_name} ({index.dim}-d)."
    )
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    doomed = c1.multiselect(
        "Remove documents", [d.doc_id for d in index.documents], key="ws_remove"
    )
    if c2.button(
        "Remove", icon=":material/delete:", disabled=not doomed, key="ws_remove_go", width="stretch"
    ):
        keep = [src for src in state.sources_of(index) if src.name not in set(doomed)]
        if _build(keep, s, "removed") is not None:
            ss.doc_inspect = None
            st.rerun()
    with st.expander("Rebuild with other settings"):
        with st.form("rebuild"):
            depth = st.slider(
                "Depth cap (deeper headings fold into their parent)", 1, 6, s.max_depth
            )
            size = st.number_input("Chunk size (characters)", 50, 4000, s.chunk_size, step=50)
            overlap = st.number_input(
                "Chunk overlap (characters)", 0, 1000, s.chunk_overlap, step=10
            )
            embedders = list(dict.fromkeys([index.embedder_name, *state.EMBEDDER_CHOICES]))
            embedder = st.selectbox(
                "Embedder",
                embedders,
                help="multilingual: zh + en (default). minilm: English. hashing: no model, "
                "word overlap only (fast, for tests).",
            )
            go = st.form_submit_button("Rebuild", icon=":material/refresh:")
        if go:
            try:
                new = IndexSettings(
                    max_depth=int(depth),
                    chunk_size=int(size),
                    chunk_overlap=int(overlap),
                    embedder=embedder,
                    max_file_bytes=s.max_file_bytes,
                    summary_chars=s.summary_chars,
                )
            except ValueError as exc:
                w.show_error(exc, "Change the value named above and rebuild.")
            else:
                seconds = _build(state.sources_of(index), new, "rebuilt")
                if seconds is not None:
                    ss.doc_inspect = None
                    st.toast(f"Rebuilt in {seconds:.1f} s")
                    st.rerun()


def _preview() -> None:
    st.subheader("Tree preview")
    choices = {}
    if ss.ws_index is not None:
        choices[state.UPLOADS] = "My workspace"
    if state.sample_paths():
        choices[state.SAMPLES] = "Sample documents"
    if not choices:
        st.info("No documents yet.")
        return
    if ss.get("doc_corpus") not in choices:
        ss.doc_corpus = next(iter(choices))
    c1, c2 = st.columns([1, 2])
    c1.radio("Corpus", list(choices), key="doc_corpus", format_func=choices.get, horizontal=True)
    corpus = state.current_corpus(ss.doc_corpus)
    if corpus is None:
        return
    index = corpus.index
    docs = {d.doc_id: d for d in index.documents}
    if ss.get("doc_pick") not in docs:
        ss.doc_pick = next(iter(docs))
    c2.selectbox(
        "Document", list(docs), key="doc_pick", format_func=lambda d: f"{docs[d].title} ({d})"
    )
    doc = docs[ss.doc_pick]
    nodes = [n for n in index.nodes.values() if n.doc_id == doc.doc_id]
    leaves = [n for n in nodes if n.is_leaf]
    chunks = sum(len(index.leaf_rows(n.node_id)) for n in leaves)
    st.caption(
        f"{len(nodes)} nodes · {len(leaves)} leaves · {chunks} chunks · language {doc.language} · "
        f"{doc.size_chars:,} characters · corpus: {corpus_stats(index)['documents']} document(s)"
    )
    if ss.get("doc_inspect") not in index.nodes or index.nodes[ss.doc_inspect].doc_id != doc.doc_id:
        ss.doc_inspect = None
    clicked = w.handle_graph_click(w.last_click("doc_graph_key"), "doc_graph_seen")
    if clicked:
        w.apply_click(index, clicked, "doc_inspect", "doc_expanded")
    graph_tab, outline_tab = st.tabs(["Graph", "Outline"])
    with graph_tab:
        c3, c4 = st.columns([3, 1], vertical_alignment="bottom")
        find = c3.text_input("Find a heading", key="doc_find")
        full = c4.toggle("Whole tree", key="doc_full")
        marks = w.GraphMarks(
            matches=frozenset(w.heading_matches(index, [doc.doc_id], find)),
            selected=ss.doc_inspect,
            expanded=frozenset(ss.get("doc_expanded", set())),
        )
        view = w.graph_view(index, [doc.doc_id], marks, full=full)
        ss.doc_graph_view = view
        new_key = w.graph_key(GRAPH_KEY, view)
        if new_key != ss.get("doc_graph_key"):  # a fresh component starts with no click
            ss.doc_graph_seen = None
            ss.doc_graph_key = new_key
        value = w.draw_graph(view, key=ss.doc_graph_key, height=w.graph_height(view))
        if w.handle_graph_click(value, "doc_graph_seen"):
            w.apply_click(index, value, "doc_inspect", "doc_expanded")
            st.rerun()
        w.graph_legend(view, query_marks=False)
    with outline_tab:
        frame = w.outline_frame(index, doc.doc_id)
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
            if picked != ss.get("doc_outline_seen"):
                ss.doc_outline_seen = picked
                ss.doc_inspect = picked
    options = [n.node_id for n in nodes]
    ss.doc_inspect_pick = ss.doc_inspect if ss.doc_inspect in options else None

    def _pick() -> None:
        ss.doc_inspect = ss.doc_inspect_pick

    st.selectbox(
        "Inspect a node",
        options,
        key="doc_inspect_pick",
        on_change=_pick,
        placeholder="Click a node, pick an outline row, or choose here",
        format_func=lambda i: f"{i} · {index.nodes[i].heading_path or index.nodes[i].heading}",
    )
    if ss.doc_inspect:
        w.inspector(index, ss.doc_inspect, key="doc_inspector")


def main() -> None:
    st.title("Documents")
    _upload()
    try:
        _workspace()
        st.divider()
        _preview()
    except TreeRAGError as exc:  # e.g. the embedder of the samples cannot load
        w.show_error(exc, "Install the package named above, or use another embedder.")


main()
