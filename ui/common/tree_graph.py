"""The tree graph: layout, collapsing, colours and the one click/key protocol of its component."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import streamlit as st

from treerag_core import CorpusIndex
from treerag_core.base.text_rules import is_unspaced
from treerag_core.base.types import TreeNode
from ui.common.tree_labels import INFERRED_PREFIX, wrap_label

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
INFERRED_DASHES = [2, 3]  # the dotted border of a section the converter inferred
FULL_TREE_LIMIT = 40  # larger trees collapse the subtrees off the focus paths
MAX_WIDTH_SLOTS = 7  # ... and so do trees wider than this many node slots (labels would shrink)
SLOT_PX, LEVEL_PX = 170, 110  # node slot width and level height, in graph pixels
# The layout packs node boxes by their labels' widths: a character's graph pixels at FONT_PX
# (measured on vis-network's boxes: an upper-case Latin letter 13, a lower-case one 8.5, a
# digit 10, a space 5, a CJK character 18, anything else 6), plus the box's margins and border;
# NODE_GAP_PX between neighbours. An estimate: the component moves a box that is wider than
# estimated (its row spread), never one that is narrower.
BOX_PAD_PX, NODE_GAP_PX = 16, 12
MIN_BOX_PX = 70  # vis-network's widthConstraint minimum (graph_config)
# A tree wider than this (graph px) does not fit whole at the 12-px floor in the Ask page's
# panel at 1600 (666 px at 12/18 zoom): its best focus path is laid out as a column instead.
COLUMN_ABOVE_PX = 960
SIBLING_CAP = 6  # an open node with more children shows the focused ones and a "+N" node
MORE_PREFIX = "more:"  # id prefix of the "+N more" placeholder nodes
FONT_PX = 18  # in graph units; the browser test measures what this becomes on screen
MIN_LABEL_PX = 12  # the component zooms to the picked path when a whole view would go below
# Presentation mode: labels read from the back of a room, at least 24 px on screen (twice the
# desk floor, above its 20 px text; 1.25 × gave 18.75 px at 1280, barely more than the desk's
# 18). Every zoom scales by it. In presentation mode the component sizes its canvas to the
# window (main.js `graphHeight`); the height asked for here is what it uses otherwise, and
# when it cannot read the window (a cross-origin parent): then no taller than 700 px.
PRESENT_LABEL_PX = 24
PRESENT_SCALE = PRESENT_LABEL_PX / MIN_LABEL_PX
MAX_GRAPH_HEIGHT_PX = 700
# A fitted view keeps every fitted node's whole box (label included) this many screen px
# inside the canvas, and moves within its slack so no other node is cut at an edge (a left
# leaf showed as "ed"); the arithmetic is ui/common/tree_graph_component/fit.js.
FIT_PAD_PX = 16
COMPONENT_DIR = Path(__file__).with_name("tree_graph_component")  # vis-network 10.1.5, vendored


@dataclass(frozen=True)
class GraphMarks:
    """What to highlight on the tree."""

    picked: frozenset[str] = frozenset()
    routed: frozenset[str] = frozenset()  # roots of the documents step 1 routed to (lit)
    cited: frozenset[str] = frozenset()
    unsupported: frozenset[str] = frozenset()  # cited by the answer, not in the evidence
    matches: frozenset[str] = frozenset()
    selected: str | None = None
    expanded: frozenset[str] = frozenset()
    ranked: tuple[str, ...] = ()  # the picked leaves in rank order: the view zooms to the first


@dataclass
class GraphView:
    """Nodes and edges ready for vis-network, plus what was collapsed."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    hidden: dict[str, int] = field(default_factory=dict)  # visible node -> hidden descendants
    total: int = 0
    focus: list[str] = field(default_factory=list)  # drawn nodes to zoom to, most wanted first
    focus_paths: dict[str, list[str]] = field(default_factory=dict)  # root first, the node last
    selected: str | None = None  # the drawn node open in the inspector: kept in view
    inferred: int = 0  # drawn sections the converter cut itself (the legend then says so)


