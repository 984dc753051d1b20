"""The workspace's HiRAG corpus graph: what is built (extractor, size, LLM tokens) and a
button to build it, offline or with the LLM (entities and relations, community reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import HIRAG_FOLDER as FOLDER
from treerag_core import CorpusIndex, HiragBuildSettings, corpus_fingerprint
from treerag_core import build_hirag_into_folder as build_into_folder
from treerag_core.base.artifacts import read_json
from treerag_core.base.errors import IndexFormatError, TreeRAGError
from ui.common.text_safety import show_error
from ui.documents.upload import llm_client

LLM_TOGGLE = "hirag_llm"


def stored_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the folder's HiRAG build, or None (never loads the graph itself)."""
    path = folder / FOLDER / "manifest.json"
    if not path.is_file():
        return None
    try:
        return read_json(path, dict)  # bounded and an object: the folder may come from anyone
    except IndexFormatError:
        return None


def build_summary(meta: dict[str, Any]) -> pd.DataFrame:
    """One row per build stage that can spend LLM tokens, plus the graph's size."""
    counts, seconds = meta.get("counts", {}), meta.get("seconds", {})
    graph = meta.get("graph_usage", {})
    report = meta.get("report_usage", {})
    rows = [
        {
            "step": f"graph ({meta.get('extractor', 'offline')})",
            "result": f"{counts.get('entities', 0):,} entities, "
            f"{counts.get('relations', 0):,} relations",
            "seconds": seconds.get("graph", 0.0),
            "LLM calls": meta.get("graph_llm_calls", 0),
            "cached": meta.get("graph_cached", 0),
            "tokens in": graph.get("input_tokens", 0),
            "tokens out": graph.get("output_tokens", 0),
            "cost $": graph.get("cost_usd", 0.0),
        },
        {
            "step": "communities (Leiden)",
            "result": f"{counts.get('communities', 0):,} on {counts.get('levels', 0)} levels",
            "seconds": seconds.get("communities", 0.0),
            "LLM calls": 0,
            "cached": 0,
            "tokens in": 0,
            "tokens out": 0,
            "cost $": 0.0,
        },
        {
            "step": "reports",
            "result": f"{counts.get('llm_reports', 0):,} by the LLM, the rest extractive",
            "seconds": seconds.get("reports", 0.0),
            "LLM calls": meta.get("report_llm_calls", 0),
            "cached": meta.get("report_cached", 0),
            "tokens in": report.get("input_tokens", 0),
            "tokens out": report.get("output_tokens", 0),
            "cost $": report.get("cost_usd", 0.0),
        },
    ]
    return pd.DataFrame(rows)


def hirag_panel(index: CorpusIndex, folder: Path) -> None:
    """Status of the HiRAG build in `folder` (the workspace's index) and the build button."""
    with st.expander("HiRAG corpus graph (the hirag-* strategies)"):
        meta = stored_manifest(folder)
        if meta is None:
            st.caption("Not built yet: the first hirag-* question builds it offline.")
        else:
            current = meta.get("corpus_fingerprint") == corpus_fingerprint(index)
            state = "current" if current else "out of date: documents changed since"
            st.caption(f"Built with the {meta.get('extractor', 'offline')} extractor ({state}).")
            st.dataframe(build_summary(meta), hide_index=True, width="stretch", key="hirag_cost")
            for note in meta.get("notes", ()):
                st.warning(note, icon=":material/warning:")
        client, model = llm_client()
        use_llm = st.toggle(
            "Use the LLM for entities, relations and community reports",
            key=LLM_TOGGLE,
            disabled=client is None,
            help="One call per ~6,000 characters of a section, then 8 communities per call; "
            "results are cached in the workspace, so a rebuild only asks for what changed "
            "and a failed build resumes where it stopped.",
        )
        if client is None:
            st.caption("No LLM configured: offline extractor (noun phrases, co-occurrence).")
        if st.button("Build the HiRAG graph", key="hirag_build", icon=":material/hub:"):
            _build(index, folder, client if use_llm else None, model)


def _build(index: CorpusIndex, folder: Path, client: Any, model: str) -> None:
    meta = build_graph(index, folder, client, model)
    if meta is None:
        return
    counts = meta["counts"]
    st.toast(f"HiRAG graph: {counts['entities']:,} entities, {counts['communities']:,} communities")
    st.rerun()


def build_graph(
    index: CorpusIndex, folder: Path, client: Any = None, model: str = ""
) -> dict[str, Any] | None:
    """The explorer's one HiRAG build (Documents' panel, Compare's button): into `folder`,
    with a progress bar per stage; offline when `client` is None. The build's manifest
    (counts, seconds, usage), or None, the error shown, when it failed."""
    llm = client is not None
    settings = HiragBuildSettings(
        llm_graph=llm, llm_reports=llm, report_model=model or HiragBuildSettings().report_model
    )
    bar = st.progress(0.0, text="Building the HiRAG graph…")

    def update(stage: str, done: int, total: int) -> None:
        bar.progress(min(1.0, done / total if total else 1.0), text=f"{stage}: {done} / {total}")

    try:
        hindex = build_into_folder(
            index,
            folder,
            settings,
            client=client,
            progress=update,
        )
    except (TreeRAGError, OSError, ValueError) as exc:
        bar.empty()
        show_error(exc, "The HiRAG graph was not built; the index is unchanged.")
        return None
    bar.empty()
    return hindex.meta
