"""This session's workspace: its uploaded documents, their index on disk, the corpus choice."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from treerag_core import (
    STAMP,
    CorpusIndex,
    Engine,
    IndexLLM,
    ProgressFn,
    SourceDocument,
    Workspaces,
    index_folder,
    is_workspace_id,
    remove_folder,
)
from treerag_core.base.config import IndexSettings, data_dir
from treerag_core.base.errors import WorkspaceDeleteError, WorkspaceUnreadableError
from ui.common.corpora import EVAL, UPLOADS, corpus_key, corpus_label
from ui.common.resources import (
    Corpus,
    audit_log,
    cached_embedder,
    default_embedder,
    sample_corpus,
)
from ui.common.session import AskState, WorkspaceState


def workspace_folder() -> Path:
    return Path(data_dir()) / "workspaces" / WorkspaceState().id


def keep_for_reload() -> None:
    """Give this session's workspace its folder (its first write), so a reload adopts its
    `?ws=` id and finds what is kept under it (its History, a run going on).

    Raises:
        OSError: the folder cannot be made. ValueError: a bad TREERAG_WS_* variable.
    """
    Workspaces.default().touch(WorkspaceState().id, create=True)


def sync_workspace() -> None:
    """Keep the workspace id in the URL (`?ws=`), so a reload finds the same workspace.

    Once per browser session: idle workspaces are expired, then the id the URL names is
    adopted when something is saved under it. A malformed id, one with no folder (a made-up
    link, an expired workspace, or a session that never saved), or one whose files cannot be
    opened or deleted leaves this session's fresh, empty workspace (a workspace that cannot
    be opened stays on disk; the Documents page shows why and its link).
    """
    ws = WorkspaceState()
    if not st.session_state.get("ws_synced"):
        st.session_state.ws_synced = True
        try:  # an expired workspace takes its audit-log queries with it
            spaces = Workspaces.default(forget=lambda gone: audit_log().forget_workspace(gone))
        except ValueError as exc:  # a TREERAG_WS_* variable that is not a positive number
            st.error(f"Workspace limits: {exc}", icon=":material/error:")
            return
        gone: list[str] = []
        try:
            gone = spaces.expire_idle()
        except WorkspaceDeleteError as exc:  # kept with its history; the next session retries
            st.warning(f"An expired workspace was not deleted: {exc}", icon=":material/warning:")
        wanted = st.query_params.get("ws")
        if wanted and wanted != ws.id:
            _adopt(spaces, str(wanted), gone)
        spaces.touch(ws.id)
    if st.query_params.get("ws") != ws.id:
        st.query_params["ws"] = ws.id


def _adopt(spaces: Workspaces, wanted: str, gone: Sequence[str]) -> None:
    """Make the link's workspace this session's; what the user should know goes in
    `ws_restore_note` / `ws_restore_error` for the Documents page."""
    ws = WorkspaceState()
    if not is_workspace_id(wanted):
        st.session_state.ws_restore_note = (
            "The link's workspace id is not a valid one: this is a new, empty workspace."
        )
        return
    expired = wanted in gone or spaces.is_idle(wanted)
    if expired or not spaces.folder(wanted).is_dir():
        # Never adopt an id with nothing saved under it: anyone could send a made-up link,
        # wait for the documents uploaded under it, then read them. A fresh id is used, and
        # the note stays calm (a reload before any upload lands here too).
        st.session_state.ws_restore_note = (
            f"The workspace named in the link expired (unused for more than "
            f"{spaces.limits.idle_hours:g} hours): its documents and history were deleted. "
            "This is a new, empty workspace."
            if expired
            else "Nothing was saved under the link's workspace yet: this is a new, empty one."
        )
        return
    try:
        index = spaces.restore(wanted)
    except WorkspaceDeleteError as exc:  # idle, but its files could not be deleted
        st.warning(str(exc), icon=":material/warning:")
        return
    except WorkspaceUnreadableError as exc:
        # Kept on disk and not adopted: a save here would overwrite what it could not read.
        st.session_state.ws_restore_error = (str(exc), wanted)
        return
    ws.id, ws.index, ws.engine = wanted, index, None
    ws.version = index_version(index)


def index_version(index: CorpusIndex | None) -> str:
    """The part of the workspace's corpus key that changes whenever its node ids may: a digest
    of its settings and its documents' contents. A counter would do within one session, but a
    reload restores the same index in a new session: the same digest, so a result asked
    before the reload is still live, not shown read-only as if the workspace had changed."""
    if index is None:
        return "empty"
    content = json.dumps(
        [index.settings.to_dict(), [(d.doc_id, d.sha256) for d in index.documents]],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def workspace_corpus() -> Corpus | None:
    ws = WorkspaceState()
    if ws.index is None:
        return None
    if ws.engine is None or ws.engine.index is not ws.index:
        ws.engine = Engine(index=ws.index, embedder=cached_embedder(ws.index.embedder_name))
    return Corpus(corpus_key(UPLOADS, ws.id, ws.version), UPLOADS, corpus_label(UPLOADS), ws.engine)


def current_corpus(kind: str) -> Corpus | None:
    if kind == EVAL:
        return AskState().eval_corpus
    return workspace_corpus() if kind == UPLOADS else sample_corpus()


def sources_of(index: CorpusIndex | None) -> list[SourceDocument]:
    """The documents of an index as sources again (texts and PDF page maps kept)."""
    return [] if index is None else index.sources()


def set_workspace(
    sources: Sequence[SourceDocument],
    settings: IndexSettings,
    progress: ProgressFn | None = None,
    llm: IndexLLM | None = None,
) -> CorpusIndex | None:
    """(Re)build this session's index from `sources` and save it in the workspace folder
    (the API's `index_folder`, as the CLI's `index`).

    Unchanged documents reuse their vectors from the current index (no model call); `llm`
    writes what the build asks of an LLM (the K-Type summaries of documents it has not seen).
    """
    ws = WorkspaceState()
    folder = workspace_folder() / "index"
    if not sources:
        remove_folder(folder)  # first: if it fails, the session keeps its index as on disk
        ws.index, ws.engine = None, None
        ws.version = index_version(None)
        return None
    index = index_folder(
        sources,
        folder,
        settings,
        embedder=cached_embedder(settings.embedder),
        previous=ws.index,
        llm=llm,
        progress=progress,
    ).index
    (folder.parent / STAMP).touch()  # idle expiry counts from the last change
    ws.index, ws.engine = index, None
    ws.version = index_version(index)
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
