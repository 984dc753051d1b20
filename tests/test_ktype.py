"""K-Type document summaries: extractive offline, LLM batched and cached by content hash."""

from __future__ import annotations

import json

import pytest

from treerag_core.base.errors import LLMError
from treerag_core.base.types import DocumentInfo, TreeNode, Usage
from treerag_core.strategies.drilldown.ktype import (
    KTypeSummary,
    build_ktype_prompt,
    document_key,
    leaf_type,
    make_ktype_summarizer,
    parse_ktype_response,
    render_ktype,
    type_shares,
)
from treerag_core.strategies.drilldown.layers import layers_of


def _leaf(content: str, heading: str = "H") -> TreeNode:
    return TreeNode("1", "d", heading, 1, content, 0, len(content), heading)


def test_leaf_types_from_layout_cues():
    assert leaf_type(_leaf("1. Open the console.\n2. Click New key.\n")) == "Procedure"
    assert leaf_type(_leaf("| a | b |\n|---|---|\n| 1 | 2 |\n")) == "Reference"
    assert leaf_type(_leaf("第三十七条 劳动者提前三十日以书面形式通知用人单位。")) == "Rule"
    assert leaf_type(_leaf("We explain why routers help sparse models.")) == "Concept"
    shares = type_shares([_leaf("1. a\n2. b\n" * 30), _leaf("plain text " * 10)])
    assert shares[0][0] == "Procedure" and sum(s for _, s in shares) == pytest.approx(1, abs=0.02)


def test_render_follows_the_seed_in_both_languages():
    zh = KTypeSummary(
        "d",
        "API 集成指南",
        "zh",
        (("Procedure", 0.75), ("Concept", 0.25)),
        ("安装配置",),
        "高实操性",
    )
    assert render_ktype(zh) == (
        "API 集成指南。本文档以 Procedure(操作步骤)(75%) 为主导，辅以 Concept(原理说明)(25%)。"
        "核心知识模块：[安装配置]。认知价值：高实操性。"
    )
    en = KTypeSummary("d", "Guide", "en", (("Reference", 1.0),), ("A", "B"), "lookups", ("x",))
    assert render_ktype(en) == (
        "Guide. Mostly Reference (100%). Core modules: A; B. Key terms: x. Good for: lookups."
    )
    assert KTypeSummary.from_dict(en.to_dict()) == en


def test_extractive_summaries_of_the_sample_documents(hashing_index):
    layers = layers_of(hashing_index)
    law = layers.summaries["劳动合同法(2012-12-28).md"]
    assert law.method == "extractive" and law.types[0][0] == "Rule"
    assert "第一章 总则" in law.modules and "劳动合同" in law.key_terms
    paper = layers.summaries["test_paper.md"]
    assert paper.modules[0] == "Abstract" and paper.key_terms
    assert paper.text.startswith(paper.title)


def test_prompt_and_parse():
    prompt = build_ktype_prompt([("k1", "Guide", "- Install")], "en")
    assert "[k1] Guide\n- Install" in prompt and "Procedure, Reference, Rule, Concept" in prompt
    reply = (
        'ok {"k1": {"types": {"Procedure": 3, "Concept": 1}, "modules": ["Install"], "use": "x"}}'
    )
    parsed = parse_ktype_response(reply, ["k1", "k2"])
    assert parsed == {
        "k1": {
            "types": [["Procedure", 0.75], ["Concept", 0.25]],
            "modules": ["Install"],
            "use": "x",
        }
    }
    with pytest.raises(LLMError, match="no JSON"):
        parse_ktype_response("sorry", ["k1"])
    with pytest.raises(ValueError, match="needs at least one document"):
        build_ktype_prompt([], "en")


class FakeClient:
    """The LLM seam: `complete(prefix, rest, model, max_tokens) -> (text, Usage)`."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, prefix: str, rest: str, model: str, max_tokens: int):
        self.prompts.append(rest)
        keys = [line[1:33] for line in rest.splitlines() if line.startswith("[")]
        reply = {k: {"types": {"Procedure": 1}, "modules": ["M"], "use": "ops"} for k in keys}
        return json.dumps(reply), Usage(10, 10)


def _doc(name: str, sha: str) -> DocumentInfo:
    return DocumentInfo(name, name, name.upper(), "en", sha, 10, "0001")


def test_llm_summarizer_batches_and_caches():
    client = FakeClient()
    docs = [(_doc(f"d{i}", f"sha{i}"), [_leaf("x")]) for i in range(7)]
    summarize = make_ktype_summarizer(client, "m", cache={}, batch_size=5)
    got = summarize(docs)
    assert len(client.prompts) == 2 and len(got) == 7  # 5 + 2 documents
    again = make_ktype_summarizer(client, "m", cache=got)(docs)
    assert again == got and len(client.prompts) == 2  # cached by content hash: no new call
    assert document_key(_doc("d0", "sha0")) != document_key(_doc("d0", "other"))


def test_llm_summaries_land_in_the_index_and_its_cache(tmp_path):
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import load_index, save_index

    client = FakeClient()
    settings = IndexSettings(embedder="hashing")
    sources = sample_sources(["test_paper.md"])
    summarizer = make_ktype_summarizer(client, "m", cache={})
    index = build_index(sources, settings, get_embedder("hashing"), ktype_summarizer=summarizer)
    summary = layers_of(index).summaries["test_paper.md"]
    assert summary.method == "llm" and summary.modules == ("M",) and "Good for: ops" in summary.text
    loaded = load_index(save_index(index, tmp_path / "ix"))
    assert layers_of(loaded).summaries == layers_of(index).summaries
    assert layers_of(loaded).ktype_cache == layers_of(index).ktype_cache
    # A rebuild without a client keeps the cached LLM summaries of unchanged documents.
    rebuilt = build_index(sources, settings, get_embedder("hashing"), previous=loaded)
    assert layers_of(rebuilt).summaries["test_paper.md"].method == "llm"
