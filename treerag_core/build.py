"""Index a set of inputs into a folder: the one build the CLI, the explorer and the harness call.

One run: convert the inputs (the folder's tree edits applied), open the index already in
the folder to reuse its vectors and cached summaries, build with the LLM parts asked for
(falling back to local summaries when the LLM fails), save atomically, then build the
families' folder parts (today HiRAG's). The folder's run lock is held throughout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import InputDocumentError, LLMError, TreeRAGError
from treerag_core.base.types import SourceDocument
from treerag_core.index.corpus import CorpusIndex, ProgressFn, build_index
from treerag_core.index.embedders import Embedder, get_embedder
from treerag_core.index.store import load_index, run_lock, save_index
from treerag_core.ingest.documents import EditCarry, Rejected, sources_from
from treerag_core.ingest.tree_edits import load_edit_entries, save_edits
from treerag_core.strategies.drilldown.layers import layers_of

if TYPE_CHECKING:
    from treerag_core.llm import LLMClient
    from treerag_core.strategies.graph.extract_llm import LLMGraphExtractor
    from treerag_core.strategies.hirag.build import HiragBuildSettings

Inputs = Sequence[str | Path] | Sequence[SourceDocument]
Note = Callable[[str], None]


class NoDocumentsError(InputDocumentError):
    """None of the inputs could be read; `rejected` and `notes` say why."""

    def __init__(self, rejected: Sequence[Rejected], notes: Sequence[str]) -> None:
        super().__init__("no readable document among the inputs")
        self.rejected = list(rejected)
        self.notes = list(notes)


@dataclass(frozen=True)
class IndexLLM:
    """The LLM an index build may call, and for what beyond the settings' own flags.

    `IndexSettings.llm_summaries` asks it for section summaries and drill-down's K-Type
    document summaries, `llm_graphs` for leaf graphs; `ktype` asks for the K-Type
    summaries alone (the explorer does whenever an LLM is configured).
    """

    client: LLMClient
    model: str
    ktype: bool = False


@dataclass
class IndexRun:
    """What one `index_folder` run made and what it has to say."""

    index: CorpusIndex
    folder: Path | None  # where it was saved (None: kept in memory only)
    previous: CorpusIndex | None  # the index the run reused (None: built from scratch)
    embedder: Embedder
    rejected: list[Rejected] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # in the order they happened
    graph_llm: LLMGraphExtractor | None = None  # its usage and failure, when it ran
    hirag: dict[str, Any] | None = None  # the HiRAG build's meta, when it ran
    seconds: float = 0.0


def _is_sources(inputs: Inputs) -> bool:
    return all(isinstance(item, SourceDocument) for item in inputs)


def _require_llm(llm: IndexLLM | None, what: str) -> IndexLLM:
    if llm is None:
        raise LLMError(f"{what} needs an LLM client, and none was given", reason="no_api_key")
    return llm


def _previous(folder: Path | None, notes: list[str]) -> CorpusIndex | None:
    """The index already in `folder`, to reuse; one that cannot be read is rebuilt (said)."""
    if folder is None or not (folder / "manifest.json").is_file():
        return None
    try:
        return load_index(folder)
    except TreeRAGError as exc:
        notes.append(f"rebuilding from scratch ({exc})")
        return None


def _summarizers(settings: IndexSettings, previous: CorpusIndex | None, llm: IndexLLM | None):
    """(section summarizer, K-Type summarizer) the settings and `llm` ask for, with the
    previous index's caches so nothing summarised before is sent again."""
    summarizer = ktype = None
    if settings.llm_summaries:
        from treerag_core.ingest.node_summaries_llm import make_llm_summarizer

        llm = _require_llm(llm, "llm_summaries")
        cache = previous.summary_cache if previous is not None else {}
        summarizer = make_llm_summarizer(llm.client, llm.model, cache)
    if llm is not None and (settings.llm_summaries or llm.ktype):
        # Drill-down's index part; its family declaration should own this summarizer.
        from treerag_core.strategies.drilldown.ktype import make_ktype_summarizer
        from treerag_core.strategies.drilldown.layers import layers_of

        layers = layers_of(previous) if previous is not None else None
        cache = layers.ktype_cache if layers is not None else {}
        ktype = make_ktype_summarizer(llm.client, llm.model, cache)
    return summarizer, ktype


def _graph_extractor(settings: IndexSettings, llm: IndexLLM | None) -> LLMGraphExtractor | None:
    if not settings.llm_graphs:
        return None
    if settings.graph_min_leaf_chars <= 0:
        raise TreeRAGError("llm_graphs needs graph_min_leaf_chars > 0 (graphs are off by default)")
    from treerag_core.strategies.graph.extract_llm import LLMGraphExtractor

    llm = _require_llm(llm, "llm_graphs")
    return LLMGraphExtractor(llm.client, llm.model)


def build_with_fallback(
    sources: Sequence[SourceDocument],
    settings: IndexSettings,
    embedder: Embedder,
    *,
    previous: CorpusIndex | None = None,
    progress: ProgressFn | None = None,
    llm: IndexLLM | None = None,
    graph_extractor: LLMGraphExtractor | None = None,
    notes: list[str] | None = None,
) -> CorpusIndex:
    """`build_index` with the LLM summaries asked for; when the LLM fails, the same build
    with local summaries (said in `notes`): a failed LLM never loses the index."""
    summarizer, ktype = _summarizers(settings, previous, llm)
    try:
        return build_index(
            sources,
            settings,
            embedder,
            previous=previous,
            progress=progress,
            summarizer=summarizer,
            ktype_summarizer=ktype,
            graph_extractor=graph_extractor,
        )
    except LLMError as exc:
        if summarizer is None and ktype is None:
            raise
        if notes is not None:
            notes.append(f"LLM summaries failed ({exc}); using local summaries")
        return build_index(
            sources,
            replace(settings, llm_summaries=False),
            embedder,
            previous=previous,
            progress=progress,
            graph_extractor=graph_extractor,
        )


