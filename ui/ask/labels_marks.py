"""Ask: mark which passages answer the question (rows) and mark a selected span as evidence."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from treerag_core import CorpusIndex, LabelledQuestion, LabelStore, make_mark, mark_from_text
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.types import Trace
from ui.common.corpora import UPLOADS
from ui.common.page_view import PassageMarks
from ui.common.resources import Corpus
from ui.common.text_safety import plain
from ui.common.workspace import workspace_folder

NOTICE = "lab_notice"  # the last mark's outcome (or error), shown once
SPAN_KEY = "lab_span"  # the span text box; the inspector's selection is copied into it
ROWS_SHOWN = 10
ANSWERS, NOT = "Answers the question", "Does not"


def store() -> LabelStore:
    """This session's workspace's labels (beside its index)."""
    return LabelStore.for_workspace(workspace_folder())


def can_mark(corpus: Corpus | None) -> bool:
    return corpus is not None and corpus.kind == UPLOADS


def _verdicts(question: LabelledQuestion) -> dict[tuple[str, int, int], bool]:
    return {m.key: m.answers for m in question.marks}


def _set(question: str, index: CorpusIndex, doc: str, start: int, end: int, answers: bool):
    """A row's button: mark it; pressing the verdict it already has removes the mark."""
    s = store()
    try:
        current = _verdicts(s.get(question)).get((doc, start, end))
        if current is answers:
            s.unmark(question, doc, start, end)
            st.session_state[NOTICE] = ("info", "Mark removed.")
        else:
            s.mark(question, make_mark(index, doc, start, end, answers))
            what = "answers the question" if answers else "does not answer it"
            st.session_state[NOTICE] = ("success", f"Marked: the passage {what}.")
    except (TreeRAGError, OSError) as exc:
        st.session_state[NOTICE] = ("error", f"Not marked: {exc}")


def _mark_span(question: str, index: CorpusIndex, doc: str, near: int) -> None:
    try:
        mark = mark_from_text(index, doc, str(st.session_state.get(SPAN_KEY, "")), near)
        store().mark(question, mark)
    except (TreeRAGError, OSError) as exc:
        st.session_state[NOTICE] = ("error", f"Not marked: {exc}")
        return
    st.session_state[SPAN_KEY] = ""
    st.session_state[NOTICE] = ("success", f"Marked {len(mark.text):,} characters as evidence.")


def _notice() -> None:
    got = st.session_state.pop(NOTICE, None)
    if got:
        kind, text = got
        getattr(st, kind)(plain(text))


def _badged(verdict: bool | None, text: str) -> str:
    """`text` after the passage's verdict badge ("✅ answers · …"); an unmarked passage has
    none (a bare "·" there read "#1 · · PART II" in the rows)."""
    badge = {True: "✅ answers", False: "❌ does not", None: ""}[verdict]
    return f"{badge} · {text}" if badge else text


def _row_buttons(question, index, doc, start, end, verdict, key: str) -> None:
    a, b = st.columns(2)
    a.button(
        ANSWERS, key=f"{key}_yes", on_click=_set, args=(question, index, doc, start, end, True),
        type="primary" if verdict is True else "secondary", width="stretch",
    )  # fmt: skip
    b.button(
        NOT, key=f"{key}_no", on_click=_set, args=(question, index, doc, start, end, False),
        type="primary" if verdict is False else "secondary", width="stretch",
    )  # fmt: skip


def _labelled_line(question: LabelledQuestion) -> None:
    n = len(question.evidence)
    if n:
        negatives = len(question.marks) - n
        st.caption(
            f"🏷 Labelled: {n} evidence span(s) · {negatives} marked as not answering. "
            "It counts in *My labelled questions* on Evaluate."
        )
    else:
        st.caption("Not labelled yet: mark at least one passage (or span) that answers it.")


