// Pure fit arithmetic for the tree graph (no DOM, no vis-network): boxes in graph units,
// sizes and padding in screen px. main.js draws with it; tests/test_ui_graph_fit.py runs it.
"use strict";

// The smallest box holding every box (null for none).
function unionBox(boxes) {
  const live = boxes.filter(Boolean);
  if (!live.length) return null;
  return {
    left: Math.min(...live.map((b) => b.left)),
    right: Math.max(...live.map((b) => b.right)),
    top: Math.min(...live.map((b) => b.top)),
    bottom: Math.max(...live.map((b) => b.bottom)),
  };
}

// The largest zoom at which `box` fits the canvas with `pad` px on every side (labels whole:
// the box is the node boxes', not their centres'), never above maxZoom.
function fitScale(box, width, height, pad, maxZoom) {
  const w = Math.max(box.right - box.left, 1);
  const h = Math.max(box.bottom - box.top, 1);
  return Math.min((width - 2 * pad) / w, (height - 2 * pad) / h, maxZoom);
}

// The picked paths that fit at minZoom. `paths` run root first, the leaf last. The best leaf
// (the first: the one the answer cites, else step 1's best) comes with as much of its path as
// fits, from the leaf up (the leaf and its parent, then its grandparent, ... up to the root):
// never a leaf without the parent it hangs from when the two fit. The other leaves follow in
// order, each with its path down from the same depth, else with its parent only, while they
// fit (one that does not is skipped, not the end). `keep` caps each path's length from the
// leaf up ("All picked": 2, a leaf with its parent, so more leaves fit). Returns the node ids,
// the best path's first.
function chooseLeaves(leaves, paths, boxOf, width, height, pad, minZoom, keep = Infinity) {
  const fits = (ids) => {
    const box = unionBox(ids.map(boxOf));
    return box !== null && fitScale(box, width, height, pad, Infinity) >= minZoom - 1e-9;
  };
  if (!leaves.length) return [];
  const pathOf = (leaf) => paths[leaf] || [leaf];
  const best = pathOf(leaves[0]);
  let n = Math.min(best.length, Math.max(keep, 1));
  while (n > 1 && !fits(best.slice(-n))) n--;
  const top = best.length - n;  // the depth of the highest node kept
  let chosen = best.slice(-n);
  for (const leaf of leaves.slice(1)) {
    const path = pathOf(leaf);
    for (const part of [path.slice(Math.min(top, path.length - 1)), path.slice(-2)]) {
      const trial = [...new Set(chosen.concat(part))];
      if (fits(trial)) {
        chosen = trial;
        break;
      }
    }
  }
  return chosen;
}

// Rows stacked top to bottom by their measured boxes: each row's centre `gap` graph units
// below the row above's lowest box edge, plus its own tallest half above its centre. Rows are
// {y, above, below} (above: the most a box reaches above y, below: under it), top first;
// returns each row's new y (the first row stays). The layout's fixed level height left 66
// units between one-line rows; packed, a picked path takes less height.
function stackRows(rows, gap) {
  const out = [];
  rows.forEach((row, i) => {
    out.push(i ? out[i - 1] + rows[i - 1].below + gap + row.above : row.y);
  });
  return out;
}

// Where the window's low edge goes on one axis: the target [lo, hi] whole inside a window of
// `span` (graph units) with `margin` inside each edge, centred when it can be; among the
// starts that keep the target whole, one that cuts the fewest other boxes at an edge (a box
// is cut when it is partly in view: "ed" for a leaf named "Related work").
function placeAxis(lo, hi, span, margin, others) {
  const first = hi + margin - span;  // lowest start that keeps the target whole
  const last = lo - margin;  // highest such start
  const centred = (lo + hi - span) / 2;
  if (first > last) return centred;  // the target is larger than the window: centre it
  const candidates = [Math.min(Math.max(centred, first), last)];
  for (const [a, b] of others) {
    candidates.push(a - margin, b + margin * 0.5, b + margin - span, a - margin * 0.5 - span);
  }
  const cuts = (start) =>
    others.filter(([a, b]) => (a < start && b > start) || (a < start + span && b > start + span))
      .length;
  let best = candidates[0];
  let bestCuts = cuts(best);
  for (const c of candidates) {
    if (c < first - 1e-9 || c > last + 1e-9) continue;
    const n = cuts(c);
    if (n < bestCuts || (n === bestCuts && Math.abs(c - centred) < Math.abs(best - centred))) {
      best = c;
      bestCuts = n;
    }
  }
  return best;
}

