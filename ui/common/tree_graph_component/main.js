// The tree graph component: vis-network over the positions ui/tree_graph.py computed.
// Streamlit's component protocol by hand (four message types), so no build step is needed.
"use strict";

const post = (type, extra) =>
  window.parent.postMessage(Object.assign({ isStreamlitMessage: true, type }, extra), "*");
const box = document.getElementById("graph");
const focusButton = document.getElementById("fit-focus");
const pickedButton = document.getElementById("fit-picked");
const note = document.getElementById("note");
const hint = document.getElementById("hint");
const HINT = hint.textContent;
const HINT_TITLE = hint.title;
let net = null;
let nodes = null;
let edges = null;
let drawnIds = "";
let focusSpec = {
  leaves: [], paths: {}, selected: null, min_label_px: 12, font_px: 18, max_zoom: 1, pad_px: 16,
  present: false,
};
let focusKey = "";
let selectedKey = null;
let lastFit = "path";  // what a resize re-fits to: the picked path, "all" or "picked" if asked
let fittedSize = "";
let wheelArmed = false;  // a click into the graph lets the plain wheel zoom until the pointer leaves

// The view after a fit: which target it fitted and the label size on screen (tests read it).
function record(mode) {
  const scale = net.getScale();
  window.__fitted = { mode, scale, label_px: scale * focusSpec.font_px };
}

// The drawn area: vis-network's frame, the box less the insets of a trimmed view (trim()).
const drawnWidth = () => (net ? net.canvas.frame.clientWidth : box.clientWidth);
const drawnHeight = () => (net ? net.canvas.frame.clientHeight : box.clientHeight);

// Whether the node's whole box (not just its centre) is inside the drawn area.
function inView(id) {
  const b = net.getBoundingBox(id);
  if (!b) return false;
  const a = net.canvasToDOM({ x: b.left, y: b.top });
  const z = net.canvasToDOM({ x: b.right, y: b.bottom });
  return a.x >= -1 && a.y >= -1 && z.x <= drawnWidth() + 1 && z.y <= drawnHeight() + 1;
}

// The drawn area as `insets` (px) inside the box: the frame moved and sized, the box's
// border around it (what is left reads as padding). Zero insets: the whole box again.
function trim(insets) {
  const frame = net.canvas.frame;
  const w = Math.max(box.clientWidth - insets.left - insets.right, 1);
  const h = Math.max(box.clientHeight - insets.top - insets.bottom, 1);
  frame.style.marginLeft = `${insets.left}px`;
  frame.style.marginTop = `${insets.top}px`;
  net.setSize(`${w}px`, `${h}px`);
  net.redraw();
}

// Presentation mode: the graph takes the window's height less room for its buttons' row,
// note and the page's heading (taller at 1080 than at 720, inside the window either way).
const WINDOW_CHROME_PX = 170;
let requestedHeight = 520;
function windowHeight() {
  try {
    return window.parent.innerHeight;
  } catch (e) {  // a cross-origin parent: the height Python asked for
    return 0;
  }
}
// Where this frame starts in the page (same-origin parent), so the graph can end at the
// window's bottom: at 1280x720 the picked path is then on the first screen.
function frameTop() {
  try {
    const frame = window.frameElement;
    const scroller = window.parent.document.querySelector('[data-testid="stMain"]');
    const top = frame.getBoundingClientRect().top + (scroller ? scroller.scrollTop : 0);
    return top > 0 ? top : 0;
  } catch (e) {
    return 0;
  }
}
const BUTTON_ROW_PX = 64;  // the buttons' row and the note under the canvas
function graphHeight() {
  if (!focusSpec.present) return requestedHeight;
  const top = frameTop();
  const tall = top > 0 ? windowHeight() - top - BUTTON_ROW_PX : windowHeight() - WINDOW_CHROME_PX;
  return tall > 0 ? Math.max(300, tall) : requestedHeight;
}

