"""Score tables as DataFrames with their column configs: outline, chunks, step 2, rerank, stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import CorpusIndex, stage_summary
from treerag_core.base.pagemap import format_pages
from treerag_core.base.text_rules import preview
from treerag_core.base.types import RetrievedChunk, Trace
from ui.common.tree_labels import node_kind

TEXT_CHARS = 400  # a table cell shows this much of a chunk (the inspector shows all of it)
FORCED = "⚠ 1.0 forced"
# Score tables put every score before the long text columns, and bound those in px: with a
# "large" text column second, the scores sat past the right edge at 1280 and 1440 px.
TEXT_PX = 300
BAR_PX = 96  # a progress bar with its three-decimal value
TEXT_HELP = "the start of the passage: pick its row to read all of it (and see its page)"
PAGE_COLUMN = st.column_config.TextColumn("page", width=72, help="the PDF page(s) it comes from")


def outline_frame(index: CorpusIndex, doc_id: str) -> pd.DataFrame:
    """The document's tree as rows: id, depth, heading (indented), summary, chunk count."""
    rows = []
    for node in index.nodes.values():
        if node.doc_id != doc_id:
            continue
        depth = len(index.ancestors(node.node_id))
        rows.append(
            {
                "node": node.node_id,
                "level": depth,
                "heading": "　" * depth + node.heading,
                "kind": node_kind(node),
                "summary": node.summary,
                "chunks": len(index.leaf_rows(node.node_id)),
                "chars": node.end - node.start,
            }
        )
    return pd.DataFrame(rows)


def chunk_frame(index: CorpusIndex, node_id: str) -> pd.DataFrame:
    rows = [
        {
            "chunk": index.chunks[r].chunk_id,
            "start": index.chunks[r].start,
            "end": index.chunks[r].end,
            "chars": index.chunks[r].end - index.chunks[r].start,
            "text": index.chunks[r].text,
        }
        for r in index.leaf_rows(node_id).tolist()
    ]
    return pd.DataFrame(rows, columns=["chunk", "start", "end", "chars", "text"])


def leaf_score_frame(hits: Sequence[RetrievedChunk]) -> pd.DataFrame:
    """Step 2 for one group: every score a chunk got, in the group's rank order.

    The min-max column is there only when min-max forced a 1.0 in this group.
    """
    forced = any(h.minmax_forced for h in hits)
    graphed = any(h.graph is not None for h in hits)  # treerag-kg: the graph column (0-1)
    paged = has_pages(hits)
    columns = [
        "rank", "dense", "bm25", "dense_norm", "bm25_norm", "fused",
        *(["graph"] if graphed else []), *(["forced_1"] if forced else []),
        *(["page"] if paged else []), "text", "chunk", "offsets",
    ]  # fmt: skip
    rows = []
    for h in hits:
        row = {
            "rank": h.leaf_rank,
            "text": preview(h.chunk.text, TEXT_CHARS),
            "dense": h.dense,
            "bm25": h.bm25,
            "dense_norm": h.dense_norm,
            "bm25_norm": h.bm25_norm,
            "fused": h.fused,
            "chunk": h.chunk.chunk_id,
            "offsets": f"{h.chunk.start}–{h.chunk.end}",
        }
        if graphed:
            row["graph"] = float(h.graph) if h.graph is not None else float("nan")
        if forced:
            row["forced_1"] = FORCED if h.minmax_forced else ""
        if paged:
            row["page"] = pages_of(h)
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def has_pages(hits: Sequence[RetrievedChunk]) -> bool:
    """Whether any passage comes from a PDF (then every evidence table gets a page column)."""
    return any(h.chunk.page_start is not None for h in hits)


def pages_of(hit: RetrievedChunk) -> str:
    return format_pages(hit.chunk.page_start, hit.chunk.page_end)


def _bar(label: str, low: float, high: float, help_: str) -> Any:
    if high <= low:
        high = low + 1.0
    return st.column_config.ProgressColumn(
        label, min_value=float(low), max_value=float(high), format="%.3f", help=help_, width=BAR_PX
    )


def text_column() -> Any:
    return st.column_config.TextColumn("text", width=TEXT_PX, help=TEXT_HELP)


FUSED_HELP = {
    "weighted": "dense_weight × dense_norm + (1 − dense_weight) × bm25_norm",
    "rrf": "Σ weight / (k + rank) over the two rankings",
    "dbsf": "normalised by mean ± 3 std, then weighted",
}
FORCED_HELP = (
    "A group of 1-2 chunks: min-max gave this chunk 1.0 whatever its real relevance, so its "
    "fused score is not comparable with other groups' before rerank."
)


