"""What an LLM eval run will call, and the note for a `+llm` row that fell back (the CLI
prints it, the Evaluate page shows it: one function)."""

from __future__ import annotations

from treerag_core import llm_fallback_notes, llm_locate_calls, llm_locator_strategies


def test_only_strategies_that_use_the_locator_call_the_llm() -> None:
    chosen = ["treerag", "flat-hybrid", "oracle-sections", "drilldown", "treerag-kg"]
    assert llm_locator_strategies(chosen) == ("treerag", "treerag-kg")
    assert llm_locate_calls(chosen, 7) == 14
    assert llm_locate_calls(["flat-hybrid"], 7) == 0


def test_a_fallback_note_per_llm_row_that_fell_back() -> None:
    record = {"fallbacks": ["locate:invalid_json", "synthesize:timeout"]}
    report = {
        "questions": {
            "treerag": [{"fallbacks": ["locate:no_key"]}],  # a local row: never noted
            "treerag+llm": [record, record, {"fallbacks": []}],
            "treerag-kg+llm": [{"fallbacks": []}],
        }
    }
    assert llm_fallback_notes(report) == [
        "the LLM locator was not used for 2 of 3 questions of treerag+llm (invalid_json 2x); "
        "those used the local locator"
    ]
    assert llm_fallback_notes({}) == []
