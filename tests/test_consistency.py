"""A rerun from a stored trace equals a fresh run with the same settings, for every control.

The review that motivated the plug-in refactor moved each step-2 control and found 19 of 28
moves giving other picked leaves than a fresh question (the UI reused a step 1 whose inputs
had changed). Here the engine decides reuse, so for every control and value the rerun and
the fresh run must agree on the picked leaves and the final ranking.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from treerag_core.config import IndexSettings
from treerag_core.embedders import get_embedder
from treerag_core.evaluation.dataset import load_dataset
from treerag_core.index import SourceDocument, build_index
from treerag_core.pipeline import Engine, rerun, run
from treerag_core.settings import QuerySettings

BASE = (
    QuerySettings()
    .set("llm.enabled", False)
    .set("locate.locator", "local")
    .set("rerank.enabled", False)
)

# Every step-2 and step-3 control with values that move it away from its default; the
# local locator's own inputs (cutoff, heading weight) are included since a slider moves them.
MOVES: list[tuple[str, object]] = [
    ("retrieve.fusion", "rrf"),
    ("retrieve.fusion", "dbsf"),
    ("retrieve.dense_weight", 0.0),
    ("retrieve.dense_weight", 0.2),
    ("retrieve.dense_weight", 0.8),
    ("retrieve.dense_weight", 1.0),
    ("retrieve.rrf_k", 10),
    ("retrieve.top_k_per_leaf", 2),
    ("retrieve.top_k_per_leaf", 15),
    ("retrieve.candidate_window", 6),
    ("answer.final_top_k", 2),
    ("answer.final_top_k", 12),
    ("answer.context_chars", 500),
    ("rerank.chinese", True),
    ("locate.cutoff", 0.9),
    ("locate.heading_weight", 0.0),
    ("locate.heading_weight", 0.7),
]


def _signature(trace) -> tuple[list[str], list[str]]:
    return (
        [leaf.node_id for leaf in trace.locate.leaves],
        [hit.chunk.chunk_id for hit in trace.reranked],
    )


def _check_every_move(engine: Engine, questions: list[tuple[str, list[str] | None]]) -> None:
    mismatches = []
    for question, scope in questions:
        stored = run(engine, question, BASE, scope=scope, synthesize=False)
        for path, value in MOVES:
            moved = BASE.set(path, value)
            again = rerun(engine, stored, moved, synthesize=False)
            fresh = run(engine, question, moved, scope=scope, synthesize=False)
            if _signature(again) != _signature(fresh):
                mismatches.append((question, path, value))
    assert mismatches == []


def test_every_control_rerun_equals_a_fresh_run_on_the_samples(hashing_index):
    engine = Engine(hashing_index, get_embedder("hashing"))
    questions = [
        ("How many epochs was AdaRouter trained for?", None),
        ("AdaRouter在EUR/USD上的准确率是多少？", None),
        ("劳动合同应当具备哪些条款？", None),
        ("Which baselines does the paper compare against?", ["test_paper.md"]),
    ]
    _check_every_move(engine, questions)


def test_every_control_rerun_equals_a_fresh_run_on_a_dev_set(eval_dir: Path):
    dataset = load_dataset(eval_dir / "lecoqa_laws")
    questions = list(dataset.usable_questions)[:4]
    names = sorted({doc for q in questions for doc in q.docs})
    sources = [
        SourceDocument(name, (dataset.docs_dir / name).read_text(encoding="utf-8"))
        for name in names
    ]
    index = build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))
    engine = Engine(index, get_embedder("hashing"))
    _check_every_move(engine, [(q.question, list(q.docs)) for q in questions])


@pytest.mark.parametrize("path", ["retrieve.dense_weight", "answer.final_top_k"])
def test_a_stored_llm_pick_is_kept_when_only_step_2_moves(hashing_index, path):
    """A slider never causes an LLM call: an LLM pick is reused (its inputs are LLM ones)."""
    from dataclasses import replace

    engine = Engine(hashing_index, get_embedder("hashing"))
    stored = run(engine, "How many epochs was AdaRouter trained for?", BASE, synthesize=False)
    llm_pick = replace(
        stored.locate,
        locator="llm",
        inputs=_llm_inputs(BASE),
    )
    stored = replace(stored, locate=llm_pick)
    value = 0.9 if path == "retrieve.dense_weight" else 2
    again = rerun(engine, stored, BASE.set(path, value), synthesize=False)
    assert again.locate is llm_pick


def _llm_inputs(settings: QuerySettings) -> dict:
    from treerag_core.strategies import get_strategy

    return get_strategy("treerag").locate_inputs(settings, "llm")