def score_columns(frame: pd.DataFrame, fusion: str) -> dict[str, Any]:
    """Score bars scaled to what each column can hold (raw BM25 and RRF have no fixed top)."""

    def top(col: str) -> float:
        return float(frame[col].max()) if len(frame) else 1.0

    def low(col: str) -> float:
        return min(0.0, float(frame[col].min())) if len(frame) else 0.0

    return {
        "rank": st.column_config.NumberColumn("rank", width=56),
        "text": text_column(),
        "dense": _bar("dense", min(0.0, low("dense")), max(1.0, top("dense")), "cosine"),
        "bm25": _bar("BM25", low("bm25"), top("bm25"), "raw BM25 (IDF over the document)"),
        "dense_norm": _bar("dense norm", 0.0, 1.0, "dense after normalisation"),
        "bm25_norm": _bar("BM25 norm", 0.0, 1.0, "BM25 after normalisation"),
        "fused": _bar("fused", low("fused"), max(top("fused"), 1e-9), FUSED_HELP.get(fusion, "")),
        "graph": _bar("graph", 0.0, 1.0, GRAPH_HELP),
        "forced_1": st.column_config.TextColumn("min-max", help=FORCED_HELP, width=96),
        "page": PAGE_COLUMN,
    }


GRAPH_HELP = "the leaf graph's score of this chunk, divided by its leaf's best (treerag-kg)"


MOVE_COLOURS = {  # row backgrounds of the rerank table after a slider move
    "up": "rgba(22, 163, 74, 0.16)",
    "down": "rgba(234, 88, 12, 0.16)",
    "new": "rgba(37, 99, 235, 0.16)",
    "out": "rgba(100, 116, 139, 0.16)",
}


@dataclass(frozen=True)
class Moves:
    """How the final passages moved between two runs of one question."""

    up: int = 0
    down: int = 0
    new: int = 0
    out: int = 0

    @property
    def any(self) -> bool:
        return bool(self.up or self.down or self.new or self.out)

    def describe(self) -> str:
        parts = [
            f"{n} {what}"
            for n, what in (
                (self.up, "↑ moved up"),
                (self.down, "↓ moved down"),
                (self.new, "new"),
                (self.out, "dropped out"),
            )
            if n
        ]
        return ", ".join(parts) if parts else "the same passages in the same order"


def rank_moves(previous: Mapping[str, int], reranked: Sequence[RetrievedChunk]) -> Moves:
    now = {h.chunk.chunk_id: h.final_rank for h in reranked}
    return Moves(
        up=sum(1 for c, r in now.items() if c in previous and previous[c] > r),
        down=sum(1 for c, r in now.items() if c in previous and previous[c] < r),
        new=sum(1 for c in now if c not in previous),
        out=sum(1 for c in previous if c not in now),
    )


def move_kind(since_last: str) -> str | None:
    """The move a "since last" cell names: up, down, new, out (None: unchanged or unknown)."""
    if since_last.startswith("↑"):
        return "up"
    if since_last.startswith("↓"):
        return "down"
    return since_last if since_last in ("new", "out") else None


def styled_moves(frame: pd.DataFrame) -> Any:
    """The frame with each moved row tinted by its move (the frame itself when none moved)."""
    if "since last" not in frame:
        return frame
    kinds = [move_kind(str(v)) for v in frame["since last"]]
    if not any(kinds):
        return frame
    row_css = [f"background-color: {MOVE_COLOURS[k]}" if k else "" for k in kinds]
    # One frame of CSS for the whole table: a per-row apply built a Series per row, the
    # larger part of the styling's cost on every slider move.
    css = pd.DataFrame(
        {column: row_css for column in frame.columns}, index=frame.index, dtype=object
    )
    return frame.style.apply(lambda _: css, axis=None)


def rank_change(before: int, after: int) -> str:
    move = before - after
    return f"↑{move}" if move > 0 else f"↓{-move}" if move < 0 else "="


