"""Compare on Ask: the question through every strategy, as one summary table, then cards."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import HIRAG_FAMILY as HIRAG
from treerag_core import (
    Compared,
    Engine,
    TreeRAGKG,
    compare_strategies,
    get_strategy,
    graphs_of,
    hirag_for,
    strategy_names,
)
from treerag_core.base.errors import MissingGraphsError, TreeRAGError
from treerag_core.base.settings import QuerySettings
from treerag_core.base.text_rules import path_leaf, preview
from treerag_core.base.types import RetrievedChunk, Trace
from ui.common.graph_guidance import MISSING, how_to_add
from ui.common.query_controls import ASK_SETTINGS, RERUN_SETTINGS, describe_moves
from ui.common.session import AskState
from ui.common.text_safety import code, error_markdown, plain, show_error
from ui.documents.hirag_build import build_graph
from ui.evaluate.gold import SHOWN, Gold, gold_for, strategy_metrics

COMPARE_TEXT_CHARS = 160
COMPARE_TOP = 3  # passages named per strategy in the table and shown per card
SECTION_SEP = " · "


def _top_score(hits: Sequence[RetrievedChunk]) -> str:
    """The first passage's score, named by its scale: a rerank logit and a fused score in
    [0, 1] are not comparable, so the cell says which it is."""
    if not hits:
        return "—"
    top = hits[0]
    if top.rerank is not None:
        return f"{top.rerank:.2f} rerank"
    return f"{top.fused:.2f} fused"


def top_sections(hits: Sequence[RetrievedChunk]) -> str:
    """The first passages' sections in order, each once ("×2": it holds two of them), each
    by its last heading: full paths share their first headings, so a narrow cell cut them
    all to the same "3 Methods > …" (the full paths are in each strategy's card)."""
    counts = Counter(h.chunk.heading_path or h.chunk.doc_id for h in hits[:COMPARE_TOP])
    return SECTION_SEP.join(
        f"{path_leaf(s) or s} ×{n}" if n > 1 else path_leaf(s) or s for s, n in counts.items()
    )


def _picked(trace: Trace) -> str:
    """Sections picked in step 1; "—" for a strategy that picks none by design (flat-*)."""
    if trace.locate is None or not get_strategy(trace.strategy).locates:
        return "—"
    return str(len(trace.locate.leaves))


def summary_frame(
    results: Sequence[Compared], base: Sequence[str], own: str, gold: Gold | None = None
) -> pd.DataFrame:
    """One row per strategy that ran: its top passages' sections, how many of its passages
    the trace's own strategy (`own`, passages `base`) also found, its top score, its time;
    with `gold`, the harness's metrics. Strategies that could not run are left to a note."""
    shared_label = f"shared with {own}"
    rows = []
    for item in results:
        if item.trace is None:
            continue
        hits = list(item.trace.reranked)
        ids = [h.chunk.chunk_id for h in hits]
        row: dict[str, object] = {
            "strategy": item.strategy,
            "top sections": top_sections(hits),
            shared_label: f"{len(set(base) & set(ids))}/{len(ids)}",
            "picked": _picked(item.trace),
            "top score": _top_score(hits),
            "ms": round(item.seconds * 1000),
        }
        if gold is not None:
            found = strategy_metrics(gold, item.trace)
            # Text cells: a metric a strategy has no value for (no section pick) reads "—".
            for label in SHOWN.values():
                row[label] = f"{found[label]:.2f}" if label in found else "—"
        rows.append(row)
    return pd.DataFrame(rows)


HIRAG_STRATEGIES = frozenset(HIRAG.strategies)  # they need the corpus graph
INCLUDE_GRAPH = "compare_build_hirag"  # the toggle: run hirag-* although their graph is missing
BUILD_GRAPH = "compare_build_graph"  # the button: build the HiRAG graph here, then compare


def graph_missing(engine: Engine) -> bool:
    """Whether the hirag-* strategies would first have to build the corpus graph (a minute or
    more on a large corpus: `build_estimate`)."""
    from ui.ask.hirag_view import graph_store_for

    store, _ = graph_store_for(engine.index)
    return store is None


# An offline HiRAG build grows faster than its passages (clustering): measured on a quiet
# 2-core machine with the default embedder, 13 s for a 57-page 10-Q's 1,054 passages and 97 s
# for a 104-page 10-K's 3,041 (the hashing embedder: 11 s for the 1,054; the embedder is not
# what costs). seconds = BUILD_SECONDS * (passages / BUILD_PASSAGES) ** BUILD_EXPONENT, the
# exponent fitted to the two; a loaded machine takes several times longer.
BUILD_PASSAGES, BUILD_SECONDS, BUILD_EXPONENT = 1054, 13.0, 1.9


def build_estimate(engine: Engine) -> str:
    """What building the HiRAG graph of this index will take, in words ("about 2 min")."""
    n = len(engine.index.chunks)
    seconds = BUILD_SECONDS * (n / BUILD_PASSAGES) ** BUILD_EXPONENT
    about = f"about {max(seconds, 1):.0f} s" if seconds < 90 else f"about {seconds / 60:.0f} min"
    return f"{about} for {n:,} passages on a quiet 2-core machine"


def _include_hirag() -> bool:
    """The toggle's value as the user left it (drawn with the note, after the button)."""
    return bool(st.session_state.get(INCLUDE_GRAPH, False))


def _missing_parts(engine: Engine, kind: str | None) -> None:
    """Strategies whose index part is missing, named with what it costs: the HiRAG graph can
    be built here (a progress bar) or first thing in the comparison (the toggle, off by
    default: minutes); leaf graphs come with an index build on Documents. Drawn after a
    comparison ran, so it never names a graph the comparison has just built."""
    names = strategy_names(runnable=True)
    if graph_missing(engine):
        hirag = [n for n in names if n in HIRAG_STRATEGIES]
        estimate = build_estimate(engine)
        st.info(
            f"**{', '.join(hirag)}** need the HiRAG corpus graph, not built yet for these "
            f"documents: building it offline takes {estimate}, "
            "once. Build it here now, or on Documents → “HiRAG corpus graph” (there with the "
            "LLM too); or include them below, and the comparison builds it first. Until then "
            "they are left out of the comparison.",
            icon=":material/hourglass_top:",
        )
        folder = getattr(engine.index, "folder", None)
        if folder is None:  # a read-only data dir: the index lives in this process only
            st.caption("This index is held in memory only: the comparison builds the graph.")
        elif st.button("Build the HiRAG graph now", key=BUILD_GRAPH, icon=":material/hub:"):
            meta = build_graph(engine.index, Path(folder))  # offline: Compare calls no LLM
            if meta is not None:  # else the error is shown and the note stays
                counts = meta["counts"]
                st.toast(f"HiRAG graph built: {counts['entities']:,} entities")
                st.rerun()  # the note goes; hirag-* read the built graph
        st.toggle(
            "Include them (build the graph first)",
            value=False,
            key=INCLUDE_GRAPH,
            help=f"Off: they are left out. On: Compare builds the graph first ({estimate}), "
            "once, then runs them; the build's time is shown apart from their query times.",
        )
    if TreeRAGKG.name in names and graphs_of(engine.index) is None:
        # No cheap build of leaf graphs for an open index: they come with an index build.
        st.info(
            f"{MISSING} This comparison names it under the table as not run. Leaf graphs come "
            f"with an index build; on **Documents**: {how_to_add(kind)}",
            icon=":material/hub:",
        )
        st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")


def _build_first(engine: Engine) -> float | None:
    """The opted-in HiRAG build, before any strategy runs, so its minutes are shown (a
    progress bar) and timed apart from the strategies' query times. Its seconds, or None
    (the error shown) when it failed."""
    started = time.perf_counter()
    folder = getattr(engine.index, "folder", None)
    if folder is not None:
        if build_graph(engine.index, Path(folder)) is None:  # offline: Compare calls no LLM
            return None
    else:  # an index in memory only: built (and kept) in this process
        with st.spinner(f"Building the HiRAG corpus graph ({build_estimate(engine)})…"):
            try:
                hirag_for(engine.index, embedder=engine.embedder)
            except (TreeRAGError, OSError, ValueError) as exc:
                show_error(exc, "The HiRAG graph was not built: hirag-* are left out.")
                return None
    return time.perf_counter() - started


def _run(
    engine: Engine,
    trace: Trace,
    settings: QuerySettings,
    scope: list[str] | None,
    skip: Sequence[str] = (),
) -> list[Compared]:
    """Every runnable strategy in turn (but `skip`), with a progress bar naming the one
    running."""
    names = [n for n in strategy_names(runnable=True) if n not in skip]
    bar = st.progress(0.0, text="Comparing…")
    results: list[Compared] = []
    for i, name in enumerate(names):
        bar.progress(i / len(names), text=f"Running {name} ({i + 1} of {len(names)})…")
        results += compare_strategies(
            engine, trace.question, settings, strategies=[name], scope=scope,
            located=trace.locate, located_by=trace.strategy,
        )  # fmt: skip
    bar.empty()
    return results


def compare_panel(
    trace: Trace, engine: Engine, settings: QuerySettings, kind: str | None = None
) -> None:
    """The same question through every registered strategy (no LLM call): a summary table
    first, each strategy's passages on demand below it."""
    state = AskState()
    scope = list(state.trace_scope) if state.trace_scope else None  # the question's own scope
    st.caption(
        "The question through every registered strategy (steps 1-2, no LLM call; the "
        "trace's own strategy reuses its step 1)."
    )
    stamp = (trace.created_at, trace.question, repr(settings.to_dict()))
    base = [h.chunk.chunk_id for h in trace.reranked]
    # The missing parts' note sits above the button, but is drawn after a comparison ran:
    # a graph built by it is never named as missing (the note said so until the next rerun).
    notes = st.container()
    if st.button("Compare strategies", icon=":material/compare_arrows:", key="compare_run"):
        skip: list[str] = []
        graph_seconds = None
        if graph_missing(engine):
            if _include_hirag():
                graph_seconds = _build_first(engine)
            if graph_seconds is None:  # left out, or its build failed (said)
                skip = sorted(HIRAG_STRATEGIES)
        results = _run(engine, trace, settings, scope, skip)
        with st.spinner("Looking for this question's gold evidence in the dev sets…"):
            lookup = gold_for(trace.question, engine.index)
        gold = lookup.gold if lookup is not None else None
        # The table is made once per compare, kept with its results: every other rerun
        # (a toggle, an inspected node, an open card) reads it, never recomputes the metrics.
        frame = summary_frame(results, base, trace.strategy, gold)
        state.compare = {
            "stamp": stamp,
            "question": trace.question,
            "corpus": state.trace_corpus,
            "base": base,
            "controls": settings.to_dict(),
            "results": results,
            "gold": lookup,
            "summary": frame,
            "graph_seconds": graph_seconds,  # the HiRAG build it ran first, not in "ms"
        }
    with notes:
        _missing_parts(engine, kind)  # said before a run: never a silent freeze in it
    data = state.compare
    if not data or (data["question"], data["corpus"]) != (trace.question, state.trace_corpus):
        return  # another question's or corpus's comparison: nothing of it applies here
    if data["stamp"] != stamp:
        _stale(data["controls"], settings, ran_again=data["stamp"][0] != trace.created_at)
    results: list[Compared] = data["results"]
    lookup = data.get("gold")
    gold = lookup.gold if lookup is not None else None
    for problem in lookup.problems if lookup is not None else ():
        # Metrics are missing for a reason the user can fix.
        st.warning(f"No gold metrics from a dev set: {plain(problem)}", icon=":material/error:")
    _summary(results, data["summary"], trace.strategy, gold, kind)
    if data.get("graph_seconds") is not None:
        st.caption(
            f"Built the HiRAG corpus graph first in {data['graph_seconds']:.0f} s (once, kept "
            "for later questions): not counted in the ms column, which is each strategy's "
            "steps 1-2 alone."
        )
    st.markdown("**Each strategy's passages** (open one to read them)")
    for item in results:
        _card(item, set(data["base"]), trace.strategy)  # the table's "shared with" base


def _stale(before: Mapping[str, Any], settings: QuerySettings, ran_again: bool) -> None:
    """The comparison stays on screen, marked: rerunning every strategy on each slider step
    would cost seconds per step (more with real models), and a vanished table reads as lost."""
    # Only settings the comparison read: one it did not (absent before) is not a change.
    moves = describe_moves(before, settings, (*ASK_SETTINGS, *RERUN_SETTINGS), skip_new=True)
    if moves:
        what = f"**Settings changed since this comparison:** {plain('; '.join(moves))}."
    elif ran_again:  # an override or a regenerated answer: same settings, another run
        what = "**The question ran again since this comparison.**"
    else:
        what = "**Settings changed since this comparison.**"
    st.warning(
        f"{what} The table below is from before: press **Compare strategies** to refresh it.",
        icon=":material/update:",
    )


# The summary's text columns: (name, width, help).
_SUMMARY_TEXT_COLUMNS = (
    (
        "top sections",
        "large",
        "the last heading of the first passages' sections; the full paths are in each "
        "strategy's card below",
    ),
    ("picked", "small", "sections picked in step 1 (—: the strategy picks none)"),
    (
        "top score",
        "small",
        "the first passage's cross-encoder logit (rerank), or its fused dense + BM25 score in "
        "[0, 1] where no reranker ran: compare within a kind",
    ),
)


def _summary(
    results: Sequence[Compared],
    frame: pd.DataFrame,
    own: str,
    gold: Gold | None,
    kind: str | None,
) -> None:
    if gold is not None:
        st.markdown(
            f"**Against the gold evidence** · this is question {code(gold.question.id)} of the "
            f"{code(gold.dataset)} dev set"
        )
    if not frame.empty:
        st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            height="content",  # every strategy's row at once: no scroll inside the table
            key="compare_metrics" if gold is not None else "compare_summary",
            column_config={
                **{
                    name: st.column_config.TextColumn(name, width=width, help=help_text)
                    for name, width, help_text in _SUMMARY_TEXT_COLUMNS
                },
                "ms": st.column_config.NumberColumn(
                    "ms", width="small", help="steps 1-2, this run"
                ),
            },
        )
    st.caption(
        f"Top sections: the first {COMPARE_TOP} passages' sections. Shared with {plain(own)}: "
        f"how many of a strategy's passages {plain(own)} (this answer's strategy) also found."
        + (
            " Recall@Nc: share of the gold evidence inside the first N characters of passages; "
            "Hit@5: a gold span in the top 5; Section hit@5: a picked section is a gold one "
            "(— for strategies that pick no sections). Rules: docs/evaluation.md."
            if gold is not None
            else ""
        )
    )
    for item in results:
        if item.trace is None:
            failure = item.failure
            if isinstance(failure, MissingGraphsError):  # the steps are in the note above
                why = "this index has no leaf knowledge graphs (how to add them: the note above)."
            elif failure is not None:
                why = error_markdown(failure, kind)
            else:
                why = plain(item.error)
            st.caption(f"**{plain(item.strategy)}** could not run: {why}")


def _card(item: Compared, base: set[str], own: str) -> None:
    if item.trace is None:
        return  # named under the table
    ids = [h.chunk.chunk_id for h in item.trace.reranked]
    shared, ms = f"{len(base & set(ids))}/{len(ids)}", f"{item.seconds * 1000:,.0f} ms"
    with st.expander(plain(f"{item.strategy} · {shared} shared with {own} · {ms}")):
        st.caption(plain(item.label))
        st.caption(f"{ms} · {shared} shared with {plain(own)}")
        loc = item.trace.locate
        if loc is not None and loc.leaves:
            st.markdown("Picked sections:")
            for leaf in loc.leaves:
                st.caption(f"`{leaf.node_id}` {plain(leaf.heading_path)}")
        st.markdown("Top passages:")
        for h in item.trace.reranked:  # full section names, wrapped: a table would cut them
            st.markdown(
                f"{h.final_rank}. **{plain(h.chunk.heading_path)}** · "
                f"{plain(preview(h.chunk.text, COMPARE_TEXT_CHARS))}"
            )
