"""What the benchmark scripts share: where things are, how a run reports and fails.

A script run as `python benchmarks/<name>.py` puts the repository on `sys.path` itself (two
lines at its top) before it imports this module; imported as `benchmarks.<name>` (the tests,
`run_all.py`) the path is already there. Kept light: no engine import at module level.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from treerag_core import Engine
    from treerag_core.answer.synthesis import Sentence
    from treerag_core.base.config import IndexSettings
    from treerag_core.base.types import Trace, TreeNode
    from treerag_core.evaluation import EvalDataset

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval"  # the eval sets, beside the repository
EVAL_CACHE = REPO / "data" / "eval-cache"  # the harness's index cache


def stderr(message: str) -> None:
    """Progress and errors go to stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def fail(exc: BaseException) -> int:
    """Say a run's error as a user sees it; the exit code of a failed run."""
    stderr(f"error: {exc}")
    return 2


def write_json(path: Path | None, data: Any) -> None:
    """`data` as indented JSON at `path` (its folder made); nothing when no path is given."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def reported(
    title: str,
    dataset: str,
    json_path: Path | None,
    to_markdown: Callable[[dict[str, Any]], str],
    bench: Callable[[], dict[str, Any]],
) -> int:
    """Run `bench`; print its figures as markdown under `## title: dataset` and keep them as
    JSON at `json_path` if given. An engine error or a bad input is said on stderr (exit 2)."""
    from treerag_core.base.errors import TreeRAGError

    try:
        result = bench()
    except (TreeRAGError, ValueError) as exc:
        return fail(exc)
    result["dataset"] = dataset
    print(f"## {title}: {dataset}\n")
    print(to_markdown(result))
    write_json(json_path, result)
    return 0


def add_dev_set_arguments(parser: argparse.ArgumentParser) -> None:
    """--data, --cache, --limit and --embedder of the scripts that score the dev sets."""
    from treerag_core.base.config import IndexSettings, data_dir

    parser.add_argument("--data", type=Path, default=EVAL)
    parser.add_argument("--cache", type=Path, default=Path(data_dir()) / "eval-cache")
    parser.add_argument("--limit", type=int, default=40, help="answerable questions per set")
    parser.add_argument("--embedder", default=IndexSettings().embedder)


def dev_engines(
    data: Path, names: Sequence[str], embedder_name: str, cache: Path | None
) -> dict[str, tuple[EvalDataset, Engine]]:
    """Each named eval set under `data` with an engine over its (cached) index, one embedder."""
    from treerag_core import Engine, dataset_index, get_embedder
    from treerag_core.base.config import IndexSettings
    from treerag_core.evaluation import load_dataset

    settings = IndexSettings(embedder=embedder_name)
    embedder = get_embedder(embedder_name)
    engines = {}
    for name in names:
        dataset = load_dataset(data / name)
        engines[name] = (dataset, Engine(dataset_index(dataset, settings, cache), embedder))
        stderr(f"{name}: index ready")
    return engines


def parse_source(
    text: str, name: str, settings: IndexSettings, first_id: int = 1
) -> list[TreeNode]:
    """One document's heading tree as `build_index` parses it under `settings` (for the
    research scripts that time or inspect the parse stage on its own)."""
    from treerag_core.ingest.parsing import parse_document

    return parse_document(
        text,
        doc_id=name,
        name=name,
        max_depth=settings.max_depth,
        first_id=first_id,
        article_leaves=settings.article_leaves,
    )


def scored_sentences(
    engine: Engine, question: str, trace: Trace, speaking_only: bool = True
) -> list[Sentence]:
    """The keyless answer's candidate sentences scored against the question, best first, as
    `synthesis.extract` scores them (`speaking_only=False`: every top passage speaks, the
    rule before off-topic passages were left out)."""
    from treerag_core.answer.synthesis import score_sentences, speaking_hits, whole_sentences

    passages = speaking_hits(trace.reranked) if speaking_only else trace.reranked
    return score_sentences(
        question,
        engine.query_vector(question),
        whole_sentences(passages, engine.index.texts),
        lambda texts: engine.embedder.embed(list(texts)),
    )
