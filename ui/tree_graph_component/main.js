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
  leaves: [], paths: {}, selected: null, min_label_px: 12, font_px: 18, max_zoom: 1, margin: 0.9,
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

// Whether the node's whole box (not just its centre) is inside the drawn area.
function inView(id) {
  const b = net.getBoundingBox(id);
  if (!b) return false;
  const a = net.canvasToDOM({ x: b.left, y: b.top });
  const z = net.canvasToDOM({ x: b.right, y: b.bottom });
  return a.x >= -1 && a.y >= -1 && z.x <= box.clientWidth + 1 && z.y <= box.clientHeight + 1;
}

function sizeFrame() {
  post("streamlit:setFrameHeight", { height: document.body.scrollHeight + 2 });
}

// Fit the view to `ids` (all drawn nodes when null) with a margin: vis-network fits the box
// edge to edge, which cut a picked node's border. Never above max_zoom; with `minZoom`, never
// below it (the centre stays on the nodes).
function fitTo(ids, minZoom) {
  const options = { animation: false, maxZoomLevel: focusSpec.max_zoom };
  if (ids) options.nodes = ids;
  net.fit(options);
  let scale = net.getScale();
  if (scale < focusSpec.max_zoom - 1e-6) scale *= focusSpec.margin;
  if (minZoom) scale = Math.max(scale, minZoom);
  net.moveTo({ scale, animation: false });
}

function fitAll() {
  note.textContent = "";
  fitTo(null);
  record("all");
  lastFit = "all";
  fittedSize = `${box.clientWidth}x${box.clientHeight}`;
}

// Every picked leaf with its path to the root, whatever the zoom (the "All picked" button).
function fitPicked() {
  note.textContent = "";
  fitTo([...new Set(focusSpec.leaves.flatMap((leaf) => focusSpec.paths[leaf] || [leaf]))]);
  record("picked");
  lastFit = "picked";
  fittedSize = `${box.clientWidth}x${box.clientHeight}`;
}

// The whole tree when its labels stay readable; else every picked path (root to leaf) when
// they fit at a readable zoom; else as many as fit, best leaf first (a leaf that does not fit
// is skipped, not the end), at least the best leaf with its parent; a note counts the rest.
function fitFocus() {
  const minZoom = focusSpec.min_label_px / focusSpec.font_px;
  const readable = () => net.getScale() >= minZoom - 1e-6;
  fitAll();
  lastFit = "path";
  pickedButton.hidden = true;
  if (readable() || !focusSpec.leaves.length) return;
  let chosen = [];
  for (const leaf of focusSpec.leaves) {
    const trial = [...new Set(chosen.concat(focusSpec.paths[leaf] || [leaf]))];
    fitTo(trial);
    if (readable()) chosen = trial;
  }
  if (!chosen.length) {
    const best = focusSpec.paths[focusSpec.leaves[0]] || [focusSpec.leaves[0]];
    chosen = best.slice(-2);  // the leaf and its parent
  }
  fitTo(chosen, minZoom);
  record("path");
  const outside = focusSpec.leaves.filter((leaf) => !inView(leaf)).length;
  if (outside) {
    const sections = `section${outside > 1 ? "s" : ""}`;
    note.textContent = `${outside} more picked ${sections} off view: “All picked” shows them`;
    note.title = note.textContent;
    pickedButton.hidden = false;
  }
}

// Bring one node (a citation just clicked, the node open in the inspector) into view at a
// readable zoom, unless it already is in view.
function showNode(id) {
  if (!net.getPositions([id])[id] || inView(id)) return;
  const minZoom = focusSpec.min_label_px / focusSpec.font_px;
  const scale = Math.min(Math.max(net.getScale(), minZoom), focusSpec.max_zoom);
  net.focus(id, { scale, animation: false });
  record("node");
}

function refit() {
  if (lastFit === "all") fitAll();
  else if (lastFit === "picked") fitPicked();
  else fitFocus();
  if (focusSpec.selected) showNode(focusSpec.selected);
  sizeFrame();
}

function zoomBy(factor, around) {
  const scale = net.getScale() * factor;
  if (around) {  // keep the graph point under the pointer where it is
    const at = net.DOMtoCanvas(around);
    const position = {
      x: at.x - (around.x - box.clientWidth / 2) / scale,
      y: at.y - (around.y - box.clientHeight / 2) / scale,
    };
    net.moveTo({ position, scale, animation: false });
  } else {
    net.moveTo({ scale, animation: false });
  }
  record("user");
}

// The wheel scrolls the page (vis-network's own wheel zoom is off: zoomView false); with
// Ctrl/⌘ held, or after a click into the graph, it zooms.
let nudgeTimer = null;
function onWheel(event) {
  if (!net || event.deltaY === 0) return;
  if (event.ctrlKey || event.metaKey || wheelArmed) {
    event.preventDefault();
    const rect = box.getBoundingClientRect();
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

function create(data, options) {
  nodes = new vis.DataSet(data.nodes);
  edges = new vis.DataSet(data.edges);
  net = new vis.Network(box, { nodes, edges }, options);
  window.__net = net;
  net.on("click", (params) => {
    if (params.nodes.length) {
      post("streamlit:setComponentValue", { value: String(params.nodes[0]), dataType: "json" });
    }
  });
  net.on("zoom", () => record("user"));
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

function render(args) {
  const data = JSON.parse(args.data);
  const options = JSON.parse(args.config);
  focusSpec = Object.assign(focusSpec, JSON.parse(args.focus || "{}"));
  focusButton.hidden = !focusSpec.leaves.length;
  hint.textContent = HINT;
  hint.title = HINT_TITLE;
  box.style.height = options.height;
  const ids = data.nodes.map((n) => n.id).join("\u001f");
  // Presentation mode changes the zooms: that re-fits too.
  const newFocus = JSON.stringify([focusSpec.leaves, focusSpec.min_label_px, focusSpec.max_zoom]);
  if (net === null) {
    create(data, options);
  } else if (ids !== drawnIds) {
    net.setOptions(options);
    nodes.clear();
    edges.clear();
    nodes.add(data.nodes);
    edges.add(data.edges);
  } else {  // colours only: keep the user's zoom unless the focus moved
    nodes.update(data.nodes);
    edges.clear();
    edges.add(data.edges);
  }
  if (ids !== drawnIds || newFocus !== focusKey) {
    net.redraw();
    fitFocus();
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
window.addEventListener("message", (event) => {
  if (event.data && event.data.type === "streamlit:render") render(event.data.args);
});
post("streamlit:componentReady", { apiVersion: 1 });
