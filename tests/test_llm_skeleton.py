"""The LLM check of a PDF's contents skeleton: the entries kept as data by the converter,
bounded prompts, strictly parsed replies, fixes applied as tree edits; once through the real
SDK against the fake Anthropic server."""

from __future__ import annotations

import json

import pytest
from fake_anthropic import FakeAnthropicServer, reply, status

from tests.pdf_factory import BODY, ITEMS, UNSEEN, contents_answer, contents_pdf, make_pdf
from treerag_core.base.errors import LLMError
from treerag_core.base.types import Usage
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert import llm_skeleton as ls
from treerag_core.ingest.convert.base import ContentsEntry
from treerag_core.ingest.tree_edits import apply_edits
from treerag_core.llm import AnthropicClient

MB = 1024 * 1024


@pytest.fixture(scope="module")
def doc():
    return convert_bytes("c.pdf", contents_pdf(), 10 * MB)


def line_of(doc, text: str, page: int) -> int:
    lines = ls.DocLines(doc)
    return next(li.number for li in lines.pages[page] if li.text == text)


class FakeClient:
    """Records prompts; replies from a script (the LLM is the one external boundary)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def complete(self, prefix: str, rest: str, model: str, max_tokens: int, json_mode=False):
        self.prompts.append((prefix, rest))
        return self.replies.pop(0), Usage(input_tokens=10, output_tokens=5, model=model)


def test_the_converter_keeps_the_contents_entries_and_where_each_was_anchored(doc) -> None:
    assert [(e.title, e.level, e.printed, e.page) for e in doc.contents] == [
        (t, 1, k + 1, k + 2) for k, t in enumerate(ITEMS)
    ]
    assert [(e.heading, e.heading_page) for e in doc.contents] == [
        ("Item 1. Business", 2),
        ("", None),  # not found: also named in a note, as before
        ("Item 3. Legal Proceedings", 4),
        ("Item 4. Mine Safety", 5),
        ("Item 5. Market", 6),
    ]
    assert any("not found in the body: 'Item 2. Properties'" in n for n in doc.notes)
    # A Markdown file has no contents entries.
    assert convert_bytes("a.md", b"# A\n\ntext\n", MB).contents == ()


def test_prompt_shows_numbered_lines_of_the_expected_pages_and_the_anchors(doc) -> None:
    lines = ls.DocLines(doc)
    questions, notes = ls.skeleton_questions(doc, lines)
    assert notes == [] and [q.index for q in questions] == [0, 1, 2, 3, 4]
    prompt = ls.build_skeleton_prompt(questions)
    unseen = line_of(doc, UNSEEN, 3)
    item3 = line_of(doc, "Item 3. Legal Proceedings", 4)
    assert (
        "Entry 1: 'Item 2. Properties' (level 1, printed page 2, expected on PDF page(s) 2-4), "
        "not found"
    ) in prompt
    assert f"\n{unseen}: {UNSEEN}\n" in prompt
    assert f"anchored to line {item3}\n" in prompt and f"\n{item3}: [H1] Item 3." in prompt
    # An anchored entry is shown with its own page's lines only (not the contents page).
    first = questions[0].text
    assert "CONTENTS" not in first and "Item 5. Market | 5" not in first
    assert questions[1].shown[0] < unseen < questions[1].shown[-1]
    assert "Reply with one JSON object" in ls.PROMPT


def test_lines_and_pages_are_bounded(monkeypatch) -> None:
    long = [(f"Row {k} of a long page, with text enough to fill it up.", 9, False, 72, 700 - 9 * k)
            for k in range(70)]  # fmt: skip
    pages = [[("CONTENTS", 11, True, 72, 720)]]
    for k, title in enumerate(ITEMS):
        pages[0] += [
            (title, 10, False, 72, 690 - 16 * k),
            (str(k + 1), 10, False, 520, 690 - 16 * k),
        ]
    pages += [[(t, 12, True, 72, 740), *long] for t in ITEMS]
    doc = convert_bytes("l.pdf", make_pdf(pages), 10 * MB)
    doc = apply_edits(doc, [ls.TreeEdit("merge", "Item 3. Legal Proceedings")])[0]
    monkeypatch.setattr(ls, "PAGE_CHARS", 600)
    questions, _ = ls.skeleton_questions(doc, ls.DocLines(doc))
    (lost,) = [q for q in questions if q.anchored is None]
    assert lost.index == 2 and len(lost.text) < 3 * 600 + 200  # three pages, each cut
    assert "(page 4: " in lost.text and " more lines not shown)" in lost.text
    questions, notes = ls.skeleton_questions(doc, ls.DocLines(doc), max_entries=2)
    # The entry not found is asked first; the others beyond the bound are named.
    assert [q.index for q in questions] == [0, 2]
    assert notes == ["3 contents entries not checked (at most 2 per check): 1, 3, 4"]


def test_a_good_reply_becomes_fixes_that_apply_as_edits(doc) -> None:
    lines = ls.DocLines(doc)
    questions, _ = ls.skeleton_questions(doc, lines)
    unseen = line_of(doc, UNSEEN, 3)
    item3 = line_of(doc, "Item 3. Legal Proceedings", 4)
    body0 = line_of(doc, BODY[0][0], 4)  # the same text is on every page: occurrence 2
    answer = {"0": questions[0].anchored, "1": unseen, "2": body0, "3": None}
    fixes, notes = ls.parse_skeleton_response(
        "Here you are:\n" + json.dumps(answer), questions, lines
    )
    assert notes == []
    assert [(f.entry, f.kind) for f in fixes] == [(1, "mark"), (2, "move"), (3, "merge")]
    assert fixes[0].label == (
        f"'Item 2. Properties': the body line '{UNSEEN}' (p. 3) becomes its heading at level 1"
    )
    assert "not 'Item 3. Legal Proceedings' (p. 4)" in fixes[1].label
    assert [c[0] for c in fixes[1].changes] == [item3, body0]
    edited, problems = apply_edits(doc, ls.skeleton_edits(fixes))
    assert problems == []
    assert [(h.level, h.text, h.page) for h in edited.headings] == [
        (1, "Item 1. Business", 2),
        (1, UNSEEN, 3),
        (1, BODY[0][0], 4),
        (1, "Item 5. Market", 6),
    ]


def test_bad_json_is_a_note_not_a_crash(doc) -> None:
    lines = ls.DocLines(doc)
    questions, _ = ls.skeleton_questions(doc, lines)
    fixes, notes = ls.parse_skeleton_response("I could not find them.", questions[:2], lines)
    assert fixes == []
    assert notes == ["entries 0, 1: the reply held no JSON object ('I could not find them.'); "
                     "not checked"]  # fmt: skip


def test_unknown_indexes_and_lines_not_shown_are_ignored_with_a_note(doc) -> None:
    lines = ls.DocLines(doc)
    questions, _ = ls.skeleton_questions(doc, lines)
    unseen = line_of(doc, UNSEEN, 3)
    item3 = line_of(doc, "Item 3. Legal Proceedings", 4)
    reply_ = f'{{"9": 3, "x": 1, "0": {10**9}, "1": true, "3": "7", "4": 2.0, "2": {unseen}}}'
    fixes, notes = ls.parse_skeleton_response(reply_, questions, lines)
    assert fixes == []
    assert notes == [
        "answer for '9' ignored: not an entry of this call",
        "answer for 'x' ignored: not an entry of this call",
        f"entry 0: line {10**9} was not shown for it; ignored",
        "entry 1: 'True' is not a line number; ignored",
        "entry 3: '7' is not a line number; ignored",
        "entry 4: '2.0' is not a line number; ignored",
        f"entry 2: line {unseen} was not shown for it; ignored",
    ]
    # Another entry's anchored heading is not this one's.
    fixes, notes = ls.parse_skeleton_response(
        json.dumps({"1": item3}), questions, lines, taken={item3}
    )
    assert fixes == [] and notes == [f"entry 1: line {item3} is another entry's heading; ignored"]


def test_none_found_and_confirmed_anchors_propose_nothing(doc) -> None:
    lines = ls.DocLines(doc)
    questions, _ = ls.skeleton_questions(doc, lines)
    answer = {str(q.index): q.anchored for q in questions}  # entry 1: null, the rest confirmed
    assert answer["1"] is None
    assert ls.parse_skeleton_response(json.dumps(answer), questions, lines) == ([], [])


def test_check_is_batched_and_counts_usage(doc, monkeypatch) -> None:
    monkeypatch.setattr(ls, "BATCH_ENTRIES", 2)
    unseen = line_of(doc, UNSEEN, 3)
    client = FakeClient([f'```json\n{{"1": {unseen}}}\n```', "{}", "no json"])
    check = ls.check_contents_skeleton(client, "m", doc)
    assert len(client.prompts) == 3 and check.usage.input_tokens == 30
    assert all(prefix == ls.PROMPT for prefix, _ in client.prompts)
    assert [(f.entry, f.kind) for f in check.fixes] == [(1, "mark")]
    assert check.notes == ["entries 4: the reply held no JSON object ('no json'); not checked"]
    with pytest.raises(ValueError, match="max_entries"):
        ls.check_contents_skeleton(client, "m", doc, max_entries=0)


def test_an_entry_without_a_page_is_looked_for_between_its_neighbours(doc) -> None:
    contents = (
        ContentsEntry("PART I", 1, None, None),
        ContentsEntry("Item 1. Business", 2, 1, None, "Item 1. Business", 2),
        ContentsEntry("PART II", 1, None, None),
        ContentsEntry("Item 5. Market", 2, 5, 6),
    )
    assert ls._pages(contents, 0, 6) == (1, 2)
    assert ls._pages(contents, 2, 6) == (2, 4)  # from Item 1's page, at most 3 pages
    assert ls._pages((ContentsEntry("Lost", 1, None, None),), 0, 6) is None


def _answer_from_prompt(body) -> object:
    prompt = "".join(part["text"] for m in body["messages"] for part in m["content"])
    return reply(contents_answer(prompt))


def test_against_the_fake_anthropic_server(doc) -> None:
    with FakeAnthropicServer(responder=_answer_from_prompt) as server:
        client = AnthropicClient("sk-ant-test", base_url=server.base_url, timeout=5, max_retries=0)
        check = ls.check_contents_skeleton(client, "claude-test", doc)
        assert len(server.requests) == 1  # five small entries: one call
        content = server.requests[0].body["messages"][0]["content"]
        assert content[0]["text"] == ls.PROMPT and "cache_control" in content[0]
        assert check.usage.input_tokens > 0
    assert [(f.entry, f.kind) for f in check.fixes] == [(1, "mark")]
    edited, problems = apply_edits(doc, ls.skeleton_edits(check.fixes))
    assert problems == [] and (1, UNSEEN) in [(h.level, h.text) for h in edited.headings]
    with FakeAnthropicServer(status(401)) as server:
        client = AnthropicClient("sk-ant-test", base_url=server.base_url, timeout=5, max_retries=0)
        with pytest.raises(LLMError):
            ls.check_contents_skeleton(client, "claude-test", doc)


def test_edits_run_last_line_first_so_equal_lines_keep_their_occurrence(doc) -> None:
    """Two entries answered with the same text on pages 3 and 4: marking page 3's first
    would make page 4's line the next occurrence, and the edit would land on page 5."""
    lines = ls.DocLines(doc)
    questions, _ = ls.skeleton_questions(doc, lines)
    on3, on4 = line_of(doc, BODY[1][0], 3), line_of(doc, BODY[1][0], 4)
    fixes, notes = ls.parse_skeleton_response(json.dumps({"1": on3, "2": on4}), questions, lines)
    assert notes == [] and [f.kind for f in fixes] == ["mark", "move"]
    edited, problems = apply_edits(doc, ls.skeleton_edits(fixes))
    assert problems == []
    assert [(h.text, h.page) for h in edited.headings if h.text == BODY[1][0]] == [
        (BODY[1][0], 3),
        (BODY[1][0], 4),
    ]


def test_against_the_fake_openai_server_in_json_mode(doc) -> None:
    from fake_openai import FakeOpenAIServer
    from fake_openai import reply as openai_reply

    from treerag_core.llm import OpenAIClient

    def respond(body) -> object:
        return openai_reply(contents_answer(body["messages"][0]["content"]))

    with FakeOpenAIServer(responder=respond) as server:
        client = OpenAIClient(None, base_url=server.base_url, timeout=5, max_retries=0)
        check = ls.check_contents_skeleton(client, "local-model", doc)
        assert server.bodies[0]["response_format"] == {"type": "json_object"}
        assert server.bodies[0]["messages"][0]["content"].startswith(ls.PROMPT)
    assert [(f.entry, f.kind) for f in check.fixes] == [(1, "mark")]
