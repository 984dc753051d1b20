"""benchmarks/bench_verdict.py's table from rows: refused / labelled / flagged per set."""

from __future__ import annotations

from benchmarks.bench_verdict import table, verdict_of
from treerag_core.answer.flags import Verdict


def row(kind: str, set_: str, **signals) -> dict:
    base = {"language": "en", "gold_top": kind == "own", "cross_language": False}
    base |= {"best_sentence": 0.6, "top_rerank": 3.0, "top_dense": 0.7, "shares_terms": True}
    return {**base, **signals, "kind": kind, "set": set_}


def test_the_table_counts_each_verdict_against_the_previous_rule():
    rows = [
        row("own", "qasper"),  # answered by both rules
        row("own", "qasper", best_sentence=0.2, top_rerank=-2.8),  # old: refused; now: weak
        row("off-set", "qasper", best_sentence=0.1, top_rerank=-9.0, shares_terms=False),
        row("off-set", "qasper", best_sentence=0.5, top_rerank=-4.0),  # weak label
    ]
    assert [verdict_of(r) for r in rows] == [
        Verdict.ANSWERED, Verdict.WEAK, Verdict.NOT_ANSWERED, Verdict.WEAK
    ]  # fmt: skip
    text = table(rows)
    line = next(x for x in text.splitlines() if x.startswith("| qasper"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # n, refused before, refused now, weak now, n off-set, flagged before, flagged now, refused
    assert cells[1:] == [
        "2", "0.500 (1/2)", "0.000 (0/2)", "0.500 (1/2)", "2", "0.500 (1/2)",
        "1.000 (2/2)", "0.500 (1/2)",
    ]  # fmt: skip
