"""Uploads into the workspace: conversion, a tree review for inferred trees, every refusal."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import streamlit as st

from treerag_core import (
    SUPPORTED_SUFFIXES,
    Converted,
    IndexLLM,
    Rejected,
    SourceDocument,
    WorkspaceLimits,
    check_drop,
    check_sources,
    conversion_notes,
    convert_upload,
    load_edits,
    save_edits,
    save_original,
    to_source,
)
from treerag_core.base.config import MB, IndexSettings, max_file_bytes
from treerag_core.base.errors import (
    FileTooLargeError,
    InputDocumentError,
    TreeRAGError,
    WorkspaceLimitError,
)
from ui.common.corpora import UPLOADS
from ui.common.llm_panel import session_client
from ui.common.query_controls import LLM_PREFIX
from ui.common.session import DocsState, WorkspaceState
from ui.common.text_safety import plain, show_error
from ui.common.workspace import (
    merge_sources,
    set_workspace,
    sources_of,
    workspace_folder,
    workspace_settings,
)
from ui.documents.tree_editor import tree_editor

SUFFIXES = tuple(sorted(SUPPORTED_SUFFIXES))
# Formats whose heading tree is inferred (fonts, styles, tags): shown for review first.
REVIEWED = frozenset({"pdf", "docx", "html"})
HIDE_CAP_CSS = (
    '[class*="st-key-uploader_"] [data-testid="stFileUploaderDropzoneInstructions"] '
    "{ display: none; }"
)
DROP_HINT = "Drag and drop files onto the box below, or press **Upload** to choose them:"
WHO_SETS_THE_LIMIT = (
    "The limit is set by whoever runs this server (the TREERAG_MAX_FILE_MB setting)."
)
PENDING = "docs_pending"  # session key: Converted files waiting for their tree review
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
        if stage == "index":  # one step (writing the index), not "1 / 1 chunks"
            text = "Indexing: writing the index…" if done < total else "Indexing: done"
        else:
            unit = "document" if stage == "parse" else "chunk"
            text = f"{label}: {done:,} / {total:,} {unit}{'' if total == 1 else 's'}"
        bar.progress(min(1.0, low + (high - low) * share), text=text)

    return bar, update


def build(sources: Sequence[SourceDocument], settings: IndexSettings, verb: str) -> float | None:
    """(Re)build the workspace, showing progress; returns seconds, or None after an error.

    The session's caps are checked first, so an oversized workspace costs no embedding time.
    """
    try:
        check_sources(sources, settings, WorkspaceLimits.from_env())
    except (WorkspaceLimitError, ValueError) as exc:
        show_error(exc, f"Nothing was {verb}; your workspace is unchanged.")
        return None
    bar, update = _progress_bar()
    started = time.perf_counter()
    try:
        set_workspace(sources, settings, update, _index_llm())
    except (TreeRAGError, OSError, ValueError) as exc:
        bar.empty()
        show_error(exc, f"Nothing was {verb}; your workspace is unchanged.")
        return None
    bar.empty()
    return time.perf_counter() - started


def _stored_edits() -> dict:
    try:
        return load_edits(workspace_folder())
    except InputDocumentError:
        return {}  # a damaged edits file: the tree editor names it when it opens


def _add(sources: list[SourceDocument], report: dict[str, Any]) -> None:
    """Merge `sources` into the workspace and build; the outcome goes into `report`."""
    docs = DocsState()
    merged, replaced = merge_sources(sources_of(WorkspaceState().index), sources)
    report["added"] = [s.name for s in sources]
    report["replaced"] = replaced
    seconds = build(merged, workspace_settings(), "added")
    report["seconds"] = seconds
    report["failed"] = seconds is None
    if seconds is not None:
        docs.corpus, docs.pick = UPLOADS, sources[0].name
        docs.inspect = None


def ingest(uploads: Sequence[tuple[str, bytes]], limit: int | None = None) -> None:
    """Convert the files; Markdown and text go in at once (a same-named document is replaced),
    PDF, DOCX and HTML wait for their tree review. Every refusal keeps its own reason."""
    docs = DocsState()
    settings = workspace_settings()
    rejected: list[Rejected] = []
    ready: list[SourceDocument] = []
    told: list[str] = []  # what the converter noted of the files indexed at once
    pending: list[Converted] = list(st.session_state.get(PENDING, []))
    edits = _stored_edits()
    for name, data in uploads:
        try:
            cap = settings.max_file_bytes if limit is None else min(limit, settings.max_file_bytes)
            converted = convert_upload(name, data, cap)
        except FileTooLargeError as exc:  # a web user cannot set the limit: say who can
            rejected.append(Rejected(name, f"{exc.refusal}. {WHO_SETS_THE_LIMIT}"))
            continue
        except InputDocumentError as exc:
            rejected.append(Rejected(name, str(exc)))
            continue
        if converted.document.fmt == "pdf":  # kept so a citation can show its page
            try:
                save_original(workspace_folder(), converted.document.name, data)
            except OSError as exc:
                st.warning(
                    f"{plain(name)}: its pages cannot be kept for display ({exc}); its text "
                    "is indexed as usual.",
                    icon=":material/warning:",
                )
        if converted.document.fmt in REVIEWED:
            pending = [p for p in pending if p.document.name != name] + [converted]
        else:  # no review step: its notes (sections it inferred) are said with the result
            ready.append(to_source(converted, edits)[0])
            told.extend(conversion_notes(converted))
    st.session_state[PENDING] = pending
    report: dict[str, Any] = {
        "added": [],
        "replaced": [],
        "rejected": [(r.name, r.reason) for r in rejected],
        "converted": told,
        "seconds": None,
        "failed": False,
    }
    if ready:
        _add(ready, report)
    docs.upload_report = report
    docs.uploader_round += 1  # a fresh uploader: the processed files leave the drop zone
    if not report["failed"]:
        st.rerun()


def llm_client() -> tuple[Any, str]:
    """The LLM the Ask page's block is set to (level suggestions, K-Types, HiRAG builds), or
    (None, "") when it is off or not configured."""
    return session_client(LLM_PREFIX)


def _index_llm() -> IndexLLM | None:
    """LLM K-Type summaries when a client is configured: five documents per call, documents
    already summarised (by content hash, in the current index) never sent again."""
    client, model = llm_client()
    return None if client is None else IndexLLM(client, model, ktype=True)


def review() -> None:
    """The inferred tree of each converted file, to correct before it is indexed."""
    pending: list[Converted] = st.session_state.get(PENDING, [])
    if not pending:
        return
    st.markdown(f"**Check the inferred trees** ({len(pending)} file(s) waiting)")
    folder = workspace_folder()
    client, model = llm_client()
    current = {}
    for conv in pending:
        with st.expander(conv.document.name, expanded=len(pending) == 1):
            current[conv.sha256] = tree_editor(
                conv, key=f"te_{conv.sha256[:16]}", folder=folder, client=client, model=model
            )
    c1, c2 = st.columns(2)
    if c1.button("Index these files", key="review_go", type="primary", icon=":material/input:"):
        for conv in pending:  # the corrections travel with the document (tree_edits.json)
            save_edits(folder, conv.sha256, conv.document.name, current[conv.sha256])
        edits = load_edits(folder)
        sources, notes = [], []
        for conv in pending:
            source, problems = to_source(conv, edits)
            sources.append(source)
            notes.extend(problems)
        report: dict[str, Any] = {
            "added": [],
            "replaced": [],
            "rejected": [],
            "notes": notes,
            "seconds": None,
            "failed": False,
        }
        _add(sources, report)
        DocsState().upload_report = report
        if not report["failed"]:
            st.session_state[PENDING] = []
            st.rerun()
    if c2.button("Discard these files", key="review_drop", icon=":material/close:"):
        st.session_state[PENDING] = []
        st.rerun()


def show_report() -> None:
    """The last upload's outcome, shown once: a later run clears a stale "added" banner."""
    report = DocsState().take("upload_report")
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
            plain("; ".join(parts)) + f" ({report['seconds']:.1f} s)",
            icon=":material/check_circle:",
        )
    if report["seconds"] is not None:  # the converter's notes of the files it added
        for note in report.get("converted", []):
            st.info(plain(note), icon=":material/info:")
    for note in report.get("notes", []):
        st.warning(plain(note))
    for name, reason in report["rejected"]:
        reason = reason.removeprefix(f"{name}: ")  # the engine's message starts with the name
        st.error(f"**{plain(name)}** was not added: {plain(reason)}", icon=":material/block:")


