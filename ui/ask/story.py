"""The Ask page's story of one question: ① Locate (the tree) → ② Evidence → ③ Answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from treerag_core import CorpusIndex, Engine, trace_to_json
from treerag_core.base.types import Trace
from ui.ask import trace_panels, views
from ui.ask.compare_view import compare_panel as compare_panel  # drawn by pages/ask.py
from ui.common.examples import examples_for, gold_examples_for
from ui.common.inspector import inspector, node_picker
from ui.common.page_view import PassageMarks, original_pdf
from ui.common.query_controls import setting
from ui.common.resources import Corpus
from ui.common.score_tables import rank_moves
from ui.common.session import AskState
from ui.common.text_safety import plain, safe_answer, safe_answer_stream
from ui.common.tree_graph import (
    PRESENT_SCALE,
    GraphMarks,
    TreeGraph,
    graph_legend,
    graph_view,
    heading_matches,
)

_LOG = logging.getLogger(__name__)
GRAPH = TreeGraph("ask_graph", stable=True)
PRESENT = "ask_present"  # the presentation-mode toggle's key
PRESENT_PARAM = "present"  # ?present=1 keeps the mode across a reload
ANSWER_BOX_PX = 190  # presentation mode: the answer's box (it scrolls inside)
PRESENT_READ = "ask_present_read"  # the link's ?present= is read once per session
PRESENT_HELP = (
    "Larger type and graph, fewer controls. The sidebar is hidden while it is on: turn it "
    "off to get the sidebar back. Kept across a reload (the page's link ends in ?present=1)."
)
# Score tables are canvas grids (glide-data-grid): they draw with their own JS theme and
# honour no CSS font size, so the grid's container is enlarged whole with CSS zoom (text,
# rows, columns; Chrome maps clicks through it), its width divided by the zoom so the grid
# still ends at the column's edge.
PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.stMainBlockContainer [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]):not(
  :has([data-testid="stElementContainer"])) {
  zoom: 1.45; width: calc(100% / 1.45) !important; }
.stMainBlockContainer p, .stMainBlockContainer li { font-size: 1.25rem; line-height: 1.5; }
.stMainBlockContainer h1 { font-size: 2.2rem; }
.stMainBlockContainer h2, .stMainBlockContainer h3 { font-size: 1.7rem; }
[data-testid="stCaptionContainer"] { font-size: 1.05rem; }
.stMainBlockContainer [data-testid="stTextInput"] input { font-size: 1.25rem; }
.stMainBlockContainer [data-testid="stTextInput"] { min-height: 2.9rem; }
.stMainBlockContainer button p { font-size: 1.15rem; }
/* Toggles: the switch centred on its (now larger) label, the label on one line. */
.stMainBlockContainer [data-testid="stCheckbox"] label { align-items: center; }
.stMainBlockContainer [data-testid="stCheckbox"] label > div:first-of-type { margin-top: 0; }
.stMainBlockContainer [data-testid="stCheckbox"] p { white-space: nowrap; }
.st-key-ask_present [data-testid="stCheckbox"] p { font-size: 1.1rem; }
/* One screen at 1280x720: less page margin and title, no corpus line (the sidebar's). */
.stMainBlockContainer { padding-top: 1.2rem !important; }
.stMainBlockContainer h1 { font-size: 1.7rem; padding: 0.2rem 0; }
.st-key-ask_corpus_line { display: none; }
/* The inspector's text read from the back of the room. */
.st-key-ask_inspector_box [data-testid="stText"],
.st-key-ask_inspector_box div[style*="pre-wrap"] { font-size: 1.2rem !important; }
.pdf-page-label { font-size: 1.2rem; }
</style>
"""


def present_columns():
    """Presentation mode: the graph (with the picked path) and the answer side by side, so
    both fit one 1280×720 screen; the score tables follow below, one click away."""
    return st.columns([1.1, 1], gap="small")


READY = "Evidence ready"  # the run's last status line, left in place when it is done


def _ready_block(slot: DeltaGenerator) -> None:
    """The block `st.status(READY, state="complete", expanded=False)` sends, built here:
    `st.status` sleeps 50 ms after every creation (so that an update right after it is not
    lost), and a finished status is never updated."""
    from streamlit.elements.lib import mutable_status_container as status
    from streamlit.elements.lib.layout_utils import get_width_config
    from streamlit.proto.Block_pb2 import Block

    block = Block(allow_empty=True)
    block.expandable.expanded = False
    block.expandable.label = READY
    block.expandable.type = Block.Expandable.Type.DEFAULT
    block.expandable.icon = status._STATE_ICONS["complete"]
    block.expandable.state = Block.Expandable.State.COMPLETE
    block.width_config.CopyFrom(get_width_config("stretch"))
    props = status._status_agent_props(
        label=READY, expanded=False, state="complete", type="default"
    )
    slot._block(block_proto=block, dg_type=status.StatusContainer, agent_props=props)


