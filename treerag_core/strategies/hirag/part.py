"""HiRAG's index part: the corpus entity graph, its communities and reports (`hirag/`).

It is built apart from `build_index` (`build.build_hirag`, after the index is saved: with
an LLM it makes paid calls) or on the first HiRAG question, and read from the index folder
when a mode needs it. A rebuild keeps it and its LLM caches: a stale build is found by its
fingerprint, never used, and the caches spare paid calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from treerag_core.index.parts import BuildCost, PartBuild
from treerag_core.strategies.hirag.llm_graph import CACHE_FILE
from treerag_core.strategies.hirag.store import FOLDER, PARTIAL_FILE, UNREADABLE

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex

PART = "hirag"  # the family's key among the index parts


class HiragPart:
    """Never in `CorpusIndex.parts`: the modes load `hirag/` themselves (build.load_or_build)."""

    key = PART
    files = (FOLDER,)
    # the artifacts, the LLM graph cache, a cut-short build's reports, unreadable files kept
    # for the user (store.keep_aside)
    kept_on_rebuild = (FOLDER, CACHE_FILE, PARTIAL_FILE, UNREADABLE)
    inputs: tuple[str, ...] = ()
    # benchmarks/bench_parts.py, 8 QASPER papers: 34.1 CPU s for 1,348 chunks (offline
    # extractor, communities, extractive reports, entity vectors; an LLM build adds its calls)
    cost = BuildCost("chunk", 0.025)

    def build(self, index: CorpusIndex, ctx: PartBuild) -> None:
        return None  # built apart: build.build_hirag (CLI `index --hirag`, explorer button)

    def save(self, part: Any, folder: Path, index: CorpusIndex) -> None:
        return None  # save_hirag writes hirag/ itself when it is built

    def load(self, folder: Path, index: CorpusIndex, hint: str) -> None:
        return None  # read on first use by the modes (build.load_or_build)

    def stats(self, part: Any | None) -> dict[str, int]:
        return {}

    def units(self, index: CorpusIndex) -> int:
        return len(index.chunks)
