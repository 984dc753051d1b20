"""Shared UI pieces: the tree graph, score tables, citation chips, the node inspector, errors."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core.errors import TreeRAGError
from treerag_core.index import CorpusIndex
from treerag_core.text_rules import one_line, preview
from treerag_core.trace_io import stage_summary
from treerag_core.types import RetrievedChunk, TreeNode

# ---- text safety ---------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^])")


def plain(text: str) -> str:
    """Escape Markdown so document text shown in a label or caption stays literal text."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(str(text)))


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


def show_error(exc: Exception, what_next: str = "") -> None:
    """An expected failure as a message with the next step; never a traceback."""
    message = str(exc) if isinstance(exc, TreeRAGError | ValueError | KeyError) else repr(exc)
    # The message may quote a file name or a question: shown as text, not Markdown.
    st.error(plain(message) + (f"\n\n{what_next}" if what_next else ""), icon=":material/error:")


# ---- the tree graph (streamlit-agraph's component, called with a stable key) ---------------

PALETTE = {
    "root": "#1E293B",
    "section": "#94A3B8",
    "leaf": "#E2E8F0",
    "path": "#FDBA74",  # an ancestor of a picked leaf
    "picked": "#EA580C",  # a leaf step 1 picked
    "match": "#FDE047",  # a heading search hit
    "border": "#64748B",
    "cited": "#16A34A",  # border of a leaf that holds cited evidence
    "selected": "#2563EB",  # border of the node open in the inspector
    "unsupported": "#DC2626",  # border of a section the answer cites but was not retrieved
    "edge": "#CBD5E1",
    "edge_path": "#EA580C",
}
FULL_TREE_LIMIT = 40  # larger trees collapse the subtrees off the focus paths
MAX_WIDTH_SLOTS = 9  # ... and so do trees wider than this many node slots (labels would shrink)
SLOT_PX, LEVEL_PX = 150, 100  # node slot width and level height, in graph pixels
SIBLING_CAP = 12  # an open node with more children shows the focused ones and a "+N" node
MORE_PREFIX = "more:"  # id prefix of the "+N more" placeholder nodes
LABEL_CHARS = 30


@dataclass(frozen=True)
class GraphMarks:
    """What to highlight on the tree."""

    picked: frozenset[str] = frozenset()
    cited: frozenset[str] = frozenset()
    unsupported: frozenset[str] = frozenset()  # cited by the answer, not in the evidence
    matches: frozenset[str] = frozenset()
    selected: str | None = None
    expanded: frozenset[str] = frozenset()


