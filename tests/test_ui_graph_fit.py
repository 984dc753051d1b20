"""The tree graph's fit arithmetic (ui/common/tree_graph_component/fit.js), run in Node: whole node
boxes with a margin, the label floor, and no node cut at an edge."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import skip_unless_ci
from ui.common.tree_graph import FIT_PAD_PX, FONT_PX, MIN_LABEL_PX, PRESENT_LABEL_PX

FIT_JS = Path(__file__).resolve().parents[1] / "ui" / "common" / "tree_graph_component" / "fit.js"
NODE = shutil.which("node") or shutil.which("nodejs")
PRESENT_FLOOR = PRESENT_LABEL_PX / FONT_PX  # the zoom that draws labels at 24 px
DESK_FLOOR = MIN_LABEL_PX / FONT_PX


def fit(call: str):
    """The JSON value of `call` (an expression over F, the fit module) evaluated in Node."""
    if NODE is None:
        skip_unless_ci("graph fit test", "node is missing (apt-get install -y nodejs)")
    script = f"const F = require({json.dumps(str(FIT_JS))}); console.log(JSON.stringify({call}));"
    done = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def box(x: float, y: float, width: float = 140, height: float = 40) -> dict:
    """A node's box around its centre, in graph units (labels ~140 wide at 18 px)."""
    return {
        "left": x - width / 2,
        "right": x + width / 2,
        "top": y - height / 2,
        "bottom": y + height / 2,
    }


def row(n: int, y: float = 110, slot: float = 170) -> list[dict]:
    return [box(i * slot, y) for i in range(n)]


def test_a_fit_keeps_every_node_box_whole_with_its_margin():
    """The first view of a narrow tree at 1280: the edge leaves' labels are inside the canvas
    (a fit on node centres cut the left leaf to "ed")."""
    boxes = [box(340, 0), *row(5)]
    target = fit(f"F.unionBox({json.dumps(boxes)})")
    width, height = 760, 420
    view = fit(f"F.planView({json.dumps(target)}, [], {width}, {height}, {FIT_PAD_PX}, 0, 1)")
    left = view["x"] - width / (2 * view["scale"])
    right = view["x"] + width / (2 * view["scale"])
    pad = FIT_PAD_PX / view["scale"]
    assert left <= target["left"] - pad + 1e-6 and right >= target["right"] + pad - 1e-6
    assert fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps(boxes)}, {width}, {height})") == []


def test_the_view_moves_within_its_slack_so_no_neighbour_is_cut():
    """At the label floor a wide row does not fit: the picked leaf is whole, and the window
    slides (within what keeps it whole) to an edge between two nodes, not through one."""
    boxes = row(12)
    picked = boxes[5]
    others = boxes[:5] + boxes[6:]
    width, height = 1180, 500
    view = fit(
        f"F.planView({json.dumps(picked)}, {json.dumps(others)}, {width}, {height}, "
        f"{FIT_PAD_PX}, {PRESENT_FLOOR}, 2)"
    )
    # The target alone zooms to max_zoom; the zoom steps down a little to put both edges
    # between nodes, never below the floor.
    assert PRESENT_FLOOR <= view["scale"] <= 2.0 and view["scale"] >= 0.7 * 2.0
    cut = fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps(boxes)}, {width}, {height})")
    assert cut == []
    left = view["x"] - width / (2 * view["scale"])
    assert left <= picked["left"] and view["x"] + width / (2 * view["scale"]) >= picked["right"]


def test_leaves_are_chosen_best_first_as_many_as_the_floor_allows():
    """All picked in presentation mode: cited first, each with its path; one that does not fit
    at 24 px is skipped (the next may still fit), never drawn below the floor."""
    root, sec_a, sec_b = box(900, 0), box(300, 110), box(1500, 110)
    boxes = {
        "r": root, "a": sec_a, "b": sec_b,
        "a1": box(200, 220), "a2": box(400, 220), "b1": box(1500, 220), "far": box(4000, 220),
    }  # fmt: skip
    paths = {"a1": ["r", "a", "a1"], "a2": ["r", "a", "a2"], "b1": ["r", "b", "b1"],
             "far": ["r", "far"]}  # fmt: skip
    chosen = fit(
        f"F.chooseLeaves(['a2', 'far', 'a1', 'b1'], {json.dumps(paths)}, "
        f"(id) => ({json.dumps(boxes)})[id], 1180, 600, {FIT_PAD_PX}, {PRESENT_FLOOR})"
    )
    assert chosen[:3] == ["r", "a", "a2"] and "far" not in chosen and "a1" in chosen
    union = fit(f"F.unionBox({json.dumps([boxes[i] for i in chosen])})")
    scale = fit(f"F.fitScale({json.dumps(union)}, 1180, 600, {FIT_PAD_PX}, Infinity)")
    assert scale * FONT_PX >= PRESENT_LABEL_PX


