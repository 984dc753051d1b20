// The tree graph component: vis-network over the positions ui/tree_graph.py computed.
// Streamlit's component protocol by hand (four message types), so no build step is needed.
"use strict";

const post = (type, extra) =>
  window.parent.postMessage(Object.assign({ isStreamlitMessage: true, type }, extra), "*");
const box = document.getElementById("graph");
const focusButton = document.getElementById("fit-focus");
const note = document.getElementById("note");
let net = null;
let nodes = null;
let edges = null;
let drawnIds = "";
let focusSpec = { leaves: [], paths: {}, min_label_px: 12, font_px: 18, max_zoom: 1 };
let focusKey = "";

// The view after a fit: which target it fitted and the label size on screen (tests read it).
function record(mode) {
  const scale = net.getScale();
  window.__fitted = { mode, scale, label_px: scale * focusSpec.font_px };
}

function inView(id) {
  const point = net.canvasToDOM(net.getPositions([id])[id]);
  return point.x >= 0 && point.y >= 0 && point.x <= box.clientWidth && point.y <= box.clientHeight;
}

function fitAll() {
  note.textContent = "";
  net.fit({ animation: false, maxZoomLevel: focusSpec.max_zoom });
  record("all");
}

// The whole tree when its labels stay readable; else the picked paths (root to leaf), best
// leaf first, as many as fit at a readable zoom; at least the best leaf with its parent.
function fitFocus() {
  const minZoom = focusSpec.min_label_px / focusSpec.font_px;
  fitAll();
  if (net.getScale() >= minZoom - 1e-6 || !focusSpec.leaves.length) return;
  let chosen = [];
  for (const leaf of focusSpec.leaves) {
    const path = focusSpec.paths[leaf] || [leaf];
    const trial = chosen.concat(path);
    net.fit({ nodes: trial, animation: false, maxZoomLevel: focusSpec.max_zoom });
    if (net.getScale() >= minZoom - 1e-6) {
      chosen = trial;
      continue;
    }
    if (!chosen.length) chosen = path.slice(-2);  // the leaf and its parent
    break;
  }
  net.fit({
    nodes: chosen, animation: false, minZoomLevel: minZoom, maxZoomLevel: focusSpec.max_zoom,
  });
  record("path");
  const outside = focusSpec.leaves.filter((leaf) => !inView(leaf)).length;
  if (outside) {
    note.textContent = `${outside} more picked section${outside > 1 ? "s" : ""} outside this ` +
      "view: “Whole view” shows all";
  }
}

function zoomBy(factor) {
  net.moveTo({ scale: net.getScale() * factor, animation: false });
  record("user");
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
}

function render(args) {
  const data = JSON.parse(args.data);
  const options = JSON.parse(args.config);
  focusSpec = Object.assign(focusSpec, JSON.parse(args.focus || "{}"));
  focusButton.hidden = !focusSpec.leaves.length;
  box.style.height = options.height;
  const ids = data.nodes.map((n) => n.id).join("\u001f");
  const newFocus = JSON.stringify(focusSpec.leaves);
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
  drawnIds = ids;
  focusKey = newFocus;
  post("streamlit:setFrameHeight", { height: box.offsetHeight + 2 });
}

focusButton.addEventListener("click", () => fitFocus());
document.getElementById("fit-all").addEventListener("click", () => fitAll());
document.getElementById("zoom-in").addEventListener("click", () => zoomBy(1.25));
document.getElementById("zoom-out").addEventListener("click", () => zoomBy(0.8));
window.addEventListener("message", (event) => {
  if (event.data && event.data.type === "streamlit:render") render(event.data.args);
});
post("streamlit:componentReady", { apiVersion: 1 });
