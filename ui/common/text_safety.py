"""Document and model text shown safely: Markdown escaped, images defused, errors as messages."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import streamlit as st

from treerag_core.base.errors import TreeRAGError
from treerag_core.base.text_rules import one_line
from ui.common.remedies import explorer_message

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^])")


def plain(text: str) -> str:
    """Escape Markdown so document text shown in a label or caption stays literal text."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(str(text)))


def code(text: str) -> str:
    """Text as a Markdown code span: literal inside (escaping there would show the
    backslashes), fenced with more backticks than any run the text holds."""
    body = one_line(str(text))
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def safe_answer_stream(deltas: Iterable[str]) -> Iterator[str]:
    """Answer deltas made safe and readable as Markdown.

    Images are defused (`![..](url)` would load a URL): the answer is written by an LLM that
    read the documents, so an instruction planted in a document could ask for an image whose
    URL carries the question away. A trailing "!" is held back one delta so an image opener
    split across deltas is still caught. Single newlines become line breaks, so the
    extractive answer's numbered lines stay on their own lines.
    """
    held = ""
    for delta in deltas:
        text = (held + delta).replace("![", "!\\[")
        held = ""
        if text.endswith("!"):
            text, held = text[:-1], "!"
        if text:
            yield text.replace("\n", "  \n")
    if held:
        yield held


def safe_answer(text: str) -> str:
    return "".join(safe_answer_stream([text]))


def error_markdown(exc: Exception, kind: str | None = None) -> str:
    """An expected failure as Markdown for the page.

    The one place an engine error becomes the explorer's message: an error whose advice is
    for the CLI (a flag to pass) names its `remedy`, and the explorer's own steps for it are
    given instead (`ui.common.remedies`), for the corpus `kind` asked on (None: steps for any).
    """
    own = explorer_message(exc, kind)
    return own if own is not None else _own_text(exc)


def _own_text(exc: Exception) -> str:
    message = str(exc) if isinstance(exc, TreeRAGError | ValueError | KeyError) else repr(exc)
    return plain(message)  # it may quote a file name or a question: text, not Markdown


def show_error(exc: Exception, what_next: str = "", kind: str | None = None) -> None:
    """An expected failure as a message with the next step; never a traceback."""
    own = explorer_message(exc, kind)
    if own is not None:
        what_next = ""  # the explorer's own steps already say what to do
    message = own if own is not None else _own_text(exc)
    st.error(message + (f"\n\n{what_next}" if what_next else ""), icon=":material/error:")


def shown_time(stamp: object) -> str:
    """An audit-log or trace time as the pages show it: "2026-11-22 23:40" (to the minute)."""
    return str(stamp or "").replace("T", " ")[:16]