@dataclass
class GraphView:
    """Nodes and edges ready for vis-network, plus what was collapsed."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    hidden: dict[str, int] = field(default_factory=dict)  # visible node -> hidden descendants
    total: int = 0


def _depth(index: CorpusIndex, node_id: str) -> int:
    return len(index.ancestors(node_id))


def _descendants(index: CorpusIndex, node_id: str) -> int:
    todo, count = list(index.nodes[node_id].children), 0
    while todo:
        count += 1
        todo.extend(index.nodes[todo.pop()].children)
    return count


def tidy_layout(
    children: dict[str, list[str]], roots: Sequence[str], gap: float = 1.4
) -> dict[str, tuple[float, int]]:
    """(slot, depth) of every node: a compact top-down tidy tree.

    Leaves take one slot; a parent sits centred over its first and last child; each subtree
    is shifted right only as far as its left contour needs to clear the right contour of its
    left siblings at every depth (so a short subtree tucks under its neighbours).
    Document roots are packed the same way, `gap` slots apart.
    """
    pos: dict[str, float] = {}
    depth_of: dict[str, int] = {}

    def place(node: str, depth: int) -> tuple[dict[int, float], dict[int, float]]:
        depth_of[node] = depth
        kids = children.get(node, [])
        if not kids:
            pos[node] = 0.0
            return {depth: 0.0}, {depth: 0.0}
        left, right = _pack(kids, depth + 1, 1.0)
        x = (pos[kids[0]] + pos[kids[-1]]) / 2
        pos[node] = x
        left[depth], right[depth] = x, x
        return left, right

    def _pack(
        kids: Sequence[str], depth: int, sep: float
    ) -> tuple[dict[int, float], dict[int, float]]:
        left_acc: dict[int, float] = {}
        right_acc: dict[int, float] = {}
        for kid in kids:
            before = set(pos)
            left, right = place(kid, depth)
            members = [n for n in pos if n not in before]
            common = [d for d in left if d in right_acc]
            shift = max((right_acc[d] + sep - left[d] for d in common), default=0.0)
            for n in members:
                pos[n] += shift
            for d, v in left.items():
                left_acc.setdefault(d, v + shift)
            for d, v in right.items():
                right_acc[d] = max(right_acc.get(d, v + shift), v + shift)
        return left_acc, right_acc

    _pack(list(roots), 0, gap)
    low = min(pos.values(), default=0.0)
    return {n: (x - low, depth_of[n]) for n, x in pos.items()}


def _drawn_children(
    index: CorpusIndex, node_ids: Sequence[str]
) -> tuple[dict[str, list[str]], list[str]]:
    shown = set(node_ids)
    children: dict[str, list[str]] = {}
    roots = []
    for node_id in node_ids:
        parent = index.nodes[node_id].parent_id if node_id in index.nodes else None
        if parent is not None and parent in shown:
            children.setdefault(parent, []).append(node_id)
        else:
            roots.append(node_id)
    return children, roots


def _width_in_slots(index: CorpusIndex, node_ids: Sequence[str]) -> float:
    children, roots = _drawn_children(index, node_ids)
    slots = tidy_layout(children, roots)
    return max((x for x, _ in slots.values()), default=0.0) + 1


def visible_nodes(
    index: CorpusIndex, doc_ids: Sequence[str], marks: GraphMarks, full: bool
) -> tuple[list[str], dict[str, list[str]]]:
    """Which nodes to draw, and for capped parents which children stay hidden.

    A top-down tree gets illegible when wide, so a tree is drawn whole only when it is small
    and narrow (or `full`). Otherwise: the document roots (a single document's root is open;
    with several, the first is open only while nothing is focused), every focus node
    (picked, cited, matched, selected) with its ancestors and their children (the siblings
    along the path), and the children of nodes the user expanded. A parent with more than
    SIBLING_CAP children shows the focused ones first and a "+N more" node.
    """
    wanted = set(doc_ids)
    in_scope = [n for n in index.nodes.values() if n.doc_id in wanted]
    ids = [n.node_id for n in in_scope]
    if full or (
        len(in_scope) <= FULL_TREE_LIMIT and _width_in_slots(index, ids) <= MAX_WIDTH_SLOTS
    ):
        return ids, {}
    focus = {
        i
        for i in marks.picked | marks.cited | marks.unsupported | marks.matches | {marks.selected}
        if i is not None and i in index.nodes and index.nodes[i].doc_id in wanted
    }
    chains = {a for i in focus for a in [i, *index.ancestors(i)]}
    expanded = {i for i in marks.expanded if i in index.nodes and index.nodes[i].doc_id in wanted}
    roots = [n.node_id for n in in_scope if n.is_root]
    opened = (chains - focus) | expanded | {a for i in expanded for a in index.ancestors(i)}
    if len(roots) == 1 or (roots and not focus and not expanded):
        opened.add(roots[0])  # a first view shows the first document's sections
    if marks.selected in expanded:
        opened.add(marks.selected)
    shown = set(chains) | set(roots)
    capped: dict[str, list[str]] = {}
    for parent in opened:
        children = list(index.nodes[parent].children)
        if len(children) > SIBLING_CAP and parent not in expanded:
            keep = [c for c in children if c in chains]
            room = max(SIBLING_CAP - len(keep), 0)
            keep += [c for c in children if c not in keep][:room]
            shown.update(keep)
            capped[parent] = [c for c in children if c not in keep]
        else:
            shown.update(children)
    order = [i for i in ids if i in shown]
    return order, capped


def graph_view(
    index: CorpusIndex, doc_ids: Sequence[str], marks: GraphMarks, full: bool = False
) -> GraphView:
    """Build the vis-network nodes and edges for the documents' trees with the marks applied."""
    order, capped = visible_nodes(index, doc_ids, marks, full)
    shown = set(order)
    path = {a for leaf in marks.picked if leaf in index.nodes for a in index.ancestors(leaf)}
    view = GraphView(total=sum(1 for n in index.nodes.values() if n.doc_id in set(doc_ids)))
    for node_id in order:
        node = index.nodes[node_id]
        hidden_children = [c for c in node.children if c not in shown]
        hidden = sum(1 + _descendants(index, c) for c in hidden_children)
        if hidden:
            view.hidden[node_id] = hidden
        view.nodes.append(_node_dict(index, node, marks, path, hidden))
        if node.parent_id is not None and node.parent_id in shown:
            on_path = node_id in path or node_id in marks.picked
            view.edges.append(
                {
                    "from": node.parent_id,
                    "to": node_id,
                    "color": PALETTE["edge_path"] if on_path else PALETTE["edge"],
                    "width": 3 if on_path else 1,
                }
            )
    for parent, rest in capped.items():
        if parent in shown and rest:
            more = sum(1 + _descendants(index, c) for c in rest)
            more_id = f"{MORE_PREFIX}{parent}"
            view.nodes.append(
                {
                    "id": more_id,
                    "label": f"+{len(rest)} more sections",
                    "shape": "box",
                    "level": _depth(index, parent) + 1,
                    "color": {"background": "#FFFFFF", "border": PALETTE["border"]},
                    "shapeProperties": {"borderDashes": [5, 4]},
                    "font": {"color": "#475569", "size": 13},
                }
            )
            view.edges.append({"from": parent, "to": more_id, "color": PALETTE["edge"], "width": 1})
            view.hidden[more_id] = more
    _place(view)
    return view


