"""Tests for treerag_core.llm.prompts: exact prompt text, the seed tree format, reply parsing."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from tests.conftest import skip_unless_ci
from treerag_core.base.errors import LLMError
from treerag_core.base.types import TreeNode
from treerag_core.llm.prompts import (
    build_context,
    build_locate_prompt,
    build_summary_prompt,
    build_synthesis_prompt,
    estimate_tokens,
    first_json_object,
    parse_locate_response,
    parse_summary_response,
    serialize_tree,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def make_tree(
    spec: list[tuple[str, str, int, str | None, str]], doc_id: str = "doc"
) -> list[TreeNode]:
    """TreeNodes from (node_id, heading, level, parent_id, summary), children derived."""
    children: dict[str, list[str]] = {}
    for node_id, _, _, parent, _ in spec:
        if parent is not None:
            children.setdefault(parent, []).append(node_id)
    return [
        TreeNode(
            node_id=node_id,
            doc_id=doc_id,
            heading=heading,
            level=level,
            content=f"content of {heading} must never be serialized",
            start=0,
            end=0,
            heading_path=heading,
            parent_id=parent,
            children=tuple(children.get(node_id, [])),
            summary=summary,
        )
        for node_id, heading, level, parent, summary in spec
    ]


def en_forest() -> list[TreeNode]:
    paper = make_tree(
        [
            ("0001", "AdaRouter: Adaptive Routing for FX Trading", 0, None,
             "A paper on adaptive order routing with contextual bandits."),
            ("0002", "Abstract", 1, "0001",
             "This paper proposes AdaRouter, an adaptive routing method based on "
             "contextual bandits."),
            ("0003", "1 Introduction", 1, "0001", "Background and motivation of the research."),
            ("0004", "1.1 Background", 2, "0003",
             "The state of algorithmic trading in FX markets."),
            ("0005", "1.2 Motivation", 2, "0003",
             "Limitations of existing static routing methods."),
            ("0006", "2 Methods", 1, "0001", "This chapter describes the methodology."),
            # a skipped heading level (### under #) and a multi-line summary
            ("0007", "2.1.1 Router Design", 3, "0006",
             "Contextual bandit routing decisions,\n  updated online."),
        ],
        doc_id="paper",
    )  # fmt: skip
    notes = make_tree(
        [("0008", "Release Notes", 0, None, ""), ("0009", "Version 1.0", 1, "0008", "  ")],
        doc_id="notes",
    )
    return paper + notes


def zh_forest() -> list[TreeNode]:
    return make_tree(
        [
            ("0001", "中华人民共和国民法典（节选）", 0, None, "民法典总则编与物权编的节选。"),
            ("0002", "第一编 总则", 1, "0001", "规定民事活动必须遵循的基本原则。"),
            ("0003", "第一章 基本规定", 2, "0002", "立法目的和民法调整的对象。"),
            ("0004", "第二章 自然人", 2, "0002", "自然人的民事权利能力和民事行为能力。"),
            ("0005", "第二编 物权", 1, "0001", "物权的设立、变更、转让和消灭。"),
        ]
    )


# --- serialize_tree ---------------------------------------------------------------------------


def test_serialize_tree_en_matches_golden() -> None:
    expected = (GOLDEN / "serialized_tree_en.txt").read_text(encoding="utf-8")
    assert serialize_tree(en_forest(), "en") + "\n" == expected


def test_serialize_tree_zh_matches_golden() -> None:
    expected = (GOLDEN / "serialized_tree_zh.txt").read_text(encoding="utf-8")
    assert serialize_tree(zh_forest(), "zh") + "\n" == expected


def test_serialize_tree_never_includes_content() -> None:
    text = serialize_tree(en_forest(), "en") + serialize_tree(zh_forest(), "zh")
    assert "must never be serialized" not in text


def test_serialize_tree_reproduces_the_seed_example() -> None:
    seeds = sorted(SEEDS.glob("000_*.txt"))
    if not seeds:
        skip_unless_ci("seed-notes test", f"seed notes not found beside the repo ({SEEDS})")
    seed = seeds[0].read_text(encoding="utf-8")
    block = re.search(r"```\n文档结构:\n\n(.*?)\n```", seed, re.DOTALL)
    assert block is not None, "the seed's serialized-tree example moved"
    # The seed's tree has no document root: its sections are the top level.
    spec: list[tuple[str, str, int, str | None, str]] = []
    parents: dict[int, str] = {}
    lines = block.group(1).split("\n")
    for line, summary in itertools.pairwise(lines):
        m = re.match(r"( *)\[(\d{4})\] (.*?)( \(叶子节点\))?$", line)
        if m:
            depth = len(m.group(1)) // 2
            parents[depth] = m.group(2)
            parent = parents[depth - 1] if depth else None
            spec.append((m.group(2), m.group(3), depth + 1, parent, summary.strip()[4:]))
    nodes = make_tree(spec)
    assert len(nodes) == 11
    assert serialize_tree(nodes, "zh") == block.group(1)


def test_serialize_tree_subset_starts_at_top_level() -> None:
    # A node whose parent is not in the list (e.g. a budget cut) becomes top level.
    nodes = [n for n in en_forest() if n.node_id in ("0006", "0007")]
    assert serialize_tree(nodes, "en") == (
        "[0006] 2 Methods\n  Summary: This chapter describes the methodology.\n\n"
        "  [0007] 2.1.1 Router Design (leaf)\n"
        "    Summary: Contextual bandit routing decisions, updated online."
    )
    assert serialize_tree([], "en") == ""


# --- locate prompt ----------------------------------------------------------------------------

SEED_LOCATE_ZH = """你是一个文档检索专家。给定用户问题和文档的树状结构，\
请找出最可能包含答案的叶子节点。