def index_folder(
    inputs: Inputs,
    folder: str | Path | None,
    settings: IndexSettings,
    *,
    embedder: Embedder | None = None,
    previous: CorpusIndex | None = None,
    reuse: bool = True,
    llm: IndexLLM | None = None,
    hirag: HiragBuildSettings | None = None,
    progress: ProgressFn | None = None,
    must_save: bool = True,
    carry_edits: bool = False,
) -> IndexRun:
    """Index `inputs` (paths of files or folders, or sources already converted) into `folder`.

    The folder becomes an index of exactly these inputs. Paths are converted with the
    folder's tree edits (`tree_edits.json`) applied; unreadable ones are listed in
    `rejected`. With `reuse`, the index already in the folder (or `previous`, an index held
    in memory) lends its vectors for unchanged documents and its cached LLM summaries.
    `hirag` also builds the HiRAG folder part after saving. `progress(stage, done, total)`
    hears every stage (convert, parse, embed, graph, ..., HiRAG's). `folder` None builds in
    memory only; `must_save=False` keeps the index when the folder cannot be written (noted).

    Raises:
        NoDocumentsError: no input could be read.
        IndexBusyError: another run is writing the folder.
        LLMError: an LLM part was asked for without `llm`.
    """
    started = time.perf_counter()
    target = None if folder is None else Path(folder)
    notes: list[str] = []
    with ExitStack() as stack:
        saving = target is not None
        if target is not None:
            # Held from the first read to the last write: a second run refuses at its start
            # instead of both building and the last to finish replacing the other's index.
            try:
                stack.enter_context(run_lock(target))
            except OSError as exc:  # a read-only place: read from it, keep the index in memory
                if must_save:
                    raise
                notes.append(f"the index is not saved in {target} ({exc})")
                saving = False
        graph_llm = _graph_extractor(settings, llm)  # a missing LLM fails before any work
        if hirag is not None and (hirag.llm_graph or hirag.llm_reports):
            _require_llm(llm, "an LLM HiRAG build")
        if _is_sources(inputs):
            sources, rejected = list(inputs), []
        else:
            # Corrections of a file whose bytes changed are offered by heading text, applied
            # and kept for the new bytes with `carry_edits` (docs/ingest.md).
            stored = load_edit_entries(target) if target is not None else {}
            edits = {sha: entry for sha, (_, entry) in stored.items()}
            carry = EditCarry(stored, apply=carry_edits)
            sources, rejected = sources_from(
                [Path(p) for p in inputs],  # type: ignore[arg-type]
                settings.max_file_bytes,
                edits,
                settings.max_pages,
                notes,
                progress=None if progress is None else lambda d, t: progress("convert", d, t),
                carry=carry,
            )
            for sha, offer in carry.offers:
                if carry_edits and offer.applies and target is not None:
                    save_edits(target, sha, offer.name, offer.applies)
                    notes.append(
                        f"{offer.note()}; applied the {len(offer.applies)} (--carry-edits)"
                    )
                else:
                    notes.append(f"{offer.note()}; index again with --carry-edits to apply them")
        if not sources:
            raise NoDocumentsError(rejected, notes)
        if reuse and previous is None:
            previous = _previous(target, notes)
        if not reuse:
            previous = None
        embedder = embedder or get_embedder(settings.embedder)
        index = build_with_fallback(
            sources,
            settings,
            embedder,
            previous=previous,
            progress=progress,
            llm=llm,
            graph_extractor=graph_llm,
            notes=notes,
        )
        if saving and target is not None:
            try:
                # save_index keeps hirag/ and its checkpoint: the build reuses their reports.
                save_index(index, target)
            except OSError as exc:
                if must_save:
                    raise
                notes.append(f"the index is not saved in {target} ({exc})")
                saving = False
        meta = None
        if hirag is not None and saving and target is not None:
            meta = _build_hirag(index, target, hirag, llm, embedder, progress)
            notes.extend(meta["notes"])
    layers = layers_of(index)  # drill-down's part: its notes (e.g. summaries that fell back)
    notes.extend(layers.notes if layers is not None else ())
    return IndexRun(
        index=index,
        folder=target if saving else None,
        previous=previous,
        embedder=embedder,
        rejected=list(rejected),
        notes=notes,
        graph_llm=graph_llm,
        hirag=meta,
        seconds=time.perf_counter() - started,
    )


def _build_hirag(
    index: CorpusIndex,
    folder: Path,
    settings: HiragBuildSettings,
    llm: IndexLLM | None,
    embedder: Embedder,
    progress: ProgressFn | None,
) -> dict[str, Any]:
    """HiRAG's folder part. Its family declaration (index part: build after save) should
    plug in here, so this module names no family."""
    from treerag_core.strategies.hirag.build import build_into_folder

    wants_llm = settings.llm_graph or settings.llm_reports
    client = llm.client if llm is not None and wants_llm else None
    if client is not None and llm is not None:
        settings = replace(settings, report_model=llm.model)
    hindex = build_into_folder(
        index, folder, settings, client=client, progress=progress, embedder=embedder
    )
    return hindex.meta