// The view for a target box: its zoom (the fit, clamped to [minZoom, maxZoom]) and centre,
// the target whole with `pad` px to spare and as few other nodes cut at the edges as the
// slack allows; when some would still be cut, the zoom steps down (2 % a step, up to 30 %,
// never below minZoom), then zoom and offset are chosen together to put both edges between
// nodes. A wide row at a high floor can leave no such view: the fewest cut is kept.
function planView(target, others, width, height, pad, minZoom, maxZoom) {
  const fitted = Math.max(fitScale(target, width, height, pad, maxZoom), minZoom);
  // One axis at a time, each counting only the boxes the other axis's window crosses (a box
  // off view above or below is no cut at the left edge); twice round settles it.
  const at = (scale) => {
    const margin = pad / scale;
    const spanX = width / scale;
    const spanY = height / scale;
    const across = (lo, span, a, b) => b > lo && a < lo + span;
    let x0 = (target.left + target.right - spanX) / 2;
    let y0 = (target.top + target.bottom - spanY) / 2;
    for (let round = 0; round < 2; round++) {
      y0 = placeAxis(target.top, target.bottom, spanY, margin, others
        .filter((b) => across(x0, spanX, b.left, b.right)).map((b) => [b.top, b.bottom]));
      x0 = placeAxis(target.left, target.right, spanX, margin, others
        .filter((b) => across(y0, spanY, b.top, b.bottom)).map((b) => [b.left, b.right]));
    }
    return { scale, x: x0 + spanX / 2, y: y0 + spanY / 2 };
  };
  let best = at(fitted);
  let bestCut = cutBoxes(best, others, width, height).length;
  const consider = (view) => {
    if (!bestCut) return;
    const cut = cutBoxes(view, others, width, height).length;
    if (cut < bestCut || (cut === bestCut && view.scale > best.scale)) {
      best = view;
      bestCut = cut;
    }
  };
  for (let step = 1; step <= 15 && bestCut; step++) {
    const scale = fitted * (1 - step / 50);
    if (scale < minZoom - 1e-9) break;
    consider(at(scale));
  }
  // Still cut: both edges between nodes, zoom and offset chosen together. A left edge just
  // past a box's right side, a right edge just before a box's left side (or the target's own
  // margins); the zoom is the window's width over that span, within [minZoom, fitted].
  if (bestCut) {
    const reach = width / Math.max(minZoom, 1e-3);
    const near = others.filter((b) => b.right > target.left - reach && b.left < target.right + reach);
    const gap = 2;
    const lefts = near.map((b) => b.right + gap).filter((x) => x < target.left);
    const rights = near.map((b) => b.left - gap).filter((x) => x > target.right);
    lefts.sort((a, b) => b - a);
    rights.sort((a, b) => a - b);
    for (const left of [target.left - pad / fitted, ...lefts.slice(0, 40)]) {
      for (const right of [target.right + pad / fitted, ...rights.slice(0, 40)]) {
        const scale = width / (right - left);
        if (scale < minZoom - 1e-9 || scale > fitted + 1e-9) continue;
        const margin = pad / scale;
        if (left > target.left - margin || right < target.right + margin) continue;
        const spanY = height / scale;
        const y0 = placeAxis(target.top, target.bottom, spanY, margin, others
          .filter((b) => b.right > left && b.left < right).map((b) => [b.top, b.bottom]));
        consider({ scale, x: (left + right) / 2, y: y0 + spanY / 2 });
      }
    }
  }
  return best;
}

// Boxes partly inside the window a view shows (cut at an edge), for tests and the note.
function cutBoxes(view, boxes, width, height) {
  const x0 = view.x - width / (2 * view.scale);
  const x1 = view.x + width / (2 * view.scale);
  const y0 = view.y - height / (2 * view.scale);
  const y1 = view.y + height / (2 * view.scale);
  const inside = (b) => b.left >= x0 && b.right <= x1 && b.top >= y0 && b.bottom <= y1;
  const outside = (b) => b.right <= x0 || b.left >= x1 || b.bottom <= y0 || b.top >= y1;
  return boxes.filter((b) => !inside(b) && !outside(b));
}