function sizeFrame() {
  post("streamlit:setFrameHeight", { height: document.body.scrollHeight + 2 });
}

const PAD_GROW = 4;  // graph units around a node's box: its border and selection halo
function boxOf(id) {
  const b = net.getBoundingBox(id);
  if (!b) return null;
  return { left: b.left - PAD_GROW, right: b.right + PAD_GROW, top: b.top - PAD_GROW,
           bottom: b.bottom + PAD_GROW };
}
const floorZoom = () => focusSpec.min_label_px / focusSpec.font_px;
// Where fits draw: the box below the buttons' row over its top (a node under "Picked path"
// could not be read; presenting, the row is 50 px tall), px from the box's top and the size.
function fitArea() {
  const views = document.getElementById("views").getBoundingClientRect();
  const below = Math.ceil(views.bottom - box.getBoundingClientRect().top);
  const top = Math.min(Math.max(below, 0), Math.floor(box.clientHeight / 3));
  return { top, width: box.clientWidth, height: box.clientHeight - top };
}
const drawnIdsList = () => Object.keys(net.getPositions());

// Zoom and centre on `ids` (all drawn nodes when null): their boxes whole (labels included)
// with pad px to spare, never above max_zoom nor below `minZoom`, and no other node cut at
// an edge when the slack allows (TreeFit in fit.js).
function fitTo(ids, minZoom) {
  showEdgeNodes();
  const all = drawnIdsList();
  const wanted = new Set(ids || all);
  const target = TreeFit.unionBox([...wanted].map(boxOf));
  if (!target) return;
  const others = all.filter((id) => !wanted.has(id)).map(boxOf).filter(Boolean);
  // A neighbour the view would cut at an edge joins the fit while labels stay readable; the
  // nodes it still cuts the drawn area leaves out instead: its edges move inward past them
  // (no half node, "ed" for "Related work", at any edge), the zoom and fitted nodes as planned.
  const area = fitArea();
  const { cut, insets, drawn } = TreeFit.planFit(target, others, area.width, area.height,
    focusSpec.pad_px, minZoom || 0, focusSpec.max_zoom);
  trim({ ...insets, top: insets.top + area.top });  // the plan's area starts below the buttons
  net.moveTo({ position: { x: drawn.x, y: drawn.y }, scale: drawn.scale, animation: false });
  // Last: a node no rectangle around the fitted ones can leave whole or out at a readable
  // zoom (a sibling whose box spans the edge beside the path) is not drawn in this view,
  // rather than drawn cut; a pan, a zoom or the next fit draws it again.
  const hidden = all.filter((id) => !wanted.has(id) && partlyInView(id));
  if (hidden.length) {
    nodes.update(hidden.map((id) => ({ id, hidden: true })));
    edgeHidden = hidden;
  }
  window.__plan = { fitted: [...wanted], cut, insets, hidden };  // tests read it
}

// Nodes left undrawn at the edge by the last fit (fitTo), drawn again.
let edgeHidden = [];
function showEdgeNodes() {
  if (!edgeHidden.length) return;
  // Only ids still in the data set (an update of a missing id would add a bare node).
  const back = edgeHidden.filter((id) => nodes.get(id) !== null);
  edgeHidden = [];
  if (back.length) nodes.update(back.map((id) => ({ id, hidden: false })));
}

// Whether the node's box is partly inside the drawn area (cut at an edge).
function partlyInView(id) {
  const b = net.getBoundingBox(id);
  if (!b) return false;
  const a = net.canvasToDOM({ x: b.left, y: b.top });
  const z = net.canvasToDOM({ x: b.right, y: b.bottom });
  const w = drawnWidth();
  const h = drawnHeight();
  const inside = a.x >= -1 && a.y >= -1 && z.x <= w + 1 && z.y <= h + 1;
  const outside = z.x <= 0 || a.x >= w || z.y <= 0 || a.y >= h;
  return !inside && !outside;
}