def _place(view: GraphView) -> None:
    """Give every node x/y from the tidy layout.

    Fixed positions also make vis-network fit the view to the tree's bounding box on first
    draw; without them it guesses a zoom from the node count, and wide trees overflow.
    """
    children: dict[str, list[str]] = {}
    has_parent = set()
    for edge in view.edges:
        children.setdefault(edge["from"], []).append(edge["to"])
        has_parent.add(edge["to"])
    roots = [n["id"] for n in view.nodes if n["id"] not in has_parent]
    slots = tidy_layout(children, roots)
    for node in view.nodes:
        x, depth = slots[node["id"]]
        node["x"], node["y"] = round(x * SLOT_PX), depth * LEVEL_PX
        node["level"] = depth


def _node_dict(
    index: CorpusIndex, node: TreeNode, marks: GraphMarks, path: set[str], hidden: int
) -> dict[str, Any]:
    """One vis node. No `title`: the component puts titles into innerHTML (and opens them as a
    URL on double-click), so document text must never go there."""
    node_id = node.node_id
    if node.is_root:
        label = preview(index.document(node.doc_id).title or node.heading, 34)
        background, font = PALETTE["root"], "#FFFFFF"
    else:
        label = f"{node_id} · {preview(node.heading, LABEL_CHARS)}"
        background, font = (
            (PALETTE["leaf"], "#0F172A") if node.is_leaf else (PALETTE["section"], "#0F172A")
        )
    if node_id in path:
        background, font = PALETTE["path"], "#0F172A"
    if node_id in marks.matches:
        background, font = PALETTE["match"], "#0F172A"
    if node_id in marks.picked:
        background, font = PALETTE["picked"], "#FFFFFF"
    border, width = PALETTE["border"], 1
    if node_id in marks.cited:
        border, width = PALETTE["cited"], 4
        label = "✓ " + label
    elif node_id in marks.unsupported:
        border, width = PALETTE["unsupported"], 4
        label = "✗ " + label
    if node_id == marks.selected:
        border, width = PALETTE["selected"], 5
    if hidden:
        label += f"  (+{hidden})"
    out: dict[str, Any] = {
        "id": node_id,
        "label": label,
        "shape": "box",
        "level": _depth(index, node_id),
        "borderWidth": width,
        "borderWidthSelected": max(width, 3),  # vis would double it when clicked
        "color": {
            "background": background,
            "border": border,
            "highlight": {"background": background, "border": PALETTE["selected"]},
            "hover": {"background": background, "border": PALETTE["selected"]},
        },
        "font": {"color": font, "size": 14},
    }
    if hidden:
        out["shapeProperties"] = {"borderDashes": [5, 4]}
    return out


