"""The optional LLM level pass: batched prompts, parsed fixes, fixes applied as tree edits."""

from __future__ import annotations

import pytest

from treerag_core.base.errors import LLMError
from treerag_core.base.types import Usage
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert.llm_levels import (
    build_level_prompt,
    parse_level_response,
    propose_level_fixes,
)
from treerag_core.ingest.tree_edits import apply_edits

DOC = b"# Report\n\n## PART I\n\ntext\n\n## Item 1. Business\n\ntext\n\n## Item 2. Risks\n\ntext\n"


class FakeClient:
    """Records prompts; replies from a script (the LLM is the one external boundary)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def complete(self, prefix: str, rest: str, model: str, max_tokens: int):
        self.prompts.append(rest)
        return self.replies.pop(0), Usage(input_tokens=10, output_tokens=5, model=model)


def test_prompt_lists_headings_with_levels_and_context() -> None:
    doc = convert_bytes("r.md", DOC, 10**6)
    prompt = build_level_prompt(doc.headings, 2, 4)
    assert "0. [1] Report (markdown) (context, do not change)" in prompt
    assert "2. [2] Item 1. Business (markdown)" in prompt.split("\n")
    assert prompt.endswith("3. [2] Item 2. Risks (markdown)")


def test_fixes_are_batched_validated_and_applied() -> None:
    doc = convert_bytes("r.md", DOC, 10**6)
    # Batch 1 is headings 0-1: "0" is no change, "9" is out of the batch; batch 2 is 2-3.
    client = FakeClient(['{"0": 1, "9": 1}', '```json\n{"2": 3, "3": 3, "1": "x"}\n```'])
    fixes, usage = propose_level_fixes(client, "m", doc.headings, batch_size=2)
    assert len(client.prompts) == 2 and usage.input_tokens == 20
    assert [(f.index, f.old, f.new) for f in fixes] == [(2, 2, 3), (3, 2, 3)]
    edited, problems = apply_edits(doc, [f.edit(doc.headings) for f in fixes])
    assert not problems
    assert [h.level for h in edited.headings] == [1, 2, 3, 3]


def test_reply_without_json_is_an_llm_error() -> None:
    doc = convert_bytes("r.md", DOC, 10**6)
    with pytest.raises(LLMError, match="no JSON object"):
        parse_level_response("I think they are fine.", doc.headings, 0, 4)


@pytest.mark.parametrize(
    "reply",
    [
        '{"2": 1e400}',  # parsed as float inf: int() raises OverflowError
        '{"2": Infinity}',
        '{"2": -Infinity, "3": NaN}',
        '{"2": 2.9, "3": 3.0}',  # not truncated to 2, nor read as 3
        '{"2": true, "3": "3"}',
        '{"2": null, "3": [3]}',
    ],
)
def test_a_level_that_is_not_a_json_integer_is_skipped(reply) -> None:
    doc = convert_bytes("r.md", DOC, 10**6)
    assert parse_level_response(reply, doc.headings, 0, 4) == []
    fixes = parse_level_response(reply[:-1] + ', "1": 1}', doc.headings, 0, 4)
    assert [(f.index, f.old, f.new) for f in fixes] == [(1, 2, 1)]
