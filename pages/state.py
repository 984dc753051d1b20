"""Session, workspace and engine state of the explorer; models and indexes load once per process."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import streamlit as st

from treerag_core.audit import AuditLog
from treerag_core.config import IndexSettings, data_dir
from treerag_core.embedders import Embedder, get_embedder
from treerag_core.errors import IndexFormatError
from treerag_core.index import CorpusIndex, ProgressFn, SourceDocument, build_index
from treerag_core.names import EmbedderName, Fusion, Locator
from treerag_core.pipeline import Engine, rerun
from treerag_core.settings import QuerySettings, anthropic_api_key
from treerag_core.store import load_index, save_index
from treerag_core.strategies import strategy_names
from treerag_core.types import LocatedLeaf, LocateResult, Trace

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "sample_docs"
EMBEDDER_ENV = "TREERAG_EMBEDDER"  # tests set "hashing" for speed; the app default is real
EMBEDDER_CHOICES = EmbedderName.values()
SAMPLES, UPLOADS = "samples", "uploads"
EVAL = "eval"  # an eval set's index, opened from the Evaluate page (session key eval_corpus)


def runnable_strategies() -> list[str]:
    """The registry's strategies a user can run (oracle needs gold: evaluation only).

    Read at render time, so a plug-in registered after import shows up too."""
    return strategy_names(runnable=True)


LOCATORS = Locator.values()
FUSIONS = Fusion.values()

# Sidebar widget key -> the query setting it controls (a dotted QuerySettings path).
SETTING_WIDGETS: dict[str, str] = {
    "qs_use_llm": "llm.enabled",
    "qs_locate_model": "llm.locate_model",
    "qs_answer_model": "llm.answer_model",
    "qs_locator": "locate.locator",
    "qs_strategy": "strategy",
    "qs_max_leaves": "locate.max_leaves",
    "qs_fusion": "retrieve.fusion",
    "qs_dense_weight": "retrieve.dense_weight",
    "qs_rrf_k": "retrieve.rrf_k",
    "qs_top_k_per_leaf": "retrieve.top_k_per_leaf",
    "qs_final_top_k": "answer.final_top_k",
    "qs_rerank": "rerank.enabled",
    "qs_rerank_chinese": "rerank.chinese",
}
# Controls that wait for an explicit Ask (a new step 1 may cost an LLM call); every other
# control reruns at once, and the engine decides whether the stored step 1 still holds.
ASK_SETTINGS = (
    "strategy",
    "locate.locator",
    "locate.max_leaves",
    "llm.enabled",
    "llm.locate_model",
)


def _setting(settings: QuerySettings | dict[str, Any], path: str) -> Any:
    data = settings.to_dict() if isinstance(settings, QuerySettings) else settings
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


# Sidebar widgets (key -> default), created with persist_state="session" so leaving the Ask
# page does not reset them; defaults go into session state once, so widgets pass no value=.
WIDGET_DEFAULTS: dict[str, Any] = {
    "qs_corpus": SAMPLES,
    **{key: _setting(QuerySettings(), path) for key, path in SETTING_WIDGETS.items()},
    "qs_scope_samples": [],
    "qs_scope_uploads": [],
    "question": "",
    "api_key": "",  # session memory only: never written to disk, the audit log or a trace
}

# Example questions for the bundled samples (file name -> questions), checked to find their
# section across the whole sample corpus with the local locator (no LLM).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "test_paper.md": (
        "AdaRouter使用什么算法？",
        "AdaRouter在EUR/USD上的准确率是多少？",
        "为什么AdaRouter比baseline表现好？",
        "训练用了多少个epoch？",
        "What algorithm does the router use to pick a model?",
        "How many epochs was the model trained for?",
    ),
    "zh_sample.md": (
        "X3 的额定载重是多少？",
        "每个充电桩可以服务几台机器人？",
        "导航类故障怎么排除？",
    ),
    "1908.10461.md": (
        "Which cross-lingual features are used?",
        "Does the dependency parse help zero-shot parsing?",
        "What datasets are the parsers evaluated on?",
    ),
    "劳动合同法(2012-12-28).md": (
        "试用期最长可以约定多久？",
        "用人单位什么情况下需要支付经济补偿？",
        "劳务派遣有哪些规定？",
    ),
}


# ---- process-wide resources (st.cache_resource: built once, shared by all sessions) ----------


def default_embedder() -> str:
    """The embedder for new indexes: TREERAG_EMBEDDER or the engine's default (multilingual)."""
    return os.environ.get(EMBEDDER_ENV, "").strip() or IndexSettings().embedder


