"""bench_tree's measurement rule (issue 24): title match, recall, precision, nesting, pages 1-2."""

from __future__ import annotations

from benchmarks.bench_tree import Item, same_words, score


def test_title_match_is_issue_24s_rule():
    assert same_words("Item 7. Management’s Discussion", "ITEM 7. MANAGEMENT’S DISCUSSION")
    assert same_words("Balance Sheets", "Amcor plc and Subsidiaries Balance Sheets")  # contained
    assert not same_words("Notes", "Notes to the Financial Statements and more")  # < 6 chars
    assert same_words("Revenue", "Cost of Revenue and Expenses")  # lenient: a lower bound
    assert not same_words("Revenue", "Operating Expenses")


def test_recall_precision_nesting_and_cover_lines():
    gold = [Item("Cover page", 1, 1), Item("PART I", 3, 1), Item("Item 1. Business", 3, 2),
            Item("Item 2. Properties", 9, 2), Item("PART II", 10, 1)]  # fmt: skip
    got = [Item("FORM 10-K", 1, 1), Item("PART I", 3, 1), Item("Item 1. Business", 4, 2),
           Item("Item 2. Properties", 9, 1), Item("Overview", 9, 3)]  # fmt: skip
    r = score(gold, got)
    assert (r["found"], r["recall"]) == (3, 3 / 5)  # Cover page and PART II missed
    assert r["precision"] == 3 / 5
    # Pairs with both ends found: (PART I, Item 1) deeper, (PART I, Item 2) not.
    assert (r["nesting_pairs"], r["nesting"]) == (2, 0.5)
    assert r["unmatched_p1_2"] == 1  # "FORM 10-K"
    assert r["missed"] == ["Cover page", "PART II"]
