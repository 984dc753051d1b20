"""Tests for treerag_core.ingest.parsing: heading detection, level inference, spans and coverage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.base.text_rules import ARTICLE_OPENING, detect_language
from treerag_core.base.types import TreeNode
from treerag_core.ingest.parsing import parse_document, preamble_text, scan_headings

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "sample_docs"

EVAL_SETS = ("qasper", "lecoqa_laws", "gitlab_handbook")
ATX_LINE = re.compile(r"^ {0,3}#{1,6}[ \t]+\S")


def parse(text: str, name: str = "doc.md", **kwargs) -> list[TreeNode]:
    return parse_document(text, doc_id=name, name=name, **kwargs, article_leaves=True)


def by_heading(nodes: list[TreeNode]) -> dict[str, TreeNode]:
    return {n.heading: n for n in nodes}


def paths(nodes: list[TreeNode]) -> list[str]:
    return [n.heading_path for n in nodes[1:]]


def check_structure(text: str, nodes: list[TreeNode], first_id: int = 1) -> None:
    """Spans, ids, parent/child links and levels are consistent."""
    ids = [n.node_id for n in nodes]
    assert ids == [f"{i:04d}" for i in range(first_id, first_id + len(nodes))]
    index = {n.node_id: n for n in nodes}
    root = nodes[0]
    assert root.level == 0 and root.parent_id is None and root.heading_path == root.heading
    assert (root.start, root.end, root.content) == (0, 0, "")
    assert sum(n.is_root for n in nodes) == 1
    for n in nodes:
        assert text[n.start : n.end] == n.content
        assert n.content == n.content.strip()
        assert n.summary == ""
        for child_id in n.children:
            child = index[child_id]
            assert child.parent_id == n.node_id
            assert child.level == n.level + 1
            assert int(child_id) > int(n.node_id)
        if n.parent_id is not None:
            parent = index[n.parent_id]
            assert n.node_id in parent.children
            expected = n.heading if parent.is_root else f"{parent.heading_path} > {n.heading}"
            if n.synthetic and not parent.is_root:
                expected = parent.heading_path  # an intro leaf answers to its parent's path
            assert n.heading_path == expected
        if n.synthetic and n.parent_id != root.node_id:
            parent = index[n.parent_id]
            assert parent.children[0] == n.node_id
            assert (n.start, n.end) == (parent.start, parent.end)
    assert all(not index[c].is_root for n in nodes for c in n.children)
    assert root.children, "a root always has at least one leaf"


def uncovered_lines(text: str, nodes: list[TreeNode]) -> list[str]:
    """Lines holding non-whitespace characters that lie in no leaf's span."""
    spans = sorted((n.start, n.end) for n in nodes if n.is_leaf)
    gaps, pos = [], 0
    for start, end in spans:
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    gaps.append((pos, len(text)))
    lines: dict[int, str] = {}
    for lo, hi in gaps:
        for m in re.finditer(r"\S[^\n]*", text[lo:hi]):
            at = lo + m.start()
            line_start = text.rfind("\n", 0, at) + 1
            line_end = text.find("\n", at)
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            part = m.group().strip()
            if line.strip() != part:
                # A statute's article number is its leaf's title, the rest of the line its text.
                opening = ARTICLE_OPENING.match(line.lstrip())
                assert opening and part.startswith(opening.group()), "an uncovered part of a line"
            lines[line_start] = line
    return list(lines.values())


def assert_full_coverage(text: str, nodes: list[TreeNode]) -> None:
    """Every non-blank character outside heading lines lies in a leaf; only headings are out."""
    check_structure(text, nodes, int(nodes[0].node_id))
    out = uncovered_lines(text, nodes)
    heading_like = [x for x in out if ATX_LINE.match(x) or ARTICLE_OPENING.match(x)]
    assert heading_like == out, [x for x in out if x not in heading_like]
    sections = [n for n in nodes if not n.is_root and not n.synthetic]
    # Each section's own heading line is out; so is the title line when it became the root.
    assert len(sections) <= len(out) <= len(sections) + 1
    assert all(any(n.heading in line for line in out) for n in sections)


# --- ATX and setext headings ------------------------------------------------------------------


def test_atx_levels_closing_hashes_and_indentation() -> None:
    text = "# A #\n\n##   B   ###\n\n   ### C\n\n    #### not (code)\n\n#not a heading\n\n##\n"
    found = scan_headings(text)
    assert [(h.hashes, h.text) for h in found] == [(1, "A"), (2, "B"), (3, "C")]
    assert text[found[1].start : found[1].end] == "##   B   ###\n"