def _depth(index: CorpusIndex, node_id: str) -> int:
    return len(index.ancestors(node_id))


def _descendants(index: CorpusIndex, node_id: str) -> int:
    todo, count = list(index.nodes[node_id].children), 0
    while todo:
        count += 1
        todo.extend(index.nodes[todo.pop()].children)
    return count


def tidy_layout(
    children: dict[str, list[str]],
    roots: Sequence[str],
    gap: float = 1.4,
    widths: Mapping[str, float] | None = None,
    sep: float = 0.0,
    over: Mapping[str, str] | None = None,
) -> dict[str, tuple[float, int]]:
    """(slot, depth) of every node: a compact top-down tidy tree.

    A node's box is `widths[node]` slots wide (1 when not given), with `sep` slots between
    neighbouring boxes; a parent sits centred over its first and last child; each subtree
    is shifted right only as far as its left contour (box edges) needs to clear the right
    contour of its left siblings at every depth (so a short subtree tucks under its
    neighbours). Document roots are packed the same way, `gap` slots apart (centre to centre
    for one-slot boxes). A parent in `over` sits right over that child instead.
    """
    pos: dict[str, float] = {}
    depth_of: dict[str, int] = {}

    def place(node: str, depth: int) -> tuple[dict[int, float], dict[int, float]]:
        depth_of[node] = depth
        kids = children.get(node, [])
        h = (widths or {}).get(node, 1.0) / 2
        if not kids:
            pos[node] = 0.0
            return {depth: -h}, {depth: h}
        left, right = _pack(kids, depth + 1, sep)
        below = (over or {}).get(node)
        x = pos[below] if below in kids else (pos[kids[0]] + pos[kids[-1]]) / 2
        pos[node] = x
        left[depth], right[depth] = x - h, x + h
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

    _pack(list(roots), 0, gap - 1 + sep)
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
    path |= marks.routed
    view = GraphView(total=sum(1 for n in index.nodes.values() if n.doc_id in set(doc_ids)))
    for node_id in order:
        node = index.nodes[node_id]
        hidden_children = [c for c in node.children if c not in shown]
        hidden = sum(1 + _descendants(index, c) for c in hidden_children)
        if hidden:
            view.hidden[node_id] = hidden
        view.nodes.append(_node_dict(index, node, marks, path, hidden))
        view.inferred += node.inferred
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
                    "font": {"color": "#475569", "size": FONT_PX - 2},
                }
            )
            view.edges.append({"from": parent, "to": more_id, "color": PALETTE["edge"], "width": 1})
            view.hidden[more_id] = more
    # The view zooms to the leaf the answer cites first (what the user reads about, picked by
    # step 1 or found by step 2's wider search), then the picked leaves best first; with
    # neither, the heading matches.
    cited = [n for n in marks.ranked if n in marks.cited and n in shown]
    cited += [n for n in order if n in marks.cited and n not in cited]
    picked = [n for n in marks.ranked if n in marks.picked and n in shown and n not in cited]
    picked += [n for n in order if n in marks.picked and n not in cited and n not in picked]
    view.focus = cited + picked or [n for n in order if n in marks.matches]
    # Root first, the node last: the component keeps a path's lower end when the whole does
    # not fit at the label floor (the leaf with its parent, then grandparent, and so on up).
    view.focus_paths = {
        n: [a for a in reversed(index.ancestors(n)) if a in shown] + [n] for n in view.focus
    }
    best = view.focus_paths[view.focus[0]] if view.focus else []
    _place(view, over=dict(itertools.pairwise(best)))
    view.selected = marks.selected if marks.selected in shown else None
    return view