def test_when_nothing_fits_the_best_leaf_stays_with_its_parent_or_alone():
    boxes = {"r": box(0, 0), "p": box(0, 110), "leaf": box(0, 220, width=900)}
    chosen = fit(
        f"F.chooseLeaves(['leaf'], {{leaf: ['r', 'p', 'leaf']}}, "
        f"(id) => ({json.dumps(boxes)})[id], 600, 300, {FIT_PAD_PX}, {DESK_FLOOR})"
    )
    assert chosen == ["leaf"]  # its parent with it would drop below the floor
    view = fit(
        f"F.planView({json.dumps(boxes['leaf'])}, [], 600, 300, {FIT_PAD_PX}, {PRESENT_FLOOR}, 2)"
    )
    assert view["scale"] == pytest.approx(PRESENT_FLOOR)  # never below the floor


def test_the_first_fit_is_the_best_leaf_with_its_path_as_far_up_as_fits():
    """Issue 25's Nike walkthrough: at 1280x720 presenting, the root-to-leaf path is taller
    than the canvas at 24 px. The view showed two picked leaves without a parent; it keeps the
    best leaf with its ancestors from the leaf up (its parent, then grandparent) as far as fits,
    then the next leaves with their paths from that depth, or with their parent only."""
    boxes = {
        "r": box(0, 0), "p": box(0, 80), "g": box(0, 170, height=80),
        "cited": box(0, 270, height=62), "sib": box(200, 270, height=62),
        "far": box(800, 270), "fp": box(800, 170),
    }  # fmt: skip
    paths = {"cited": ["r", "p", "g", "cited"], "sib": ["r", "p", "g", "sib"],
             "far": ["r", "p", "fp", "far"]}  # fmt: skip
    width, height = 577, 355  # the presentation canvas at 1280x720
    chosen = fit(
        f"F.chooseLeaves(['cited', 'far', 'sib'], {json.dumps(paths)}, "
        f"(id) => ({json.dumps(boxes)})[id], {width}, {height}, {FIT_PAD_PX}, {PRESENT_FLOOR})"
    )
    assert chosen[:3] == ["p", "g", "cited"]  # the root does not fit: the path below it does
    assert "sib" in chosen and "far" not in chosen
    union = fit(f"F.unionBox({json.dumps([boxes[i] for i in chosen])})")
    scale = fit(f"F.fitScale({json.dumps(union)}, {width}, {height}, {FIT_PAD_PX}, Infinity)")
    assert scale * FONT_PX >= PRESENT_LABEL_PX
    # "All picked" keeps each leaf with its parent only: a wider spread fits more leaves.
    wide = fit(
        f"F.chooseLeaves(['cited', 'far', 'sib'], {json.dumps(paths)}, "
        f"(id) => ({json.dumps(boxes)})[id], 1400, {height}, {FIT_PAD_PX}, {PRESENT_FLOOR}, 2)"
    )
    assert wide[:2] == ["g", "cited"] and {"far", "fp", "sib"} <= set(wide)


def test_rows_stack_by_their_measured_heights():
    """Rows keep a gap between one row's lowest box and the next row's highest, whatever the
    label lines: no overlap when a row is tall, less height when rows are one line."""
    rows = [{"y": 0, "above": 22, "below": 22}, {"y": 110, "above": 31, "below": 31},
            {"y": 220, "above": 60, "below": 60}, {"y": 330, "above": 22, "below": 22}]  # fmt: skip
    ys = fit(f"F.stackRows({json.dumps(rows)}, 24)")
    assert ys == [0, 0 + 22 + 24 + 31, 77 + 31 + 24 + 60, 192 + 60 + 24 + 22]


