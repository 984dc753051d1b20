"""A rerun from a stored trace equals a fresh run with the same settings, for every control.

The review that motivated the plug-in refactor moved each step-2 control and found 19 of 28
moves giving other picked leaves than a fresh question (the UI reused a step 1 whose inputs
had changed). Here the engine decides reuse, so for every control and value the rerun and
the fresh run must agree on the picked leaves and the final ranking.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.dataset import load_dataset
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine, rerun, run

BASE = (
    QuerySettings()
    .set("llm.enabled", False)
    .set("locate.locator", "local")
    .set("rerank.enabled", False)
)

# Every step-2 and step-3 control with values that move it away from its default (each is
# checked to change what the run does: a control that changes nothing is a dead setting).
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
]

# Where a control only acts in some setup (the UI disables RRF k unless fusion is RRF; the
# per-leaf cut is read by strategies that search leaf by leaf; the Chinese switch only when
# the cross-encoder runs), both sides of its move are taken in that setup.
LIVE: dict[str, dict[str, object]] = {
    "retrieve.rrf_k": {"retrieve.fusion": "rrf"},
    "retrieve.top_k_per_leaf": {"strategy": "treerag-kg"},
    "rerank.chinese": {"rerank.enabled": True},
}


def _before_after(path: str, value: object) -> tuple[QuerySettings, QuerySettings]:
    before = BASE
    for other, setting in LIVE.get(path, {}).items():
        before = before.set(other, setting)
    return before, before.set(path, value)


def _signature(trace) -> tuple[list[str], list[str]]:
    return (
        [leaf.node_id for leaf in trace.locate.leaves],
        [hit.chunk.chunk_id for hit in trace.reranked],
    )


def _check_every_move(engine: Engine, questions: list[tuple[str, list[str] | None]]) -> None:
    mismatches = []
    for question, scope in questions:
        for path, value in MOVES:
            before, moved = _before_after(path, value)
            stored = run(engine, question, before, scope=scope, synthesize=False)
            again = rerun(engine, stored, moved, synthesize=False)
            fresh = run(engine, question, moved, scope=scope, synthesize=False)
            if _signature(again) != _signature(fresh):
                mismatches.append((question, path, value))
    assert mismatches == []


# Leaves this long get a knowledge graph, so treerag-kg (which reads the per-leaf cut) runs.
GRAPH_LEAF_CHARS = 2000


@pytest.fixture(scope="module")
def graph_index():
    """The samples with knowledge graphs on their long leaves (hashing embedder)."""
    from tests.conftest import sample_sources

    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=GRAPH_LEAF_CHARS)
    return build_index(sample_sources(), settings, get_embedder("hashing"))


def test_every_control_rerun_equals_a_fresh_run_on_the_samples(graph_index):
    engine = Engine(graph_index, get_embedder("hashing"))
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
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=GRAPH_LEAF_CHARS)
    index = build_index(sources, settings, get_embedder("hashing"))
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


def _effect(trace) -> object:
    """What a run did, without the settings it echoes, its timings or its locate inputs."""

    def strip(value):
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("settings", "inputs", "created_at") and not k.endswith("seconds")
            }
        if isinstance(value, list | tuple):
            return [strip(v) for v in value]
        return value

    return strip(trace.to_dict())


@pytest.mark.parametrize(("path", "value"), MOVES)
def test_every_move_changes_what_the_run_does(graph_index, path, value):
    """A control in MOVES that changes neither result nor trace would be a dead setting."""
    engine = Engine(graph_index, get_embedder("hashing"))
    questions = [
        ("How many epochs was AdaRouter trained for?", None),
        ("劳动合同应当具备哪些条款？", None),
        ("Which baselines does the paper compare against?", ["test_paper.md"]),
    ]
    changed = False
    for question, scope in questions:
        before, after = _before_after(path, value)
        base = run(engine, question, before, scope=scope, synthesize=False)
        moved = run(engine, question, after, scope=scope, synthesize=False)
        changed = changed or _effect(base) != _effect(moved)
    assert changed, f"{path}={value!r} changed nothing"
