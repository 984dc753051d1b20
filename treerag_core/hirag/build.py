"""Build the HiRAG artifacts for an index (graph, communities, reports, entity vectors), or
load them from the index folder; built once per index and cached."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treerag_core.errors import IndexFormatError
from treerag_core.hirag.communities import (
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_SEED,
    detect_communities,
)
from treerag_core.hirag.corpus_graph import Extractor, build_corpus_graph
from treerag_core.hirag.reports import CommunityReport, build_reports
from treerag_core.hirag.store import (
    BUILD_HINT,
    HiragIndex,
    has_hirag,
    load_hirag,
    load_partial_reports,
    partial_reports_path,
    save_hirag,
    save_partial_reports,
)
from treerag_core.text import tokenize

if TYPE_CHECKING:
    from treerag_core.embedders import Embedder
    from treerag_core.index import CorpusIndex

ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class HiragBuildSettings:
    """Index-time settings of the HiRAG artifacts; part of their fingerprint."""

    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE  # seed 002: 10
    seed: int = DEFAULT_SEED
    llm_reports: bool = False  # LLM community reports (needs a client), else extractive
    report_model: str = "claude-haiku-4-5"

    def __post_init__(self) -> None:
        if self.max_cluster_size < 2:
            raise ValueError(f"max_cluster_size must be >= 2, but got {self.max_cluster_size}")


def offline_extractor() -> Extractor:
    """The graph package's offline extractor (concepts + co-occurrence relations)."""
    try:
        from treerag_core.graph.extract import extract_offline
    except ImportError as exc:  # the graph package is a separate feature
        raise IndexFormatError(f"the entity extractor is not installed ({exc})") from exc
    return extract_offline


def fingerprint(index: CorpusIndex, settings: HiragBuildSettings, extractor: str) -> str:
    """What the artifacts were built from: documents, chunking, embedder and settings."""
    digest = hashlib.sha256()
    head = {
        "index": index.settings.to_dict(),
        "embedder": index.embedder_name,
        "hirag": asdict(settings),
        "extractor": extractor,
    }
    digest.update(json.dumps(head, sort_keys=True).encode())
    for doc in index.documents:
        digest.update(f"{doc.doc_id}\x1f{doc.sha256}\x1e".encode())
    digest.update(str(len(index.chunks)).encode())
    return digest.hexdigest()[:24]


