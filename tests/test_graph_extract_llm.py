"""The LLM graph extractor through the real SDK and a fake server: typed entities, relations
traced to chunks, one call per leaf block, cached by content key, resumable after a failure."""

from __future__ import annotations

import pytest
from fake_anthropic import FakeAnthropicServer, reply, status

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.types import TreeNode
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.llm import AnthropicClient
from treerag_core.strategies.graph.extract_llm import LLMGraphExtractor, blocks, extract_llm
from treerag_core.strategies.graph.part import graphs_of
from treerag_core.strategies.graph.prompts import build_graph_prompt, parse_graph_response

KEY = "sk-ant-test-graphs"
LAW = ["劳动合同法(2012-12-28).md"]
SETTINGS = IndexSettings(embedder="hashing", graph_min_leaf_chars=2000, llm_graphs=True)


def law_reply(body) -> object:
    """Entities that occur in every long leaf of the labour law, one that never does."""
    return reply(
        '("entity", "用人单位", "组织", "雇用劳动者的单位")\n'
        '("entity", "劳动者", "人物", "提供劳动的人")\n'
        '("entity", "火星基地", "地点", "不在原文中")\n'
        '("relationship", "用人单位", "劳动者", "订立合同", "用人单位与劳动者订立劳动合同", 8)\n'
        '("relationship", "用人单位", "火星基地", "位于", "不在原文中", 3)\n'
    )


def client(server) -> AnthropicClient:
    return AnthropicClient(KEY, base_url=server.base_url, timeout=5, max_retries=0)


def test_prompt_follows_the_seed_shape_in_the_text_language():
    zh = build_graph_prompt("劳动者享有平等就业的权利。", "zh")
    assert zh.startswith("从文本中提取实体和关系。") and '("relationship", "源实体"' in zh
    en = build_graph_prompt("The encoder reads trees.", "en")
    assert en.startswith("Extract entities and relationships") and en.endswith("reads trees.\n")
    with pytest.raises(ValueError, match="needs non-empty text"):
        build_graph_prompt("  ", "en")


def test_parser_skips_malformed_lines():
    entities, relations = parse_graph_response(
        '("entity", "BERT", "method", "a model")\n("entity", "broken"\n'
        "(“relationship”，“BERT”，“GLUE”，“evaluated on”，“scores”，9)\n"
        '("relationship", "BERT", "SQuAD", "tested on", "no strength")'
    )
    assert [e.name for e in entities] == ["BERT"]
    assert [(r.target, r.strength) for r in relations] == [("GLUE", 9.0), ("SQuAD", 1.0)]


def test_entities_map_to_offsets_and_chunks_and_usage_is_counted():
    text = "用人单位应当与劳动者订立书面劳动合同。劳动者有权拒绝违章指挥。"
    leaf = TreeNode("0005", "law", "第二章", 1, text, 0, len(text), "第二章")
    chunks = chunk_leaf(leaf, text, chunk_size=40, overlap=10, min_chars=5)
    with FakeAnthropicServer(law_reply(None), api_key=KEY) as fake:
        concepts, relations, usage = extract_llm(
            chunks, "zh", client(fake), "claude-haiku-4-5", "0005"
        )
    assert [c.name for c in concepts] == ["用人单位", "劳动者"]  # 火星基地 is not in the text
    workers = concepts[1]
    assert workers.kind == "人物" and workers.count == 2
    assert all(text[s.start : s.end] == "劳动者" and s.chunk_ids for s in workers.mentions)
    (rel,) = relations
    assert (rel.source, rel.target, rel.label, rel.weight) == (
        "0005#c1",
        "0005#c2",
        "订立合同",
        8.0,
    )
    assert (
        rel.directed
        and rel.evidence
        and "用人单位" in text[rel.evidence[0].start : rel.evidence[0].end]
    )
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost_usd > 0


def test_graphs_are_cached_and_a_failure_resumes():
    sources = sample_sources(LAW)
    embedder = get_embedder("hashing")
    with FakeAnthropicServer(reply("x"), status(500), responder=law_reply, api_key=KEY) as fake:
        # The first leaf gets an unusable reply (no tuples), the second call fails.
        broken = LLMGraphExtractor(client(fake), "claude-haiku-4-5")
        first = build_index(sources, SETTINGS, embedder, graph_extractor=broken)
        assert broken.failure is not None and broken.fallback_leaves
        llm_made = {k for k, g in graphs_of(first).items() if g.extractor.startswith("llm:")}
        assert len(llm_made) == 1
        assert {k for k, g in graphs_of(first).items() if g.extractor == "offline"} == set(
            broken.fallback_leaves
        )
        calls = len(fake.requests)

        resumed = LLMGraphExtractor(client(fake), "claude-haiku-4-5")
        second = build_index(sources, SETTINGS, embedder, previous=first, graph_extractor=resumed)
        assert resumed.failure is None
        assert len(fake.requests) - calls == sum(
            len(blocks([c for c in first.chunks if c.source_node_id == leaf]))
            for leaf in broken.fallback_leaves
        )
        assert all(g.extractor == "llm:claude-haiku-4-5" for g in graphs_of(second).values())
        assert graphs_of(second)[next(iter(llm_made))] == graphs_of(first)[next(iter(llm_made))]

        calls = len(fake.requests)
        again = LLMGraphExtractor(client(fake), "claude-haiku-4-5")
        third = build_index(sources, SETTINGS, embedder, previous=second, graph_extractor=again)
        assert len(fake.requests) == calls and again.usage.input_tokens == 0
        assert graphs_of(third) == graphs_of(second)


def test_a_leaf_failing_on_a_later_block_still_counts_the_calls_it_made():
    text = "用人单位应当与劳动者订立书面劳动合同。" * 12  # two blocks at 150 characters a block
    leaf = TreeNode("0007", "law", "第三章", 1, text, 0, len(text), "第三章")
    chunks = chunk_leaf(leaf, text, chunk_size=60, overlap=0, min_chars=5)
    assert len(blocks(chunks, 150)) >= 2
    with FakeAnthropicServer(law_reply(None), status(500), api_key=KEY) as fake:
        extractor = LLMGraphExtractor(client(fake), "claude-haiku-4-5", block_chars=150)
        graph = extractor(leaf, chunks, "zh")
    assert extractor.failure is not None and graph.extractor == "offline"
    assert extractor.usage.input_tokens > 0  # the first block's call was paid for
