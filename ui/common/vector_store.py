"""The workspace's vector store: in process (FAISS + BM25) or a Milvus collection.

Documents draws the switch (`vector_store_panel`); Ask says which one serves the open corpus
(`served_caption`). Applying Milvus pushes the workspace index (a progress bar; "unchanged"
when the collection already serves it), then attaches it, so every chunk search of Ask and
Compare runs on the engine. The URI is typed in a browser: bounded, a file only inside the
app's data folder, a server only over http(s); every refusal is a message, and whatever
served the index before keeps serving it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import streamlit as st

from treerag_core import (
    CorpusIndex,
    attach_milvus,
    detach_store,
    push_to_milvus,
    store_serving,
)
from treerag_core.base.config import data_dir, env_positive
from treerag_core.base.errors import TreeRAGError, UnsafePathError
from treerag_core.base.names import DEFAULT_COLLECTION
from treerag_core.base.safepaths import resolve_inside
from ui.common.corpora import UPLOADS
from ui.common.resources import Corpus
from ui.common.session import AskState, VectorStoreState
from ui.common.text_safety import code, plain, show_error

PROCESS, MILVUS = "process", "milvus"
KINDS = {PROCESS: "In process (FAISS + BM25)", MILVUS: "Milvus"}
KEEP = "session"  # the fields survive a visit to another page
MAX_URI_CHARS = 300
MAX_COLLECTION_CHARS = 100
# Every Milvus Lite file is one engine process of ours for as long as the server runs: a
# browser may start this many, then reuse one (a server URI has no such cost).
MAX_LITE_FILES = 4
TIMEOUT_ENV = "TREERAG_MILVUS_TIMEOUT"  # seconds to connect (default 10)
SERVERS = ("http://", "https://")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
KIND_KEY, URI_KEY, COLLECTION_KEY, REPLACE_KEY = "vs_kind", "vs_uri", "vs_collection", "vs_replace"


def default_uri() -> str:
    """MILVUS_URI when the operator set a server there; else a Lite file in the data folder."""
    env = os.environ.get("MILVUS_URI", "").strip()
    return env if env.lower().startswith(SERVERS) else "milvus.db"


def checked_uri(text: str) -> tuple[str, str]:
    """(the URI to connect to, the URI as shown) for what the user typed.

    A server is http(s)://host:port, accepted as typed; anything else is a Milvus Lite file,
    relative to the data folder, that must resolve inside it (a browser creates no file
    elsewhere).

    Raises:
        ValueError: empty, too long, control characters, or another scheme.
        UnsafePathError: a file outside the data folder.
    """
    shown = text.strip()
    if not shown:
        raise ValueError("Give a Milvus URI: a .db file in the data folder, or http://host:19530")
    if len(shown) > MAX_URI_CHARS:
        raise ValueError(
            f"The Milvus URI has {len(shown):,} characters; at most {MAX_URI_CHARS} are accepted"
        )
    if _CONTROL.search(shown):
        raise ValueError("The Milvus URI holds a control character (a line break, a tab …)")
    if shown.lower().startswith(SERVERS):
        return shown, shown
    if _SCHEME.match(shown):  # unix:, tcp://, grpc:// ...: not from a browser
        raise ValueError(
            f"{shown!r}: a Milvus server is reached over http:// or https:// here; "
            "anything else is read as a file in the data folder"
        )
    root = Path(data_dir())
    path = Path(shown)
    try:
        resolved = resolve_inside(path if path.is_absolute() else root / path, [root])
    except UnsafePathError:  # its words are for reading a file; say what holds here
        raise UnsafePathError(
            f"{shown!r}: a Milvus Lite file must lie inside the app's data folder (a name "
            "such as milvus.db is read there); a server is http://host:19530"
        ) from None
    if resolved.suffix != ".db":
        raise ValueError(f"{shown!r}: a Milvus Lite file ends in .db (e.g. milvus.db)")
    return str(resolved), shown


def checked_collection(text: str) -> str:
    """The collection name typed, bounded (Milvus' own rule is checked by the engine)."""
    name = text.strip() or DEFAULT_COLLECTION
    if len(name) > MAX_COLLECTION_CHARS:
        raise ValueError(
            f"The collection name has {len(name):,} characters; at most "
            f"{MAX_COLLECTION_CHARS} are accepted"
        )
    return name


@st.cache_resource(show_spinner=False)
def _lite_files() -> set[str]:
    """The Milvus Lite files this server process has opened for browsers."""
    return set()


def _check_lite_cap(uri: str) -> None:
    """Refuse a new Lite file once MAX_LITE_FILES run (the engine's own checks come first:
    a file it refuses starts no engine and is not counted)."""
    files = _lite_files()
    if not uri.lower().startswith(SERVERS) and uri not in files and len(files) >= MAX_LITE_FILES:
        raise ValueError(
            f"This server already runs {MAX_LITE_FILES} Milvus Lite files (each one an engine "
            "process): use one that is open already, or a Milvus server (http://host:19530)"
        )


def serving_words(index: CorpusIndex) -> str:
    """What serves the index's searches now, as a phrase."""
    serving = store_serving(index)
    if serving is None or serving["store"] != MILVUS:
        return "searches run in process (FAISS + BM25)"
    return f"searches are served by Milvus at {code(_shown(serving))}"


def _shown(serving: dict[str, str]) -> str:
    """The URI as the user typed it (a Lite file: relative to the data folder, no machine
    path) when it is this session's choice; else the store's own."""
    chosen = VectorStoreState().milvus
    if chosen is not None and chosen["uri"] == serving["uri"]:
        return chosen["shown"]
    return serving["uri"]


def _push_and_attach(index: CorpusIndex, uri: str, collection: str, replace: bool) -> dict:
    """Push (a progress bar while the chunks go in), then attach; raises on any refusal,
    leaving whatever served the index before in place."""
    _check_lite_cap(uri)
    timeout = env_positive(TIMEOUT_ENV, 10.0, "seconds")
    bar = st.progress(0.0, text="Milvus: connecting and checking the collection…")

    def update(done: int, total: int) -> None:
        share = done / total if total else 1.0
        bar.progress(min(1.0, share), text=f"Milvus: {done:,} / {total:,} chunks pushed")

    try:
        pushed = push_to_milvus(
            index, uri, collection, replace=replace, progress=update, timeout=timeout
        )
        attach_milvus(index, uri, collection, timeout=timeout)
    finally:
        bar.empty()
    if not uri.lower().startswith(SERVERS):
        _lite_files().add(uri)
    return pushed


def _next_step(exc: BaseException) -> str:
    """The explorer's way past a refusal whose message names the CLI's flags."""
    if "--replace" in str(exc):
        return (
            "Here: name another collection, or tick “Replace the collection if it holds "
            "another index”. "
        )
    return ""


def _apply_milvus(index: CorpusIndex, uri_text: str, collection_text: str, replace: bool) -> None:
    vs = VectorStoreState()
    try:
        uri, shown = checked_uri(uri_text)
        collection = checked_collection(collection_text)
        owned = (uri, collection) in vs.pushed
        pushed = _push_and_attach(index, uri, collection, replace or owned)
    except (TreeRAGError, ValueError, OSError) as exc:
        show_error(exc, _next_step(exc) + f"Nothing changed: {serving_words(index)}.")
        return
    if pushed["status"] != "unchanged":
        vs.pushed = {*vs.pushed, (uri, collection)}
    vs.milvus = {"uri": uri, "shown": shown, "collection": collection}
    AskState().compare = None  # it ran on the store before: Compare runs again on this one
    what = {
        "built": f"pushed ({pushed['chunks']:,} chunks)",
        "rebuilt": f"pushed again ({pushed['chunks']:,} chunks)",
        "unchanged": "already held this index (nothing pushed)",
    }.get(pushed["status"], pushed["status"])
    note = f" {pushed['note']}." if pushed.get("note") else ""
    vs.notice = (
        f"Collection {code(collection)} at {code(shown)} {what}.{plain(note)} Ask and Compare "
        "are now served by Milvus."
    )
    st.rerun()


def _apply_process(index: CorpusIndex) -> None:
    vs = VectorStoreState()
    detach_store(index)
    vs.milvus = None
    AskState().compare = None
    vs.notice = "Searches run in process again (FAISS + BM25); the Milvus collection is kept."
    st.rerun()


def _keep_serving(index: CorpusIndex) -> None:
    """Milvus is chosen but this index is not attached (it was rebuilt, documents were added
    or removed): push it again, replacing the collection only if this session wrote it."""
    vs = VectorStoreState()
    chosen = vs.milvus
    serving = store_serving(index)
    if chosen is None or (serving is not None and serving["uri"] == chosen["uri"]):
        return
    uri, collection = chosen["uri"], chosen["collection"]
    st.caption("Your index changed: pushing it to Milvus again.")
    try:
        pushed = _push_and_attach(index, uri, collection, (uri, collection) in vs.pushed)
    except (TreeRAGError, ValueError, OSError) as exc:
        vs.milvus = None  # said once, not retried on every rerun
        show_error(exc, "Your changed index was not pushed: searches run in process.")
        return
    if pushed["status"] != "unchanged":
        vs.pushed = {*vs.pushed, (uri, collection)}


def vector_store_panel(index: CorpusIndex) -> None:
    """The switch (Documents, under the workspace): in process or Milvus, applied on a click."""
    ss = st.session_state
    ss.setdefault(KIND_KEY, PROCESS)
    ss.setdefault(URI_KEY, default_uri())
    ss.setdefault(COLLECTION_KEY, DEFAULT_COLLECTION)
    _keep_serving(index)
    vs = VectorStoreState()
    notice = vs.take("notice")
    now = "Milvus" if vs.milvus is not None else "in process"
    with st.expander(f"Vector store: {now}", expanded=notice is not None):
        if notice:
            st.success(notice, icon=":material/check_circle:")
        st.caption(
            f"For your workspace (My uploads): now {serving_words(index)}. The sample "
            "documents are shared by every session and stay in process."
        )
        kind = st.radio(
            "Vector store", list(KINDS), key=KIND_KEY, format_func=KINDS.get,
            horizontal=True, persist_state=KEEP,
        )  # fmt: skip
        if kind == MILVUS:
            c1, c2 = st.columns([3, 1])
            c1.text_input(
                "Milvus URI",
                key=URI_KEY,
                persist_state=KEEP,
                help="A file in the app's data folder (Milvus Lite, created if missing, e.g. "
                "milvus.db), or a server: http://host:19530 (a token, if it needs one: "
                f"MILVUS_TOKEN where this app runs). At most {MAX_URI_CHARS} characters.",
            )
            c2.text_input("Collection", key=COLLECTION_KEY, persist_state=KEEP)
            st.checkbox(
                "Replace the collection if it holds another index (what it holds is deleted)",
                key=REPLACE_KEY,
            )
        if st.button("Apply", key="vs_apply", icon=":material/check:"):
            if kind == MILVUS:
                _apply_milvus(
                    index, str(ss[URI_KEY]), str(ss[COLLECTION_KEY]), bool(ss.get(REPLACE_KEY))
                )
            else:
                _apply_process(index)


def served_caption(corpus: Corpus) -> None:
    """Ask: a small line when the corpus' searches are served by Milvus, or when Milvus was
    chosen but the workspace index is served in process (never a false claim)."""
    serving = store_serving(corpus.index)
    if serving is not None and serving["store"] == MILVUS:
        st.caption(
            f"Served by Milvus at {code(_shown(serving))} (collection "
            f"{code(serving['collection'])})"
        )
    elif corpus.kind == UPLOADS and VectorStoreState().milvus is not None:
        st.caption(
            "Milvus is chosen, but this index is searched in process: open Documents to push "
            "it again."
        )