def _place(view: GraphView, over: Mapping[str, str] | None = None) -> None:
    """Give every node x/y from the tidy layout. A tree wider than a desk panel holds at the
    label floor (COLUMN_ABOVE_PX) puts each parent in `over` right over that child (the best
    focus path: a column from the root down, whole in a narrow view); a narrower one keeps
    its parents centred (its whole view is readable, and a column would widen it).

    Fixed positions also make vis-network fit the view to the tree's bounding box on first
    draw; without them it guesses a zoom from the node count, and wide trees overflow.
    """
    children: dict[str, list[str]] = {}
    has_parent = set()
    for edge in view.edges:
        children.setdefault(edge["from"], []).append(edge["to"])
        has_parent.add(edge["to"])
    roots = [n["id"] for n in view.nodes if n["id"] not in has_parent]
    # Each box as wide as its label (a fixed slot let wide labels push their row right, away
    # from the parents above them: a picked path then spanned more than the view).
    widths = {n["id"]: label_box_px(n) / SLOT_PX for n in view.nodes}
    slots = tidy_layout(children, roots, widths=widths, sep=NODE_GAP_PX / SLOT_PX)
    if over and _span_px(slots, widths) > COLUMN_ABOVE_PX:
        slots = tidy_layout(children, roots, widths=widths, sep=NODE_GAP_PX / SLOT_PX, over=over)
    for node in view.nodes:
        x, depth = slots[node["id"]]
        node["x"], node["y"] = round(x * SLOT_PX), depth * LEVEL_PX
        node["level"] = depth


def _span_px(slots: Mapping[str, tuple[float, int]], widths: Mapping[str, float]) -> float:
    """The laid-out tree's width, box edge to box edge, in graph pixels."""
    left = min((x - widths[n] / 2 for n, (x, _) in slots.items()), default=0.0)
    right = max((x + widths[n] / 2 for n, (x, _) in slots.items()), default=0.0)
    return (right - left) * SLOT_PX


def _char_px(c: str) -> float:
    """A character's estimated width in graph pixels at FONT_PX (see BOX_PAD_PX)."""
    if is_unspaced(c):
        return 18
    if c == " ":
        return 5
    if c.isupper():
        return 13
    if c.isdigit():
        return 10
    return 8.5 if c.isalpha() else 6


def label_box_px(node: dict[str, Any]) -> float:
    """A node box's estimated width in graph pixels: its widest label line at its font size."""
    font = node.get("font", {}).get("size", FONT_PX)
    widest = max((sum(map(_char_px, line)) for line in node["label"].split("\n")), default=0)
    return max(widest * font / FONT_PX + BOX_PAD_PX, MIN_BOX_PX)


def _node_dict(
    index: CorpusIndex, node: TreeNode, marks: GraphMarks, path: set[str], hidden: int
) -> dict[str, Any]:
    """One vis node. No `title`: the component puts titles into innerHTML (and opens them as a
    URL on double-click), so document text must never go there."""
    node_id = node.node_id
    # The ✓/✗ mark and the node id share the first line: the wrap counts them.
    mark = "✓ " if node_id in marks.cited else "✗ " if node_id in marks.unsupported else ""
    if node.is_root:
        label = mark + wrap_label(index.document(node.doc_id).title or node.heading, len(mark))
        background, font = PALETTE["root"], "#FFFFFF"
    else:
        head = f"{mark}{node_id} · "
        name = INFERRED_PREFIX + node.heading if node.inferred else node.heading
        label = head + wrap_label(name, first_line_used=len(head))
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
    elif node_id in marks.unsupported:
        border, width = PALETTE["unsupported"], 4
    if node_id == marks.selected and node_id not in marks.cited | marks.unsupported:
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
        "font": {"color": font, "size": FONT_PX},
    }
    if node_id == marks.selected:  # a blue halo: the cited (green) border stays visible
        out["shadow"] = {"enabled": True, "color": PALETTE["selected"], "size": 22, "x": 0, "y": 0}
    if hidden:
        out["shapeProperties"] = {"borderDashes": [5, 4]}
    elif node.inferred:  # dotted, unlike the dashes of a collapsed node
        out["shapeProperties"] = {"borderDashes": INFERRED_DASHES}
    return out