规则:
1. 只返回叶子节点（标记为"叶子节点"的节点）
2. 返回 1-5 个最相关的节点，不要过多
3. 为每个节点生成一个精化的 sub_query，描述你期望从该节点中找到什么信息

文档结构:
TREE

用户问题: AdaRouter的核心机制是什么？

输出严格 JSON 格式:
{
  "thinking": "简要分析问题需要哪些信息，以及这些信息可能在哪些章节",
  "results": [
    {"node_id": "0007", "sub_query": "contextual bandit路由算法的具体设计"},
    {"node_id": "0009", "sub_query": "EUR/USD上的准确率数据和对比结果"}
  ]
}"""

LOCATE_EN = """You are a document retrieval expert. Given a user question and the tree \
structure of the documents, find the leaf nodes most likely to contain the answer.

Rules:
1. Return only leaf nodes (nodes marked "leaf")
2. Return 1-5 of the most relevant nodes, not too many
3. For each node, write a refined sub_query describing what information you expect to \
find in that node

Document structure:
TREE

User question: What is AdaRouter's core mechanism?

Output strictly in JSON format:
{
  "thinking": "Briefly analyse what information the question needs and which sections \
it is likely in",
  "results": [
    {"node_id": "0007", "sub_query": "the specific design of the contextual bandit \
routing algorithm"},
    {"node_id": "0009", "sub_query": "accuracy figures on EUR/USD and comparison results"}
  ]
}"""


def test_locate_prompt_zh_is_the_seed_prompt() -> None:
    prefix, rest = build_locate_prompt("  AdaRouter的核心机制是什么？\n", "TREE", "zh")
    assert prefix + rest == SEED_LOCATE_ZH
    assert prefix.endswith("TREE\n\n") and rest.startswith("用户问题: ")


def test_locate_prompt_en_exact() -> None:
    prefix, rest = build_locate_prompt("What is AdaRouter's core mechanism?", "TREE", "en")
    assert prefix + rest == LOCATE_EN


def test_locate_prefix_is_the_same_for_every_question() -> None:
    tree = serialize_tree(zh_forest(), "zh")
    first, q1 = build_locate_prompt("问题一", tree, "zh")
    second, q2 = build_locate_prompt("问题二", tree, "zh")
    assert first == second and tree in first
    assert "问题一" in q1 and "问题一" not in first and q1 != q2


def test_locate_prompt_max_leaves_is_honest() -> None:
    zh3, _ = build_locate_prompt("q", "T", "zh", max_leaves=3)
    assert "2. 返回 1-3 个最相关的节点，不要过多" in zh3
    zh1, _ = build_locate_prompt("q", "T", "zh", max_leaves=1)
    assert "2. 返回 1 个最相关的节点，不要过多" in zh1
    en2, _ = build_locate_prompt("q", "T", "en", max_leaves=2)
    assert "2. Return 1-2 of the most relevant nodes, not too many" in en2
    with pytest.raises(ValueError, match="max_leaves"):
        build_locate_prompt("q", "T", "en", max_leaves=0)


def test_locate_prompt_keeps_braces_literal() -> None:
    prefix, rest = build_locate_prompt("what is {x}?", "[0001] {weird} heading (leaf)", "en")
    assert "[0001] {weird} heading (leaf)" in prefix
    assert "User question: what is {x}?" in rest


# --- synthesis prompt -------------------------------------------------------------------------

SEED_SYNTHESIS_ZH = """基于以下从文档中检索到的证据，回答用户的问题。

