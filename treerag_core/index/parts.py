"""Index parts: what a strategy family adds to an index, built, stored and loaded back.

The index builds, saves and loads the parts registered here without knowing any family:
each family (`strategies/<family>/`) declares its part and registers it when the families
are loaded. The families live above the index, so the index names only the package that
holds them and imports it by name on first use, as a plug-in host loads its plug-in folder.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from treerag_core.base.lazy import run_once
from treerag_core.index.embedders import Embedder

# A built `index.corpus.CorpusIndex`: named loosely here because the corpus module reads
# this registry (an import back would be a circle).
CorpusIndex = Any

# The package whose `load_families()` registers every built-in family's part.
FAMILIES_PACKAGE = "treerag_core.strategies"


@dataclass(frozen=True)
class PartBuild:
    """What a part's build may read beside the freshly built core index."""

    embedder: Embedder
    previous: Any = None  # this part of the previous index (None: none), to reuse its work
    notify: Callable[[str, int, int], None] = field(default=lambda stage, done, total: None)
    inputs: Mapping[str, Any] = field(default_factory=dict)  # build_index keywords it reads


@dataclass(frozen=True)
class BuildCost:
    """How long a part's build takes: CPU seconds per unit with the default embedder,
    measured by `benchmarks/bench_parts.py` (2 cores; the wall time of a shared machine waits
    for other work, its CPU time does not)."""

    unit: str  # what is counted, e.g. "long leaf"
    seconds_per_unit: float


class IndexPart(Protocol):
    """One family's part of an index. Parts that a build makes inside `build_index` return
    it from `build`; parts built apart (e.g. with paid LLM calls, after the index is saved)
    return None there and name their files in `kept_on_rebuild`."""

    key: str  # its key in `CorpusIndex.parts` (the family's name)
    files: tuple[str, ...]  # what it writes into the index folder
    kept_on_rebuild: tuple[str, ...]  # files or folders a rebuild carries over unchanged
    inputs: tuple[str, ...]  # keyword arguments of `build_index` it reads (e.g. an LLM helper)
    cost: BuildCost

    def build(self, index: CorpusIndex, ctx: PartBuild) -> Any | None:
        """The part of a freshly built index, or None when these settings have none."""
        ...

    def save(self, part: Any, folder: Path, index: CorpusIndex) -> None:
        """Write the part's files into `folder` (the index's new folder, before its manifest)."""
        ...

    def load(self, folder: Path, index: CorpusIndex, hint: str) -> Any | None:
        """The stored part checked against `index`, None when the folder has none;
        IndexFormatError (ending with `hint`) when it is corrupt or belongs to another index."""
        ...

    def stats(self, part: Any | None) -> dict[str, int]:
        """Counts for the index summary (the same keys whether or not the part was built)."""
        ...

    def units(self, index: CorpusIndex) -> int:
        """How many of `cost.unit` a build of this index handles (for `estimate_seconds`)."""
        ...


_PARTS: dict[str, IndexPart] = {}


def register_part(part: IndexPart) -> IndexPart:
    """Register a family's part (a second part under the same key replaces the first).

    Raises:
        ValueError: no key, or a file another part already writes or keeps.
    """
    if not part.key or not isinstance(part.key, str):
        raise ValueError(f"an index part needs a key, not {part.key!r}")
    mine = set(part.files) | set(part.kept_on_rebuild)
    for other in _PARTS.values():
        shared = mine & (set(other.files) | set(other.kept_on_rebuild))
        if other.key != part.key and shared:
            raise ValueError(
                f"index part {part.key!r} would share {sorted(shared)} with {other.key!r}"
            )
    _PARTS[part.key] = part
    return part


def unregister_part(key: str) -> None:
    """Remove a part (tests that register a temporary family clean up with this)."""
    _PARTS.pop(key, None)


@run_once
def _load_families() -> None:
    importlib.import_module(FAMILIES_PACKAGE).load_families()


def index_parts() -> list[IndexPart]:
    """Every registered part in a fixed order (by key): the order they build, save and load."""
    _load_families()
    return [_PARTS[key] for key in sorted(_PARTS)]


def kept_files() -> tuple[str, ...]:
    """What the registered parts keep across rebuilds."""
    return tuple(name for part in index_parts() for name in part.kept_on_rebuild)


def build_inputs() -> frozenset[str]:
    """The keyword arguments of `build_index` that some part reads."""
    return frozenset(name for part in index_parts() for name in part.inputs)


def estimate_seconds(index: CorpusIndex) -> dict[str, float]:
    """Each part's expected build time for `index` (its measured cost times its units)."""
    return {p.key: p.cost.seconds_per_unit * p.units(index) for p in index_parts()}
