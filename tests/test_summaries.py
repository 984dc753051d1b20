"""ingest.node_summaries: extractive leaf summaries and bottom-up parent summaries."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.base.types import TreeNode
from treerag_core.ingest.node_summaries import content_key, first_sentence, summarize_tree
from treerag_core.ingest.parsing import parse_document

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_docs"


def summarized(text: str, name: str = "doc.md", **kwargs) -> dict[str, TreeNode]:
    nodes = summarize_tree(parse_document(text, name, name), **kwargs)
    return {n.heading: n for n in nodes}


def test_first_sentence_strips_markdown_and_skips_non_prose() -> None:
    content = (
        "```python\nprint('code first')\n```\n\n"
        "| col a | col b |\n|---|---|\n| 1 | 2 |\n\n"
        "- The **router** uses [LinUCB](https://example.org) and `alpha=0.8` for exploration. "
        "Second sentence here."
    )
    assert first_sentence(content) == "The router uses LinUCB and alpha=0.8 for exploration."


def test_first_sentence_prefers_an_informative_one_and_falls_back_to_tables() -> None:
    assert first_sentence("Note. See below. The encoder has 4 layers and 8 heads.") == (
        "The encoder has 4 layers and 8 heads."
    )
    assert first_sentence("| Model | Accuracy |\n|---|---|\n| AdaRouter | 73.2% |") == (
        "Model; Accuracy"
    )
    assert first_sentence("```\nonly code\n```") == ""


def test_leaf_summaries_on_the_sample_paper() -> None:
    text = (SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8")
    nodes = summarized(text, "test_paper.md")
    assert nodes["4.2 Performance"].summary == (
        "AdaRouter achieves 73.2% directional accuracy on EUR/USD, compared with 65.1% for the "
        "Static Router baseline, an improvement of 8.1 points."
    )
    assert nodes["3.2.2 Router Design"].summary.startswith(
        "AdaRouter uses a contextual bandit algorithm, LinUCB, to route decisions"
    )
    assert nodes["3 Methods (intro)"].summary == nodes["3 Methods (intro)"].content


def test_parent_summary_lists_children_and_quotes_the_first_child() -> None:
    text = (SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8")
    nodes = summarized(text, "test_paper.md")
    experiments = nodes["4 Experiments"].summary
    assert experiments.startswith("Covers 4.1 Dataset, 4.2 Performance, 4.3 Ablation Study. We use")
    assert experiments.endswith("…") and len(experiments) <= 160
    methods = nodes["3 Methods"].summary
    assert "(intro)" not in methods  # synthetic children are not listed
    assert "This section formulates the routing problem" in methods
    arch = nodes["3.2 Model Architecture"].summary
    assert arch == (
        "Covers 3.2.1 Encoder Design, 3.2.2 Router Design. " + nodes["3.2.1 Encoder Design"].summary
    )


def test_root_summary_uses_title_and_abstract() -> None:
    text = (SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8")
    nodes = summarized(text, "test_paper.md")
    assert nodes["test_paper"].summary == "test_paper: " + nodes["Abstract"].summary


def test_chinese_summaries() -> None:
    text = (SAMPLE_DIR / "zh_sample.md").read_text(encoding="utf-8")
    nodes = summarized(text, "zh_sample.md")
    assert (
        nodes["1.2 技术参数"].summary
        == "X3 的额定载重为 600 公斤，最大行驶速度为每秒 1.5 米，顶升高度为 60 毫米。"
    )
    assert nodes["第一章 产品概述"].summary == (
        "包括1.1 产品简介、1.2 技术参数。" + nodes["1.1 产品简介"].summary
    )
    assert nodes["zh_sample"].summary == "zh_sample：" + nodes["前言"].summary


def test_empty_leaf_summary_comes_from_its_heading() -> None:
    nodes = summarized("# T\n\n## Empty Part\n\n## Full\n\nSome real words are here today.\n")
    assert nodes["Empty Part"].summary == "Empty Part (heading only)"
    zh = summarized(
        "# 法\n\n## 第一章 空章\n\n## 第二章 附则\n\n本法自公布之日起施行，特此说明。\n"
    )
    assert zh["第一章 空章"].summary == "第一章 空章（仅标题）"


def test_overrides_replace_summaries_and_feed_the_parent() -> None:
    text = (
        "# T\n\n## Methods\n\n### Encoder\n\nThe encoder has four layers in total.\n\n"
        "### Router\n\nr\n"
    )
    nodes = parse_document(text, "d.md", "d.md")
    encoder = next(n for n in nodes if n.heading == "Encoder")
    out = summarize_tree(nodes, overrides={content_key(encoder): "  LLM   says: encoder. "})
    by = {n.heading: n for n in out}
    assert by["Encoder"].summary == "LLM says: encoder."
    assert by["Methods"].summary == "Covers Encoder, Router. LLM says: encoder."
    assert all(n.summary == "" for n in nodes)  # inputs untouched, copies returned
    # Without overrides the extractive summaries come back: nothing of the LLM's lingers.
    plain = {n.heading: n.summary for n in summarize_tree(nodes)}
    assert plain["Encoder"] == "The encoder has four layers in total."
    assert plain["Methods"] == "Covers Encoder, Router. The encoder has four layers in total."


def test_content_key_is_sha256_of_heading_and_content() -> None:
    node = parse_document("# T\n\n## A\n\nalpha\n", "d.md", "d.md")[1]
    assert content_key(node) == hashlib.sha256(b"A\nalpha").hexdigest()
    assert content_key(replace(node, content="beta")) != content_key(node)
    assert content_key(replace(node, summary="x", node_id="9999")) == content_key(node)


def test_max_chars_is_validated_and_respected() -> None:
    nodes = parse_document((SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8"), "p", "p")
    with pytest.raises(ValueError, match="max_chars"):
        summarize_tree(nodes, max_chars=5)
    assert all(0 < len(n.summary) <= 60 for n in summarize_tree(nodes, max_chars=60))


def test_every_eval_node_gets_a_bounded_summary() -> None:
    docs = sorted(EVAL_DIR.glob("*/docs/*.md"))
    if not docs:
        skip_unless_ci("eval-data test", f"eval docs not found under {EVAL_DIR}")
    for doc in docs:
        nodes = summarize_tree(parse_document(doc.read_text(encoding="utf-8"), doc.name, doc.name))
        for node in nodes:
            assert 0 < len(node.summary) <= 160, (doc.name, node.heading_path)
            assert "](" not in node.summary and "**" not in node.summary, node.summary


def test_parent_heading_list_is_bounded_and_cleaned() -> None:
    body = "".join(
        f"### **Part {i}** of the long list\n\nPart {i} has real words in it.\n\n" for i in range(9)
    )
    nodes = summarized(f"# T\n\n## Parent\n\n{body}", max_chars=100)
    summary = nodes["Parent"].summary
    assert summary.startswith("Covers Part 0 of the long list, Part 1 of the long list and more.")
    assert "**" not in summary and len(summary) <= 100
    zh = "".join(
        f"### 第{i}节 很长很长的一个标题名称\n\n第{i}条 这里有足够多的中文内容。\n\n"
        for i in range(1, 9)
    )
    zh_nodes = summarized(f"# 法\n\n## 第一章 总则\n\n{zh}", max_chars=60)
    assert zh_nodes["第一章 总则"].summary.startswith("包括第1节 很长很长的一个标题名称等。第1条")
