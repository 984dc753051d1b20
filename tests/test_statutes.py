"""A statute's articles (第X条 paragraphs) become leaves under their chapter and section."""

from __future__ import annotations

from treerag_core.ingest.parsing import parse_document
from treerag_core.ingest.statutes import scan_articles

LAW = """# 中华人民共和国示例法

2020年1月1日 通过

## 第一章 总则

第一条 为了规范示例，制定本法。

第二条 本法适用于示例。

依照本法第三条规定的除外。

## 第二章 分则

### 第一节 一般规定

第三条 【定义】本法所称示例，是指示例。

第三条之一 补充的条文。

### 第二节 特别规定

第五条 跳过了第四条。

第五条 重复的条号。

## 附则

第六条 本法自公布之日起施行。
"""


def _leaves(text: str, max_depth: int = 3) -> list[tuple[str, str]]:
    nodes = parse_document(text, "law", "law.md", max_depth=max_depth, article_leaves=True)
    assert all(text[n.start : n.end] == n.content for n in nodes)
    return [(n.heading_path, n.content) for n in nodes if not n.children]


def test_articles_are_leaves_under_chapter_and_section():
    leaves = _leaves(LAW)
    assert [p for p, _ in leaves] == [
        "前言",
        "第一章 总则 > 第一条",
        "第一章 总则 > 第二条",
        "第二章 分则 > 第一节 一般规定 > 第三条 定义",
        "第二章 分则 > 第一节 一般规定 > 第三条之一",
        "第二章 分则 > 第二节 特别规定 > 第五条",
        "第二章 分则 > 第二节 特别规定 > 第五条",
        "附则 > 第六条",
    ]
    # An article holds its own paragraphs; its number is its title, not its text.
    assert leaves[2][1] == "本法适用于示例。\n\n依照本法第三条规定的除外。"
    assert leaves[3][1] == "本法所称示例，是指示例。"


def test_articles_stay_leaves_below_the_depth_cap():
    paths = [p for p, _ in _leaves(LAW, max_depth=1)]
    assert "第二章 分则 > 第三条 定义" in paths  # 节 is cut at depth 1, its articles are not
    assert "第二章 分则 > 第五条" in paths


def test_articles_found_equal_article_paragraphs():
    paragraphs = [p for p in LAW.split("\n\n") if p.startswith("第") and "条" in p[:8]]
    assert len(scan_articles(LAW, [], [])) == len(paragraphs) == 7


def test_a_few_cited_articles_are_not_a_statute():
    text = "## 说明\n\n第一条 见上文。\n\n第二条 见下文。\n"
    assert scan_articles(text, [], []) == []
    assert [p for p, _ in _leaves(text)] == ["说明"]


def test_articles_already_headings_are_left_alone():
    text = "## 第一章\n\n### 第一条\n\n内容。\n\n### 第二条\n\n"
    text += "第三条 甲。\n\n第四条 乙。\n\n第五条 丙。\n"
    assert scan_articles(text, [], ["第一章", "第一条", "第二条"]) == []


def test_articles_in_fenced_code_are_text():
    text = "```\n第一条 a\n第二条 b\n第三条 c\n```\n"
    assert scan_articles(text, [], []) == []


def test_odd_article_numbers_are_noted_and_kept():
    from treerag_core.ingest.convert import convert_bytes

    doc = convert_bytes("law.md", LAW.encode("utf-8"), 1024 * 1024)
    assert "statute: 7 articles (第X条) become the leaves of their chapters" in doc.notes
    assert "statute: article numbers used twice: 第五条" in doc.notes
    assert "statute: article numbers skipped: 4" in doc.notes