def evidence_ready(slot: DeltaGenerator) -> None:
    """The finished run's status line in `slot` (an `st.empty`), drawn on every rerun: the
    same element as `st.status`, without its 50 ms sleep (a quarter of a slider move's
    rerun). A Streamlit whose internals moved gets the public call (the test of this
    function compares the two elements)."""
    try:
        _ready_block(slot)
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        _LOG.warning("st.status internals moved (%s): the 50 ms path runs", exc)
        slot.status(READY, state="complete", expanded=False)


def sync_present() -> None:
    """A reload keeps presentation mode: the link's `?present=1` is read once per session (only
    "1" turns it on), then the link follows the toggle (removed when the mode is off)."""
    ss = st.session_state
    wanted = st.query_params.get(PRESENT_PARAM)
    if not ss.get(PRESENT_READ):
        ss[PRESENT_READ] = True
        if wanted == "1":
            ss[PRESENT] = True
    if ss.get(PRESENT):
        if wanted != "1":
            st.query_params[PRESENT_PARAM] = "1"
    elif PRESENT_PARAM in st.query_params:
        del st.query_params[PRESENT_PARAM]


def picked_leaves(trace: Trace | None, index: CorpusIndex) -> list[str]:
    if trace is None or trace.locate is None:
        return []
    return [leaf.node_id for leaf in trace.locate.leaves if leaf.node_id in index.nodes]


def focus_order(picked: Sequence[str], cited: set[str]) -> list[str]:
    """The picked leaves in the order the graph fits them: those holding the answer's cited
    evidence first (what the user reads about), then the others in step 1's order."""
    return sorted(picked, key=lambda node: node not in cited)  # stable: step 1's order kept


def cited_nodes(trace: Trace | None, index: CorpusIndex) -> set[str]:
    """Nodes holding cited evidence: of a supported citation's nodes, those that were retrieved.

    A heading path can name several nodes ("Abstract" in two papers); only the ones whose
    chunks were in the evidence are marked.
    """
    if trace is None:
        return set()
    sources = {hit.chunk.source_node_id for hit in trace.reranked}
    return {
        i
        for c in trace.citations
        if c.supported
        for i in c.node_ids
        if i in sources and i in index.nodes
    }


def unpicked_cited_note(trace: Trace | None, marks: GraphMarks, index: CorpusIndex) -> str | None:
    """Why a node is grey with a green border (cited, not picked): which search found the
    passage it holds. None when every cited node was picked."""
    loose = sorted(marks.cited - marks.picked)
    if trace is None or not loose:
        return None
    found: dict[str, list[str]] = {}  # node -> labels of the step-2 groups that hold it
    for group in trace.retrieved:
        for node in {h.chunk.source_node_id for h in group.hits} & set(loose):
            found.setdefault(node, []).append(group.label)
    names = ", ".join(f"`{i}` {plain(index.nodes[i].heading)}" for i in loose)
    searches = sorted({label for labels in found.values() for label in labels})
    by = f" by step 2's search of {plain('; '.join(searches))}" if searches else " in step 2"
    if not marks.picked:
        return (
            f"Grey with a green border ({names}): cited, yet nothing is picked — "
            f"**{plain(trace.strategy)}** has no step-1 pick of sections; the passages the "
            f"answer cites were found{by}."
        )
    return (
        f"Grey with a green border ({names}): cited, though step 1 did not pick "
        f"{'it' if len(loose) == 1 else 'them'} — the cited passage was found{by}, "
        "outside the picked sections."
    )


def marks_for(trace: Trace | None, index: CorpusIndex, doc_ids: Sequence[str]) -> GraphMarks:
    state = AskState()
    cited = cited_nodes(trace, index)
    unsupported = {
        i
        for c in (trace.citations if trace else ())
        if not c.supported
        for i in c.node_ids
        if i in index.nodes and i not in cited
    }
    find = str(st.session_state.get("ask_find", "")).strip()
    routed = trace.locate.documents if trace is not None and trace.locate is not None else ()
    picked = picked_leaves(trace, index)
    ranked = focus_order(picked, cited)
    return GraphMarks(
        picked=frozenset(ranked),
        ranked=tuple(ranked),
        routed=frozenset(index.document(d).root_id for d in routed if d in index.texts),
        cited=frozenset(cited),
        unsupported=frozenset(unsupported),
        matches=frozenset(heading_matches(index, doc_ids, find)),
        selected=state.inspect if state.inspect in index.nodes else None,
        expanded=frozenset(state.expanded),
    )


