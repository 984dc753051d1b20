"""Process-wide resources (st.cache_resource): embedders, the sample corpus, reranker, audit log."""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from treerag_core import (
    EMBEDDER_ENV,
    AuditLog,
    CorpusIndex,
    Embedder,
    Engine,
    index_embedder,
    index_folder,
)
from treerag_core.base.config import IndexSettings, data_dir
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.names import EmbedderName
from ui.common.corpora import SAMPLES, corpus_key, corpus_label
from ui.common.examples import EXAMPLES

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO / "sample_docs"
EMBEDDER_CHOICES = tuple(EmbedderName.values())


@dataclass(frozen=True, eq=False)
class Corpus:
    """An index the Ask page can query; `key` changes whenever its node ids may change."""

    key: str
    kind: str  # samples | uploads | eval
    label: str
    engine: Engine  # without an API key: the key is per session, see `engine_for`

    @property
    def index(self) -> CorpusIndex:
        return self.engine.index


def default_embedder() -> str:
    """The embedder for new indexes: TREERAG_EMBEDDER or the engine's default (multilingual)."""
    return os.environ.get(EMBEDDER_ENV, "").strip() or IndexSettings().embedder


@st.cache_resource(show_spinner="Loading the embedding model…")
def cached_embedder(name: str) -> Embedder:
    """One embedder per name per process (the model is thread-safe for reads).

    Every name the explorer loads comes through here, the names its saved indexes (samples,
    workspaces, eval caches) hold included, so a local `st:` model folder loads only when
    the operator named it in TREERAG_EMBEDDER (`index_embedder`); the browser names none.
    """
    return index_embedder(name)


def sample_paths() -> list[Path]:
    """The sample documents (sample_docs/*.md but its README), those with examples first."""
    paths = [p for p in SAMPLE_DIR.glob("*.md") if p.is_file() and p.stem.lower() != "readme"]
    known = list(EXAMPLES)
    rank = {name: i for i, name in enumerate(known)}
    return sorted(paths, key=lambda p: (rank.get(p.name, len(known)), p.name))


def _fingerprint(paths: Sequence[Path]) -> str:
    """Changes when a sample file is added, removed or edited (cheap: no file is read)."""
    parts = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@st.cache_resource(show_spinner="Indexing the sample documents (once per server process)…")
def _sample_corpus(embedder_name: str, fingerprint: str) -> Corpus:
    embedder = cached_embedder(embedder_name)
    # The API's index build, as the CLI's `index`: a previous process's index in the folder
    # lends its vectors (no model call); a read-only data dir only costs a re-embed next time.
    index = index_folder(
        sample_paths(),
        Path(data_dir()) / "samples" / embedder_name,
        IndexSettings(embedder=embedder_name),
        embedder=embedder,
        must_save=False,
    ).index
    key = corpus_key(SAMPLES, embedder_name, fingerprint)
    return Corpus(key, SAMPLES, corpus_label(SAMPLES), Engine(index=index, embedder=embedder))


def sample_corpus() -> Corpus | None:
    """The bundled samples, indexed with the default embedder; None when there are none."""
    paths = sample_paths()
    if not paths:
        return None
    return _sample_corpus(default_embedder(), _fingerprint(paths))


@st.cache_resource(show_spinner="Loading the cross-encoder (once per server process)…")
def warm_reranker(model: str) -> bool:
    """Load and run the reranker once, so no query's rerank time includes the model load.

    Returns False when it cannot load; the query then reports that as a fallback itself.
    """
    from treerag_core import get_reranker

    try:
        get_reranker(model).score("warm up", ["warm up"])
    except (TreeRAGError, OSError, RuntimeError, ValueError):
        return False  # the engine turns the same failure into a visible rerank fallback
    return True


@st.cache_resource(show_spinner=False)
def _audit_log(path: str) -> AuditLog:
    return AuditLog(path)


def audit_log() -> AuditLog:
    return _audit_log(str(Path(data_dir()) / "audit.sqlite"))


def engine_for(corpus: Corpus, api_key: str | None) -> Engine:
    """The corpus engine with this session's key; the query-vector cache stays shared."""
    return replace(corpus.engine, api_key=api_key)


_FROZEN_AT = [0]  # len(sys.modules) at the last freeze
_FREEZING = threading.Lock()


def freeze_long_lived() -> None:
    """Hide what the process holds for good (the imported modules' functions, classes and
    tables, the cached models and indexes) from the garbage collector, again whenever a run
    has imported more modules since the last time.

    Why: Streamlit collects every generation after each script run (`runner.postScriptGC`),
    holding the GIL while the run's last messages wait to be sent; over the ~150,000 objects
    of the imported libraries that took 0.1-0.16 s of every slider move on an idle machine
    (0.4-1.2 s under load), and after a freeze well under 10 ms. Frozen objects are still freed
    by reference counting; only a cycle among the few session objects alive at a freeze is
    never collected (at most once per import wave: a page's first visit)."""
    if len(sys.modules) <= _FROZEN_AT[0] or not _FREEZING.acquire(blocking=False):
        return
    try:
        gc.collect()  # the garbage of the runs so far is freed, not frozen
        gc.freeze()
        _FROZEN_AT[0] = len(sys.modules)
    finally:
        _FREEZING.release()
