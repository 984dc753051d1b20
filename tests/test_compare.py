"""Comparing strategies: every registered runnable strategy, no LLM call, step 1 reused."""

from __future__ import annotations

import pytest

from treerag_core.base.errors import QueryError
from treerag_core.base.settings import QuerySettings
from treerag_core.compare import compare_strategies
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine, run
from treerag_core.strategies import strategy_names

QUESTION = "How many epochs was the model trained for?"


@pytest.fixture(scope="module")
def engine(hashing_index):
    return Engine(index=hashing_index, embedder=get_embedder("hashing"), api_key="unused")


def test_every_runnable_strategy_runs_without_the_llm_and_reuses_step_1(engine):
    settings = QuerySettings().set("rerank.enabled", False)
    scope = ["test_paper.md"]
    first = run(engine, QUESTION, settings.set("llm.enabled", False), scope=scope, synthesize=False)
    results = compare_strategies(
        engine, QUESTION, settings, scope=scope, located=first.locate, located_by=first.strategy
    )
    assert [r.strategy for r in results] == strategy_names(runnable=True)
    for r in results:
        if r.strategy == "treerag-kg":  # needs an index built with graphs, and says so
            assert r.trace is None and "rebuild it to add graphs" in r.error
            continue
        assert r.trace is not None, r.error
        assert r.error == "" and r.trace.strategy == r.strategy
        assert r.trace.provider["llm"] is False and not r.trace.answer
        assert r.trace.reranked and all(h.chunk.doc_id == "test_paper.md" for h in r.trace.reranked)
    own = next(r for r in results if r.strategy == first.strategy)
    assert own.trace.locate is first.locate  # the stored step 1 held


def test_a_failing_strategy_is_reported_and_the_others_still_run(engine):
    results = compare_strategies(
        engine, QUESTION, QuerySettings(), strategies=["flat-bm25", "oracle-sections"]
    )
    ran, failed = results
    assert ran.error == "" and ran.trace.strategy == "flat-bm25" and ran.trace.reranked
    assert failed.trace is None and isinstance(failed.failure, QueryError)
    assert failed.error == "oracle-sections needs the gold leaves (evaluation only)"