def graph_config(height: int) -> dict[str, Any]:
    """vis-network options: positions come from `tidy_layout` (top-down), physics off, no
    dragging."""
    return {
        "height": f"{height}px",
        "width": "100%",
        "autoResize": True,
        "physics": {"enabled": False},
        "layout": {"hierarchical": {"enabled": False}},
        "edges": {
            "arrows": {"to": {"enabled": False}},
            "smooth": {"enabled": True, "type": "cubicBezier", "forceDirection": "vertical"},
        },
        "nodes": {
            "shape": "box",
            "margin": 7,
            # No maximum: labels come wrapped by `wrap_label`; vis-network would wrap them
            # again at its own width (mid-word, drawing a short line over the next).
            "widthConstraint": {"minimum": MIN_BOX_PX},
        },
        # No wheel zoom from vis-network: the wheel scrolls the page (a graph caught it while
        # presenting); the component zooms on Ctrl/⌘ + wheel, after a click, or with ±.
        "interaction": {
            "hover": True,
            "dragNodes": False,
            "tooltipDelay": 200,
            "zoomView": False,
        },
    }


def _component() -> Callable[..., Any]:
    """Our own vis-network component: unlike streamlit-agraph it fits the view to the picked
    path (labels stay readable whatever the tree), keeps the zoom on colour changes and has
    zoom buttons. Declaring it again is cheap and keeps every runtime's registry current."""
    import streamlit.components.v1 as components

    return components.declare_component("tree_graph", path=str(COMPONENT_DIR))


def graph_height(view: GraphView, canvas_px: int = 900, scale: float = 1.0) -> int:
    """Tall enough for the tree's depth at the zoom it is drawn at (the whole view when that
    is readable, else the smallest readable zoom: the view then follows the picked path);
    `scale` enlarges everything (presentation mode)."""
    if not view.nodes:
        return 260
    width = (max(n["x"] for n in view.nodes) + SLOT_PX) * 1.1
    depth = max(n["y"] for n in view.nodes) + LEVEL_PX * 0.6
    zoom = max(min(scale, canvas_px / width), scale * MIN_LABEL_PX / FONT_PX)
    return int(max(340, min(560 * scale, MAX_GRAPH_HEIGHT_PX, depth * 1.15 * zoom + 110)))


def graph_key(base: str, view: GraphView) -> str:
    """The component key: stable while the drawn node set stays the same.

    Colour changes keep the key (no remount, no flicker, the zoom stays); a new node set
    (expand, collapse, another document) gets a new key, because vis-network only fits the
    view to the tree when it is first drawn.
    """
    digest = hashlib.sha1("\x1f".join(n["id"] for n in view.nodes).encode()).hexdigest()[:10]
    return f"{base}_{digest}"


def focus_spec(view: GraphView, scale: float = 1.0) -> dict[str, Any]:
    """What the component fits its view to, and the zooms it keeps to (`scale` > 1, the
    presentation mode: labels grow with its larger text, and must stay that much larger in
    every fitted view)."""
    return {
        "leaves": view.focus,
        "paths": view.focus_paths,
        "selected": view.selected,
        "min_label_px": MIN_LABEL_PX * scale,
        "font_px": FONT_PX,
        "max_zoom": scale,
        "pad_px": FIT_PAD_PX,
        # Presentation mode: the floor holds for every fitted view (All picked, Whole view
        # too), the graph fills the window's height and its buttons grow.
        "present": scale > 1,
    }


def draw_graph(view: GraphView, key: str, height: int = 520, scale: float = 1.0) -> str | None:
    """Draw the tree; returns the id of the node last clicked (None before any click)."""
    data = json.dumps({"nodes": view.nodes, "edges": view.edges}, ensure_ascii=False)
    focus = focus_spec(view, scale)
    value = _component()(
        data=data,
        config=json.dumps(graph_config(height)),
        focus=json.dumps(focus),
        key=key,
        default=None,
    )
    return value if isinstance(value, str) else None