def test_atx_heading_ids_in_hugo_anchor_are_stripped_but_text_is_kept() -> None:
    found = scan_headings("## Product Groups{#product-groups}\n\n### 第二分编\u2002\u2002所有权\n")
    assert [h.text for h in found] == ["Product Groups", "第二分编\u2002\u2002所有权"]


def test_empty_atx_heading_stays_text() -> None:
    text = "# T\n\n## A\n\nbody\n\n##\n\nmore\n"
    nodes = parse(text)
    assert [n.heading for n in nodes] == ["T", "A"]
    assert nodes[1].content == "body\n\n##\n\nmore"


def test_setext_headings_and_thematic_break() -> None:
    text = "Title\n=====\n\nIntro.\n\nPart one\n---\n\ntext one\n\n---\n\ntext two\n"
    found = scan_headings(text)
    assert [(h.hashes, h.text) for h in found] == [(1, "Title"), (2, "Part one")]
    nodes = parse(text)
    assert nodes[0].heading == "Title"
    assert by_heading(nodes)["Part one"].content == "text one\n\n---\n\ntext two"


def test_setext_underline_after_list_or_table_is_not_a_heading() -> None:
    text = "- item\n---\n\n| a | b |\n---\n\nplain\nmore plain\n===\n"
    assert [(h.hashes, h.text) for h in scan_headings(text)] == [(1, "plain more plain")]


def test_headings_in_fenced_code_are_ignored() -> None:
    text = (
        "## Real\n\n```python\n# comment\n## not heading\n```\n\n"
        "~~~~ md\n# no\n~~~\n## still code (short fence)\n~~~~~\n\n"
        "````\n```\n# no\n```\n````\n\n## After\n\n```\n# unclosed runs to the end\n"
    )
    assert [h.text for h in scan_headings(text)] == ["Real", "After"]


def test_yaml_front_matter_is_not_a_setext_heading() -> None:
    text = "---\ntitle: Hello\n---\n\n## Section\n\nbody\n"
    nodes = parse(text)
    assert [n.heading for n in nodes[1:]] == ["Preamble", "Section"]
    assert nodes[1].content == "---\ntitle: Hello\n---"


# --- title and levels -------------------------------------------------------------------------


def test_single_level_one_heading_becomes_the_title() -> None:
    text = "# My Paper\n\nabstract text\n\n## Intro\n\nx\n\n### Detail\n\ny\n"
    nodes = parse(text, "paper.md")
    assert nodes[0].heading == "My Paper" and nodes[0].heading_path == "My Paper"
    assert paths(nodes) == ["Preamble", "Intro", "Intro", "Intro > Detail"]
    assert [n.level for n in nodes] == [0, 1, 1, 2, 2]


def test_several_level_one_headings_use_the_file_stem() -> None:
    nodes = parse("# A\n\na\n\n# B\n\nb\n", "notes.v2.md")
    assert nodes[0].heading == "notes.v2"
    assert paths(nodes) == ["A", "B"]
    nodes = parse("## A\n\na\n\n# B\n\nb\n", "x.md")  # first heading not level 1
    assert nodes[0].heading == "x" and paths(nodes) == ["A", "B"]


def test_skipped_hash_level_becomes_a_child() -> None:
    nodes = parse("# A\n\n### B\n\nb\n\n# C\n\nc\n", "d.md")
    b = by_heading(nodes)["B"]
    assert b.level == 2 and b.heading_path == "A > B"
    assert by_heading(nodes)["C"].level == 1


def test_decimal_numbering_wins_over_flat_hashes() -> None:
    text = "## 1 Intro\n\na\n\n## 1.1 Background\n\nb\n\n## 1.1.1 Deep\n\nc\n\n## 2 Methods\n\nd\n"
    assert paths(parse(text)) == [
        "1 Intro",
        "1 Intro",
        "1 Intro > 1.1 Background",
        "1 Intro > 1.1 Background",
        "1 Intro > 1.1 Background > 1.1.1 Deep",
        "2 Methods",
    ]


