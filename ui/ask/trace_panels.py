"""Views of one Trace, generic over strategies: citations, fallbacks, costs and the three steps.

Step 2 draws every RetrievalGroup by its kind and every ContextSection a strategy adds, so a
new strategy shows up here without a page change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import (
    RERANK_OFF,
    CorpusIndex,
    answer_fallbacks,
    document_rows,
    format_cost,
    get_strategy,
    naming_control,
    stage_summary,
    verdict_label,
)
from treerag_core import question_flags as flags_of
from treerag_core.base.pagemap import format_pages
from treerag_core.base.text_rules import path_leaf
from treerag_core.base.types import (
    Chunk,
    ContextSection,
    LocateResult,
    RetrievalGroup,
    RetrievedChunk,
    Trace,
)
from ui.common.query_controls import SETTING_LABELS
from ui.common.score_tables import (
    TEXT_PX,
    leaf_score_frame,
    rerank_columns,
    rerank_frame,
    score_columns,
    stage_frame,
    styled_moves,
)
from ui.common.text_safety import code, plain
from ui.common.tree_labels import INFERRED_HELP, inferred_name

Span = tuple[int, int]
GROUP_KINDS = {"leaf": "picked leaf", "scope": "whole scope", "graph": "graph", "layer": "layer"}


def cited_targets(trace: Trace, index: CorpusIndex) -> list[tuple[Any, str | None, Span | None]]:
    """(citation, node to open, cited passage span) for each distinct citation of the answer.

    A path can name several nodes ("Abstract" of two papers): the retrieved one is preferred;
    the span is the first passage of the evidence from that node.
    """
    sources: dict[str, Span] = {}
    for hit in trace.reranked:
        sources.setdefault(hit.chunk.source_node_id, (hit.chunk.start, hit.chunk.end))
    seen: set[tuple[str, bool]] = set()
    out = []
    for cite in trace.citations:
        if (cite.heading_path, cite.supported) in seen:
            continue
        seen.add((cite.heading_path, cite.supported))
        ids = [nid for nid in cite.node_ids if nid in index.nodes]
        target = next((nid for nid in ids if nid in sources), ids[0] if ids else None)
        out.append((cite, target, sources.get(target) if target else None))
    return out


def citations(
    trace: Trace,
    index: CorpusIndex,
    on_select: Callable[[str | None, Span | None], None],
    caption: bool = True,
) -> None:
    """The answer's citations as chips; a click calls `on_select(node_id, passage span)`."""
    if not trace.citations:
        st.caption("The answer cites no section.")
        return
    if caption:
        st.caption("Citations: click one to open the cited passage in its section's text.")
    with st.container(horizontal=True, key="citation_chips"):
        for i, (cite, target, span) in enumerate(cited_targets(trace, index)):
            leaf = path_leaf(cite.heading_path)
            inferred = target is not None and index.nodes[target].inferred
            if inferred:  # named by its first line, not by a heading: the chip says so
                leaf = inferred_name(leaf, index.document(index.nodes[target].doc_id).language)
            icon = ":material/link:" if cite.supported else ":material/warning: unsupported:"
            st.button(
                f"{icon} {plain(leaf)}" + (f" · {target}" if target else ""),
                key=f"cite_{i}",
                on_click=on_select,
                args=(target, span),
                disabled=target is None,
                help=plain(cite.heading_path)
                + (
                    ""
                    if cite.supported
                    else " — not among the retrieved evidence: the claim is not backed by "
                    "what the model was shown."
                )
                + (f" — {INFERRED_HELP}" if inferred else ""),
            )


def question_flags(trace: Trace) -> None:
    """The question's flags (out of scope, sensitive) as notes beside the answer."""
    flags = flags_of(trace)
    doubt = verdict_label(trace.verdict)
    if doubt:  # the keyless answer's own verdict: a label on the answer, never a hidden one
        head, _, tail = doubt.partition(": ")
        st.warning(f"**{plain(head)}:** {plain(tail)}", icon=":material/help:")
    elif flags.out_of_scope and not trace.verdict:  # an LLM's answer: the evidence flag
        scores = flags.evidence
        why = (
            f"best rerank score {scores['top_rerank']:.2f}"
            if scores.get("top_rerank") is not None
            else f"best cosine {scores['top_dense']:.2f}"
            if scores.get("top_dense") is not None
            else "nothing was retrieved"
        )
        st.warning(
            f"**Out of scope?** The evidence found is weak ({why}): the documents may not "
            "answer this question.",
            icon=":material/travel_explore:",
        )
    if flags.is_sensitive:
        st.warning(
            f"**Sensitive question** (rules: {plain(', '.join(flags.sensitive))}): it is "
            "recorded with this flag in the audit log.",
            icon=":material/shield:",
        )