def graph_legend(view: GraphView, query_marks: bool = True) -> None:
    """One caption line: what the colours mean (query marks only where a query is shown)."""
    marks = (
        ":orange-background[picked leaf] · :orange[path to it, or a routed document] · "
        ":green[✓ green border: holds cited evidence] (grey with a green border: cited, "
        "not picked by step 1 — its passage came from step 2's wider search) · "
        ":red[✗ red: cited, not retrieved] · "
        if query_marks
        else ""
    )
    collapsed = len(view.hidden)
    st.caption(
        marks + ":blue[blue border: in the inspector] · :yellow-background[heading match] · "
        "dashed (+N): collapsed, click to open"
        + (
            f" · {INFERRED_PREFIX} dotted: an inferred section (no heading there; named by its "
            "first line)"
            if view.inferred
            else ""
        )
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


# ---- the click protocol (one place for Ask, Documents and Evaluate) ----------------------


class GraphFocus(Protocol):
    """The page state a graph click changes: the inspected node and the expanded nodes."""

    inspect: str | None
    expanded: set[str]


def apply_click(index: CorpusIndex, clicked: str, focus: GraphFocus) -> None:
    """A click inspects a node; a click on a collapsed node or "+N" also expands it."""
    expanded = set(focus.expanded)
    if clicked.startswith(MORE_PREFIX):
        parent = clicked.removeprefix(MORE_PREFIX)
        if parent in index.nodes:
            expanded.add(parent)
            focus.inspect = parent
    elif clicked in index.nodes:
        focus.inspect = clicked
        if index.nodes[clicked].children:
            expanded.add(clicked)
    focus.expanded = expanded


CLICK_SEP = "\x1f"  # between a clicked node's id and the component's click count


@dataclass(frozen=True)
class TreeGraph:
    """One graph component on a page, under session keys `<base>_key` and `<base>_seen`.

    The component keeps returning its last click, so a click is new only when it differs from
    the one already seen. A click arrives as the component's value on the next run: `take_click`
    applies it before the page builds its marks (so colours and the inspector show it in that
    same run), and `draw` catches a click the pre-read could not see and reruns.
    """

    base: str
    # One component for the page's life (Ask): a new node set is redrawn and re-fitted in
    # place by the component, so the frame never blanks while a remounted iframe loads.
    stable: bool = False

    @property
    def key_holder(self) -> str:
        return f"{self.base}_key"

    @property
    def seen_key(self) -> str:
        return f"{self.base}_seen"

    def _new_click(self, clicked: Any) -> str | None:
        """The node of a click not seen yet. The component sends `<node id>\x1f<click count>`,
        so a second click on the same node is new too; a bare node id is taken as it is."""
        if not isinstance(clicked, str) or clicked == st.session_state.get(self.seen_key):
            return None
        st.session_state[self.seen_key] = clicked
        return clicked.split(CLICK_SEP, 1)[0]

    def take_click(self, index: CorpusIndex, focus: GraphFocus) -> None:
        key = st.session_state.get(self.key_holder)
        clicked = self._new_click(st.session_state.get(key) if key else None)
        if clicked:
            apply_click(index, clicked, focus)

    def draw(
        self, index: CorpusIndex, view: GraphView, focus: GraphFocus, scale: float = 1.0
    ) -> None:
        new_key = f"{self.base}_stable" if self.stable else graph_key(self.base, view)
        if new_key != st.session_state.get(self.key_holder):  # a fresh component: no click yet
            st.session_state[self.seen_key] = None
            st.session_state[self.key_holder] = new_key
        value = draw_graph(view, key=new_key, height=graph_height(view, scale=scale), scale=scale)
        clicked = self._new_click(value)
        if clicked:
            apply_click(index, clicked, focus)
            st.rerun()