// Whether `ids` fit the canvas whole at the readable zoom.
function fitsReadable(ids) {
  const target = TreeFit.unionBox(ids.map(boxOf));
  const area = fitArea();
  return target !== null && TreeFit.fitScale(target, area.width, area.height,
    focusSpec.pad_px, Infinity) >= floorZoom() - 1e-9;
}

// "<n> <what> off view: <then>", the note under the canvas (nothing when all is in view).
// `counted` (the ids it counts, and their noun) lets a zoom or a pan by the user recount.
let counted = null;
function offViewNote(what, outside, then, ids = null, noun = "node") {
  counted = ids ? { ids, noun } : null;
  if (!outside) return;
  note.textContent = `${outside} ${what} off view` + (then ? `: ${then}` : "");
  note.title = note.textContent;
}

// After the user's own zoom or pan the fit's count is stale: recount the same nodes (no size
// named: the zoom is the user's now), or clear the note when every one is in view.
function recountOffView() {
  if (!counted) return;
  const outside = counted.ids.filter((id) => !inView(id)).length;
  note.textContent = outside
    ? `${outside} ${counted.noun}${outside > 1 ? "s" : ""} off view: drag to pan`
    : "";
  note.title = note.textContent;
}

function finish(mode) {
  record(mode);
  lastFit = mode;
  fittedSize = `${box.clientWidth}x${box.clientHeight}`;
}

// The whole drawn tree, never below the label floor (12 px at a desk, 24 presenting): then
// as much of the tree's top (around its root) as fits at the floor, with the rest counted
// (the − button still zooms out further, by the user's own choice).
const SIZE_NAME = () => (focusSpec.present ? "presentation size" : "readable size");
function fitAll() {
  note.textContent = "";
  counted = null;
  const all = drawnIdsList();
  if (fitsReadable(all)) {
    fitTo(null, floorZoom());  // the floor also bounds the zoom-out that avoids cut nodes
  } else {
    const pos = net.getPositions();
    const top = Math.min(...all.map((id) => pos[id].y));
    const rootX = all.filter((id) => pos[id].y === top).map((id) => pos[id].x)[0] || 0;
    const order = all.slice().sort((a, b) => pos[a].y - pos[b].y
      || Math.abs(pos[a].x - rootX) - Math.abs(pos[b].x - rootX));
    const chosen = TreeFit.chooseLeaves(order, {}, boxOf, fitArea().width, fitArea().height,
      focusSpec.pad_px, floorZoom());
    fitTo(chosen, floorZoom());
    const outside = all.filter((id) => !inView(id)).length;
    offViewNote(`node${outside > 1 ? "s" : ""} (${SIZE_NAME()})`, outside,
      focusSpec.present ? "drag to pan, or turn Presentation mode off"
        : "drag to pan, or − to zoom out", all);
  }
  finish("all");
}

// The nodes "All picked" fits when the picked paths do not all fit: as many picked leaves
// as the label floor allows, each with its parent only (the ancestors above it left out),
// cited first.
const pickedChoice = () => TreeFit.chooseLeaves(focusSpec.leaves, focusSpec.paths, boxOf,
  fitArea().width, fitArea().height, focusSpec.pad_px, floorZoom(), 2);

// The picked leaves (the "All picked" button): every one with its path to the root when
// their labels stay at the floor or above, else as many as it allows, each under its parent.
function fitPicked() {
  note.textContent = "";
  counted = null;
  const paths = focusSpec.leaves.map((leaf) => focusSpec.paths[leaf] || [leaf]);
  const every = [...new Set(paths.flat())];
  if (every.length && fitsReadable(every)) {
    fitTo(every, floorZoom());
  } else {
    fitTo(pickedChoice(), floorZoom());
    const outside = focusSpec.leaves.filter((leaf) => !inView(leaf)).length;
    offViewNote(`picked section${outside > 1 ? "s" : ""} (${SIZE_NAME()})`, outside,
      "drag to pan", focusSpec.leaves, "picked section");
  }
  finish("picked");
}