def test_a_node_off_view_above_or_below_does_not_hold_the_view_through_a_neighbour():
    """The first view at 1280 cut "Related work" at the left edge: the window can slide right
    past it, and a node on a row below the view (there another row's wide node sits where the
    new edge falls) must not stop it."""
    target = fit(f"F.unionBox({json.dumps([box(300, 0), box(400, 110), box(700, 220)])})")
    related = box(0, 110, width=200)
    hidden_below = box(1015, 600, width=170)  # far below, across where the right edge goes
    width, height = 1120, 560
    view = fit(
        f"F.planView({json.dumps(target)}, {json.dumps([related, hidden_below])}, "
        f"{width}, {height}, {FIT_PAD_PX}, {PRESENT_FLOOR}, {PRESENT_FLOOR})"
    )
    cut = fit(
        f"F.cutBoxes({json.dumps(view)}, {json.dumps([related, hidden_below, target])}, "
        f"{width}, {height})"
    )
    assert cut == []


def test_zoom_and_offset_together_put_both_edges_between_nodes():
    """A row of sections with leaves under one of them: at the fitted zoom every offset that
    keeps the picked path whole cuts a section at one edge; a zoom chosen with the edges
    finds a view that cuts none, above the floor."""
    sections = [box(x, 110, width=150) for x in (0, 180, 360, 540, 720)]
    leaves = [box(x, 220, width=150) for x in (270, 450)]
    target = fit(f"F.unionBox({json.dumps([sections[2], leaves[1]])})")
    others = [b for b in sections + leaves if b not in (sections[2], leaves[1])]
    width, height = 474, 371
    stuck = fit(f"F.placeAxis({target['left']}, {target['right']}, {width}, {FIT_PAD_PX}, "
                f"{json.dumps([[b['left'], b['right']] for b in others])})")  # fmt: skip
    at_one = {"scale": 1, "x": stuck + width / 2, "y": 110}
    assert fit(f"F.cutBoxes({json.dumps(at_one)}, {json.dumps(others)}, {width}, {height})")
    view = fit(
        f"F.planView({json.dumps(target)}, {json.dumps(others)}, {width}, {height}, "
        f"{FIT_PAD_PX}, {DESK_FLOOR}, 1)"
    )
    assert view["scale"] >= DESK_FLOOR
    assert fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps(others)}, {width}, {height})") == []


def _trimmed(view: dict, insets: dict, width: float, height: float) -> tuple[dict, float, float]:
    """The view main.js draws after trimView: the area less its insets, re-centred."""
    s = view["scale"]
    inner = {
        "scale": s,
        "x": view["x"] + (insets["left"] - insets["right"]) / (2 * s),
        "y": view["y"] + (insets["top"] - insets["bottom"]) / (2 * s),
    }
    w = width - insets["left"] - insets["right"]
    return inner, w, height - insets["top"] - insets["bottom"]


def test_a_view_that_still_cuts_nodes_is_trimmed_so_every_node_is_whole_or_out():
    """A row wider than the window at the floor cuts its outer nodes at both edges, and a row
    of tall labels below is cut at the bottom: the drawn area's edges move inward past them
    (issue 25: no node cut at the canvas edge), the fitted node untouched."""
    boxes = [*row(9, y=110), *[box(i * 170, 230, height=90) for i in range(9)]]
    target = box(4 * 170, 110)
    others = [b for b in boxes if b != target]
    width, height = 760, 240
    view = {"scale": 1, "x": 4 * 170, "y": 150}  # rows 90-130 whole, 185-275 cut
    assert fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps(others)}, {width}, {height})")
    insets = fit(
        f"F.trimView({json.dumps(view)}, {json.dumps(others)}, {width}, {height}, "
        f"{json.dumps(target)})"
    )
    assert insets["left"] > 0 and insets["right"] > 0 and insets["bottom"] > 0, insets
    inner, w, h = _trimmed(view, insets, width, height)
    assert fit(f"F.cutBoxes({json.dumps(inner)}, {json.dumps(others)}, {w}, {h})") == []
    assert fit(f"F.cutBoxes({json.dumps(inner)}, {json.dumps([target])}, {w}, {h})") == []
    left = inner["x"] - w / 2
    assert left <= target["left"] and left + w >= target["right"]  # the target still whole


