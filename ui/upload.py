"""Uploads into the workspace: an inline reason for every refusal, progress, the report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

import streamlit as st

from treerag_core.config import IndexSettings
from treerag_core.errors import TreeRAGError
from treerag_core.index import SourceDocument
from treerag_core.ingest import sources_from_uploads
from ui.resources import UPLOADS
from ui.session import DocsState, WorkspaceState
from ui.text_safety import plain, show_error
from ui.workspace import merge_sources, set_workspace, sources_of, workspace_settings

SUFFIXES = (".md", ".markdown", ".txt")
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


def build(sources: Sequence[SourceDocument], settings: IndexSettings, verb: str) -> float | None:
    """(Re)build the workspace, showing progress; returns seconds, or None after an error."""
    bar, update = _progress_bar()
    started = time.perf_counter()
    try:
        set_workspace(sources, settings, update)
    except (TreeRAGError, OSError, ValueError) as exc:
        bar.empty()
        show_error(exc, f"Nothing was {verb}; your workspace is unchanged.")
        return None
    bar.empty()
    return time.perf_counter() - started


def ingest(uploads: Sequence[tuple[str, bytes]]) -> None:
    """Add the files (a same-named document is replaced); every refusal keeps its reason."""
    docs = DocsState()
    settings = workspace_settings()
    wrong = [(n, b) for n, b in uploads if PurePath(n).suffix.lower() not in SUFFIXES]
    usable = [(n, b) for n, b in uploads if (n, b) not in wrong]
    sources, rejected = sources_from_uploads(usable, settings.max_file_bytes)
    report: dict[str, Any] = {
        "added": [s.name for s in sources],
        "replaced": [],
        "rejected": [
            (n, f"only Markdown or plain text ({', '.join(SUFFIXES)}) can be added")
            for n, _ in wrong
        ]
        + [(r.name, r.reason) for r in rejected],
        "seconds": None,
        "failed": False,
    }
    if sources:
        merged, replaced = merge_sources(sources_of(WorkspaceState().index), sources)
        report["replaced"] = replaced
        seconds = build(merged, settings, "added")
        report["seconds"] = seconds
        report["failed"] = seconds is None
        if seconds is not None:
            docs.corpus, docs.pick = UPLOADS, sources[0].name
            docs.inspect = None
    docs.upload_report = report
    docs.uploader_round += 1  # a fresh uploader: the processed files leave the drop zone
    if not report["failed"]:
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
    for name, reason in report["rejected"]:
        reason = reason.removeprefix(f"{name}: ")  # the engine's message starts with the name
        st.error(f"**{plain(name)}** was not added: {plain(reason)}", icon=":material/block:")


def uploader() -> None:
    docs = DocsState()
    st.subheader("Add documents to your workspace")
    st.caption(
        "Only you see this workspace: it belongs to this browser session (saved on the server "
        "under a random id). Markdown or plain text, up to 20 MB a file; headings (#, ##, …) "
        "become the tree."
    )
    # No `type=` filter: the component would refuse a file with its reason hidden in a
    # tooltip; here every refusal is written out below the drop zone.
    files = st.file_uploader(
        "Drop .md, .markdown or .txt files",
        accept_multiple_files=True,
        key=f"uploader_{docs.uploader_round}",
    )
    if files:
        ingest([(f.name, f.getvalue()) for f in files])
    show_report()
