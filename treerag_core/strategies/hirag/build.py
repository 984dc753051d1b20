"""Build the HiRAG artifacts for an index (graph, communities, reports, entity vectors), or
load them from the index folder; built once per index and cached."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import Usage
from treerag_core.index.tokens import tokenize
from treerag_core.strategies.hirag.communities import (
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_SEED,
    detect_communities,
)
from treerag_core.strategies.hirag.corpus_graph import Extractor, build_corpus_graph
from treerag_core.strategies.hirag.reports import CommunityReport, build_reports
from treerag_core.strategies.hirag.store import (
    BUILD_HINT,
    MAX_KEPT_REPORTS,
    CheckpointWrite,
    HiragIndex,
    asked_again,
    drop_partial_reports,
    has_hirag,
    keep_aside,
    load_checkpoint,
    load_hirag,
    load_partial_reports,
    partial_reports_path,
    read_llm_reports,
    read_manifest,
    save_hirag,
    save_partial_reports,
    stored_reports_path,
)

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex
    from treerag_core.index.embedders import Embedder
    from treerag_core.llm import LLMClient
    from treerag_core.strategies.graph.types import LeafGraph

ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class HiragBuildSettings:
    """Index-time settings of the HiRAG artifacts; part of their fingerprint."""

    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE  # seed 002: 10
    seed: int = DEFAULT_SEED
    llm_reports: bool = False  # LLM community reports (needs a client), else extractive
    report_model: str = "claude-haiku-4-5"  # the model of both LLM steps
    # Entities and relations from the LLM (needs a client), else the offline extractor.
    # Not hashed as a setting: the extractor's name ("llm:<model>") is in the fingerprint.
    llm_graph: bool = False

    def __post_init__(self) -> None:
        if self.max_cluster_size < 2:
            raise ValueError(f"max_cluster_size must be >= 2, but got {self.max_cluster_size}")


def offline_extractor() -> Extractor:
    """The graph package's offline extractor (concepts + co-occurrence relations)."""
    try:
        from treerag_core.strategies.graph.extract import extract_offline
    except ImportError as exc:  # the graph package is a separate feature
        raise IndexFormatError(f"the entity extractor is not installed ({exc})") from exc
    return extract_offline


def _settings_dict(settings: HiragBuildSettings) -> dict[str, Any]:
    data = asdict(settings)
    data.pop("llm_graph")  # the extractor name stands for it (keeps older fingerprints)
    return data


def extractor_label(settings: HiragBuildSettings, client: LLMClient | None = None) -> str:
    """The extractor's name in the fingerprint: `llm:<model>` with the LLM, else `offline`."""
    if settings.llm_graph and client is not None:
        return f"llm:{settings.report_model}"
    return "offline"


def fingerprint(index: CorpusIndex, settings: HiragBuildSettings, extractor: str) -> str:
    """What the artifacts were built from: documents, chunking, embedder and settings."""
    return _fingerprint(index, {"hirag": _settings_dict(settings), "extractor": extractor})


def corpus_fingerprint(index: CorpusIndex) -> str:
    """The documents, chunking and embedder alone: a build of any HiRAG settings (the user's
    choice at index time, LLM or offline) serves the queries while these are unchanged."""
    return _fingerprint(index, {})


