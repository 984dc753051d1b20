"""This session's workspace: its uploaded documents, their index on disk, the corpus choice."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from treerag_core.config import IndexSettings, data_dir
from treerag_core.index import CorpusIndex, ProgressFn, SourceDocument, build_index
from treerag_core.pipeline import Engine
from treerag_core.store import save_index
from ui.resources import (
    EVAL,
    SAMPLES,
    UPLOADS,
    Corpus,
    cached_embedder,
    default_embedder,
    sample_corpus,
)
from ui.session import AskState, WorkspaceState


def workspace_folder() -> Path:
    return Path(data_dir()) / "workspaces" / WorkspaceState().id


def workspace_corpus() -> Corpus | None:
    ws = WorkspaceState()
    if ws.index is None:
        return None
    if ws.engine is None or ws.engine.index is not ws.index:
        ws.engine = Engine(index=ws.index, embedder=cached_embedder(ws.index.embedder_name))
    return Corpus(f"ws:{ws.id}:{ws.version}", UPLOADS, "My uploads", ws.engine)


def current_corpus(kind: str) -> Corpus | None:
    if kind == EVAL:
        return AskState().eval_corpus
    return workspace_corpus() if kind == UPLOADS else sample_corpus()


def corpus_kind_of(key: str) -> str:
    """The corpus kind a corpus key names (keys start with samples:, ws: or eval:)."""
    return UPLOADS if key.startswith("ws:") else EVAL if key.startswith(f"{EVAL}:") else SAMPLES


def sources_of(index: CorpusIndex | None) -> list[SourceDocument]:
    """The documents of an index as sources again (texts are stored in the index)."""
    if index is None:
        return []
    return [SourceDocument(d.doc_id, index.texts[d.doc_id]) for d in index.documents]


def set_workspace(
    sources: Sequence[SourceDocument], settings: IndexSettings, progress: ProgressFn | None = None
) -> CorpusIndex | None:
    """(Re)build this session's index from `sources` and save it in the workspace folder.

    Unchanged documents reuse their vectors from the current index (no model call).
    """
    ws = WorkspaceState()
    folder = workspace_folder() / "index"
    if not sources:
        ws.index, ws.engine = None, None
        ws.version += 1
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        return None
    embedder = cached_embedder(settings.embedder)
    index = build_index(sources, settings, embedder, previous=ws.index, progress=progress)
    save_index(index, folder)
    ws.index, ws.engine = index, None
    ws.version += 1
    return index


def merge_sources(
    current: Sequence[SourceDocument], new: Sequence[SourceDocument]
) -> tuple[list[SourceDocument], list[str]]:
    """Current documents plus new ones; a new file with an existing name replaces it."""
    names = {s.name for s in new}
    replaced = [s.name for s in current if s.name in names]
    kept = [s for s in current if s.name not in names]
    return kept + list(new), replaced


def workspace_settings() -> IndexSettings:
    index = WorkspaceState().index
    return index.settings if index is not None else IndexSettings(embedder=default_embedder())


def has_workspace() -> bool:
    return st.session_state.get(WorkspaceState().key("index")) is not None
