"""Views of one Trace: citations, fallbacks, per-stage costs, step 1, step 2 and rerank."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from pages import widgets as w
from treerag_core.index import CorpusIndex
from treerag_core.text_rules import path_leaf
from treerag_core.trace_io import stage_summary
from treerag_core.types import Trace


def citations(trace: Trace, index: CorpusIndex, on_select: Callable[[str | None], None]) -> None:
    """The answer's citations as chips; a click calls `on_select(node_id)`."""
    if not trace.citations:
        st.caption("The answer cites no section.")
        return
    st.caption("Citations — click one to show its section in the tree:")
    seen: set[tuple[str, bool]] = set()
    sources = {hit.chunk.source_node_id for hit in trace.reranked}
    with st.container(horizontal=True):
        for i, cite in enumerate(trace.citations):
            if (cite.heading_path, cite.supported) in seen:
                continue
            seen.add((cite.heading_path, cite.supported))
            # A path can name several nodes ("Abstract" of two papers): prefer the retrieved one.
            ids = [nid for nid in cite.node_ids if nid in index.nodes]
            target = next((nid for nid in ids if nid in sources), ids[0] if ids else None)
            leaf = path_leaf(cite.heading_path)
            icon = ":material/link:" if cite.supported else ":material/warning: unsupported:"
            st.button(
                f"{icon} {w.plain(leaf)}" + (f" · {target}" if target else ""),
                key=f"cite_{i}",
                on_click=on_select,
                args=(target,),
                disabled=target is None,
                help=w.plain(cite.heading_path)
                + (
                    ""
                    if cite.supported
                    else " — not among the retrieved evidence: the claim is not backed by "
                    "what the model was shown."
                ),
            )


def fallbacks(trace: Trace) -> None:
    """Every step that did not go the preferred way, in plain words."""
    for fb in trace.fallbacks:
        text = fb.detail or fb.reason
        st.warning(f"**{fb.stage}** · {w.plain(text)}", icon=":material/alt_route:")


def costs(trace: Trace, rerun_ms: float | None = None) -> None:
    """Time, tokens and cost per stage; `rerun_ms` when steps 2-3 re-ran from step 1."""
    rows = stage_summary(trace)
    total_ms = sum(r["ms"] for r in rows)
    tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rows)
    cost = sum(r["cost_usd"] for r in rows)
    frame = w.stage_frame(trace)
    st.caption(f"Total {total_ms:,.0f} ms · {tokens:,} tokens · ${cost:.4f}")
    st.dataframe(frame, hide_index=True, width="stretch", key="stage_table")
    if rerun_ms is not None:
        st.caption(
            f"Re-ran with the new settings in {rerun_ms:.0f} ms (engine time, no LLM call): "
            "step 1 was reused where its inputs were unchanged and redone by the local "
            "locator where they changed; the step-1 row shows the original run's cost."
        )