// When a view still cuts boxes at its edges (a wide row at the label floor, rows of tall
// labels): the drawn area shrinks instead. Each cut box is left wholly outside by moving one
// edge inward just past it: the edge on a side where the box lies wholly beyond the target
// (so the fitted nodes stay whole and in view), the one that gives up the least; a box cut
// at the left edge may so go out by the top edge, when it sits above the target. Round after
// round, as a moved edge may cut another box. Returns the insets in px from each side of the
// window (all 0 when nothing is cut).
function trimView(view, boxes, width, height, target) {
  const s = view.scale;
  const x0 = view.x - width / (2 * s);
  const y0 = view.y - height / (2 * s);
  const e = { left: x0, right: x0 + width / s, top: y0, bottom: y0 + height / s };
  const eps = 0.5;  // graph units: clear of the box, not on its border
  const cut = (b) => {
    const inside = b.left >= e.left && b.right <= e.right && b.top >= e.top && b.bottom <= e.bottom;
    const outside = b.right <= e.left || b.left >= e.right || b.bottom <= e.top || b.top >= e.bottom;
    return !inside && !outside;
  };
  for (let round = 0; round < 200; round++) {
    const b = boxes.find(cut);
    if (!b) break;
    const moves = [];  // [edge, new value, graph units given up]
    if (b.right + eps <= target.left) moves.push(["left", b.right + eps, b.right + eps - e.left]);
    if (b.left - eps >= target.right) moves.push(["right", b.left - eps, e.right - b.left + eps]);
    if (b.bottom + eps <= target.top) moves.push(["top", b.bottom + eps, b.bottom + eps - e.top]);
    if (b.top - eps >= target.bottom) {
      moves.push(["bottom", b.top - eps, e.bottom - b.top + eps]);
    }
    if (!moves.length) break;  // the box overlaps the target itself: nothing to trim
    moves.sort((m, n) => m[2] - n[2]);
    e[moves[0][0]] = moves[0][1];
  }
  return {
    left: (e.left - x0) * s,
    right: (x0 + width / s - e.right) * s,
    top: (e.top - y0) * s,
    bottom: (y0 + height / s - e.bottom) * s,
  };
}

// planView, and when its view still cuts nodes at an edge, the cut ones joined to the target
// and planned again while the labels stay at or above minZoom (a neighbour shown whole rather
// than as "ed"), a few rounds. Returns the view and the target it keeps whole.
function planWhole(target, others, width, height, pad, minZoom, maxZoom) {
  let view = planView(target, others, width, height, pad, minZoom, maxZoom);
  for (let round = 0; round < 6; round++) {
    const cut = cutBoxes(view, others, width, height);
    if (!cut.length) break;
    const wider = unionBox([target, ...cut]);
    if (fitScale(wider, width, height, pad, Infinity) < minZoom - 1e-9) break;  // unreadable
    target = wider;
    view = planView(target, others, width, height, pad, minZoom, maxZoom);
  }
  return { view, target };
}

// The view drawn in the area a trim left (insets px from each side): the same zoom, the
// centre moved with the area, and the area's size.
function drawnView(view, insets, width, height) {
  const s = view.scale;
  return {
    scale: s,
    x: view.x + (insets.left - insets.right) / (2 * s),
    y: view.y + (insets.top - insets.bottom) / (2 * s),
    width: Math.max(width - insets.left - insets.right, 1),
    height: Math.max(height - insets.top - insets.bottom, 1),
  };
}

// The whole fit main.js draws for a target: planWhole's view, how many other boxes it still
// cuts, the insets that trim them off, and the view in the trimmed area. It holds for these
// boxes only: when a box moves or grows after it (a rerun adds "✓ " to a cited leaf's label,
// a row is spread again), the fit is planned again, or the trimmed edge may cut the box.
function planFit(target, others, width, height, pad, minZoom, maxZoom) {
  const planned = planWhole(target, others, width, height, pad, minZoom, maxZoom);
  const cut = cutBoxes(planned.view, others, width, height).length;
  const insets = cut ? trimView(planned.view, others, width, height, planned.target)
    : { left: 0, right: 0, top: 0, bottom: 0 };
  return { view: planned.view, target: planned.target, cut, insets,
           drawn: drawnView(planned.view, insets, width, height) };
}

// Boxes in one row never overlap: the shift (graph units, rightward) of each box of a row,
// given left to right, that keeps `gap` between neighbours. Every node of the row must be in
// it, drawn or not: one a fit left undrawn at the edge still holds its neighbours where the
// first draw put them (without it the row closed up on a rerun, and a picked leaf slid under
// the fit's trimmed edge).
function spreadRow(row, gap) {
  const shifts = [];
  let shift = 0;
  let right = -Infinity;
  for (const b of row) {
    const need = right + gap - (b.left + shift);
    if (need > 0) shift += need;
    shifts.push(shift);
    right = b.right + shift;
  }
  return shifts;
}

const TreeFit = {
  unionBox, fitScale, chooseLeaves, stackRows, placeAxis, planView, cutBoxes, trimView, planWhole,
  drawnView, planFit, spreadRow,
};
if (typeof module !== "undefined") module.exports = TreeFit;
else window.TreeFit = TreeFit;