// The whole tree when its labels stay readable; else a path: the best leaf (the cited one
// first) with its ancestors up to the root, or as far up as fits at the label floor, then
// more picked leaves with their paths while they fit (chooseLeaves); a note counts the rest.
// "All picked" is offered only when it would show more picked leaves than this view.
function fitFocus() {
  note.textContent = "";
  counted = null;
  pickedButton.hidden = true;
  const all = drawnIdsList();
  if (fitsReadable(all) || !focusSpec.leaves.length) {
    fitAll();
    lastFit = "path";
    return;
  }
  const chosen = TreeFit.chooseLeaves(focusSpec.leaves, focusSpec.paths, boxOf,
    fitArea().width, fitArea().height, focusSpec.pad_px, floorZoom());
  fitTo(chosen, floorZoom());
  finish("path");
  const shown = focusSpec.leaves.filter((leaf) => inView(leaf)).length;
  const outside = focusSpec.leaves.length - shown;
  if (!outside) return;
  const more = new Set(pickedChoice());
  const gained = focusSpec.leaves.filter((leaf) => more.has(leaf)).length - shown;
  const what = `more picked section${outside > 1 ? "s" : ""}`;
  if (gained > 0) {  // each under its parent only, more leaves fit
    offViewNote(what, outside, `“All picked” shows ${gained === outside ? "them" : gained}`,
      focusSpec.leaves, "picked section");
    pickedButton.hidden = false;
  } else {
    offViewNote(`${what} (${SIZE_NAME()})`, outside, "drag to pan", focusSpec.leaves,
      "picked section");
  }
}

// Bring one node (a citation just clicked, the node open in the inspector) into view at a
// readable zoom, unless it already is in view.
function showNode(id) {
  if (!net.getPositions([id])[id] || inView(id)) return;
  showEdgeNodes();
  const minZoom = focusSpec.min_label_px / focusSpec.font_px;
  const scale = Math.min(Math.max(net.getScale(), minZoom), focusSpec.max_zoom);
  net.focus(id, { scale, animation: false });
  record("node");
}

// What the fits record as their mode (record()); a zoom, a pan or showNode record others.
const FIT_MODES = new Set(["path", "all", "picked"]);
function refitNow() {
  if (lastFit === "all") fitAll();
  else if (lastFit === "picked") fitPicked();
  else fitFocus();
}

function refit() {
  refitNow();
  if (focusSpec.selected) showNode(focusSpec.selected);
  sizeFrame();
}

function zoomBy(factor, around) {
  showEdgeNodes();
  const scale = net.getScale() * factor;
  if (around) {  // keep the graph point under the pointer where it is
    const at = net.DOMtoCanvas(around);
    const position = {
      x: at.x - (around.x - drawnWidth() / 2) / scale,
      y: at.y - (around.y - drawnHeight() / 2) / scale,
    };
    net.moveTo({ position, scale, animation: false });
  } else {
    net.moveTo({ scale, animation: false });
  }
  record("user");
  recountOffView();
}

// The wheel scrolls the page (vis-network's own wheel zoom is off: zoomView false); with
// Ctrl/⌘ held, or after a click into the graph, it zooms.
let nudgeTimer = null;
function onWheel(event) {
  if (!net || event.deltaY === 0) return;
  if (event.ctrlKey || event.metaKey || wheelArmed) {
    event.preventDefault();
    const rect = net.canvas.frame.getBoundingClientRect();
    const around = { x: event.clientX - rect.left, y: event.clientY - rect.top };
    zoomBy(event.deltaY < 0 ? 1.1 : 1 / 1.1, around);
    return;
  }
  hint.textContent = "Hold Ctrl (⌘ on a Mac) to zoom, or click the graph first";
  hint.title = hint.textContent;
  hint.classList.add("nudge");
  clearTimeout(nudgeTimer);
  nudgeTimer = setTimeout(() => {
    hint.textContent = HINT;
    hint.title = HINT_TITLE;
    hint.classList.remove("nudge");
  }, 1800);
}