def fallbacks(trace: Trace) -> None:
    """Every step that did not go the preferred way, in plain words."""
    shown = [f for f in trace.fallbacks if f.stage != "synthesize"] + answer_fallbacks(trace)
    for fb in shown:
        st.warning(f"**{fb.stage}** · {plain(fb.detail or fb.reason)}", icon=":material/alt_route:")


def costs(trace: Trace, rerun_ms: float | None = None) -> None:
    """Time, tokens and cost per stage; `rerun_ms` when steps 2-3 re-ran from step 1."""
    rows = stage_summary(trace)
    total_ms = sum(r["ms"] for r in rows)
    tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rows)
    cost = sum(r["cost_usd"] for r in rows)
    # One unpriced stage makes the total unknown: never a made-up $0.0000.
    known = all(r["cost_known"] for r in rows)
    st.caption(
        f"Total {total_ms:,.0f} ms · {tokens:,} tokens · "
        + (f"${cost:.4f}" if known else "price unknown")
    )
    # Short headers with the full name in help: "output_tokens" was cut in the narrow column.
    st.dataframe(
        stage_frame(trace),
        hide_index=True,
        width="stretch",
        key="stage_table",
        column_config={
            "ms": st.column_config.NumberColumn("ms", format="%.1f", help="milliseconds"),
            "input_tokens": st.column_config.NumberColumn("in", help="input tokens"),
            "output_tokens": st.column_config.NumberColumn("out", help="output tokens"),
            "cost_usd": st.column_config.TextColumn("cost", help="US dollars"),
        },
    )
    if rerun_ms is not None:
        st.caption(
            f"Re-ran with the new settings in {rerun_ms:.0f} ms (engine time, no LLM call): "
            "step 1 was reused where its inputs were unchanged and redone by the local "
            "locator where they changed; the step-1 row shows the original run's cost."
        )


def routing_caption(loc: LocateResult) -> str:
    scores = loc.document_scores
    kept = sum(1 for s in scores if s.kept)
    return f"{kept} of {len(scores)} document(s) searched · scored by {scores[0].basis}"


def document_routing(loc: LocateResult | None, key: str = "doc_routing") -> None:
    """Document-level routing scores (any routing strategy): why a document was (not) searched."""
    if loc is None or not loc.document_scores:
        return
    st.markdown("**Document routing** · " + plain(routing_caption(loc)))
    st.dataframe(
        pd.DataFrame(document_rows(loc.document_scores)),
        hide_index=True,
        width="stretch",
        key=key,
        column_config={
            "document": st.column_config.TextColumn("document", width="large"),
            **{
                name: st.column_config.NumberColumn(name, format="%.3f")
                for name in ("score", "dense", "bm25", "passage")
            },
        },
    )


# The score first: after a wide sub-query column it sat off-screen. Text columns are bounded.
STEP1_COLUMNS = ["node", "score", "source", "heading path", "document", "sub-query"]


def step1_columns() -> dict[str, Any]:
    return {
        "node": st.column_config.TextColumn("node", width=56),
        "score": st.column_config.NumberColumn("locator score", format="%.3f", width=104),
        "source": st.column_config.TextColumn("source", width=80),
        "heading path": st.column_config.TextColumn("heading path", width=TEXT_PX),
        "document": st.column_config.TextColumn("document", width=130),
        "sub-query": st.column_config.TextColumn("sub-query", width=TEXT_PX),
    }