def graph_config(height: int) -> dict[str, Any]:
    """vis-network options: positions come from `tidy_layout` (top-down), physics off, no
    groups (else the component logs errors, see stack.md), no dragging."""
    return {
        "height": f"{height}px",
        "width": "100%",
        "autoResize": True,
        "physics": {"enabled": False},
        "layout": {"hierarchical": {"enabled": False}},
        "groups": {},
        "edges": {
            "arrows": {"to": {"enabled": False}},
            "smooth": {"enabled": True, "type": "cubicBezier", "forceDirection": "vertical"},
        },
        "nodes": {
            "shape": "box",
            "margin": 7,
            "widthConstraint": {"minimum": 70, "maximum": SLOT_PX - 22},
        },
        "interaction": {"hover": True, "dragNodes": False, "tooltipDelay": 200},
    }


def _component() -> Callable[..., Any]:
    # agraph() takes no key, so its iframe remounts on every colour change; the module's
    # declared component function accepts one.
    from streamlit_agraph import _agraph

    return _agraph


def graph_height(view: GraphView, canvas_px: int = 1000) -> int:
    """Tall enough that the fit-to-view zoom is set by the tree's width, not its height."""
    if not view.nodes:
        return 260
    width = (max(n["x"] for n in view.nodes) + SLOT_PX) * 1.1
    depth = max(n["y"] for n in view.nodes) + LEVEL_PX * 0.6
    zoom = min(1.6, canvas_px / width)
    return int(max(260, min(640, depth * 1.1 * zoom + 90)))


def graph_key(base: str, view: GraphView) -> str:
    """The component key: stable while the drawn node set stays the same.

    Colour changes keep the key (no remount, no flicker, the zoom stays); a new node set
    (expand, collapse, another document) gets a new key, because vis-network only fits the
    view to the tree when it is first drawn.
    """
    digest = hashlib.sha1("\x1f".join(n["id"] for n in view.nodes).encode()).hexdigest()[:10]
    return f"{base}_{digest}"


def draw_graph(view: GraphView, key: str, height: int = 520) -> str | None:
    """Draw the tree; returns the id of the node last clicked (None before any click)."""
    data = json.dumps({"nodes": view.nodes, "edges": view.edges}, ensure_ascii=False)
    value = _component()(data=data, config=json.dumps(graph_config(height)), key=key, default=None)
    return value if isinstance(value, str) else None


def graph_legend(view: GraphView, query_marks: bool = True) -> None:
    """One caption line: what the colours mean (query marks only where a query is shown)."""
    marks = (
        ":orange-background[picked leaf] · :orange[path to it] · "
        ":green[✓ green border: holds cited evidence] · :red[✗ red: cited, not retrieved] · "
        if query_marks
        else ""
    )
    collapsed = len(view.hidden)
    st.caption(
        marks + ":blue[blue border: in the inspector] · :yellow-background[heading match] · "
        "dashed (+N): collapsed, click to open"
        + (
            f" — showing {len(view.nodes)} of {view.total} nodes ({collapsed} collapsed)"
            if collapsed
            else f" — {view.total} nodes"
        )
    )


def heading_matches(index: CorpusIndex, doc_ids: Sequence[str], query: str) -> list[str]:
    """Node ids whose heading contains `query` (case-folded), in document order."""
    needle = query.strip().casefold()
    if not needle:
        return []
    wanted = set(doc_ids)
    return [
        n.node_id
        for n in index.nodes.values()
        if n.doc_id in wanted and not n.is_root and needle in n.heading.casefold()
    ]


def last_click(key_holder: str) -> str | None:
    """The current value of the graph component whose key is stored under `key_holder`."""
    key = st.session_state.get(key_holder)
    value = st.session_state.get(key) if key else None
    return value if isinstance(value, str) else None


def handle_graph_click(clicked: str | None, seen_key: str) -> str | None:
    """A new click (the component keeps returning the last one) as a node id, else None."""
    if clicked is None or clicked == st.session_state.get(seen_key):
        return None
    st.session_state[seen_key] = clicked
    return clicked