def upload_limits(app_limit: int, server_mb: int) -> tuple[int, int]:
    """(the per-file limit users are told, in bytes; the uploader's own limit, in MB).

    The uploader's limit is the server's (`server.maxUploadSize`), kept above the app's: a
    file over the app's limit still reaches the app and gets a message naming it and the
    limit, where the browser's own refusal is only a red mark on the file's chip. An app
    limit above the uploader's cannot be honoured, so the smaller one is the one users are
    told, and `ingest` enforces exactly that one. The uploader's MB is read as `config.MB`
    (10^6 bytes: what Linux and macOS browsers refuse above; Windows browsers and the
    server allow 2^20, more), so a file within the stated limit is never refused anywhere.
    """
    return min(app_limit, server_mb * MB), server_mb


def uploader() -> None:
    docs = DocsState()
    st.subheader("Add documents to your workspace")
    limit, uploader_mb = upload_limits(max_file_bytes(), int(st.get_option("server.maxUploadSize")))
    st.caption(
        "Only you see this workspace: it belongs to this browser session (saved on the server "
        "under a random id). PDF, DOCX, HTML, Markdown or plain text, up to "
        f"{limit / MB:g} MB a file. "
        "Markdown headings (#, ##, …) become the tree; for PDF, DOCX and HTML the tree is "
        "inferred and shown for correction before indexing. A text with no headings is cut "
        "into sections where the topic shifts, each named by its first line and marked "
        "inferred."
    )
    # The drop zone's own "N MB per file" names the uploader's cap, not the app's limit (the
    # label says that one): hidden, so the page states one limit.
    st.html(f"<style>{HIDE_CAP_CSS}</style>")
    # No `type=` filter: the component would refuse a file with its reason hidden in a
    # tooltip; here every refusal is written out below the drop zone.
    # The drop zone itself shows only an Upload button: its "Drag and drop files here" appears
    # only while a file is dragged over it, so the label says a drop is welcome.
    files = st.file_uploader(
        f"{DROP_HINT} {', '.join(SUFFIXES)} files (up to {limit / MB:g} MB each)",
        accept_multiple_files=True,
        key=f"uploader_{docs.uploader_round}",
        help=f"A file over {limit / MB:g} MB is refused with a message below; one over "
        f"{uploader_mb} MB never leaves the browser (a red mark on its name).",
        max_upload_size=uploader_mb,
    )
    if files:
        try:  # before any file is read: a huge drop is refused as a whole
            check_drop(len(files), WorkspaceLimits.from_env())
        except (WorkspaceLimitError, ValueError) as exc:
            show_error(exc, "Nothing was added; your workspace is unchanged.")
        else:
            ingest([(f.name, f.getvalue()) for f in files], limit)
    show_report()
    review()