let clicks = 0;
// Node boxes in one row never overlap: the layout's slots (ui/common/tree_graph.py) are
// estimates, and a label of capitals ("SIGNATURE") can be wider than its slot. After a draw,
// each row is walked left to right and a node that would touch its left neighbour moves
// right (with the rest of its row) to keep ROW_GAP graph units between them (TreeFit.spreadRow).
// getPositions() leaves hidden nodes out: render() draws the edge-hidden ones first, so every
// spread counts the whole row.
const ROW_GAP = 12;
function spreadRows() {
  packRows();
  const pos = net.getPositions();
  const rows = {};
  for (const id of Object.keys(pos)) {
    if (net.getBoundingBox(id)) (rows[pos[id].y] = rows[pos[id].y] || []).push(id);
  }
  for (const ids of Object.values(rows)) {
    ids.sort((a, b) => pos[a].x - pos[b].x);
    const shifts = TreeFit.spreadRow(ids.map((id) => net.getBoundingBox(id)), ROW_GAP);
    ids.forEach((id, i) => {
      if (shifts[i]) net.moveNode(id, pos[id].x + shifts[i], pos[id].y);
    });
  }
}

// Rows stacked by their measured heights (TreeFit.stackRows): ROW_VGAP graph units between a
// row's lowest box and the next row's highest, instead of the layout's fixed level height
// (which left 66 units between one-line rows): a picked path takes less height, and more of
// it fits at the label floor. Never two rows' boxes on top of each other, whatever the lines.
const ROW_VGAP = 24;
function packRows() {
  const pos = net.getPositions();
  const rows = {};
  for (const id of Object.keys(pos)) {
    const b = net.getBoundingBox(id);
    if (!b) continue;
    const row = (rows[pos[id].y] = rows[pos[id].y] || { y: pos[id].y, above: 0, below: 0, ids: [] });
    row.above = Math.max(row.above, pos[id].y - b.top);
    row.below = Math.max(row.below, b.bottom - pos[id].y);
    row.ids.push(id);
  }
  const ordered = Object.values(rows).sort((a, b) => a.y - b.y);
  const ys = TreeFit.stackRows(ordered, ROW_VGAP);
  ordered.forEach((row, i) => {
    if (ys[i] !== row.y) row.ids.forEach((id) => net.moveNode(id, pos[id].x, ys[i]));
  });
}

function create(data, options) {
  nodes = new vis.DataSet(data.nodes);
  edges = new vis.DataSet(data.edges);
  net = new vis.Network(box, { nodes, edges }, options);
  window.__net = net;
  net.on("click", (params) => {
    if (params.nodes.length) {  // a count, so a second click on the same node is new too
      clicks += 1;
      const value = `${String(params.nodes[0])}\u001f${clicks}`;
      post("streamlit:setComponentValue", { value, dataType: "json" });
    }
  });
  net.on("zoom", () => { record("user"); recountOffView(); });
  net.on("dragStart", () => showEdgeNodes());  // a pan: the edge's nodes come into view
  net.on("dragEnd", () => { record("user"); recountOffView(); });  // a rerun keeps this view
  // Re-fit when the container changes size (Presentation mode, a window resize, the sidebar):
  // vis-network keeps the old centre and zoom, which left the picked leaf outside the view.
  let pending = null;
  new ResizeObserver(() => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      if (`${box.clientWidth}x${box.clientHeight}` === fittedSize) return;
      net.setSize(`${box.clientWidth}px`, `${box.clientHeight}px`);
      net.redraw();
      refit();
    }, 120);
  }).observe(box);
}