def passage_marks(trace: Trace, corpus: Corpus | None) -> None:
    """Every final passage (the rerank table's rows) with its two verdict buttons."""
    if not can_mark(corpus):
        st.caption("Marking evidence works on your own documents (corpus “My uploads”).")
        return
    assert corpus is not None
    question = store().get(trace.question)
    verdicts = _verdicts(question)
    with st.expander("Mark the evidence: which passages answer the question?", expanded=True):
        _notice()
        _labelled_line(question)
        rows = trace.reranked[:ROWS_SHOWN]
        # Two documents may hold the same text (a law as Markdown and as PDF): then each row
        # names its document, or identical rows hide which copy is being marked.
        several = len({h.chunk.doc_id for h in rows}) > 1
        for hit in rows:
            c = hit.chunk
            verdict = verdicts.get((c.doc_id, c.start, c.end))
            where = (
                f"{plain(c.doc_id)} › {plain(c.heading_path)}" if several else plain(c.heading_path)
            )
            left, right = st.columns([3, 2], vertical_alignment="center")
            left.markdown(
                f"**#{hit.final_rank}** {_badged(verdict, where)}  \n"
                f"{plain(c.text[:220])}{'…' if len(c.text) > 220 else ''}"
            )
            with right:
                _row_buttons(trace.question, corpus.index, c.doc_id, c.start, c.end, verdict,
                             f"lab_row_{c.chunk_id}")  # fmt: skip


def page_marks(trace: Trace | None, corpus: Corpus | None) -> PassageMarks | None:
    """The verdict buttons for the passage a PDF page view shows (a citation opened on its
    page): the rows' buttons and rule (`_set`), so a mark made here shows on its row too."""
    if trace is None or not can_mark(corpus):
        return None
    assert corpus is not None
    question, index = trace.question, corpus.index

    def draw(doc: str, start: int, end: int) -> None:
        verdict = _verdicts(store().get(question)).get((doc, start, end))
        with st.container(border=True, key="lab_page"):  # the badge says the outcome
            st.caption(_badged(verdict, f"Does this passage answer “{plain(question)}”?"))
            _row_buttons(question, index, doc, start, end, verdict, "lab_page")

    return draw


def inspector_marks(trace: Trace | None, corpus: Corpus | None, node_id: str | None) -> None:
    """Under the inspector: its chunks' verdicts, and a selected span marked as evidence."""
    if trace is None or not can_mark(corpus) or node_id is None:
        return
    assert corpus is not None
    index = corpus.index
    node = index.nodes.get(node_id)
    if node is None or not node.content:
        return
    question = store().get(trace.question)
    verdicts = _verdicts(question)
    with st.container(border=True, key="lab_inspector"):
        st.markdown(f"**Mark evidence in this section** for “{plain(trace.question)}”")
        _notice()
        st.text_area(
            "Evidence span",
            key=SPAN_KEY,
            height=80,
            help="Select text in the section's content above (it is copied here), or paste "
            "it: it must be verbatim in the document.",
            placeholder="Select the sentences that answer the question in the text above",
        )
        st.button(
            "Mark the selected text as evidence",
            key="lab_mark_span",
            icon=":material/bookmark_add:",
            on_click=_mark_span,
            args=(trace.question, index, node.doc_id, node.start),
        )
        st.html(SELECTION_SCRIPT, unsafe_allow_javascript=True)
        rows: Sequence[int] = index.leaf_rows(node_id).tolist() if node.is_leaf else []
        for r in rows[:ROWS_SHOWN]:
            c = index.chunks[r]
            verdict = verdicts.get((c.doc_id, c.start, c.end))
            left, right = st.columns([3, 2], vertical_alignment="center")
            left.caption(_badged(verdict, f"{plain(c.text[:160])}…"))
            with right:
                _row_buttons(trace.question, index, c.doc_id, c.start, c.end, verdict,
                             f"lab_ins_{c.chunk_id}")  # fmt: skip


# A selection made inside the inspector's box is copied into the span box: the value is set
# through the element's own prototype setter with an input event (what React listens to),
# then the box is focused and blurred, which commits it to Streamlit. No `//` comments: the
# script must survive being joined into one line.
SELECTION_SCRIPT = f"""<script>
(() => {{
  if (window.__treeragSpan) return;
  window.__treeragSpan = true;
  document.addEventListener("mouseup", () => {{
    const sel = window.getSelection();
    const text = sel ? sel.toString() : "";
    if (!text.trim()) return;
    const box = document.querySelector(".st-key-ask_inspector_box");
    if (!box || !box.contains(sel.anchorNode)) return;
    const area = document.querySelector(".st-key-{SPAN_KEY} textarea");
    if (!area) return;
    window.__treeragSpanLast = text;
    const own = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(area), "value");
    area.focus();
    if (own && own.set) own.set.call(area, text); else area.value = text;
    area.dispatchEvent(new Event("input", {{ bubbles: true }}));
    area.blur();
  }});
}})();
</script>"""


def labelled_texts() -> set[str]:
    """The workspace's labelled questions (whitespace-normalised), for History."""
    try:
        return store().labelled_texts()
    except (TreeRAGError, OSError):
        return set()