def entity_text(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def build_hirag(
    index: CorpusIndex,
    embedder: Embedder,
    settings: HiragBuildSettings | None = None,
    *,
    extract: Extractor | None = None,
    extractor_name: str = "offline",
    client: Any = None,
    folder: str | None = None,
    report_cache: dict[str, CommunityReport] | None = None,
    progress: ProgressFn | None = None,
) -> HiragIndex:
    """Extract, merge, cluster, report and embed; times (and LLM tokens) go into `meta`.

    With `folder` (the index folder), LLM reports are checkpointed after each batch and an
    interrupted build resumes from the checkpoint.
    """
    settings = settings or HiragBuildSettings()
    notify = progress or (lambda stage, done, total: None)
    extract = extract or offline_extractor()
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    languages = {d.doc_id: d.language for d in index.documents}
    graph = build_corpus_graph(
        index.chunks,
        languages,
        extract,
        index.texts,
        progress=lambda done, total: notify("graph", done, total),
    )
    seconds["graph"] = time.perf_counter() - started
    t = time.perf_counter()
    communities = detect_communities(graph, settings.max_cluster_size, settings.seed)
    seconds["communities"] = time.perf_counter() - t
    t = time.perf_counter()
    use_llm = settings.llm_reports and client is not None
    checkpoint = dict(report_cache or {})
    if folder and use_llm:
        checkpoint.update(load_partial_reports(folder))
    built = build_reports(
        communities,
        graph,
        None,
        client=client if use_llm else None,
        model=settings.report_model,
        cache=checkpoint,
        on_batch=(lambda r: save_partial_reports(folder, r)) if folder and use_llm else None,
    )
    seconds["reports"] = time.perf_counter() - t
    t = time.perf_counter()
    texts = [entity_text(e.name, e.description) for e in graph.entities]
    if texts:
        vectors = embedder.embed(texts, progress=lambda d, n: notify("entities", d, n))
    else:
        vectors = np.zeros((0, embedder.dim), dtype=np.float32)
    tokens = [tokenize(text) for text in texts]
    seconds["entity_vectors"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started
    meta = {
        "fingerprint": fingerprint(index, settings, extractor_name),
        "settings": asdict(settings),
        "extractor": extractor_name,
        "embedder": index.embedder_name,
        "counts": {
            "entities": len(graph.entities),
            "relations": len(graph.relations),
            "communities": len(communities),
            "levels": len({c.level for c in communities}),
            "llm_reports": sum(1 for r in built.reports.values() if r.source == "llm"),
        },
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "report_usage": asdict(built.usage),
        "report_llm_calls": built.llm_calls,
        "report_cached": built.cached,
        "notes": list(built.notes),
    }
    notify("done", 1, 1)
    return HiragIndex(
        graph, communities, built.reports, np.asarray(vectors, dtype=np.float32), tokens, meta
    )


_CACHE: dict[str, HiragIndex] = {}
_LOCK = threading.Lock()


def hirag_for(
    index: CorpusIndex,
    *,
    settings: HiragBuildSettings | None = None,
    embedder: Embedder | None = None,
    build_if_missing: bool = True,
) -> HiragIndex:
    """The HiRAG artifacts of `index` (see `load_or_build`)."""
    return load_or_build(
        index, settings=settings, embedder=embedder, build_if_missing=build_if_missing
    )[0]


def load_or_build(
    index: CorpusIndex,
    *,
    settings: HiragBuildSettings | None = None,
    embedder: Embedder | None = None,
    build_if_missing: bool = True,
) -> tuple[HiragIndex, bool]:
    """The HiRAG artifacts of `index`: from memory, from `<index folder>/hirag/` when their
    fingerprint matches, else built (offline extractor, extractive reports) and saved there.
    The flag says whether this call built them.

    Raises:
        IndexFormatError: none stored and `build_if_missing` is False.
    """
    settings = settings or HiragBuildSettings()
    fp = fingerprint(index, settings, "offline")
    key = fp  # the same fingerprint means the same documents and settings
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached, False
        folder = getattr(index, "folder", None)
        hindex, built = None, False
        if folder and has_hirag(folder):
            stored = load_hirag(folder)
            if stored.fingerprint == fp:
                hindex = stored
            elif not build_if_missing:
                raise IndexFormatError(
                    f"the HiRAG graph in {folder} is out of date (documents or settings "
                    f"changed); {BUILD_HINT}"
                )
        if hindex is None:
            if not build_if_missing:
                raise IndexFormatError(f"this index has no HiRAG graph; {BUILD_HINT}")
            if embedder is None:
                from treerag_core.embedders import get_embedder

                embedder = get_embedder(index.embedder_name)
            hindex, built = build_hirag(index, embedder, settings, folder=folder), True
            if folder:
                save_hirag(hindex, folder)
        if len(_CACHE) >= 8:  # a long-lived explorer may open many indexes: keep a few
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hindex
        return hindex, built


def previous_llm_reports(folder: str | Path) -> dict[str, CommunityReport]:
    """Content key -> LLM report of a folder's current HiRAG build and of an interrupted one:
    read before an index is rewritten, so unchanged communities are never asked for again."""
    out: dict[str, CommunityReport] = {}
    if has_hirag(folder):
        try:
            stored = load_hirag(folder)
        except IndexFormatError:
            stored = None
        if stored is not None:
            out.update({r.content_key: r for r in stored.reports.values() if r.source == "llm"})
    out.update(load_partial_reports(folder))
    return out


def build_into_folder(
    index: CorpusIndex,
    folder: str | Path,
    settings: HiragBuildSettings | None = None,
    *,
    client: Any = None,
    report_cache: dict[str, CommunityReport] | None = None,
    progress: ProgressFn | None = None,
) -> HiragIndex:
    """`index --hirag`: build with the index's embedder, save into the index folder."""
    from treerag_core.embedders import get_embedder

    settings = settings or HiragBuildSettings()
    hindex = build_hirag(
        index,
        get_embedder(index.embedder_name),
        settings,
        client=client,
        folder=str(folder),
        report_cache=report_cache,
        progress=progress,
    )
    save_hirag(hindex, folder)
    partial_reports_path(folder).unlink(missing_ok=True)  # the build finished
    with _LOCK:
        _CACHE[hindex.fingerprint] = hindex
    return hindex
