"""Tests for treerag_core.llm.prompt_budget: the locate tree's token budget follows the context."""

from __future__ import annotations

import pytest

from treerag_core.base.errors import LLMError
from treerag_core.llm.prompt_budget import check_fits, fit_blocks, locate_tree_budget
from treerag_core.llm.prompts import estimate_tokens


def test_a_large_context_keeps_the_locate_budget() -> None:
    budget = locate_tree_budget(6000, 200_000, 400)
    assert budget.tokens == 6000 and budget.why == "prompt budget: 6,000 tokens for the tree"


def test_a_small_context_sets_the_budget_and_says_so() -> None:
    budget = locate_tree_budget(6000, 4096, 400)
    assert budget.tokens == int(4096 * 0.9) - 1024 - 400 == 2262
    assert "set by the model's context (4,096 tokens" in budget.why
    assert "locate budget 6,000" in budget.why


def test_a_context_too_small_for_the_instructions_is_an_error() -> None:
    with pytest.raises(LLMError, match="cannot hold") as info:
        locate_tree_budget(6000, 1000, 400)
    assert info.value.reason == "context_too_small"


def test_fit_blocks_keeps_whole_node_blocks_within_budget() -> None:
    blocks = [f"[{i:04d}] Section {i} (leaf)\n  Summary: {'word ' * 10}" for i in range(20)]
    text = "\n\n".join(blocks)
    kept_text, kept, total = fit_blocks(text, 100)
    assert total == 20 and 1 <= kept < 20
    assert kept_text == "\n\n".join(blocks[:kept]) and estimate_tokens(kept_text) <= 100
    assert fit_blocks(text, 1)[1] == 1  # one block always goes
    assert fit_blocks(text, 10**6) == (text, 20, 20)


def test_a_prompt_too_big_for_the_context_is_refused_before_sending() -> None:
    check_fits("word " * 100, 1024, 200_000, "answer")  # fits: nothing raised
    with pytest.raises(LLMError, match="answer prompt needs about") as info:
        check_fits("word " * 4000, 1024, 4096, "answer")
    assert info.value.reason == "context_too_small"