@st.cache_resource(show_spinner="Loading the embedding model…")
def cached_embedder(name: str) -> Embedder:
    """One embedder per name per process (the model is thread-safe for reads)."""
    return get_embedder(name)


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


@dataclass(frozen=True, eq=False)
class Corpus:
    """An index the Ask page can query; `key` changes whenever its node ids may change."""

    key: str
    kind: str  # samples | uploads
    label: str
    engine: Engine  # without an API key: the key is per session, see `engine_for`

    @property
    def index(self) -> CorpusIndex:
        return self.engine.index


@st.cache_resource(show_spinner="Indexing the sample documents (once per server process)…")
def _sample_corpus(embedder_name: str, fingerprint: str) -> Corpus:
    from treerag_core.ingest import sources_from_paths

    settings = IndexSettings(embedder=embedder_name)
    sources, _ = sources_from_paths(sample_paths(), settings.max_file_bytes)
    embedder = cached_embedder(embedder_name)
    folder = Path(data_dir()) / "samples" / embedder_name
    previous = None
    try:  # a previous process's index lets unchanged documents skip the model
        previous = load_index(folder, expect_embedder=embedder_name)
    except IndexFormatError:
        previous = None
    index = build_index(sources, settings, embedder, previous=previous)
    with contextlib.suppress(OSError):  # a read-only data dir only costs a re-embed next time
        save_index(index, folder)
    key = f"samples:{embedder_name}:{fingerprint}"
    return Corpus(key, SAMPLES, "Sample documents", Engine(index=index, embedder=embedder))


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
    from treerag_core.rerank import get_reranker

    try:
        get_reranker(model).score("warm up", ["warm up"])
    except Exception:  # the engine turns the same failure into a visible rerank fallback
        return False
    return True


@st.cache_resource(show_spinner=False)
def _audit_log(path: str) -> AuditLog:
    return AuditLog(path)


def audit_log() -> AuditLog:
    return _audit_log(str(Path(data_dir()) / "audit.sqlite"))


# ---- per-session state -------------------------------------------------------------------


def require_app(page: str) -> None:
    """Run a page only under app.py's navigation.

    While no session has run app.py yet, Streamlit still treats pages/ as a v1 multipage
    folder: a first request for /documents runs pages/documents.py alone (no session setup,
    and state.py and widgets.py listed as pages). Such a run is sent through app.py, which
    then opens the page asked for.
    """
    if "workspace_id" not in st.session_state:
        st.session_state.open_page = page
        st.switch_page("app.py")


def init_session() -> None:
    """Create this browser session's keys once (workspace id, history, selections)."""
    ss = st.session_state
    if "workspace_id" not in ss:
        ss.workspace_id = secrets.token_hex(16)  # unguessable: folders never collide or leak
        ss.ws_index = None  # CorpusIndex of this session's uploads
        ss.ws_version = 0
        ss.ws_engine = None
        ss.history = []  # [{id, corpus, question, created_at, ...}] of this session only
        ss.trace = None
        ss.trace_corpus = None
        ss.trace_scope = None
        ss.trace_id = None
        ss.inspect = None  # node id open in the inspector
        ss.expanded = set()
        ss.upload_report = None
        ss.uploader_round = 0
        ss.stale_answer = None
        ss.rerun_ms = None
    for key, value in WIDGET_DEFAULTS.items():
        ss.setdefault(key, value)


def workspace_folder() -> Path:
    return Path(data_dir()) / "workspaces" / st.session_state.workspace_id


