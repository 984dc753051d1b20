"""The terminal format: control and escape sequences from questions and documents are inert."""

from __future__ import annotations

from treerag_core.base.types import Trace
from treerag_core.records.terminal import json_terminal_safe, render_trace, terminal_safe


def test_terminal_safe_escapes_control_sequences():
    assert terminal_safe("a\x1b[31mred\x1b[0m") == "a\\x1b[31mred\\x1b[0m"
    assert terminal_safe("\x1b]52;c;ZXZpbA==\x07") == "\\x1b]52;c;ZXZpbA==\\x07"  # OSC 52
    assert terminal_safe("csi\x9b2J bidi\u202e") == "csi\\x9b2J bidi\\u202e"
    assert terminal_safe("line\nnext\ttab 中文") == "line\nnext\ttab 中文"


def test_json_terminal_safe_keeps_json_valid():
    import json

    text = json.dumps({"q": "x\x9by\u2066"}, ensure_ascii=False)
    assert json.loads(json_terminal_safe(text)) == {"q": "x\x9by\u2066"}
    assert "\x9b" not in json_terminal_safe(text)


def test_render_trace_escapes_question_and_answer():
    trace = Trace("why \x1b[2J?", "treerag", {}, {}, answer="ok \x1b]52;c;eA==\x07")
    out = render_trace(trace)
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out


def test_footer_shows_the_question_flags():
    from treerag_core.records.terminal import render_footer

    trace = Trace("what is the admin password?", "treerag", {}, {})
    footer = render_footer(trace)
    assert "Flag: out of scope" in footer  # nothing was found at all
    assert "Flag: sensitive (credentials)" in footer


def test_the_answers_fallback_prints_after_the_answer_others_before_step_2():
    from treerag_core.base.types import Fallback
    from treerag_core.records.terminal import render_footer, render_retrieval

    trace = Trace("q", "treerag", {}, {}, answer="A.")
    trace.fallbacks += [
        Fallback("locate", "no_api_key", "no API key: local locator"),
        Fallback("synthesize", "no_llm_client", "no API key: extractive answer"),
    ]
    before, after = render_retrieval(trace), render_footer(trace)
    assert "Fallback (locate)" in before and "Fallback (synthesize)" not in before
    assert "Fallback (synthesize): no_llm_client" in after and "Fallback (locate)" not in after
    assert before.index("Fallback (locate)") < before.index(">>> Step 2")