let lastArgs = "";
function render(args) {
  // A rerun that changed nothing here (a slider moved the evidence, not the tree) sends the
  // same arguments again: nothing to parse, update or redraw.
  const signature = `${args.data}\u001e${args.config}\u001e${args.focus || ""}`;
  if (net !== null && signature === lastArgs) return;
  lastArgs = signature;
  const data = JSON.parse(args.data);
  const options = JSON.parse(args.config);
  focusSpec = Object.assign(focusSpec, JSON.parse(args.focus || "{}"));
  focusButton.hidden = !focusSpec.leaves.length;
  hint.textContent = HINT;
  hint.title = HINT_TITLE;
  document.body.classList.toggle("present", Boolean(focusSpec.present));
  requestedHeight = parseInt(options.height, 10) || 520;
  options.height = `${graphHeight()}px`;
  box.style.height = options.height;
  const ids = data.nodes.map((n) => n.id).join("\u001f");
  // Presentation mode changes the zooms: that re-fits too.
  const newFocus = JSON.stringify(
    [focusSpec.leaves, focusSpec.min_label_px, focusSpec.max_zoom, focusSpec.present]);
  if (net === null) {
    create(data, options);
  } else if (ids !== drawnIds) {
    net.setOptions(options);
    edgeHidden = [];  // new nodes, drawn (the next fit hides what it must)
    nodes.clear();
    edges.clear();
    nodes.add(data.nodes);
    edges.add(data.edges);
  } else {  // colours only: keep the user's zoom unless the focus moved
    showEdgeNodes();  // the fit's undrawn nodes count in the row spread below, as at first
    nodes.update(data.nodes);
    edges.clear();
    edges.add(data.edges);
  }
  net.redraw();  // node boxes are measured when drawn
  spreadRows();  // the data's x positions are back: spread each row again
  if (ids !== drawnIds || newFocus !== focusKey) {
    net.setSize("100%", options.height);  // presentation mode's height, before the fit
    net.redraw();
    fitFocus();
  } else if (window.__fitted && FIT_MODES.has(window.__fitted.mode)) {
    // The view is still a fit (not the user's zoom or pan): fit again, as labels may have
    // grown ("✓ " on a cited leaf, its answer just in) and rows been spread again under it; an
    // old trimmed edge then cut that leaf. The same boxes give the same view.
    net.redraw();  // the spread's moves are measured when drawn
    refitNow();
  }
  // A newly inspected node (a citation clicked beside the graph) is brought into view.
  if (focusSpec.selected && focusSpec.selected !== selectedKey) showNode(focusSpec.selected);
  drawnIds = ids;
  focusKey = newFocus;
  selectedKey = focusSpec.selected;
  sizeFrame();
}

focusButton.addEventListener("click", () => fitFocus());
pickedButton.addEventListener("click", () => fitPicked());
box.addEventListener("wheel", onWheel, { capture: true, passive: false });
box.addEventListener("pointerdown", () => { wheelArmed = true; });
box.addEventListener("pointerleave", () => { wheelArmed = false; });
document.getElementById("fit-all").addEventListener("click", () => fitAll());
document.getElementById("zoom-in").addEventListener("click", () => zoomBy(1.25));
document.getElementById("zoom-out").addEventListener("click", () => zoomBy(0.8));
window.addEventListener("resize", () => {  // the parent's height changes this frame's too
  if (net && focusSpec.present) box.style.height = `${graphHeight()}px`;
});
try {
  window.parent.addEventListener("resize", () => {
    if (net && focusSpec.present) {
      box.style.height = `${graphHeight()}px`;
      sizeFrame();
    }
  });
} catch (e) { /* a cross-origin parent: keep the height Python asked for */ }
window.addEventListener("message", (event) => {
  if (event.data && event.data.type === "streamlit:render") render(event.data.args);
});
post("streamlit:componentReady", { apiVersion: 1 });