def workspace_corpus() -> Corpus | None:
    ss = st.session_state
    if ss.ws_index is None:
        return None
    if ss.ws_engine is None or ss.ws_engine.index is not ss.ws_index:
        embedder = cached_embedder(ss.ws_index.embedder_name)
        ss.ws_engine = Engine(index=ss.ws_index, embedder=embedder)
    key = f"ws:{ss.workspace_id}:{ss.ws_version}"
    return Corpus(key, UPLOADS, "My uploads", ss.ws_engine)


def current_corpus(kind: str) -> Corpus | None:
    if kind == EVAL:
        return st.session_state.get("eval_corpus")
    return workspace_corpus() if kind == UPLOADS else sample_corpus()


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
    ss = st.session_state
    folder = workspace_folder() / "index"
    if not sources:
        ss.ws_index, ss.ws_engine = None, None
        ss.ws_version += 1
        if folder.exists():
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        return None
    embedder = cached_embedder(settings.embedder)
    index = build_index(sources, settings, embedder, previous=ss.ws_index, progress=progress)
    save_index(index, folder)
    ss.ws_index, ss.ws_engine = index, None
    ss.ws_version += 1
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
    index = st.session_state.ws_index
    return index.settings if index is not None else IndexSettings(embedder=default_embedder())


# ---- queries -----------------------------------------------------------------------------


def session_api_key() -> str | None:
    """The key typed in this session (memory only), else the server's ANTHROPIC_API_KEY."""
    typed = str(st.session_state.get("api_key", "") or "").strip()
    return typed or anthropic_api_key()


def engine_for(corpus: Corpus, api_key: str | None) -> Engine:
    """The corpus engine with this session's key; the query-vector cache stays shared."""
    return replace(corpus.engine, api_key=api_key)


def query_settings() -> QuerySettings:
    ss = st.session_state
    settings = QuerySettings()
    for key, path in SETTING_WIDGETS.items():
        settings = settings.set(path, ss[key])
    return settings


def apply_settings(settings: dict[str, Any]) -> None:
    """Put a trace's settings back into the sidebar widgets (reopening from History)."""
    for key, path in SETTING_WIDGETS.items():
        value = _setting(settings, path)
        if value is not None:
            st.session_state[key] = value


def changed_settings(trace: Trace, settings: QuerySettings, paths: Sequence[str]) -> list[str]:
    """The settings among `paths` whose value differs from what the trace ran with."""
    now = settings.to_dict()
    return [
        p
        for p in paths
        if _setting(trace.settings, p) is not None
        and _setting(trace.settings, p) != _setting(now, p)
    ]


def changed_controls(trace: Trace, settings: QuerySettings) -> list[str]:
    """Rerun-at-once controls whose value differs from the trace's."""
    rerun_paths = [p for p in SETTING_WIDGETS.values() if p not in ASK_SETTINGS]
    return changed_settings(trace, settings, rerun_paths)


def timed_rerun(
    engine: Engine,
    trace: Trace,
    settings: QuerySettings,
    scope: Sequence[str] | None,
    synthesize: bool,
) -> tuple[Trace, float]:
    """Steps 2-3 again from the stored step 1 (no step-1 call); returns the seconds too.

    The sidebar's scope wins over the trace's (None: every document), so flat strategies
    search what the user now has in scope.
    """
    started = time.perf_counter()
    scoped = dataclasses.replace(trace, scope=list(scope) if scope is not None else None)
    new = rerun(engine, scoped, settings, synthesize=synthesize)
    return new, time.perf_counter() - started


def override_locate(
    index: CorpusIndex, previous: LocateResult, question: str, leaf_ids: Sequence[str]
) -> LocateResult:
    """Step 1 with the user's leaf set, keeping the sub-queries of leaves that stay picked.

    Raises ValueError for an unknown or non-leaf id, or an empty set.
    """
    old = {leaf.node_id: leaf for leaf in previous.leaves}
    leaves: list[LocatedLeaf] = []
    for leaf_id in dict.fromkeys(leaf_ids):
        node = index.nodes.get(leaf_id)
        if node is None or not node.is_leaf:
            raise ValueError(f"{leaf_id!r} is not a leaf of this index")
        kept = old.get(leaf_id)
        leaves.append(kept or LocatedLeaf(leaf_id, node.heading_path, question, None, "manual"))
    if not leaves:
        raise ValueError("pick at least one leaf")
    added = [i for i in leaf_ids if i not in old]
    removed = [i for i in old if i not in leaf_ids]
    change = "; ".join(
        part
        for part in (
            f"added {', '.join(added)}" if added else "",
            f"removed {', '.join(removed)}" if removed else "",
        )
        if part
    )
    thinking = (previous.thinking + "\n\n" if previous.thinking else "") + (
        f"Manual override ({change or 'no change'}): steps 2-3 rerun on these leaves; "
        "no new step-1 call."
    )
    locator = (
        previous.locator if previous.locator.endswith("+manual") else f"{previous.locator}+manual"
    )
    # usage stays zero: the step-1 LLM call (if any) was paid and logged by the earlier run.
    return LocateResult(tuple(leaves), thinking, locator, notes=previous.notes)