def graph_docs(index: CorpusIndex, doc_ids: Sequence[str], marks: GraphMarks) -> list[str]:
    """Documents to draw: those routed to or holding picked/cited/selected nodes, else all."""
    focus = (
        marks.picked | marks.routed | marks.cited | ({marks.selected} if marks.selected else set())
    )
    docs = [
        d for d in doc_ids if any(index.nodes[i].doc_id == d for i in focus if i in index.nodes)
    ]
    return docs or list(doc_ids)


# Who picked step 1's sections, said in its heading: a presenter's first question (the
# reasoning and fallbacks stay in the step's details).
PICKED_BY = {
    "llm": " by the LLM",
    "local": " by the local locator",
    "keyword": " by keyword",
    "manual": " by you",
}


def locate_step(corpus: Corpus, doc_ids: Sequence[str], trace: Trace | None) -> None:
    """① The tree with the picked sections; a click opens a node in the inspector."""
    index = corpus.index
    state = AskState()
    GRAPH.take_click(index, state)
    marks = marks_for(trace, index, doc_ids)
    docs = (
        list(doc_ids) if st.session_state.get("ask_all_docs") else graph_docs(index, doc_ids, marks)
    )
    n = len(marks.picked)
    presenting = bool(st.session_state.get(PRESENT))
    # Not when presenting: the heading would wrap at 1280 px and push the graph down.
    by = PICKED_BY.get(trace.locate.locator, "") if trace and trace.locate else ""
    by = "" if presenting else by
    title = "① Locate" + (f" · {n} section{'s' if n != 1 else ''} picked{by}" if n else "")
    if presenting:
        # Presenting, the view's controls fold into one button beside the heading: their row
        # is ~55 px the graph needs to show a picked path whole at 1280×720.
        head, menu = st.columns([4, 1], vertical_alignment="center")
        head.subheader(title)
        with menu.popover("View", icon=":material/tune:", width="stretch"):
            _graph_controls(st, st, st)
    else:
        st.subheader(title)
        # The controls get their own row: beside the heading they were cut to "W…" at 1280 px.
        _graph_controls(*st.columns([1, 0.85, 1], vertical_alignment="center"))
    view = graph_view(index, docs, marks, full=bool(st.session_state.get("ask_full")))
    st.session_state.ask_graph_view = view  # tests read what was drawn
    GRAPH.draw(index, view, state, scale=PRESENT_SCALE if st.session_state.get(PRESENT) else 1)
    graph_legend(view, query_marks=trace is not None)
    # The notes under the graph come and go from one question to the next: each has its own
    # slot, drawn or left empty, so while a run redraws the story no element of the last run
    # stays beside its new copy at a shifted place (a routing panel seen twice).
    note_slot, drawn_slot, routing_slot = st.empty(), st.empty(), st.empty()
    note = unpicked_cited_note(trace, marks, index)
    if note:
        note_slot.caption(note)
    if len(docs) < len(doc_ids):
        drawn_slot.caption(
            f"Drawn: the {len(docs)} document(s) holding the picked sections; "
            f"{len(doc_ids) - len(docs)} other(s) not drawn (the toggle above draws them)."
        )
    if trace is not None and trace.locate is not None and trace.locate.document_scores:
        routing = routing_slot.expander(
            "Document routing: " + trace_panels.routing_caption(trace.locate)
        )
        with routing:
            trace_panels.document_routing(trace.locate, key="locate_routing")


def _graph_controls(find, full, all_docs) -> None:
    """Find a heading, Whole tree, All documents: each drawn where it is given."""
    find.text_input(
        "Find a heading", key="ask_find", placeholder="Find a heading", label_visibility="collapsed"
    )
    full.toggle("Whole tree", key="ask_full", help="Draw every node (no collapsing).")
    all_docs.toggle("All documents", key="ask_all_docs", help="Draw every document in scope.")