def _fingerprint(index: CorpusIndex, extra: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    head = {"index": index.settings.to_dict(), "embedder": index.embedder_name, **extra}
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
    client: LLMClient | None = None,
    folder: str | None = None,
    report_cache: dict[str, CommunityReport] | None = None,
    graph_cache: dict[str, LeafGraph] | None = None,
    graph_block_chars: int | None = None,
    progress: ProgressFn | None = None,
    notes: tuple[str, ...] = (),
) -> HiragIndex:
    """Extract, merge, cluster, report and embed; times (and LLM tokens) go into `meta`.

    `notes` are the caller's notes from before the build (e.g. earlier reports that could
    not be read); they lead the build's own in `meta["notes"]`.

    With a `client`, `settings.llm_graph` extracts the graph with the LLM, one call per
    batch of ~`graph_block_chars` characters of consecutive leaves (batches in
    `graph_cache`, content key -> graph, are not sent again), and `settings.llm_reports`
    writes the reports. With `folder` (the index folder), both are checkpointed as they go
    (a graph per batch, reports per batch of communities) and an interrupted build resumes.
    """
    settings = settings or HiragBuildSettings()
    notify = progress or (lambda stage, done, total: None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    extraction = None
    if extract is None and settings.llm_graph and client is not None:
        from treerag_core.strategies.graph.extract_llm import BLOCK_CHARS
        from treerag_core.strategies.hirag.llm_graph import (
            extract_corpus_llm,
            load_graph_cache,
            write_graph_cache,
        )

        cache = dict(graph_cache or {})
        if folder:
            cache.update(load_graph_cache(folder))
        extraction = extract_corpus_llm(
            index,
            client,
            settings.report_model,
            cache=cache,
            folder=folder,
            progress=lambda done, total: notify("llm graph", done, total),
            block_chars=graph_block_chars or BLOCK_CHARS,
        )
        extract, extractor_name = extraction.extractor(), extractor_label(settings, client)
        if folder:  # the cache keeps what this corpus uses, not every batch ever sent
            write_graph_cache(folder, extraction.llm_graphs)
    extract = extract or offline_extractor()
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
    checkpoint_notes: tuple[str, ...] = ()
    dropped: list[int] = []  # earlier builds' reports each checkpoint write dropped (the cap)
    if folder and use_llm:
        kept, checkpoint_notes = load_checkpoint(folder, use_llm=True)
        checkpoint.update(kept)

    def on_batch(reports: dict[str, CommunityReport]) -> None:
        dropped.append(save_partial_reports(str(folder), reports).dropped)

    built = build_reports(
        communities,
        graph,
        None,
        client=client if use_llm else None,
        model=settings.report_model,
        cache=checkpoint,
        on_batch=on_batch if folder and use_llm else None,
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
    graph_usage = extraction.usage if extraction is not None else Usage()
    meta = {
        "fingerprint": fingerprint(index, settings, extractor_name),
        "corpus_fingerprint": corpus_fingerprint(index),
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
        "graph_usage": asdict(graph_usage),
        "graph_llm_calls": extraction.llm_calls if extraction is not None else 0,
        "graph_cached": extraction.cached if extraction is not None else 0,
        "graph_llm_batches": len(extraction.llm_graphs) if extraction is not None else 0,
        "graph_offline_batches": (
            len(extraction.fallback_batches) if extraction is not None else 0
        ),
        "notes": [
            *notes,
            *checkpoint_notes,
            *(extraction.notes if extraction is not None else ()),
            *built.notes,
            *(
                (f"{sum(dropped)} of the oldest {_dropped_note(folder or '')}",)
                if sum(dropped)
                else ()
            ),
        ],
    }
    notify("done", 1, 1)
    return HiragIndex(
        graph, communities, built.reports, np.asarray(vectors, dtype=np.float32), tokens, meta
    )


_CACHE: dict[tuple[str, str], HiragIndex] = {}  # (index folder, fingerprint) -> artifacts
_LOCK = threading.Lock()  # guards _CACHE only, never held while building or reading a folder


class _KeyedLocks:
    """One lock per index: a build of one index keeps only queries of that index waiting.

    A key's lock lives while a thread holds or waits on it, so the dict stays as small as
    the number of indexes in use at once.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}  # key -> (lock, users)

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key) or (threading.Lock(), 0)
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users = self._locks[key][1] - 1
                if users:
                    self._locks[key] = (lock, users)
                else:
                    del self._locks[key]


_INDEX_LOCKS = _KeyedLocks()


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


def _folder_key(folder: str | Path | None) -> str:
    return str(Path(folder).resolve()) if folder else ""


def serves(
    meta: Mapping[str, Any], index: CorpusIndex, settings: HiragBuildSettings | None
) -> bool:
    """Whether a stored build (its manifest, `meta`) answers for `index`: with `settings`
    None, any build of the same documents (whatever HiRAG settings or extractor the user
    built it with); else only a build of exactly `settings`."""
    if settings is None and meta.get("corpus_fingerprint"):
        return meta["corpus_fingerprint"] == corpus_fingerprint(index)
    wanted = settings or HiragBuildSettings()
    return meta.get("fingerprint") == fingerprint(index, wanted, extractor_label(wanted))


def load_or_build(
    index: CorpusIndex,
    *,
    settings: HiragBuildSettings | None = None,
    embedder: Embedder | None = None,
    build_if_missing: bool = True,
) -> tuple[HiragIndex, bool]:
    """The HiRAG artifacts of `index`: from memory, from `<index folder>/hirag/` when they
    serve it (`serves`: queries pass no settings, so an `index --hirag-llm` build is used),
    else built with `settings` or the defaults (offline extractor, extractive reports: a
    query never calls an LLM to build) and saved there. The flag says whether this call built.

    Raises:
        IndexFormatError: none stored (or out of date) and `build_if_missing` is False.
    """
    wanted = settings or HiragBuildSettings()
    folder = getattr(index, "folder", None)
    exact = fingerprint(index, wanted, extractor_label(wanted))
    key = (_folder_key(folder), corpus_fingerprint(index) if settings is None else exact)
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached, False
    # The folder is what a build writes; an index without one is known by its documents.
    with _INDEX_LOCKS.hold(key[0] or f"memory:{key[1]}"):
        with _LOCK:
            cached = _CACHE.get(key)  # built by another thread while this one waited
        if cached is not None:
            return cached, False
        hindex, built = None, False
        if folder and has_hirag(folder):
            # Out of date is decided by the manifest alone: a graph of other documents cites
            # chunks this index no longer holds, which the full load would call corrupt.
            if serves(read_manifest(folder), index, settings):
                hindex = load_hirag(folder, index.dim, {c.chunk_id for c in index.chunks})
            elif not build_if_missing:
                raise IndexFormatError(
                    f"the HiRAG graph in {folder} is out of date (documents or settings "
                    f"changed); {BUILD_HINT}"
                )
        if hindex is None:
            if not build_if_missing:
                raise IndexFormatError(f"this index has no HiRAG graph; {BUILD_HINT}")
            if embedder is None:  # an st: folder only when the user named it too
                from treerag_core.index.embedders import index_embedder

                embedder = index_embedder(index.embedder_name)
            # The replaced build's paid reports (read from reports.json alone, so a graph of
            # other documents still lends them) go to the checkpoint for a later LLM build.
            previous = previous_llm_reports(folder, use_llm=False) if folder else PreviousReports()
            paid, notes = previous.reports, previous.notes
            hindex = build_hirag(index, embedder, wanted, folder=folder, notes=notes)
            built = True
            if folder:
                if paid:
                    written = save_partial_reports(folder, paid)
                    hindex.meta["notes"].extend(_kept_notes(folder, written))
                save_hirag(hindex, folder)
        with _LOCK:
            _remember(key, hindex)
        return hindex, built


def _kept_notes(folder: str | Path, written: CheckpointWrite) -> tuple[str, ...]:
    """What a checkpoint write kept (and dropped) of earlier builds' LLM reports."""
    if not written.kept and not written.dropped:
        return ()
    kept = (
        f"{written.kept} LLM reports of earlier builds are kept in "
        f"{partial_reports_path(folder).name} for a later build with LLM reports"
    )
    dropped = (f"{written.dropped} of the oldest {_dropped_note(folder)}",)
    return (kept, *(dropped if written.dropped else ()))


def _dropped_note(folder: str | Path) -> str:
    return (
        f"were dropped from {partial_reports_path(folder).name} (it keeps at most "
        f"{MAX_KEPT_REPORTS:,} reports besides the current build's); their LLM calls would be "
        "paid again"
    )


def _remember(key: tuple[str, str], hindex: HiragIndex) -> None:
    if key not in _CACHE and len(_CACHE) >= 8:  # a long-lived explorer opens many indexes
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = hindex


@dataclass(frozen=True)
class PreviousReports:
    """The LLM reports earlier builds paid for, and what could not be read of them (the
    build's notes: the CLI prints them, the explorer's build panel shows them)."""

    reports: dict[str, CommunityReport] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def previous_llm_reports(folder: str | Path, use_llm: bool = True) -> PreviousReports:
    """Content key -> LLM report of a folder's current HiRAG build and of its checkpoint,
    so unchanged communities are never asked for again (`use_llm`: whether the coming
    build asks the LLM, for the notes' wording).

    The current build's reports.json is read alone: a graph that fails the load checks
    (built from other documents, or by an older TreeRAG) still lends its paid reports. A
    reports.json that cannot be read, or a damaged checkpoint, is noted with the reason
    and copied aside (`store.keep_aside`) before the build replaces it; unreadable entries
    are counted.

    Raises:
        IndexFormatError: a file to keep aside is a symlink or not a regular file.
    """
    out: dict[str, CommunityReport] = {}
    notes: list[str] = []
    again = asked_again(use_llm)
    if has_hirag(folder):
        stored = stored_reports_path(folder)
        try:
            got, bad = read_llm_reports(stored)
        except IndexFormatError as exc:
            kept = keep_aside(stored, folder)
            notes.append(
                f"the previous HiRAG build's LLM reports could not be read ({exc}); a copy is "
                f"kept at {kept} in the index folder, and {again}"
            )
        else:
            out.update(got)
            if bad:
                notes.append(
                    f"{bad} entries of the previous HiRAG build's {stored.name} could not be "
                    f"read; {again}"
                )
    checkpoint, checkpoint_notes = load_checkpoint(folder, use_llm)
    out.update(checkpoint)
    notes.extend(checkpoint_notes)
    return PreviousReports(out, tuple(notes))


def build_into_folder(
    index: CorpusIndex,
    folder: str | Path,
    settings: HiragBuildSettings | None = None,
    *,
    client: LLMClient | None = None,
    report_cache: dict[str, CommunityReport] | None = None,
    graph_cache: dict[str, LeafGraph] | None = None,
    graph_block_chars: int | None = None,
    progress: ProgressFn | None = None,
    embedder: Embedder | None = None,
) -> HiragIndex:
    """`index --hirag` (and the explorer's build button): build with the index's embedder
    (`embedder`, the one the caller built or loaded it with; else the index's name, an
    `st:` folder only when the user named it too), save into the index folder; later
    queries of this folder use this build."""
    from treerag_core.index.embedders import index_embedder

    settings = settings or HiragBuildSettings()
    use_llm = settings.llm_reports and client is not None
    # Read also for an offline build: it replaces reports.json, so what cannot be read is
    # kept aside and said, and paid reports wait in the checkpoint for a later LLM build.
    previous = previous_llm_reports(folder, use_llm)
    if use_llm:
        report_cache = {**previous.reports, **(report_cache or {})}
    hindex = build_hirag(
        index,
        embedder or index_embedder(index.embedder_name),
        settings,
        client=client,
        folder=str(folder),
        report_cache=report_cache,
        graph_cache=graph_cache,
        graph_block_chars=graph_block_chars,
        progress=progress,
        notes=previous.notes,
    )
    # This build's reports.json replaces the previous one: every paid report it does not
    # hold (the previous build's, the checkpoint's) stays in the checkpoint.
    mine = {r.content_key for r in hindex.reports.values() if r.source == "llm"}
    unused = {k: r for k, r in previous.reports.items() if k not in mine}
    with _INDEX_LOCKS.hold(_folder_key(folder)):  # not while a query reads or saves it
        written = save_partial_reports(folder, unused) if unused else CheckpointWrite(0, 0)
        if use_llm:  # what stays once this build's own reports leave the checkpoint
            left = len(set(load_partial_reports(folder)) - mine)
            written = CheckpointWrite(left, written.dropped)
        hindex.meta["notes"].extend(_kept_notes(folder, written))
        save_hirag(hindex, folder)
        if use_llm:  # the build finished: its reports.json holds its own reports
            drop_partial_reports(folder, mine)
        with _LOCK:
            _remember((_folder_key(folder), hindex.fingerprint), hindex)
            _remember((_folder_key(folder), corpus_fingerprint(index)), hindex)
    return hindex