def rerank_frame(
    reranked: Sequence[RetrievedChunk],
    pooled: Sequence[RetrievedChunk],
    previous: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """Every pooled candidate: its pooled (fused) rank, rerank score and final rank.

    A candidate that did not reach the final top-k has an empty final rank ("dropped" in
    the change column). The section column (the section score, 0-1) is there only when a
    structure-aware strategy scored sections; the rerank column only when the cross-encoder
    scored; the min-max column only when min-max forced a 1.0; with `previous` (chunk ->
    final rank of the run before a slider move), "since last" says how each passage moved.
    """
    final = {h.chunk.chunk_id: h for h in reranked}
    scored = any(c.rerank is not None for c in pooled)
    # Structure-aware strategies score each chunk's section (0-1); others leave it None.
    sectioned = any(c.prior is not None for c in pooled)
    forced = any(c.minmax_forced for c in pooled)
    graphed = any(c.graph is not None for c in pooled)
    paged = has_pages(pooled)
    rows = []
    for cand in pooled:
        hit = final.get(cand.chunk.chunk_id)
        row: dict[str, Any] = {
            "final": str(hit.final_rank) if hit else "",
            "change": rank_change(cand.pooled_rank, hit.final_rank) if hit else "dropped",
        }
        if previous:
            before = previous.get(cand.chunk.chunk_id)
            row["since last"] = (
                ("new" if before is None else rank_change(before, hit.final_rank))
                if hit
                else ("out" if before is not None else "")
            )
        row |= {
            "pooled": cand.pooled_rank,
            # The pooled order's own score (fusion over all groups), not the per-group one.
            "fused": cand.pool_fused if cand.pool_fused is not None else cand.fused,
        }
        if sectioned:
            prior = hit.prior if hit else cand.prior
            row["section"] = float(prior) if prior is not None else float("nan")
        if graphed:
            row["graph"] = float(cand.graph) if cand.graph is not None else float("nan")
        if scored:
            rerank = hit.rerank if hit else cand.rerank
            row["rerank"] = float(rerank) if rerank is not None else float("nan")
        if forced:
            row["forced_1"] = FORCED if cand.minmax_forced else ""
        if paged:
            row["page"] = pages_of(cand)
        row |= {  # after the scores: the text columns would push them off-screen
            "leaf": cand.chunk.source_node_id,
            "document": cand.chunk.doc_id,  # the file name: a leaf id alone names no document
            "text": preview(cand.chunk.text, TEXT_CHARS),
            "chunk": cand.chunk.chunk_id,
        }
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    order = frame["final"].map(lambda v: int(v) if v else 10**9)
    return (
        frame.assign(_o=order)
        .sort_values(["_o", "pooled"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def rerank_columns(frame: pd.DataFrame) -> dict[str, Any]:
    config: dict[str, Any] = {
        # Widths in px so every header reads in full ("pooled rank" was cut at "small").
        "final": st.column_config.TextColumn("final rank", width=84),
        "change": st.column_config.TextColumn(
            "change", width=72, help="pooled (fused) rank → final rank"
        ),
        "since last": st.column_config.TextColumn(
            "since last", width=84, help="how the passage moved since the previous settings"
        ),
        "pooled": st.column_config.NumberColumn("pooled rank", width=96),
        "fused": st.column_config.NumberColumn("fused", format="%.3f", width=72),
        "section": st.column_config.ProgressColumn(
            "section",
            min_value=0.0,
            max_value=1.0,
            format="%.3f",
            help="the section score (0-1) the strategy gave this chunk's section",
            width=BAR_PX,
        ),
        "graph": st.column_config.ProgressColumn(
            "graph", min_value=0.0, max_value=1.0, format="%.3f", help=GRAPH_HELP, width=BAR_PX
        ),
        "forced_1": st.column_config.TextColumn("min-max", help=FORCED_HELP, width=96),
        "leaf": st.column_config.TextColumn("leaf", width=56, help="the leaf (section) id"),
        "page": PAGE_COLUMN,
        "document": st.column_config.TextColumn("document", width=130),
        "text": text_column(),
        "chunk": st.column_config.TextColumn("chunk", width=110),
    }
    if "rerank" in frame and frame["rerank"].notna().any():
        low, high = float(frame["rerank"].min()), float(frame["rerank"].max())
        config["rerank"] = st.column_config.ProgressColumn(
            "rerank",
            min_value=low,
            max_value=high if high > low else low + 1,
            format="%.3f",
            help="the cross-encoder's score (a logit: only the order matters)",
            width=BAR_PX,
        )
    return config


def stage_frame(trace: Trace) -> pd.DataFrame:
    frame = pd.DataFrame(stage_summary(trace))
    # An unpriced stage says so instead of a made-up $0.0000.
    frame["cost_usd"] = [
        f"${c:.4f}" if known else "price unknown"
        for c, known in zip(frame["cost_usd"], frame["cost_known"], strict=True)
    ]
    return frame.drop(columns="cost_known")