def test_a_view_that_cuts_nothing_is_not_trimmed():
    boxes = row(3)
    view = {"scale": 1, "x": 170, "y": 110}
    insets = fit(f"F.trimView({json.dumps(view)}, {json.dumps(boxes)}, 760, 300, "
                 f"{json.dumps(boxes[1])})")  # fmt: skip
    assert insets == {"left": 0, "right": 0, "top": 0, "bottom": 0}


def test_a_node_cut_at_the_left_edge_above_the_target_goes_out_by_the_top_edge():
    """A wide label on the row above reaches past the target's left side: the left edge cannot
    pass it without cutting the target, so the top edge moves below it instead."""
    target = box(0, 110)
    wide = box(-200, 0, width=500)  # from -450 to 50: over the target's left side (-70)
    view = {"scale": 1, "x": 0, "y": 60}
    width, height = 600, 240  # x from -300 to 300: `wide` is cut at the left edge
    assert fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps([wide])}, {width}, {height})")
    insets = fit(
        f"F.trimView({json.dumps(view)}, {json.dumps([wide])}, {width}, {height}, "
        f"{json.dumps(target)})"
    )
    assert insets["left"] == 0 and insets["top"] > 0, insets
    inner, w, h = _trimmed(view, insets, width, height)
    assert fit(f"F.cutBoxes({json.dumps(inner)}, {json.dumps([wide])}, {w}, {h})") == []
    assert fit(f"F.cutBoxes({json.dumps(inner)}, {json.dumps([target])}, {w}, {h})") == []


def test_a_neighbour_that_would_be_cut_joins_the_fit_while_labels_stay_readable():
    """A wide label below the target, over its left side (no edge can trim it off): planWhole's
    view draws it whole, never below the label floor."""
    target = box(0, 110)
    wide = box(-200, 110 * 2, width=500)  # below, from -450 to 50
    width, height = 600, 360
    found = fit(
        f"F.planWhole({json.dumps(target)}, {json.dumps([wide])}, {width}, {height}, "
        f"{FIT_PAD_PX}, {DESK_FLOOR}, 1)"
    )
    view = found["view"]
    assert view["scale"] >= DESK_FLOOR - 1e-9
    assert fit(f"F.cutBoxes({json.dumps(view)}, {json.dumps([wide])}, {width}, {height})") == []


# The COSTCO 10-K's Ask graph at 1600x1000 (docs/screenshots/ask-graph-costco-10k.png): each
# node's box (left, right, top, bottom) as vis-network measured it at the first draw, and the
# data x of the leaves' row (ui/common/tree_graph.py's slots, before the row spread).
COSTCO = {
    "0001": (327.5, 522.5, -22, 22), "0002": (-64.5, 64.5, 79, 141),
    "0003": (76.5, 285.5, 70, 150), "0004": (297.5, 487.5, 88, 132),
    "0024": (499.5, 684.4, 88, 132), "0025": (-86.3, 86.3, 180, 260),
    "0029": (98.3, 281.8, 189, 251), "0055": (293.8, 490.4, 180, 260),
    "0060": (502.4, 715, 180, 260), "0061": (-92.9, 92.9, 290, 370),
    "0069": (104.9, 268.5, 290, 370), "0085": (281.7, 431.7, 290, 370),
    "0101": (443.7, 617.8, 290, 370), "0104": (629.8, 799.9, 299, 361),
    "0106": (825.3, 944.4, 299, 361), "0122": (727, 907.1, 180, 260),
    "0123": (919.1, 1087.2, 180, 260), "0128": (696.4, 886.3, 88, 132),
    "0134": (898.3, 1090.2, 88, 132), "more:0024": (1099.2, 1247.5, 199, 241),
    "more:0060": (976.2, 1133.4, 309, 351),
}  # fmt: skip
COSTCO_LEAF_ROW = {"0061": 0, "0069": 170, "0085": 340, "0101": 510, "0104": 680, "0106": 850,
                   "more:0060": 1020}  # fmt: skip
COSTCO_FITTED = ["0001", "0024", "0060", "0069", "0085", "0101", "0104", "0106"]
PAD_GROW = 4  # main.js's boxOf: graph units around a node's box (border, selection halo)


def _grown(b: tuple | list) -> dict:
    left, right, top, bottom = b
    return {"left": left - PAD_GROW, "right": right + PAD_GROW, "top": top - PAD_GROW,
            "bottom": bottom + PAD_GROW}  # fmt: skip