def apply_click(
    index: CorpusIndex, clicked: str, inspect_key: str = "inspect", expanded_key: str = "expanded"
) -> None:
    """A click inspects a node; a click on a collapsed node or "+N" also expands it."""
    expanded = set(st.session_state.get(expanded_key, set()))
    if clicked.startswith(MORE_PREFIX):
        parent = clicked.removeprefix(MORE_PREFIX)
        if parent in index.nodes:
            expanded.add(parent)
            st.session_state[inspect_key] = parent
    elif clicked in index.nodes:
        st.session_state[inspect_key] = clicked
        if index.nodes[clicked].children:
            expanded.add(clicked)
    st.session_state[expanded_key] = expanded


# ---- tables ----------------------------------------------------------------------------------


def outline_frame(index: CorpusIndex, doc_id: str) -> pd.DataFrame:
    """The document's tree as rows: id, depth, heading (indented), summary, chunk count."""
    rows = []
    for node in index.nodes.values():
        if node.doc_id != doc_id:
            continue
        depth = _depth(index, node.node_id)
        rows.append(
            {
                "node": node.node_id,
                "level": depth,
                "heading": "　" * depth + node.heading,
                "kind": "root" if node.is_root else "leaf" if node.is_leaf else "section",
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
    """Step 2 for one leaf: every score a chunk got, in the leaf's rank order."""
    columns = [
        "rank", "text", "dense", "bm25", "dense_norm", "bm25_norm", "fused", "forced_1",
        "chunk", "offsets",
    ]  # fmt: skip
    return pd.DataFrame(
        [
            {
                "rank": h.leaf_rank,
                "text": preview(h.chunk.text, 110),
                "dense": h.dense,
                "bm25": h.bm25,
                "dense_norm": h.dense_norm,
                "bm25_norm": h.bm25_norm,
                "fused": h.fused,
                "forced_1": "⚠ 1.0 forced" if h.minmax_forced else "",
                "chunk": h.chunk.chunk_id,
                "offsets": f"{h.chunk.start}–{h.chunk.end}",
            }
            for h in hits
        ],
        columns=columns,
    )


def _bar(label: str, low: float, high: float, help_: str) -> Any:
    if high <= low:
        high = low + 1.0
    return st.column_config.ProgressColumn(
        label, min_value=float(low), max_value=float(high), format="%.3f", help=help_
    )


def score_columns(frame: pd.DataFrame, fusion: str) -> dict[str, Any]:
    """Score bars scaled to what each column can hold (raw BM25 and RRF have no fixed top)."""
    top = lambda col: float(frame[col].max()) if len(frame) else 1.0  # noqa: E731
    low = lambda col: min(0.0, float(frame[col].min())) if len(frame) else 0.0  # noqa: E731
    fused_help = {
        "weighted": "dense_weight × dense_norm + (1 − dense_weight) × bm25_norm",
        "rrf": "Σ weight / (k + rank) over the two rankings",
        "dbsf": "normalised by mean ± 3 std, then weighted",
    }.get(fusion, "fused score")
    return {
        "rank": st.column_config.NumberColumn("rank", width="small"),
        "text": st.column_config.TextColumn("text", width="medium"),
        "dense": _bar("dense", min(0.0, low("dense")), max(1.0, top("dense")), "cosine"),
        "bm25": _bar("BM25", low("bm25"), top("bm25"), "raw BM25 (IDF over the document)"),
        "dense_norm": _bar("dense norm", 0.0, 1.0, "dense after normalisation"),
        "bm25_norm": _bar("BM25 norm", 0.0, 1.0, "BM25 after normalisation"),
        "fused": _bar("fused", low("fused"), max(top("fused"), 1e-9), fused_help),
        "forced_1": st.column_config.TextColumn(
            "min-max",
            help="A leaf of 1-2 chunks: min-max gave this chunk 1.0 whatever its real "
            "relevance, so its fused score is not comparable with other leaves' before rerank.",
        ),
    }


def rank_change(before: int, after: int) -> str:
    move = before - after
    return f"↑{move}" if move > 0 else f"↓{-move}" if move < 0 else "="


def rerank_frame(
    reranked: Sequence[RetrievedChunk], pooled: Sequence[RetrievedChunk]
) -> pd.DataFrame:
    """Every pooled candidate: its fused (pooled) rank, rerank score and final rank."""
    final = {h.chunk.chunk_id: h for h in reranked}
    rows = []
    for cand in pooled:
        hit = final.get(cand.chunk.chunk_id)
        rows.append(
            {
                "final": hit.final_rank if hit else None,
                "change": rank_change(cand.pooled_rank, hit.final_rank) if hit else "dropped",
                "pooled": cand.pooled_rank,
                "leaf": cand.chunk.source_node_id,
                "chunk": cand.chunk.chunk_id,
                "text": preview(cand.chunk.text, 110),
                # The pooled order's own score (fusion over all leaves), not the per-leaf one.
                "fused": cand.pool_fused if cand.pool_fused is not None else cand.fused,
                "rerank": hit.rerank if hit else cand.rerank,
                "forced_1": "⚠ 1.0 forced" if cand.minmax_forced else "",
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "final",
            "change",
            "pooled",
            "leaf",
            "chunk",
            "text",
            "fused",
            "rerank",
            "forced_1",
        ],
    )
    frame["final"] = frame["final"].astype("Int64")
    return frame.sort_values(["final", "pooled"], na_position="last").reset_index(drop=True)


def stage_frame(trace: Any) -> pd.DataFrame:
    rows = stage_summary(trace)
    frame = pd.DataFrame(rows)
    frame["cost_usd"] = frame["cost_usd"].map(lambda c: f"${c:.4f}")
    return frame


# ---- inspector -------------------------------------------------------------------------------


def inspector(
    index: CorpusIndex,
    node_id: str,
    *,
    picked: Sequence[str] | None = None,
    on_toggle: Callable[[list[str]], None] | None = None,
    key: str = "inspector",
) -> None:
    """Heading path, summary, content and chunks (with offsets) of one node.

    With `picked` and `on_toggle`, a leaf gets a button that adds it to or removes it from
    the picked leaves; `on_toggle` receives the new leaf list.
    """
    node = index.nodes.get(node_id)
    if node is None:
        st.info(f"Node {node_id} is not in this index (the documents changed since).")
        return
    kind = "document root" if node.is_root else "leaf" if node.is_leaf else "section"
    with st.container(border=True):
        st.markdown(f"**{plain(node.heading)}** `{node_id}` · {kind} · {plain(node.doc_id)}")
        st.caption(plain(node.heading_path))
        if picked is not None and on_toggle is not None and node.is_leaf:
            _toggle_button(node_id, list(picked), on_toggle, key)
        st.markdown("**Summary**")
        st.text(node.summary or "(no summary)")
        rows = index.leaf_rows(node_id)
        st.markdown(f"**Content** · characters {node.start}–{node.end} of the document")
        with st.container(height=200):
            st.text(node.content or "(no text of its own: see its children)")
        if node.is_leaf:
            st.markdown(f"**Chunks** ({len(rows)})")
            st.dataframe(
                chunk_frame(index, node_id),
                hide_index=True,
                width="stretch",
                column_config={"text": st.column_config.TextColumn("text", width="large")},
                key=f"{key}_chunks",
            )
        else:
            children = [index.nodes[c] for c in node.children]
            st.markdown(f"**Children** ({len(children)})")
            st.dataframe(
                pd.DataFrame(
                    [{"node": c.node_id, "heading": c.heading, "leaf": c.is_leaf} for c in children]
                ),
                hide_index=True,
                width="stretch",
                key=f"{key}_children",
            )


def _toggle_button(
    node_id: str, picked: list[str], on_toggle: Callable[[list[str]], None], key: str
) -> None:
    if node_id in picked:
        last = len(picked) == 1
        st.button(
            "Remove from the picked leaves and rerun",
            key=f"{key}_remove",
            icon=":material/remove:",
            disabled=last,
            help="At least one leaf must stay picked." if last else None,
            on_click=on_toggle,
            args=([i for i in picked if i != node_id],),
        )
    else:
        full = len(picked) >= 5
        st.button(
            "Add to the picked leaves and rerun",
            key=f"{key}_add",
            icon=":material/add:",
            type="primary",
            disabled=full,
            help="Step 1 picks at most 5 leaves: remove one first." if full else None,
            on_click=on_toggle,
            args=([*picked, node_id],),
        )