def test_chinese_ranks_map_to_consecutive_depths() -> None:
    law = (
        "# 某法\n\n## 第一章 总则\n\n第一条 内容。\n\n## 第二章 分则\n\n"
        "## 第一节 一般规定\n\n第二条 内容。\n\n## 第二节 特别规定\n\n第三条 内容。\n\n"
        "## 第三章 附则\n\n第四条 内容。\n"
    )
    nodes = parse(law)
    assert paths(nodes) == [  # articles are the leaves (tests/test_statutes.py)
        "第一章 总则",
        "第一章 总则 > 第一条",
        "第二章 分则",
        "第二章 分则 > 第一节 一般规定",
        "第二章 分则 > 第一节 一般规定 > 第二条",
        "第二章 分则 > 第二节 特别规定",
        "第二章 分则 > 第二节 特别规定 > 第三条",
        "第三章 附则",
        "第三章 附则 > 第四条",
    ]
    assert by_heading(nodes)["第一章 总则"].level == 1  # no 编: 章 is depth 1
    coded = "## 第一编 总则\n\n### 第一章 任务\n\n甲。\n\n## 第二编 分则\n\n### 第一章 罪\n\n乙。\n"
    assert paths(parse(coded, "刑法.md")) == [
        "第一编 总则",
        "第一编 总则 > 第一章 任务",
        "第二编 分则",
        "第二编 分则 > 第一章 罪",
    ]


def test_unnumbered_books_reset_chinese_numbering() -> None:
    # 民法典 style: unnumbered 编 headings, numbering restarts under each of them.
    text = (
        "# 民法典\n\n## 合同编\n\n### 第一分编  通则\n\n#### 第一章  一般规定\n\n甲。\n\n"
        "### 第二分编  典型合同\n\n#### 第十九章  运输合同\n\n"
        "##### 第四节  多式联运合同\n\n乙。\n\n"
        "## 人格权编\n\n### 第一章  一般规定\n\n丙。\n"
    )
    nodes = parse(text, max_depth=4)
    assert "合同编 > 第二分编  典型合同 > 第十九章  运输合同 > 第四节  多式联运合同" in paths(nodes)
    assert by_heading(nodes)["人格权编"].level == 1
    assert [n.heading_path for n in nodes if n.heading == "第一章  一般规定"] == [
        "合同编 > 第一分编  通则 > 第一章  一般规定",
        "人格权编 > 第一章  一般规定",
    ]


def test_mixed_families_fall_back_to_hash_count() -> None:
    text = "# 第一章 概述\n\n## 1.1 简介\n\n甲。\n\n## 1.2 参数\n\n乙。\n\n# 第二章 部署\n\n丙。\n"
    nodes = parse(text, "手册.md")
    assert paths(nodes) == [
        "第一章 概述",
        "第一章 概述 > 1.1 简介",
        "第一章 概述 > 1.2 参数",
        "第二章 部署",
    ]


def test_numbered_list_restarting_under_more_hashes_nests() -> None:
    text = (
        "## 1. Plan\n\n### 1. Draft\n\na\n\n### 2. Review\n\nb\n\n## 2. Build\n\n"
        "### 4.1 Travel\n\n#### 1. Receipts\n\nc\n\n## 3. Ship\n\nd\n"
    )
    nodes = parse(text, max_depth=4)
    assert paths(nodes) == [
        "1. Plan",
        "1. Plan > 1. Draft",
        "1. Plan > 2. Review",
        "2. Build",
        "2. Build > 4.1 Travel",
        "2. Build > 4.1 Travel > 1. Receipts",
        "3. Ship",
    ]