def _costco_fit(boxes: dict) -> dict:
    """fitTo's arithmetic on the picked paths (main.js), its others every other node."""
    target = fit(f"F.unionBox({json.dumps([_grown(boxes[i]) for i in COSTCO_FITTED])})")
    others = [_grown(b) for i, b in boxes.items() if i not in COSTCO_FITTED]
    return fit(
        f"F.planFit({json.dumps(target)}, {json.dumps(others)}, 666, 421, {FIT_PAD_PX}, "
        f"{DESK_FLOOR}, 1)"
    )


def _cut(drawn: dict, boxes: list[dict]) -> list[dict]:
    return fit(
        f"F.cutBoxes({json.dumps(drawn)}, {json.dumps(boxes)}, {drawn['width']}, {drawn['height']})"
    )


def _cut_ids(drawn: dict, boxes: dict) -> set[str]:
    cut = _cut(drawn, [_grown(b) for b in boxes.values()])
    return {i for i, b in boxes.items() if _grown(b) in cut}


def test_a_rerun_that_grows_a_cited_leaf_is_fitted_again_with_its_row_spread_whole():
    """The COSTCO screenshot at 1600x1000 cut the cited leaf "✓ 0069 · COSTCO WHOLESALE…" at
    the left edge: the first fit trimmed the drawn area's left edge past 0025, just left of
    0069; the answer's rerun then added "✓ " to 0069's label (14.6 units wider) and spread its
    row again without 0061, which that fit had left undrawn (getPositions skips hidden
    nodes), so 0069 slid 24 units left, under the old edge, and no fit followed. Counted in
    the spread, 0061 holds 0069 where the first draw put it, and a fit on the new boxes keeps
    every fitted node whole."""
    first = _costco_fit(COSTCO)
    # Trimmed at the left edge, past 0025 (the browser's 15 px); four nodes no trim can leave
    # out, main.js leaves undrawn (partlyInView): 0069 whole, 10 units inside the edge.
    assert first["insets"]["left"] == pytest.approx(14.99, abs=0.05), first
    assert _cut_ids(first["drawn"], COSTCO) == {"0003", "0061", "0123", "0134"}
    # The rerun's boxes: 0069 with its ✓, centred on its data x (the row closed up).
    wide = 178.2
    slid = (170 - wide / 2, 170 + wide / 2, 290, 370)
    assert _cut(first["drawn"], [_grown(slid)]), "the old view should cut the slid leaf"
    # The whole row in the spread (0061 included), 0069 at its new width.
    row = [list(COSTCO[i]) for i in COSTCO_LEAF_ROW]
    for i, (node, x) in enumerate(COSTCO_LEAF_ROW.items()):
        width = wide if node == "0069" else row[i][1] - row[i][0]
        row[i][:2] = [x - width / 2, x + width / 2]
    shifts = fit(f"F.spreadRow({json.dumps([{'left': b[0], 'right': b[1]} for b in row])}, 12)")
    rerun = dict(COSTCO)
    for (node, _), b, shift in zip(COSTCO_LEAF_ROW.items(), row, shifts, strict=True):
        rerun[node] = (b[0] + shift, b[1] + shift, b[2], b[3])
    assert rerun["0069"][0] == pytest.approx(COSTCO["0069"][0], abs=0.1)  # held by 0061
    again = _costco_fit(rerun)
    assert not _cut_ids(again["drawn"], rerun) & set(COSTCO_FITTED)
    drawn = again["drawn"]
    half_w, half_h = drawn["width"] / (2 * drawn["scale"]), drawn["height"] / (2 * drawn["scale"])
    for node in COSTCO_FITTED:  # the picked paths whole inside the drawn area
        b = _grown(rerun[node])
        assert drawn["x"] - half_w <= b["left"] and b["right"] <= drawn["x"] + half_w, node
        assert drawn["y"] - half_h <= b["top"] and b["bottom"] <= drawn["y"] + half_h, node


def test_a_row_spread_keeps_the_gap_and_moves_the_rest_of_the_row_with_a_box():
    shifts = fit(
        "F.spreadRow([{left: 0, right: 100}, {left: 90, right: 190}, {left: 400, right: 500}, "
        "{left: 480, right: 560}], 12)"
    )
    assert shifts == [0, 22, 22, 54]
