"""Tests for the eval metrics (hand-computed spans) and the report writer/table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treerag_core.evaluation.dataset import NO_EVIDENCE, EvalDataError, EvalQuestion, GoldEvidence
from treerag_core.evaluation.metrics import (
    Passage,
    aggregate,
    budget_passages,
    context_chars_at_k,
    hit_at_budget,
    hit_at_k,
    hits,
    mrr_at_10,
    percentile,
    question_metrics,
    recall_at_budget,
    recall_at_k,
    section_hit_at_k,
    section_path_ends_with,
    section_path_within,
)
from treerag_core.evaluation.report import load_report, markdown_table, write_report


def ev(doc: str, start: int, end: int, section: str | None = None) -> GoldEvidence:
    return GoldEvidence(doc, "x" * (end - start), start, end, section)


def question(
    evidences: tuple[GoldEvidence, ...], sections: tuple[str, ...] = (), reason: str | None = None
) -> EvalQuestion:
    return EvalQuestion(
        id="q1",
        question="?",
        doc="a.md",
        docs=("a.md",),
        answers=("a",),
        evidences=evidences,
        n_evidence_missing=0,
        evidence_sections=sections,
        left_out_reason=reason,
    )


# --- overlap rule ------------------------------------------------------------------------


def test_overlap_of_exactly_half_the_shorter_span_hits() -> None:
    # passage 10 chars, evidence 20 chars, overlap [5, 10) = 5 = 0.5 * 10
    assert hits(Passage("a.md", 0, 10), ev("a.md", 5, 25))


def test_overlap_just_under_half_does_not_hit() -> None:
    # overlap [6, 10) = 4 < 5
    assert not hits(Passage("a.md", 0, 10), ev("a.md", 6, 25))


def test_half_of_an_odd_length_is_not_rounded_down() -> None:
    # shorter span 11 chars -> needs 5.5: 6 hits, 5 does not
    assert hits(Passage("a.md", 0, 11), ev("a.md", 5, 100))
    assert not hits(Passage("a.md", 0, 11), ev("a.md", 6, 100))


def test_same_span_in_another_doc_does_not_hit() -> None:
    assert not hits(Passage("b.md", 0, 10), ev("a.md", 0, 10))


def test_containment_hits_both_ways() -> None:
    assert hits(Passage("a.md", 100, 120), ev("a.md", 0, 1000))  # small passage in big gold
    assert hits(Passage("a.md", 0, 1000), ev("a.md", 100, 120))  # big passage around gold


def test_empty_or_touching_spans_do_not_hit() -> None:
    assert not hits(Passage("a.md", 5, 5), ev("a.md", 0, 10))  # 0 >= 0.5 * 0 must not count
    assert not hits(Passage("a.md", 0, 10), ev("a.md", 10, 20))  # adjacent, no shared char


def test_passage_rejects_a_reversed_span() -> None:
    with pytest.raises(ValueError, match="start <= end"):
        Passage("a.md", 10, 5)


# --- hit, recall, MRR, context chars -------------------------------------------------------

GOLD = (ev("a.md", 0, 100), ev("a.md", 500, 600), ev("b.md", 0, 50))
RANKED = [
    Passage("a.md", 0, 100),  # hits gold 1
    Passage("c.md", 0, 100),  # nothing
    Passage("a.md", 550, 600),  # overlap 50 = 0.5 * min(50, 100): hits gold 2
    Passage("a.md", 0, 100),  # gold 1 again: must not count twice
    Passage("b.md", 0, 50),  # hits gold 3
]


def test_recall_with_several_evidences() -> None:
    assert recall_at_k(RANKED, GOLD, 1) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, GOLD, 3) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, GOLD, 4) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, GOLD, 5) == pytest.approx(1.0)
    assert recall_at_k(RANKED, GOLD, 10) == pytest.approx(1.0)


def test_recall_needs_gold() -> None:
    with pytest.raises(ValueError, match="at least one gold"):
        recall_at_k(RANKED, (), 5)


def test_hit_at_k() -> None:
    miss_first = [Passage("c.md", 0, 10), Passage("c.md", 10, 20), Passage("b.md", 10, 40)]
    assert hit_at_k(miss_first, GOLD, 1) == 0.0
    assert hit_at_k(miss_first, GOLD, 2) == 0.0
    assert hit_at_k(miss_first, GOLD, 3) == 1.0
    assert hit_at_k([], GOLD, 5) == 0.0
    with pytest.raises(ValueError, match="k must be >= 1"):
        hit_at_k(miss_first, GOLD, 0)


def test_mrr_first_hit_at_rank_3() -> None:
    ranked = [Passage("c.md", 0, 10), Passage("c.md", 10, 20), Passage("a.md", 0, 100)]
    assert mrr_at_10(ranked, GOLD) == pytest.approx(1 / 3)


def test_mrr_counts_rank_10_but_not_rank_11() -> None:
    filler = [Passage("c.md", i * 10, i * 10 + 10) for i in range(10)]
    at_10 = [*filler[:9], Passage("a.md", 0, 100)]
    at_11 = [*filler, Passage("a.md", 0, 100)]
    assert mrr_at_10(at_10, GOLD) == pytest.approx(0.1)
    assert mrr_at_10(at_11, GOLD) == 0.0
    assert mrr_at_10([], GOLD) == 0.0


def test_context_chars_sums_the_top_k_lengths() -> None:
    ranked = [Passage("a.md", 0, 400), Passage("a.md", 400, 900), Passage("b.md", 0, 300)]
    assert context_chars_at_k(ranked, 1) == 400
    assert context_chars_at_k(ranked, 3) == 1200
    assert context_chars_at_k(ranked, 5) == 1200  # fewer than k passages: all of them


# --- budget selection --------------------------------------------------------------------


def test_budget_stops_at_the_first_passage_that_would_overflow() -> None:
    sizes = [400, 500, 300, 200]  # 400 + 500 = 900; + 300 = 1200 > 1000: stop, even though
    ranked, pos = [], 0  # the 200 after it would still fit
    for size in sizes:
        ranked.append(Passage("a.md", pos, pos + size))
        pos += size
    assert budget_passages(ranked, 1000) == ranked[:2]
    assert budget_passages(ranked, 2000) == ranked  # 1400 fits


def test_budget_keeps_a_passage_that_fills_it_exactly() -> None:
    ranked = [Passage("a.md", 0, 600), Passage("a.md", 600, 1000), Passage("a.md", 1000, 1001)]
    assert budget_passages(ranked, 1000) == ranked[:2]


def test_budget_truncates_an_oversized_first_passage() -> None:
    ranked = [Passage("a.md", 200, 3200), Passage("a.md", 0, 10)]
    assert budget_passages(ranked, 1000) == [Passage("a.md", 200, 1200)]
    assert budget_passages(ranked, 2000) == [Passage("a.md", 200, 2200)]


def test_budget_walks_at_most_50_passages() -> None:
    ranked = [Passage("a.md", i * 10, i * 10 + 10) for i in range(60)]
    assert len(budget_passages(ranked, 2000)) == 50


def test_budget_rejects_a_non_positive_budget() -> None:
    with pytest.raises(ValueError, match="budget_chars"):
        budget_passages([Passage("a.md", 0, 10)], 0)


def test_recall_and_hit_at_budget_follow_the_stop_rule() -> None:
    gold = (ev("a.md", 5000, 5100),)
    ranked = [Passage("a.md", 0, 400), Passage("a.md", 400, 900), Passage("a.md", 900, 1200)]
    ranked.append(Passage("a.md", 5000, 5100))  # would fit in 1000 after the stop: not kept
    assert recall_at_budget(ranked, gold, 1000) == 0.0
    assert hit_at_budget(ranked, gold, 1000) == 0.0
    assert recall_at_budget(ranked, gold, 2000) == 1.0  # 400 + 500 + 300 + 100 = 1300
    assert hit_at_budget(ranked, gold, 2000) == 1.0


def test_truncated_first_passage_only_hits_within_its_first_b_chars() -> None:
    big = [Passage("a.md", 0, 3000)]
    late, early = ev("a.md", 2500, 2600), ev("a.md", 900, 1000)
    assert hits(big[0], late)  # the whole passage would hit it...
    assert hit_at_budget(big, (late,), 1000) == 0.0  # ...but its first 1000 chars do not
    assert hit_at_budget(big, (early,), 1000) == 1.0
    assert recall_at_budget(big, (late, early), 1000) == pytest.approx(0.5)
    assert recall_at_budget(big, (late, early), 2000) == pytest.approx(0.5)


# --- section paths -----------------------------------------------------------------------


def test_section_suffix_is_by_whole_components() -> None:
    assert section_path_ends_with("X > Data Description", "Data Description")
    assert section_path_ends_with("Data Description", "Data Description")
    assert not section_path_ends_with("Raw Data Description", "Data Description")
    assert not section_path_ends_with("X > Raw Data Description", "Data Description")
    assert not section_path_ends_with("Data Description > Stats", "Data Description")


def test_section_suffix_of_several_components() -> None:
    assert section_path_ends_with("A > B > C", "B > C")
    assert section_path_ends_with("A > B > C", "A > B > C")
    assert not section_path_ends_with("A > B > C", "A > C")
    assert not section_path_ends_with("B > C", "A > B > C")


def test_section_compare_ignores_case_and_whitespace_runs() -> None:
    assert section_path_ends_with("Paper > EXPERIMENTS >  Data\tset", "experiments > data set")
    assert not section_path_ends_with("Paper > Experiments > Dataset", "Experiments > Data set")


def test_section_compare_treats_unicode_spaces_as_whitespace() -> None:
    gold = "物权编 > 第二分编\u2002\u2002所有权 > 第七章\u2002\u2002相邻关系"
    assert section_path_ends_with(
        "中华人民共和国民法典 > 物权编 > 第二分编  所有权 > 第七章  相邻关系", gold
    )
    assert section_path_ends_with(
        "物权编 > 第二分编 所有权 > 第七章\u3000相邻关系", gold
    )  # full-width
    assert section_path_ends_with("物权编\u3000>\u3000第二分编 所有权 > 第七章 相邻关系", gold)
    assert not section_path_ends_with("物权编 > 第二分编所有权 > 第七章相邻关系", gold)


def test_a_bare_gt_inside_a_heading_does_not_split_it() -> None:
    # gitlab_handbook heading: `## <i class="fas fa-paper-plane"></i> Contacting Marketing`
    heading = '<i class="fas fa-paper-plane"></i> Contacting Marketing'
    assert section_path_ends_with(f"Marketing > {heading} > Newsletter", f"{heading} > Newsletter")
    assert not section_path_ends_with(f"Marketing > {heading}", "</i> Contacting Marketing")


def test_an_empty_gold_path_never_matches() -> None:
    assert not section_path_ends_with("A > B", "")
    assert not section_path_ends_with("A > B", " \u2002 ")
    assert not section_path_ends_with("\u3000", " ")


def test_section_hit_at_k() -> None:
    picked = ["P > Intro", "P > Model", "P > Experiments > Data Description"]
    gold = ["Results", "Data Description"]
    assert section_hit_at_k(picked, gold, 1) == 0.0
    assert section_hit_at_k(picked, gold, 2) == 0.0
    assert section_hit_at_k(picked, gold, 3) == 1.0
    assert section_hit_at_k(picked, [], 5) == 0.0


# --- per question and aggregate ----------------------------------------------------------


def test_question_metrics_keys_and_values() -> None:
    q = question(GOLD, sections=("Data Description",))
    m = question_metrics(q, RANKED, None)
    expected_keys = {
        *(f"{name}@{k}" for name in ("hit", "recall", "ctx_chars") for k in (1, 3, 5, 10)),
        "mrr@10",
        "recall@1000c",
        "hit@1000c",
        "recall@2000c",
        "hit@2000c",
    }
    assert set(m) == expected_keys
    assert m["hit@1"] == 1.0
    assert m["recall@3"] == pytest.approx(2 / 3)
    assert m["mrr@10"] == 1.0
    assert m["ctx_chars@5"] == 100 + 100 + 50 + 100 + 50
    # 100 + 100 + 50 + 100 + 50 = 400 chars fit in 1000: every passage kept
    assert m["recall@1000c"] == pytest.approx(1.0)

    with_sections = question_metrics(q, RANKED, ["P > Intro", "P > Data Description"])
    assert with_sections["section_hit@1"] == 0.0
    assert with_sections["section_hit@3"] == 1.0


def test_question_metrics_skips_section_hit_without_gold_sections() -> None:
    m = question_metrics(question(GOLD), RANKED, ["P > Intro"])
    assert not any(key.startswith("section_hit") for key in m)


def test_question_metrics_refuses_a_left_out_question() -> None:
    with pytest.raises(ValueError, match="left out"):
        question_metrics(question((), reason=NO_EVIDENCE), RANKED, None)


def test_percentile_interpolates_linearly() -> None:
    values = [50.0, 10.0, 40.0, 20.0, 30.0]
    assert percentile(values, 50) == 30.0
    assert percentile(values, 95) == pytest.approx(48.0)  # position 3.8: 40 + 0.8 * 10
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError, match="percentile of no values"):
        percentile([], 50)


def test_aggregate_means_latency_and_counts() -> None:
    rows = [
        {"hit@1": 1.0, "recall@1": 0.5, "section_hit@1": 1.0},
        {"hit@1": 0.0, "recall@1": 0.25},
        {"hit@1": 1.0, "recall@1": 0.0, "section_hit@1": 0.0},
    ]
    out = aggregate(rows, {"total": [100.0, 300.0, 200.0], "rerank": []}, n_left_out=4)
    assert out["hit@1"] == pytest.approx(2 / 3)
    assert out["recall@1"] == pytest.approx(0.25)
    assert out["section_hit@1"] == pytest.approx(0.5)  # over the 2 questions that have it
    assert out["n_questions_by_metric"] == {"section_hit@1": 2}
    assert out["latency_ms"] == {"total": {"p50": 200.0, "p95": pytest.approx(290.0)}}
    assert out["n_questions"] == 3
    assert out["n_left_out"] == 4


def test_aggregate_of_nothing() -> None:
    assert aggregate([], {}) == {"latency_ms": {}, "n_questions": 0}


# --- report ------------------------------------------------------------------------------

REPORT = {
    "dataset": "qasper",
    "scope": "per-doc",
    "strategies": {
        "treerag": {
            "recall@1000c": 0.61234,
            "recall@2000c": 0.7,
            "hit@5": 0.9,
            "recall@5": 0.8,
            "mrr@10": 0.55555,
            "ctx_chars@5": 1234.4,
            "section_hit@5": 0.75,
            "latency_ms": {"total": {"p50": 812.6, "p95": 1500.0}},
            "n_questions": 86,
            "n_left_out": 6,
        },
        "flat|bm25": {"recall@1000c": 0.5, "n_questions": 86, "latency_ms": {}},
    },
}


def test_markdown_table_exact() -> None:
    assert markdown_table(REPORT) == (
        "| strategy | n | left out | recall@1000c | recall@2000c | hit@5 | recall@5 | mrr@10 "
        "| ctx_chars@5 | section_hit@5 | p50 total ms |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        "| treerag | 86 | 6 | 0.612 | 0.700 | 0.900 | 0.800 | 0.556 | 1234 | 0.750 | 813 |\n"
        "| flat\\|bm25 | 86 | — | 0.500 | — | — | — | — | — | — | — |\n"
    )


def test_markdown_table_with_chosen_keys() -> None:
    table = markdown_table(REPORT, keys=("mrr@10", "latency_ms.total.p95"))
    assert table.splitlines()[0] == "| strategy | n | left out | mrr@10 | p95 total ms |"
    assert table.splitlines()[2] == "| treerag | 86 | 6 | 0.556 | 1500 |"


def test_report_round_trip_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "reports" / "qasper.json"
    write_report(path, REPORT)
    assert load_report(path, roots=[tmp_path]) == REPORT
    assert "per-doc" in path.read_text(encoding="utf-8")
    write_report(path, {**REPORT, "scope": "all-docs"})  # replaces the old file
    assert load_report(path, roots=[tmp_path])["scope"] == "all-docs"
    assert sorted(p.name for p in path.parent.iterdir()) == ["qasper.json"]


def test_write_report_keeps_the_old_file_when_serialising_fails(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_report(path, {"chinese": "民法典"})
    with pytest.raises(ValueError, match="not JSON compliant: nan"):
        write_report(path, {"bad": float("nan")})
    assert json.loads(path.read_text(encoding="utf-8")) == {"chinese": "民法典"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_load_report_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match=r"missing\.json"):
        load_report(tmp_path / "missing.json", roots=[tmp_path])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalDataError, match=r"broken\.json"):
        load_report(broken, roots=[tmp_path])
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(EvalDataError, match="JSON object"):
        load_report(listed, roots=[tmp_path])


def test_page_level_gold_counts_a_passage_mostly_on_the_page():
    from treerag_core.evaluation.metrics import page_hits, page_metrics

    starts = (0, 100, 200)  # pages 1, 2, 3
    assert page_hits(Passage("a.pdf", 90, 130), "a.pdf", 2, starts)  # 30 of 40 chars on p. 2
    assert not page_hits(Passage("a.pdf", 80, 110), "a.pdf", 2, starts)  # 10 of 30
    assert page_hits(Passage("a.pdf", 80, 120), "a.pdf", 2, starts)  # exactly half counts
    assert not page_hits(Passage("b.pdf", 100, 150), "a.pdf", 2, starts)
    passages = [Passage("a.pdf", 0, 50), Passage("a.pdf", 210, 260), Passage("a.pdf", 120, 180)]
    got = page_metrics([("a.pdf", 2), ("a.pdf", 3)], passages, {"a.pdf": starts})
    assert got["page_hit@1"] == 0.0 and got["page_hit@3"] == 1.0
    assert got["page_recall@3"] == 1.0 and got["page_recall@1"] == 0.0
    assert got["page_mrr@10"] == 0.5
    assert got["page_hit@1000c"] == 1.0


def test_a_pick_inside_the_gold_section_is_a_hit() -> None:
    gold = "第二编 分则 > 第九章 渎职罪"
    assert section_path_within("第二编 分则 > 第九章 渎职罪 > 第三百九十七条", gold)
    assert section_path_within("第二编 分则 > 第九章 渎职罪", gold)
    assert section_path_within("刑法 > 第二编 分则 > 第九章 渎职罪 > 第一节 > 第一条", gold)
    assert not section_path_within("第二编 分则 > 第八章 贪污贿赂罪 > 第三百八十五条", gold)
    assert not section_path_within("第二编 分则", gold)  # the parent is not inside its child
    assert not section_path_within("X > 第九章 渎职罪 > Y", "")
    paths = ["A > B > 第十条", "C > D > 第二条"]
    assert section_hit_at_k(paths, ["C > D"], 1) == 0.0
    assert section_hit_at_k(paths, ["C > D"], 2) == 1.0