def step1(trace: Trace) -> None:
    """Step 1: locator, reasoning, fallbacks, document routing and the picked leaves."""
    loc = trace.locate
    if loc is None:
        st.info("No step-1 result.")
        return
    if loc.documents:
        st.markdown(
            "Routed to " + plain(f"{len(loc.documents)} document(s): {', '.join(loc.documents)}")
        )
    document_routing(loc, key="step1_routing")
    if not loc.leaves and loc.locator == "none":
        st.info(f"Strategy {trace.strategy}: {plain(loc.thinking)}")
        return
    usage = loc.usage
    bits = [f"locator **{plain(loc.locator)}**", f"{loc.seconds * 1000:,.0f} ms"]
    if usage.input_tokens or usage.output_tokens:
        bits.append(f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens")
        model = f" ({usage.model})" if usage.model and usage.cost_known else ""
        bits.append(plain(format_cost(usage) + model))
    st.markdown(" · ".join(bits))
    for note in loc.notes:
        st.caption(plain(note))
    docs = {h.chunk.source_node_id: h.chunk.doc_id for h in trace.candidates}
    rows = [
        {
            "node": leaf.node_id,
            "document": docs.get(leaf.node_id, ""),  # a leaf id alone names no document
            "heading path": leaf.heading_path,
            "sub-query": leaf.sub_query,
            "score": leaf.score,
            "source": leaf.source,
        }
        for leaf in loc.leaves
    ]
    st.dataframe(
        pd.DataFrame(rows, columns=STEP1_COLUMNS),
        hide_index=True,
        width="stretch",
        key="step1_table",
        column_config=step1_columns(),
    )
    with st.expander("Why these sections (the locator's reasoning)"):
        st.text(loc.thinking or "(none given)")


def _fusion_caption(trace: Trace) -> str:
    s = trace.settings.get("retrieve", {})
    fusion = s.get("fusion", "weighted")
    if fusion == "rrf":
        how = f"RRF, k = {s.get('rrf_k')}"
    else:
        dw = float(s.get("dense_weight", 0.5))
        how = f"{fusion}: {dw:.2f} × dense + {1 - dw:.2f} × BM25 (normalised)"
    per_leaf = f" · top {s.get('top_k_per_leaf')} per leaf" if _searches_each_leaf(trace) else ""
    return f"{how}{per_leaf} · {trace.retrieve_seconds * 1000:,.1f} ms"


def _searches_each_leaf(trace: Trace) -> bool:
    """Whether the trace's strategy read `top_k_per_leaf` (unknown names, e.g. from an older
    version's log: no)."""
    try:
        return get_strategy(trace.strategy).searches_each_leaf
    except ValueError:
        return False


def group_title(group: RetrievalGroup) -> str:
    kind = GROUP_KINDS.get(group.kind, group.kind)
    where = f"[{group.leaf_id}] " if group.leaf_id else ""
    return f"{where}{plain(group.label)} · {plain(kind)}"


def step2(trace: Trace, on_open: Callable[[str | None, Span | None], None] | None = None) -> None:
    """Step 2: one score table per searched group, then the strategy's context sections."""
    fusion = trace.settings.get("retrieve", {}).get("fusion", "weighted")
    st.caption(_fusion_caption(trace))
    if not trace.retrieved and not trace.sections:
        st.info("Nothing was retrieved.")
    for number, group in enumerate(trace.retrieved):
        hits = list(group.hits)
        st.markdown(f"**{group_title(group)}**")
        if group.sub_query:
            st.caption(f"sub-query: {plain(group.sub_query)}")
        if not hits:
            st.caption("This group has no chunks.")
            continue
        frame = leaf_score_frame(hits)
        evidence_table(
            frame, frame, hits, score_columns(frame, fusion),
            f"s2_{group.leaf_id or group.kind}_{number}", on_open,
        )  # fmt: skip
        if any(h.minmax_forced for h in hits):
            st.caption(
                "⚠ 1.0 forced: this group has only 1-2 chunks, so min-max normalisation made its "
                "top chunk 1.0 whatever its real relevance; compare across groups after rerank."
            )
    for number, section in enumerate(trace.sections):
        context_section(section, key=f"s2_section_{number}")


def context_section(section: ContextSection, key: str) -> None:
    """A strategy's extra context: its rows as a table, else its text."""
    st.markdown(f"**{plain(section.title)}** · {plain(section.kind)}")
    if section.rows:
        st.dataframe(pd.DataFrame(list(section.rows)), hide_index=True, width="stretch", key=key)
    elif section.text.strip():
        with st.container(height=200, border=True):
            st.text(section.text)
    if section.chunk_ids:
        st.caption(
            f"built from {len(section.chunk_ids)} passage(s): {', '.join(section.chunk_ids[:8])}"
        )


# Measured on the 2-core machine: one fresh pair costs the bundled cross-encoder ~3 ms, one
# cached score ~0.015 ms; a rerank faster than 1 ms read every score from its cache (per
# question and passage, kept across reruns).
ALL_CACHED_SECONDS = 0.001


def rerank_time(seconds: float) -> str:
    """The rerank's time, saying when every score came from the cache (else "0 ms" looks
    like a broken timer after a rerun)."""
    if seconds < ALL_CACHED_SECONDS:
        return "0 ms: every score cached from an earlier run of this question"
    return f"{seconds * 1000:,.0f} ms"


def rerank(
    trace: Trace,
    previous: Mapping[str, int] | None = None,
    on_open: Callable[[str | None, Span | None], None] | None = None,
) -> None:
    """The pooled candidates across groups: rerank score, final rank and rank changes."""
    pooled = sorted(trace.candidates, key=lambda h: h.pooled_rank)
    reranked = trace.reranked
    if trace.reranker:
        st.caption(
            f"{plain(trace.reranker)} · {len(pooled)} pooled candidates → top "
            f"{len(reranked)} · {rerank_time(trace.rerank_seconds)}"
        )
    else:
        reason = next((f.detail for f in trace.fallbacks if f.stage == "rerank"), RERANK_OFF)
        # Plain clauses, never a reason in brackets (it may hold an aside of its own).
        reason = naming_control(reason, f'"{SETTING_LABELS["rerank.chinese"]}" in Step 2')
        said = "Rerank is off" if reason == RERANK_OFF else f"No rerank: {reason.rstrip('.')}"
        st.caption(f"{plain(said)}. The fused order is kept.")
    frame = rerank_frame(reranked, pooled, previous)
    evidence_table(
        styled_moves(frame), frame, pooled, rerank_columns(frame), "rerank_table", on_open
    )


def passage_heading(chunk: Chunk) -> str:
    """The picked passage's line: its section, pages, chunk id and document. The id is a code
    span of its literal text (plain() inside backticks showed its escapes: 0049\\_chunk\\_02)."""
    pages = format_pages(chunk.page_start, chunk.page_end)
    return (
        f"**{plain(chunk.heading_path)}**"
        + (f" · {pages}" if pages else "")
        + f" · {code(chunk.chunk_id)} · {plain(chunk.doc_id)}"
    )


def evidence_table(
    shown: Any,
    frame: pd.DataFrame,
    hits: Sequence[RetrievedChunk],
    columns: Mapping[str, Any],
    key: str,
    on_open: Callable[[str | None, Span | None], None] | None = None,
) -> None:
    """An evidence table whose rows open: a picked row shows its passage's full text, heading
    path and page below the table, with a button that opens it in the inspector (on its
    rendered page for a PDF)."""
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config=dict(columns),
        key=key,
        on_select="rerun",
        selection_mode="single-row",
    )
    state = st.session_state.get(key)
    try:
        rows = state["selection"]["rows"] if state else []
    except (KeyError, TypeError):
        rows = []
    if not rows or not 0 <= rows[0] < len(frame) or "chunk" not in frame:
        st.caption("Pick a row to read its whole passage.")
        return
    by_id = {h.chunk.chunk_id: h for h in hits}
    hit = by_id.get(str(frame.iloc[rows[0]]["chunk"]))
    if hit is None:
        return
    chunk = hit.chunk
    pages = format_pages(chunk.page_start, chunk.page_end)
    with st.container(border=True, key=f"{key}_passage"):
        st.markdown(passage_heading(chunk))
        st.text(chunk.text)
        if on_open is not None:
            st.button(
                "Open in the inspector" + (" (on its page)" if pages else ""),
                key=f"{key}_open",
                on_click=on_open,
                args=(chunk.source_node_id, (chunk.start, chunk.end)),
                icon=":material/open_in_new:",
            )