def step1(trace: Trace) -> None:
    """Step 1: locator, reasoning, fallbacks and the picked leaves with their sub-queries."""
    loc = trace.locate
    if loc is None:
        st.info("No step-1 result.")
        return
    if not loc.leaves and loc.locator == "none":
        st.info(f"Strategy {trace.strategy}: {w.plain(loc.thinking)}")
    usage = loc.usage
    bits = [f"locator **{w.plain(loc.locator)}**", f"{loc.seconds * 1000:,.0f} ms"]
    if usage.input_tokens or usage.output_tokens:
        bits.append(f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens")
        bits.append(
            f"${usage.cost_usd:.4f}" + (f" ({w.plain(usage.model)})" if usage.model else "")
        )
    st.markdown(" · ".join(bits))
    for fb in trace.fallbacks:
        if fb.stage == "locate":
            st.warning(w.plain(fb.detail or fb.reason), icon=":material/alt_route:")
    for note in loc.notes:
        st.caption(w.plain(note))
    st.markdown("**Reasoning**")
    with st.container(border=True):
        st.text(loc.thinking or "(none given)")
    rows = [
        {
            "node": leaf.node_id,
            "heading path": leaf.heading_path,
            "sub-query": leaf.sub_query,
            "score": leaf.score,
            "source": leaf.source,
        }
        for leaf in loc.leaves
    ]
    st.markdown(f"**Picked leaves** ({len(rows)})")
    st.dataframe(
        pd.DataFrame(rows, columns=["node", "heading path", "sub-query", "score", "source"]),
        hide_index=True,
        width="stretch",
        key="step1_table",
        column_config={"score": st.column_config.NumberColumn("locator score", format="%.3f")},
    )


def step2(trace: Trace) -> None:
    """Step 2: one score table per picked leaf, scores as bars, the min-max flag visible."""
    s = trace.settings.get("retrieve", {})
    fusion = s.get("fusion", "weighted")
    if fusion == "rrf":
        how = f"RRF, k = {s.get('rrf_k')}"
    else:
        dw = float(s.get("dense_weight", 0.5))
        how = f"{fusion}: {dw:.2f} × dense + {1 - dw:.2f} × BM25 (normalised)"
    st.caption(
        f"{how} · top {s.get('top_k_per_leaf')} per leaf · {trace.retrieve_seconds * 1000:,.1f} ms"
    )
    if not trace.retrieved:
        st.info("Nothing was retrieved.")
    for number, group in enumerate(trace.retrieved):
        hits = list(group.hits)
        if group.leaf_id is None:
            title = f"{w.plain(group.label)} ({group.kind})"
        else:
            title = f"[{group.leaf_id}] {w.plain(group.label)}"
        st.markdown(f"**{title}**")
        sub = group.sub_query
        if sub:
            st.caption(f"sub-query: {w.plain(sub)}")
        if not hits:
            st.caption("This leaf has no chunks.")
            continue
        frame = w.leaf_score_frame(hits)
        st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            column_config=w.score_columns(frame, fusion),
            key=f"s2_{group.leaf_id or group.kind}_{number}",
        )
        if any(h.minmax_forced for h in hits):
            st.caption(
                "⚠ 1.0 forced: this leaf has only 1-2 chunks, so min-max normalisation made its "
                "top chunk 1.0 whatever its real relevance; compare across leaves after rerank."
            )


def rerank(trace: Trace) -> None:
    """The pooled candidates across leaves: rerank score, final rank and rank change."""
    # Traces keep every scored candidate; older saved traces only have the final top-k.
    pooled = sorted(trace.candidates, key=lambda h: h.pooled_rank)
    reranked = trace.reranked
    if trace.reranker:
        st.caption(
            f"{w.plain(trace.reranker)} · {len(pooled)} pooled candidates → top "
            f"{len(reranked)} · {trace.rerank_seconds * 1000:,.0f} ms"
        )
    else:
        reason = next((f.detail for f in trace.fallbacks if f.stage == "rerank"), "rerank off")
        st.caption(f"No rerank ({w.plain(reason)}): the fused order is kept.")
    frame = w.rerank_frame(reranked, pooled)
    scores = [h.rerank for h in pooled if h.rerank is not None]
    config: dict[str, Any] = {
        "final": st.column_config.NumberColumn("final rank"),
        "change": st.column_config.TextColumn("change", help="pooled (fused) rank → final rank"),
        "pooled": st.column_config.NumberColumn("pooled rank"),
        "text": st.column_config.TextColumn("text", width="medium"),
        "fused": st.column_config.NumberColumn("fused", format="%.3f"),
        "forced_1": st.column_config.TextColumn("min-max"),
    }
    if scores:
        low, high = min(scores), max(scores)
        config["rerank"] = st.column_config.ProgressColumn(
            "rerank", min_value=low, max_value=high if high > low else low + 1, format="%.2f"
        )
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key="rerank_table")
    if len(pooled) > len(reranked) and not trace.candidates:
        st.caption(
            "Dropped candidates show no rerank score: the trace keeps scores of the final "
            "top-k only."
        )