def test_eval_gold_section_paths_are_node_paths() -> None:
    if not EVAL_DIR.exists():
        skip_unless_ci("eval-data test", f"eval data not found at {EVAL_DIR}")
    for name in ("qasper", "lecoqa_laws", "gitlab_handbook"):
        node_paths: dict[str, set[str]] = {}
        for doc in (EVAL_DIR / name / "docs").glob("*.md"):
            text = doc.read_text(encoding="utf-8")
            node_paths[doc.name] = {n.heading_path for n in parse(text, doc.name, max_depth=6)}
        checked = 0
        for line in (EVAL_DIR / name / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            docs = q.get("evidence_docs") or [q["doc"]] * len(q.get("evidence_sections") or [])
            for doc, path in zip(docs, q.get("evidence_sections") or [], strict=False):
                if path:  # "" and None: evidence outside any section
                    assert path in node_paths[doc], (name, doc, path)
                    checked += 1
        assert checked > 100


# --- depth cap, preamble, intro leaves --------------------------------------------------------


def test_depth_cap_folds_deeper_headings_into_the_capped_ancestor() -> None:
    text = "# T\n\n## A\n\n### B\n\nb text\n\n#### C\n\nc text\n\n##### D\n\nd\n\n## E\n\ne\n"
    nodes = parse(text, max_depth=2)
    assert paths(nodes) == ["A", "A > B", "E"]
    b = by_heading(nodes)["B"]
    assert b.is_leaf and b.content == "b text\n\n#### C\n\nc text\n\n##### D\n\nd"
    assert_full_coverage(text, nodes)
    deeper = parse(text, max_depth=4)
    assert [n.heading for n in deeper if not n.synthetic] == ["T", "A", "B", "C", "D", "E"]
    assert [n.heading for n in deeper if n.synthetic] == ["B (intro)", "C (intro)"]
    with pytest.raises(ValueError, match="max_depth"):
        parse(text, max_depth=0)


def test_preamble_leaf_in_both_languages() -> None:
    en = parse("Some words first.\n\n# A\n\na\n\n# B\n\nb\n", "e.md")
    assert en[1].heading == "Preamble" and en[1].synthetic and en[1].content == "Some words first."
    zh = parse("本手册适用于第二版。\n\n# 第一章 概述\n\n甲。\n\n# 第二章 部署\n\n乙。\n", "z.md")
    assert zh[1].heading == "前言" and zh[1].heading_path == "前言" and zh[1].level == 1


def test_text_before_a_title_heading_keeps_the_title_line_inside_the_preamble() -> None:
    text = "note\n# Title\n\nbody\n\n## S\n\ns\n"
    nodes = parse(text)
    assert nodes[0].heading == "Title"
    assert nodes[1].content == "note\n# Title\n\nbody"


def test_document_without_headings_is_root_plus_one_leaf() -> None:
    text = "\n  Just a note.\nSecond line.\n\n"
    nodes = parse(text, "memo.txt")
    assert [n.heading for n in nodes] == ["memo", "memo"]
    assert nodes[1].content == "Just a note.\nSecond line." and nodes[1].heading_path == "memo"
    titled = parse("# Only Title\n\nbody text\n")
    assert [n.heading for n in titled] == ["Only Title", "Only Title"]
    assert titled[1].content == "body text"


def test_empty_text_and_empty_sections() -> None:
    empty = parse("", "e.md")
    assert len(empty) == 2 and empty[1].content == "" and (empty[1].start, empty[1].end) == (0, 0)
    nodes = parse("# T\n\n## A\n\n## B\n\nb\n\n## C\n")
    a, c = by_heading(nodes)["A"], by_heading(nodes)["C"]
    assert a.is_leaf and a.content == "" and c.content == ""
    check_structure("# T\n\n## A\n\n## B\n\nb\n\n## C\n", nodes)


def test_synthetic_intro_leaf_precedes_children_with_next_id() -> None:
    text = "# T\n\n## Methods\n\nThis section explains.\n\n### Encoder\n\ne\n\n### Router\n\nr\n"
    nodes = parse(text)
    methods, intro = nodes[1], nodes[2]
    assert (methods.heading, intro.heading) == ("Methods", "Methods (intro)")
    assert intro.synthetic and intro.is_leaf and methods.children[0] == intro.node_id
    assert int(intro.node_id) == int(methods.node_id) + 1
    assert methods.content == intro.content == "This section explains."
    assert (intro.start, intro.end) == (methods.start, methods.end)
    zh = parse("# 法\n\n## 第一章 总则\n\n本章说明。\n\n### 第一节 一般\n\n甲。\n")
    assert zh[2].heading == "第一章 总则（引言）"
    no_intro = parse("# T\n\n## A\n\n### B\n\nb\n")
    assert not any(n.synthetic for n in no_intro) and no_intro[1].content == ""


def test_ids_start_at_first_id_and_are_stable() -> None:
    text = (SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8")
    first = parse(text, "test_paper.md", first_id=41)
    assert first[0].node_id == "0041"
    assert parse(text, "test_paper.md", first_id=41) == first
    check_structure(text, first, first_id=41)


# --- language and robustness ------------------------------------------------------------------


def test_many_headings_deep_numbering_and_code_only() -> None:
    many = "".join(f"## Section {i}\n\nText {i}.\n\n" for i in range(1000))
    nodes = parse(many)
    assert len(nodes) == 1001 and all(n.level == 1 for n in nodes[1:])
    assert_full_coverage(many, nodes)

    deep = "".join(f"## {'.'.join(['1'] * d)} Level {d}\n\nbody {d}\n\n" for d in range(1, 11))
    nodes = parse(deep, max_depth=10)
    assert [n.level for n in nodes[1:] if not n.synthetic] == list(range(1, 11))
    capped = parse(deep, max_depth=3)
    assert max(n.level for n in capped) == 3
    assert_full_coverage(deep, capped)

    code = "```\n# a\n```\n\n~~~\n## b\n~~~\n"
    nodes = parse(code, "c.md")
    assert len(nodes) == 2 and nodes[1].content == code.strip()


# --- real documents ---------------------------------------------------------------------------


def test_sample_paper_outline_matches_the_seed() -> None:
    text = (SAMPLE_DIR / "test_paper.md").read_text(encoding="utf-8")
    nodes = parse(text, "test_paper.md")
    assert nodes[0].heading == "test_paper"
    sections = [n.heading_path for n in nodes[1:] if not n.synthetic]
    assert sections == [
        "Abstract",
        "1 Introduction",
        "1 Introduction > 1.1 Background",
        "1 Introduction > 1.2 Motivation",
        "2 Related Work",
        "3 Methods",
        "3 Methods > 3.1 Problem Formulation",
        "3 Methods > 3.2 Model Architecture",
        "3 Methods > 3.2 Model Architecture > 3.2.1 Encoder Design",
        "3 Methods > 3.2 Model Architecture > 3.2.2 Router Design",
        "3 Methods > 3.3 Training Procedure",
        "4 Experiments",
        "4 Experiments > 4.1 Dataset",
        "4 Experiments > 4.2 Performance",
        "4 Experiments > 4.3 Ablation Study",
        "5 Conclusion",
    ]
    assert [n.heading for n in nodes if n.synthetic] == ["3 Methods (intro)"]
    leaf = {n.heading: n.content for n in nodes if n.is_leaf}
    assert "LinUCB" in leaf["3.2.2 Router Design"] and "bandit" in leaf["3.2.2 Router Design"]
    assert "73.2%" in leaf["4.2 Performance"] and "65.1%" in leaf["4.2 Performance"]
    assert "50 epochs" in leaf["3.3 Training Procedure"]
    assert [h for h, c in leaf.items() if "epoch" in c] == ["3.3 Training Procedure"]
    assert "66.8%" in leaf["4.3 Ablation Study"]
    for heading, content in leaf.items():
        sentences = len(re.findall(r"(?<!et al)[.!?](?:\s|$)", content))
        assert heading == "3 Methods (intro)" or 3 <= sentences <= 5, (heading, sentences)
    words = len(re.findall(r"\S+", re.sub(r"^#.*$", "", text, flags=re.M)))
    assert 800 <= words <= 1000


def test_chinese_sample_parses_into_a_sane_tree() -> None:
    text = (SAMPLE_DIR / "zh_sample.md").read_text(encoding="utf-8")
    nodes = parse(text, "zh_sample.md")
    assert detect_language(text) == "zh"
    assert 1500 <= len(text) <= 2500
    assert nodes[1].heading == "前言"
    assert by_heading(nodes)["1.1 产品简介"].heading_path == "第一章 产品概述 > 1.1 产品简介"
    fault = by_heading(nodes)["（一）导航类故障"]
    assert fault.heading_path == "第四章 维护与故障排除 > 4.2 常见故障 > （一）导航类故障"
    assert "4.2 常见故障（引言）" in [n.heading for n in nodes if n.synthetic]
    assert_full_coverage(text, nodes)


@pytest.mark.parametrize("doc", sorted(SAMPLE_DIR.glob("*.md")), ids=lambda p: p.name)
def test_sample_docs_cover_every_character(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for depth in (1, 2, 3, 6):
        assert_full_coverage(text, parse(text, doc.name, max_depth=depth))


@pytest.mark.parametrize("dataset", EVAL_SETS)
def test_eval_docs_cover_every_character(dataset: str) -> None:
    docs = sorted((EVAL_DIR / dataset / "docs").glob("*.md"))
    if not docs:
        skip_unless_ci("eval-data test", f"eval docs not found under {EVAL_DIR / dataset}")
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for depth in (2, 3):
            nodes = parse(text, doc.name, max_depth=depth)
            assert_full_coverage(text, nodes)
            assert nodes[0].heading == text.split("\n", 1)[0].removeprefix("# ").strip()


def test_preamble_text_is_the_preamble_leaf_a_review_can_show() -> None:
    text = "Home | Papers\n\n# Title\n\n## A\n\na\n"
    assert preamble_text(text) == "Home | Papers\n\n# Title" == parse(text)[1].content
    assert preamble_text("# Title\n\nabstract\n\n## A\n\na\n") == "abstract"
    assert preamble_text("# Title\n\n## A\n\na\n") == ""
    assert preamble_text("no headings at all\n") == ""  # one leaf named like the document