def answer_step(
    trace: Trace, index: CorpusIndex, live: Iterator[str] | None, regenerate: Callable[[], None]
) -> None:
    """③ The answer (streamed while it is written), its citations and what fell back."""
    state = AskState()
    present = bool(st.session_state.get(PRESENT))
    st.subheader("③ Answer")
    if not present:  # in presentation mode the question is right above, in its box
        st.caption(f"Q: {plain(trace.question)}")
    slider_moved(trace)
    if not present:
        st.caption(context_used(trace))
    # Presentation mode: the answer scrolls inside a box, so its first sentence and the
    # citation chips under it are on the first screen at 1280x720.
    box = st.container(height=ANSWER_BOX_PX, key="ask_answer_box") if present else st.container()
    if live is not None:
        with box:
            st.write_stream(safe_answer_stream(live))
        return
    if state.stale_answer:
        st.warning(
            "The evidence changed since this answer was written: LLM answers are not "
            "regenerated when a slider moves (that would cost a call each time).",
            icon=":material/sync_problem:",
        )
        st.markdown(safe_answer(state.stale_answer))
        trace_panels.question_flags(trace)
        st.button(
            "Regenerate the answer from the new evidence",
            on_click=regenerate,
            icon=":material/edit_note:",
            key="regenerate",
        )
        return
    if not trace.answer:
        st.info("No answer in this trace (steps 1-2 only).")
        return
    with box:
        st.markdown(safe_answer(trace.answer))
    trace_panels.question_flags(trace)
    trace_panels.citations(trace, index, open_citation, caption=not present)
    trace_panels.fallbacks(trace)


def context_used(trace: Trace) -> str:
    """What the answer read: its passages and their characters, against the run's rule
    (a character budget, or the top-k)."""
    n = len(trace.reranked)
    chars = sum(len(h.chunk.text) for h in trace.reranked)
    budget = setting(trace.settings, "answer.context_chars") or 0
    top_k = setting(trace.settings, "answer.final_top_k")
    rule = (
        f"filled to a budget of {int(budget):,} characters"
        if budget > 0
        else f"top-{top_k}"
        if top_k is not None
        else "as the run chose"
    )
    return f"Answer context: {n} passage{'s' if n != 1 else ''} · {chars:,} characters ({rule})"


def slider_moved(trace: Trace) -> None:
    """After slider moves: what changed since the last full run (Ask, override, History…),
    at the top of the answer (where the user looks)."""
    state = AskState()
    if state.origin != "rerun" or not state.moved:
        return
    moves = rank_moves(state.previous_ranks, trace.reranked)
    if state.stale_answer:
        answer = "the LLM answer was kept (see below)"
    elif moves.any:
        answer = "answer rewritten from the new evidence"
    else:
        answer = "answer written again from the same evidence"
    st.info(
        f"Since the last full run: **{plain(', '.join(state.moved))}** · evidence: "
        f"{moves.describe()} · {answer}. "
        "The moved passages are tinted in ② Evidence.",
        icon=":material/swap_vert:",
    )


def strategy_views(trace: Trace, engine: Engine) -> None:
    """The view the strategy's family adds under the step panels (ui/ask/views.py)."""
    views.draw(trace, engine)


def open_citation(node_id: str | None, span: tuple[int, int] | None) -> None:
    state = AskState()
    state.inspect = node_id
    state.highlight = span


def evidence_step(trace: Trace) -> None:
    """② The evidence: the final passages first, then every searched group and context."""
    state = AskState()
    moved = ""
    if state.origin == "rerun" and state.moved:
        moves = rank_moves(state.previous_ranks, trace.reranked)
        moved = f" · :orange[{moves.describe()}]" if moves.any else " · unchanged"
    st.subheader("② Evidence" + moved)
    tabs = st.tabs(["Final passages (rerank)", "Scores per searched group", "Step 1 details"])
    with tabs[0]:
        trace_panels.rerank(
            trace, state.previous_ranks if state.origin == "rerun" else None, open_citation
        )
    with tabs[1]:
        trace_panels.step2(trace, open_citation)
    with tabs[2]:
        trace_panels.step1(trace)


