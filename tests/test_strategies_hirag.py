"""The five HiRAG strategies on the sample corpus: registered, passages with offsets, sections."""

from __future__ import annotations

import pytest

from treerag_core.base.settings import QuerySettings
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.strategies import get_strategy
from treerag_core.strategies.base import QueryContext
from treerag_core.strategies.hirag.retriever import HiragOptions

NAMES = ("hirag-naive", "hirag-local", "hirag-global", "hirag-bridge", "hirag")
QUESTION = "How does the bandit router choose the breakout expert?"


def run(index, name, question=QUESTION, scope=None, settings=None):
    strategy = get_strategy(name)
    embedder = get_embedder("hashing")
    ctx = QueryContext(
        index,
        question,
        "en",
        strategy.effective_settings(settings or QuerySettings(strategy=name)),
        scope,
        embedder.embed_query,
        tokenize,
    )
    located = strategy.locate(ctx)
    assert located.locator == "none" and located.leaves == ()
    return strategy.retrieve(ctx, located), ctx


@pytest.mark.parametrize("name", NAMES)
def test_every_mode_returns_passages_with_offsets(hashing_index, name):
    result, _ = run(hashing_index, name)
    assert result.candidates and len(result.candidates) <= 40
    for hit in result.candidates:
        chunk = hit.chunk
        assert hashing_index.texts[chunk.doc_id][chunk.start : chunk.end] == chunk.text
    assert [h.leaf_rank for h in result.candidates] == sorted(
        h.leaf_rank for h in result.candidates
    )
    strategy = get_strategy(name)
    assert not strategy.reads_structure and not strategy.locates


def test_sections_per_mode(hashing_index):
    kinds = {name: [s.kind for s in run(hashing_index, name)[0].sections] for name in NAMES}
    assert kinds["hirag-naive"] == []
    assert kinds["hirag-local"] == ["entities", "relations"]
    assert kinds["hirag-global"] == ["reports"]
    assert kinds["hirag-bridge"] == ["path"]
    assert kinds["hirag"] == ["entities", "relations", "reports", "path"]


def test_bridge_is_deterministic_and_no_path_recorded(hashing_index):
    first, ctx = run(hashing_index, "hirag-bridge")
    again, _ = run(hashing_index, "hirag-bridge")
    assert first.sections == again.sections
    assert [h.chunk.chunk_id for h in first.candidates] == [
        h.chunk.chunk_id for h in again.candidates
    ]
    path_rows = first.sections[0].rows
    if any(row["path"] == "no path" for row in path_rows):
        assert any(f.reason == "no_path" for f in ctx.fallbacks)


def test_scope_and_options(hashing_index):
    result, _ = run(hashing_index, "hirag", question="劳动合同 解除", scope=["zh_sample.md"])
    assert {h.chunk.doc_id for h in result.candidates} == {"zh_sample.md"}
    # Every section cites passages of the scope only (the answer's sources are traced to them).
    assert {s.kind for s in result.sections} >= {"entities", "relations", "reports"}
    for section in result.sections:
        docs = {hashing_index.chunks[hashing_index.chunk_row(c)].doc_id for c in section.chunk_ids}
        assert docs == {"zh_sample.md"}, section.kind
    settings = QuerySettings(strategy="hirag-local").with_option("hirag", HiragOptions(top_k=3))
    result, _ = run(hashing_index, "hirag-local", settings=settings)
    assert len(result.sections[0].rows) == 3


def test_graph_unit_order_keeps_the_graph_order(hashing_index):
    hybrid, _ = run(hashing_index, "hirag-local")
    settings = QuerySettings(strategy="hirag-local").with_option(
        "hirag", HiragOptions(unit_order="graph")
    )
    graph, _ = run(hashing_index, "hirag-local", settings=settings)
    ids = lambda r: [h.chunk.chunk_id for h in r.candidates]  # noqa: E731
    assert sorted(ids(graph)) == sorted(ids(hybrid))  # the same units, in another order
    fused = [h.fused for h in hybrid.candidates]
    assert fused == sorted(fused, reverse=True)


def test_rows_name_their_passage_and_the_text_cites_it(hashing_index):
    result, _ = run(hashing_index, "hirag")
    paths = {c.heading_path for c in hashing_index.chunks}
    for section in result.sections:
        named = [r["found_in"] for r in section.rows if r.get("found_in")]
        assert named and set(named) <= paths, section.kind
        assert f"[Source: {named[0]}]" in section.text


def test_trace_records_the_query_params_and_the_answer_cites_the_graph(hashing_index):
    from treerag_core.pipeline import Engine
    from treerag_core.pipeline import run as run_pipeline

    engine = Engine(hashing_index, get_embedder("hashing"))
    settings = (
        QuerySettings(strategy="hirag").set("rerank.enabled", False).set("llm.enabled", False)
    )
    trace = run_pipeline(engine, QUESTION, settings)
    options = trace.settings["options"]["hirag"]
    assert (options["top_k"], options["top_m"], options["level"]) == (20, 10, 2)
    assert "Graph context:" in trace.answer
    graph_part = trace.answer.split("Graph context:")[1]
    cited = {c.heading_path for c in trace.citations}
    for section in trace.sections:
        first = next(r["found_in"] for r in section.rows if r.get("found_in"))
        if section.kind != "path":
            assert f"- {section.title}: " in graph_part and first in cited
    assert all(c.node_ids for c in trace.citations if c.heading_path in graph_part)


@pytest.mark.parametrize(
    ("name", "options", "units"),
    [
        ("hirag-naive", HiragOptions(naive_text_unit_tokens=100), 2),
        ("hirag", HiragOptions(text_unit_tokens=100), 1),
    ],
)
def test_a_tiny_unit_set_reports_forced_min_max_in_the_trace(hashing_index, name, options, units):
    from treerag_core.pipeline import Engine
    from treerag_core.pipeline import run as run_pipeline
    from treerag_core.records.audit_record import stage_hits

    settings = (
        QuerySettings(strategy=name)
        .with_option("hirag", options)
        .set("rerank.enabled", False)
        .set("llm.enabled", False)
    )
    trace = run_pipeline(Engine(hashing_index, get_embedder("hashing")), QUESTION, settings)
    # A 100-token budget keeps one or two units (the hashing index's are fixed).
    assert len(trace.candidates) == units
    assert [c.minmax_forced for c in trace.candidates] == [True] + [False] * (units - 1)
    assert trace.candidates[0].minmax_forced  # the best unit's 1.0 comes from min-max alone
    fusion_hits = [c for c in stage_hits(trace) if c.stage == "fusion"]
    assert fusion_hits[0].score_details["minmax_forced"] is True  # the audit record says so