规则:
1. 只基于提供的证据回答，不要编造信息
2. 回答时在关键信息后标注来源，格式为 [来源: 章节路径]
3. 如果证据不足以完整回答，明确说明
4. 回答要简洁准确

用户问题: 为什么AdaRouter比baseline好？

检索到的证据:
[证据1] 来源: Experiments > Performance
AdaRouter在EUR/USD上达到73.2%准确率。

[证据2] 来源: Methods > Router Design
采用contextual bandit框架。

请回答:"""

SYNTHESIS_EN = """Answer the user's question based on the following evidence retrieved \
from the documents.

Rules:
1. Answer only from the evidence provided; do not make up information
2. After key information, cite its source in the format [Source: section path]
3. If the evidence is not enough for a complete answer, say so clearly
4. Keep the answer concise and accurate

User question: Why does AdaRouter beat the baseline?

Retrieved evidence:
[Evidence 1] Source: Experiments > Performance
AdaRouter achieves 73.2% accuracy on EUR/USD.

Answer:"""


def test_synthesis_prompt_zh_is_the_seed_prompt() -> None:
    evidence = [
        ("Experiments > Performance", "AdaRouter在EUR/USD上达到73.2%准确率。"),
        ("Methods > Router Design", "采用contextual bandit框架。"),
    ]
    assert build_synthesis_prompt("为什么AdaRouter比baseline好？", evidence, "zh") == (
        SEED_SYNTHESIS_ZH
    )


def test_synthesis_prompt_en_exact() -> None:
    evidence = [("Experiments > Performance", "AdaRouter achieves 73.2% accuracy on EUR/USD.")]
    prompt = build_synthesis_prompt("Why does AdaRouter beat the baseline?", evidence, "en")
    assert prompt == SYNTHESIS_EN


def test_context_without_evidence_says_so() -> None:
    assert build_context([], "zh") == "（无）"
    assert build_context([], "en") == "(none)"
    assert "Retrieved evidence:\n(none)\n\nAnswer:" in build_synthesis_prompt("q", [], "en")


# --- parse_locate_response --------------------------------------------------------------------


def test_parse_plain_json() -> None:
    text = (
        '{"thinking": "需要路由算法", "results": [{"node_id": "0007", "sub_query": "路由算法"},'
        ' {"node_id": "0009", "sub_query": "准确率"}]}'
    )
    assert parse_locate_response(text) == (
        "需要路由算法",
        [("0007", "路由算法"), ("0009", "准确率")],
    )


def test_parse_code_fence_with_prose_around() -> None:
    text = (
        "Sure! Here is my analysis.\n```json\n"
        '{\n  "thinking": "Look at methods.",\n  "results": [\n'
        '    {"node_id": "0012", "sub_query": "router design"}\n  ]\n}\n```\nHope this helps {:}'
    )
    assert parse_locate_response(text) == ("Look at methods.", [("0012", "router design")])


def test_parse_skips_braces_in_prose_and_in_strings() -> None:
    text = (
        'I considered {the intro} first. {"thinking": "a } and { inside \\" a string", '
        '"results": [{"node_id": "0003", "sub_query": "set {A}"}]} trailing'
    )
    thinking, results = parse_locate_response(text)
    assert thinking == 'a } and { inside " a string'
    assert results == [("0003", "set {A}")]


def test_parse_tolerates_trailing_commas() -> None:
    text = '{"thinking": "t", "results": [{"node_id": "0002", "sub_query": "q",},],}'
    assert parse_locate_response(text) == ("t", [("0002", "q")])


def test_parse_normalises_ids_and_drops_duplicates() -> None:
    text = (
        '{"results": [{"node_id": 7, "sub_query": "a"}, {"node_id": "[0009]", "sub_query": "b"},'
        ' {"node_id": " 12 ", "sub_query": "c"}, {"node_id": "0007", "sub_query": "dup"},'
        ' {"node_id": null}, {"node_id": true}, {"node_id": "doc2-0004", "sub_query": "d"}]}'
    )
    thinking, results = parse_locate_response(text)
    assert thinking == ""
    assert results == [("0007", "a"), ("0009", "b"), ("0012", "c"), ("doc2-0004", "d")]


def test_parse_pageindex_node_list_and_missing_sub_query() -> None:
    text = '{"thinking": "x", "node_list": ["0003", 5]}'
    assert parse_locate_response(text) == ("x", [("0003", ""), ("0005", "")])
    text = '{"results": [{"node_id": "0004"}]}'
    assert parse_locate_response(text) == ("", [("0004", "")])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I could not find anything relevant.",
        '{"thinking": "no list here"}',
        '{"thinking": "t", "results": "0007"}',
        '```json\n{"thinking": "cut off by max_tokens", "results": [{"node_id": "00',
    ],
)
def test_parse_invalid_json(text: str) -> None:
    with pytest.raises(LLMError) as info:
        parse_locate_response(text)
    assert info.value.reason == "invalid_json"


@pytest.mark.parametrize(
    "text",
    ['{"thinking": "none fit", "results": []}', '{"results": [{"node_id": null}, {}, false]}'],
)
def test_parse_empty_results(text: str) -> None:
    with pytest.raises(LLMError) as info:
        parse_locate_response(text)
    assert info.value.reason == "empty_results"


# --- summaries --------------------------------------------------------------------------------


def test_summary_prompt_lists_sections_and_keys() -> None:
    prompt = build_summary_prompt([("0003", "  第一条 为了保护民事主体……\n"), ("0004", "x")], "zh")
    assert prompt.startswith("请为下面每个文档章节写一句话摘要")
    assert '{"0003": "一句话摘要", "0004": "一句话摘要"}' in prompt
    assert prompt.endswith("章节:\n[0003]\n第一条 为了保护民事主体……\n\n[0004]\nx")
    with pytest.raises(ValueError, match="needs at least one"):
        build_summary_prompt([], "en")


def test_parse_summary_response_maps_keys() -> None:
    text = '```json\n{"3": "Purpose of the code.", "0004": " Natural\\npersons. ", "9": "x"}\n```'
    assert parse_summary_response(text, ["0003", "0004", "0005"]) == {
        "0003": "Purpose of the code.",
        "0004": "Natural persons.",
    }
    with pytest.raises(LLMError) as info:
        parse_summary_response("no json", ["0003"])
    assert info.value.reason == "invalid_json"


# --- estimate_tokens --------------------------------------------------------------------------


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("民法典") == 3
    assert estimate_tokens("民法典，abcd") == 5  # full-width comma counts as CJK
    english = "The router employs a contextual bandit framework. " * 20
    assert estimate_tokens(english) == 250


def test_first_json_object_is_public_and_reads_fences_first_then_the_text() -> None:
    text = 'Draft {"a": 1}\n```json\n{"b": 2,}\n```\nthen {"c": 3}'
    assert first_json_object(text, accept=lambda o: True) == {"b": 2}  # trailing comma mended
    assert first_json_object(text, accept=lambda o: "c" in o) == {"c": 3}
    assert first_json_object("no object here", accept=lambda o: True) is None