def record(trace: Trace, corpus_key: str, scope: Sequence[str] | None) -> int | None:
    """Log a finished query in the audit log and in this session's history."""
    try:
        query_id = audit_log().record(trace)
    except (sqlite3.Error, OSError) as exc:
        st.warning(f"The query ran but could not be written to the audit log ({exc}).")
        return None
    st.session_state.history.append(
        {
            "id": query_id,
            "corpus": corpus_key,
            "scope": list(scope) if scope else None,
            "question": trace.question,
            "created_at": trace.created_at,
            "strategy": trace.strategy,
            "locator": trace.locate.locator if trace.locate else "",
        }
    )
    return query_id


def set_trace(
    trace: Trace | None, corpus_key: str | None, scope: Sequence[str] | None, query_id: int | None
) -> None:
    ss = st.session_state
    ss.trace, ss.trace_corpus, ss.trace_id = trace, corpus_key, query_id
    ss.trace_scope = tuple(scope) if scope else None
    ss.stale_answer = None


def open_from_history(query_id: int) -> Trace:
    """Load a logged trace into the Ask view, restoring its corpus choice and settings."""
    entry = next(e for e in st.session_state.history if e["id"] == query_id)
    trace = audit_log().load(query_id)
    set_trace(trace, entry["corpus"], entry.get("scope"), query_id)
    apply_settings(trace.settings)
    kinds = {"ws:": UPLOADS, f"{EVAL}:": EVAL}
    st.session_state.qs_corpus = next(
        (k for p, k in kinds.items() if entry["corpus"].startswith(p)), SAMPLES
    )
    scope_key = f"qs_scope_{st.session_state.qs_corpus}"
    st.session_state[scope_key] = list(entry.get("scope") or [])
    st.session_state.question = trace.question
    st.session_state.inspect = None
    return trace


def open_trace(
    trace: Trace, corpus: Corpus, scope: Sequence[str] | None, inspect: str | None = None
) -> None:
    """Show a trace made elsewhere (the Evaluate page) on the Ask view, against `corpus`.

    The corpus (an eval set's index) is kept in session state, so the Ask page can offer it
    as a third corpus beside the samples and the uploads.
    """
    ss = st.session_state
    ss.eval_corpus = corpus
    set_trace(trace, corpus.key, scope, None)
    apply_settings(trace.settings)
    ss.qs_corpus = corpus.kind
    ss[f"qs_scope_{corpus.kind}"] = list(scope or [])
    ss.question = trace.question
    ss.inspect = inspect
    ss.expanded = set()
    ss.trace_origin = "eval"


def examples_for(doc_ids: Sequence[str], per_doc: int = 6) -> list[tuple[str, str]]:
    """(document, question) pairs for the sample documents among `doc_ids`, seed's first."""
    wanted = set(doc_ids)
    return [(doc, q) for doc, qs in EXAMPLES.items() if doc in wanted for q in qs[:per_doc]]


def iter_cited_nodes(trace: Trace) -> Iterator[str]:
    """Nodes holding cited evidence: of a supported citation's nodes, those that were retrieved.

    A heading path can name several nodes ("Abstract" in two papers); only the ones whose
    chunks were in the evidence are marked.
    """
    sources = {hit.chunk.source_node_id for hit in trace.reranked}
    for citation in trace.citations:
        if citation.supported:
            yield from (i for i in citation.node_ids if i in sources)
