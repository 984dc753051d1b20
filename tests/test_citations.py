"""Tests for citation markers, path matching and the Section hit@k path rule, on real trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.answer.citations import parse_citations
from treerag_core.base.types import Chunk, RetrievedChunk
from treerag_core.evaluation.metrics import section_path_ends_with
from treerag_core.ingest.parsing import parse_document

SAMPLES = Path(__file__).resolve().parents[1] / "sample_docs"


def tree_paths(name: str) -> dict[str, str]:
    """node id -> heading path of a sample document, parsed by the real parser."""
    text = (SAMPLES / name).read_text(encoding="utf-8")
    return {n.node_id: n.heading_path for n in parse_document(text, name, name)}


def node_id(paths: dict[str, str], heading_path: str) -> str:
    return next(i for i, p in paths.items() if p == heading_path)


def hit_from(node: str, path: str) -> RetrievedChunk:
    chunk = Chunk(f"{node}_chunk_00", "text", node, path, "doc", 0, 4)
    return RetrievedChunk(chunk, 0.5, 1.0, 0.5, 0.5, 0.5, leaf_rank=1)


@pytest.fixture(scope="module")
def paper() -> dict[str, str]:
    return tree_paths("test_paper.md")


@pytest.fixture(scope="module")
def law() -> dict[str, str]:
    return tree_paths("劳动合同法(2012-12-28).md")


ROUTER = "3 Methods > 3.2 Model Architecture > 3.2.2 Router Design"


# --- path matching ------------------------------------------------------------------------


def match_nodes(cited: str, paths: dict[str, str]) -> tuple[str, ...]:
    """The node ids one `[Source: cited]` marker names (no chunk retrieved)."""
    citations = parse_citations(f"[Source: {cited}]", [], paths)
    return citations[0].node_ids if citations else ()


def test_match_nodes_is_lenient_but_not_loose(paper: dict[str, str]) -> None:
    router = node_id(paper, ROUTER)
    for cited in (
        "Router Design",
        "3.2.2 Router Design",
        "router   design",
        "Model Architecture > Router Design",
        "Methods > Router Design",  # skips a level of the tree
        "3 Methods ＞ 3.2 Model Architecture ＞ 3.2.2 Router Design",  # full-width ">"
        ROUTER,
    ):
        assert match_nodes(cited, paper) == (router,), cited
    assert match_nodes("3.1 Router Design", paper) == ()  # conflicting number
    assert match_nodes("Experiments > Router Design", paper) == ()  # wrong ancestor
    assert match_nodes("Design", paper) == ()
    assert match_nodes("Router Design > Methods", paper) == ()  # order matters


# --- markers --------------------------------------------------------------------------------


def test_english_marker_maps_to_the_node_and_is_supported(paper: dict[str, str]) -> None:
    router = node_id(paper, ROUTER)
    answer = "AdaRouter picks experts with a contextual bandit [Source: Methods > Router Design]."
    [citation] = parse_citations(answer, [hit_from(router, ROUTER)], paper)
    assert citation.text == "[Source: Methods > Router Design]"
    assert citation.heading_path == "Methods > Router Design"
    assert citation.node_ids == (router,)
    assert citation.supported


def test_unsupported_and_unknown_paths(paper: dict[str, str]) -> None:
    router = node_id(paper, ROUTER)
    ablation = node_id(paper, "4 Experiments > 4.3 Ablation Study")
    answer = "It helps [Source: Ablation Study]. It is fast [source: Hyperparameter Search]."
    cited, unknown = parse_citations(answer, [hit_from(router, ROUTER)], paper)
    assert (cited.node_ids, cited.supported) == ((ablation,), False)  # real node, not retrieved
    assert (unknown.heading_path, unknown.node_ids, unknown.supported) == (
        "Hyperparameter Search",
        (),
        False,
    )


def test_several_paths_in_one_marker(paper: dict[str, str]) -> None:
    perf = node_id(paper, "4 Experiments > 4.2 Performance")
    data = node_id(paper, "4 Experiments > 4.1 Dataset")
    hits = [hit_from(perf, "4 Experiments > 4.2 Performance")]
    for answer in (
        "73.2% accuracy [Source: 4.2 Performance; Dataset].",
        "73.2% accuracy [Source: 4.2 Performance, Dataset].",
        "73.2% accuracy [Sources: 4.2 Performance；Dataset].",
    ):
        citations = parse_citations(answer, hits, paper)
        assert [(c.heading_path, c.node_ids, c.supported) for c in citations] == [
            ("4.2 Performance", (perf,), True),
            ("Dataset", (data,), False),
        ], answer
        assert {c.text for c in citations} == {answer[answer.index("[") : answer.index("]") + 1]}


def test_a_heading_with_a_comma_stays_one_path() -> None:
    paths = {"n1": "Results, Discussion and Outlook", "n2": "Results", "n3": "Discussion"}
    answer = "[Source: Results, Discussion and Outlook] and [Source: Results, Discussion]"
    citations = parse_citations(answer, [], paths)
    assert [(c.heading_path, c.node_ids) for c in citations] == [
        ("Results, Discussion and Outlook", ("n1",)),
        ("Results", ("n2",)),
        ("Discussion", ("n3",)),
    ]


def test_order_of_appearance_and_identical_markers_once(paper: dict[str, str]) -> None:
    answer = (
        "First [Source: Ablation Study], then (来源: Methods > Router Design), "
        "again [Source: Ablation Study] and [Source: 4.3 Ablation Study]."
    )
    citations = parse_citations(answer, [], paper)
    assert [c.text for c in citations] == [
        "[Source: Ablation Study]",
        "(来源: Methods > Router Design)",
        "[Source: 4.3 Ablation Study]",  # a different marker for the same node is kept
    ]
    assert citations[0].node_ids == citations[2].node_ids


def test_round_brackets_may_nest_once() -> None:
    paths = {"t2": "Experiments > Results (Table 2)"}
    citations = parse_citations("Best F1 (Source: Results (Table 2)).", [], paths)
    assert [(c.text, c.heading_path, c.node_ids) for c in citations] == [
        ("(Source: Results (Table 2))", "Results (Table 2)", ("t2",))
    ]


def test_no_markers_and_empty_markers() -> None:
    paths = {"a": "Intro"}
    assert parse_citations("Plain answer [1] with (a note) and [Source: ].", [], paths) == []
    assert parse_citations("", [], paths) == []


# --- Chinese --------------------------------------------------------------------------------


def test_chinese_marker_forms(law: dict[str, str]) -> None:
    dispatch = node_id(law, "第五章 特别规定 > 第二节 劳务派遣")
    hits = [hit_from(dispatch, law[dispatch])]
    for marker in (
        "[来源：第五章 特别规定 > 第二节 劳务派遣]",  # full-width colon
        "[来源: 第二节 劳务派遣]",
        "(来源: 劳务派遣)",
        "（来源：第二节  劳务派遣）",  # full-width brackets, doubled space
        "【来源：特别规定 > 劳务派遣】",
    ):
        [citation] = parse_citations(f"劳务派遣单位应当依法设立{marker}。", hits, law)
        assert citation.text == marker
        assert citation.node_ids == (dispatch,), marker
        assert citation.supported


def test_chinese_several_paths_and_unsupported(law: dict[str, str]) -> None:
    chapter2 = node_id(law, "第二章 劳动合同的订立")
    duty = node_id(law, "第七章 法律责任")
    answer = "应当订立书面劳动合同[来源：第二章 劳动合同的订立；第七章 法律责任；第九章 附录]。"
    citations = parse_citations(answer, [hit_from(chapter2, law[chapter2])], law)
    assert [(c.node_ids, c.supported) for c in citations] == [
        ((chapter2,), True),
        ((duty,), False),
        ((), False),
    ]


def test_citing_a_parent_finds_its_intro_leaf() -> None:
    paths = tree_paths("zh_sample.md")
    parent = node_id(paths, "第二章 安装与部署")
    intro = next(i for i, p in paths.items() if p == "第二章 安装与部署" and i != parent)
    [citation] = parse_citations("见[来源: 第二章 安装与部署]", [hit_from(intro, "x")], paths)
    assert citation.node_ids == (intro,)  # the retrieved one of the two nodes on that path
    assert citation.supported


def test_lenient_matching_finds_every_gold_section_the_metric_finds() -> None:
    """On the real eval trees, citing a gold section path finds at least its strict matches."""
    checked = 0
    for dataset in ("qasper", "lecoqa_laws"):
        questions = EVAL_DIR / dataset / "questions.jsonl"
        if not questions.is_file():
            skip_unless_ci("eval-data test", f"eval data not found at {questions}")
        trees: dict[str, dict[str, str]] = {}
        for line in questions.read_text(encoding="utf-8").splitlines()[:40]:
            question = json.loads(line)
            doc = question["doc"]
            if doc not in trees:
                text = (EVAL_DIR / dataset / "docs" / doc).read_text(encoding="utf-8")
                trees[doc] = {n.node_id: n.heading_path for n in parse_document(text, doc, doc, 6)}
            for gold in question.get("evidence_sections") or []:
                strict = {i for i, p in trees[doc].items() if section_path_ends_with(p, gold or "")}
                if strict:
                    assert strict <= set(match_nodes(gold, trees[doc])), gold
                    checked += 1
    assert checked >= 40


def test_pdf_citation_with_a_page_suffix_maps_and_names_its_pages() -> None:
    paths = {"0002": "Item 8 > Balance Sheets"}
    chunk = Chunk(
        "0002_chunk_00", "Total assets 1,000", "0002", paths["0002"], "r.pdf", 0, 18, 38, 39
    )
    hit = RetrievedChunk(chunk, 0.9, 1.0, 1.0, 1.0, 1.0, 1)
    answer = "Assets were 1,000 [Source: Item 8 > Balance Sheets (pp. 38-39)]."
    (citation,) = parse_citations(answer, [hit], paths)
    assert citation.node_ids == ("0002",) and citation.supported
    assert citation.pages == (38, 39)