def inspector_panel(
    corpus: Corpus,
    doc_ids: Sequence[str],
    trace: Trace | None,
    on_toggle: Callable[[list[str]], None],
    page_marks: PassageMarks | None = None,
) -> None:
    """The inspector of the node opened on Ask; `page_marks` go under a PDF passage's page."""
    index = corpus.index
    state = AskState()
    options = [n.node_id for n in index.nodes.values() if n.doc_id in set(doc_ids)]

    def _pick(node_id: str | None) -> None:
        state.inspect, state.highlight = node_id, None

    with st.container(key=INSPECTOR_BOX):
        node_picker(
            index,
            options,
            state.inspect,
            _pick,
            key="ask_inspect_pick",
            placeholder="Click a node in the tree, a citation, or pick one here",
        )
        if state.inspect not in index.nodes:
            st.session_state[SCROLLED] = None
            return
        can_override = (
            trace is not None and trace.locate is not None and state.trace_corpus == corpus.key
        )
        inspector(
            index,
            state.inspect,
            picked=picked_leaves(trace, index) if can_override else None,
            on_toggle=on_toggle if can_override else None,
            scores={leaf.node_id: leaf.score for leaf in trace.locate.leaves}
            if can_override and trace is not None and trace.locate is not None
            else None,
            highlight=state.highlight,
            key="ask_inspector",
            pdf=lambda doc_id: original_pdf(corpus.kind, doc_id),
            page_marks=page_marks,
        )
    opened = (state.inspect, state.highlight)
    if st.session_state.get(SCROLLED) != opened:  # newly opened: bring it (and its mark) in view
        st.session_state[SCROLLED] = opened
        st.session_state.ask_scroll_n = st.session_state.get("ask_scroll_n", 0) + 1
        st.html(scroll_script(st.session_state.ask_scroll_n), unsafe_allow_javascript=True)


INSPECTOR_BOX = "ask_inspector_box"  # the container's key: the scroll script finds it by class
SCROLLED = "ask_inspector_scrolled"  # the (node, span) last scrolled to: scroll once per opening


def scroll_script(nonce: int) -> str:
    """Scroll the inspector's top into view, then its cited mark inside its text box.

    Polls briefly for the box (the page may still be drawing); `nonce` makes each opening a
    new element, so the browser runs it again."""
    return f"""<script data-n="{nonce}">
(() => {{
  let tries = 0;
  const go = () => {{
    const box = document.querySelector(".st-key-{INSPECTOR_BOX}");
    if (!box) {{ if (tries++ < 40) setTimeout(go, 100); return; }}
    box.style.scrollMarginTop = "64px";  // below Streamlit's fixed header
    box.scrollIntoView({{ block: "start" }});
    const mark = box.querySelector("mark#cited");
    if (mark) mark.scrollIntoView({{ block: "nearest" }});
  }};
  setTimeout(go, 50);
}})();
</script>"""


def details(trace: Trace) -> None:
    """Cost and time per stage, and the trace as JSON."""
    state = AskState()
    trace_panels.costs(trace, state.rerun_ms if state.origin == "rerun" else None)
    st.download_button(
        "Download the trace (JSON)",
        # Written on the click (Streamlit calls this then): not on every slider move.
        lambda: trace_to_json(trace),
        file_name=f"treerag-trace-{(trace.created_at or 'run').replace(':', '')}.json",
        mime="application/json",
        icon=":material/download:",
        key="download_trace",
        on_click="ignore",  # a download needs no rerun
    )


def examples(doc_ids: Sequence[str], on_pick: Callable[[str], None]) -> None:
    found = examples_for(doc_ids)
    gold = gold_examples_for(doc_ids)
    if not found and not gold:
        st.caption("Type a question about your documents above.")
        return
    _question_buttons(found, "example", on_pick)
    if gold:
        st.caption("From the dev eval sets (gold evidence known: Compare scores every strategy):")
        _question_buttons(gold, "gold_example", on_pick, icon=":material/verified:")


def _question_buttons(
    pairs: Sequence[tuple[str, str]],
    key: str,
    on_pick: Callable[[str], None],
    icon: str | None = None,
) -> None:
    """(document, question) pairs as buttons three to a row; a click asks the question."""
    cols = st.columns(3)
    for i, (doc, question) in enumerate(pairs):
        cols[i % 3].button(
            plain(question),
            key=f"{key}_{i}",
            on_click=on_pick,
            args=(question,),
            help=f"About {doc}",
            icon=icon,
            width="stretch",
        )


def welcome(doc_ids: Sequence[str], on_pick: Callable[[str], None], llm: bool = False) -> None:
    """The example questions while nothing is asked; `llm`: an LLM is switched on, so the
    keyless promise ("no API key needed") is not made."""
    st.markdown(
        "**Try a question** (the LLM locates and answers; without it a local locator and an "
        "extractive answer run offline)"
        if llm
        else "**Try a question** (no API key needed: a local locator and an extractive answer "
        "run offline)"
    )
    examples(doc_ids, on_pick)
    st.caption(
        "① Locate picks 1-5 leaf sections of the heading tree (the LLM reads the tree, or a "
        "local locator scores every leaf) · ② Evidence: a search inside them (dense + BM25, "
        "fused, then reranked across sections) · ③ Answer: cited sentences from that evidence."
    )
