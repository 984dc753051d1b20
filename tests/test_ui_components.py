"""The explorer's UI components: tree layout and collapsing, text safety, tables, workspace."""

from __future__ import annotations

import gc
import itertools
import re
import sys

import pytest

from benchmarks.bench_ui import handbook_markdown
from tests.conftest import skip_unless_ci
from treerag_core.base.config import IndexSettings
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from ui.common import resources, score_tables, text_safety, workspace
from ui.common import tree_graph as w


@pytest.fixture(scope="module")
def big_index():
    settings = IndexSettings(embedder="hashing", max_depth=4)
    return build_index(
        [SourceDocument("handbook.md", handbook_markdown(chapters=16, sections=5, items=2))],
        settings,
        get_embedder("hashing"),
    )


def _overlaps(view: w.GraphView) -> list[tuple[str, str]]:
    """Neighbours in a row whose label boxes (the layout's width estimate) are closer than
    the layout's gap (1 px of rounding)."""
    by_row: dict[int, list[tuple[int, str, float]]] = {}
    for node in view.nodes:
        by_row.setdefault(node["y"], []).append((node["x"], node["id"], w.label_box_px(node)))
    bad = []
    for row in by_row.values():
        row.sort()
        for (x1, a, wa), (x2, b, wb) in itertools.pairwise(row):
            if x2 - x1 < (wa + wb) / 2 + w.NODE_GAP_PX - 1:
                bad.append((a, b))
    return bad


def test_big_tree_collapses_to_a_legible_view(big_index):
    assert len(big_index.nodes) > 250
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks())
    assert len(view.nodes) <= 1 + w.SIBLING_CAP + 1  # root, capped chapters, "+N more"
    assert view.hidden, "nothing is marked as collapsed"
    assert any(n["id"].startswith(w.MORE_PREFIX) for n in view.nodes)
    full = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(), full=True)
    assert len(full.nodes) == len(big_index.nodes)
    assert not _overlaps(full) and not _overlaps(view)


def test_picked_leaf_deep_in_the_tree_is_drawn_with_its_path(big_index):
    leaf = next(n for n in big_index.leaves() if n.heading == "Item 15.4.2")
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(picked=frozenset({leaf.node_id})))
    drawn = {n["id"]: n for n in view.nodes}
    assert leaf.node_id in drawn
    for ancestor in big_index.ancestors(leaf.node_id):
        assert ancestor in drawn
        assert drawn[ancestor]["color"]["background"] in (w.PALETTE["path"],)
    assert drawn[leaf.node_id]["color"]["background"] == w.PALETTE["picked"]
    # Chapter 15 is beyond the sibling cap, yet shown because it is on the path.
    assert any("Chapter 15" in n["label"].replace("\n", " ") for n in view.nodes)
    assert len(view.nodes) < 40
    path_edges = [e for e in view.edges if e["color"] == w.PALETTE["edge_path"]]
    assert len(path_edges) == len(big_index.ancestors(leaf.node_id))


def test_tidy_layout_centres_parents_and_never_overlaps():
    children = {"r": ["a", "b", "c"], "a": ["a1", "a2"], "c": ["c1", "c2", "c3"]}
    slots = w.tidy_layout(children, ["r"])
    assert slots["a"][0] == (slots["a1"][0] + slots["a2"][0]) / 2
    assert slots["r"][0] == (slots["a"][0] + slots["c"][0]) / 2
    assert {d for _, d in slots.values()} == {0, 1, 2}
    rows: dict[int, list[float]] = {}
    for x, depth in slots.values():
        rows.setdefault(depth, []).append(x)
    for xs in rows.values():
        xs.sort()
        assert all(b - a >= 1 for a, b in itertools.pairwise(xs))
    assert min(x for x, _ in slots.values()) == 0


def test_a_parent_sits_over_the_child_given_and_label_wide_boxes_never_overlap():
    children = {"r": ["a", "b", "c"], "c": ["c1", "c2", "c3"]}
    widths = {"a": 2.0, "b": 0.5, "c": 1.0, "c1": 1.5, "c2": 1.0, "c3": 1.0, "r": 1.0}
    slots = w.tidy_layout(children, ["r"], widths=widths, sep=0.1, over={"r": "c", "c": "c3"})
    assert slots["r"][0] == slots["c"][0] == slots["c3"][0]  # a column down to c3
    for row in ({"a", "b", "c"}, {"c1", "c2", "c3"}):
        xs = sorted((slots[n][0], n) for n in row)
        for (x1, n1), (x2, n2) in itertools.pairwise(xs):
            assert x2 - x1 >= (widths[n1] + widths[n2]) / 2 + 0.1 - 1e-9


def test_a_tree_a_desk_panel_holds_keeps_its_parents_centred():
    """The column is for wide trees; a small one keeps the tidy look (and its whole view)."""
    small = build_index(
        [SourceDocument("small.md", handbook_markdown(chapters=3, sections=2, items=0))],
        IndexSettings(embedder="hashing"),
        get_embedder("hashing"),
    )
    leaf = next(n.node_id for n in small.leaves() if n.heading == "Section 3.2")
    view = w.graph_view(small, ["small.md"], w.GraphMarks(picked=frozenset({leaf})))
    x = {n["id"]: n["x"] for n in view.nodes}
    parent = small.nodes[leaf].parent_id
    kids = small.nodes[parent].children
    assert x[parent] == pytest.approx((x[kids[0]] + x[kids[-1]]) / 2, abs=1)
    assert x[parent] != x[leaf]


def test_heading_search(big_index):
    matches = w.heading_matches(big_index, ["handbook.md"], "item 3.2.")
    assert len(matches) == 2  # Item 3.2.1 and 3.2.2
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(matches=frozenset(matches)))
    colours = {n["id"]: n["color"]["background"] for n in view.nodes}
    assert all(colours[m] == w.PALETTE["match"] for m in matches)


def test_code_spans_stay_literal_and_hold_backticks():
    assert text_safety.code("lecoqa_laws") == "`lecoqa_laws`"
    assert text_safety.code("lecoqa-371") == "`lecoqa-371`"  # no "\\-" shown inside
    assert text_safety.code("a`b") == "``a`b``"
    assert text_safety.code("`x") == "`` `x ``"
    assert text_safety.code("two\nlines") == "`two lines`"


def test_plain_escapes_markdown_and_html():
    text = "**bold** [x](http://e) <img src=x> $math$ :red[x] # h"
    escaped = text_safety.plain(text)
    assert re.search(r"(?<!\\)[*\[\]()<>$:#]", escaped) is None
    assert re.sub(r"\\(.)", r"\1", escaped) == text


def test_answer_images_are_defused_even_across_deltas():
    deltas = ["See the chart !", "[chart](http://evil.example/q?x=secret) and ", "![b](u)"]
    out = "".join(text_safety.safe_answer_stream(deltas))
    assert "![" not in out.replace("!\\[", "")
    assert out.replace("\\", "") == "".join(deltas)
    assert "".join(text_safety.safe_answer_stream(["[1] a\n[2] b"])) == "[1] a  \n[2] b"


def test_rank_change_arrows():
    assert score_tables.rank_change(5, 2) == "↑3"
    assert score_tables.rank_change(1, 4) == "↓3"
    assert score_tables.rank_change(2, 2) == "="


def test_merge_sources_replaces_same_name():
    old = [SourceDocument("a.md", "# A\n\nold"), SourceDocument("b.md", "# B\n\nb")]
    merged, replaced = workspace.merge_sources(old, [SourceDocument("a.md", "# A\n\nnew")])
    assert [(s.name, s.text) for s in merged] == [("b.md", "# B\n\nb"), ("a.md", "# A\n\nnew")]
    assert replaced == ["a.md"]


def test_sample_paths_skip_the_readme_and_put_the_seed_paper_first():
    names = [p.name for p in resources.sample_paths()]
    assert "README.md" not in names
    assert names[0] == "test_paper.md"


def test_the_long_lived_heap_is_frozen_once_per_import_wave(monkeypatch):
    """Streamlit's after-run GC (kept on) skips what is frozen; a run that imports nothing
    new freezes nothing more (the session objects of later runs stay collectable)."""
    monkeypatch.setattr(resources, "_FROZEN_AT", [0])
    try:
        resources.freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        later = [[i] for i in range(500)]  # tracked objects made after the freeze
        resources.freeze_long_lived()  # no module imported since
        assert gc.get_freeze_count() == frozen
        monkeypatch.setattr(resources, "_FROZEN_AT", [len(sys.modules) - 1])  # one import more
        resources.freeze_long_lived()
        assert gc.get_freeze_count() >= frozen + len(later)
    finally:
        gc.unfreeze()  # the rest of the test process collects as usual


def test_the_app_uses_the_real_default_embedder_unless_told(monkeypatch):
    monkeypatch.delenv("TREERAG_EMBEDDER", raising=False)
    assert resources.default_embedder() == IndexSettings().embedder == "multilingual"
    monkeypatch.setenv("TREERAG_EMBEDDER", "hashing")
    assert resources.default_embedder() == "hashing"


def test_inspected_node_keeps_its_cited_border_and_gets_a_halo(big_index):
    leaf = next(n for n in big_index.leaves() if n.heading == "Item 1.1.1").node_id
    marks = w.GraphMarks(picked=frozenset({leaf}), cited=frozenset({leaf}), selected=leaf)
    node = next(n for n in w.graph_view(big_index, ["handbook.md"], marks).nodes if n["id"] == leaf)
    assert node["color"]["border"] == w.PALETTE["cited"]
    assert node["shadow"]["color"] == w.PALETTE["selected"]


def test_stage_table_never_prints_zero_dollars_for_an_unpriced_model(paper_engine):
    from dataclasses import replace

    from treerag_core.base.settings import QuerySettings
    from treerag_core.base.types import Usage
    from treerag_core.pipeline import run

    trace = run(paper_engine, "How many epochs was the model trained for?", QuerySettings())
    unpriced = Usage(input_tokens=10, output_tokens=5, model="llama3.2", cost_known=False)
    trace = replace(trace, answer_usage=unpriced)
    frame = score_tables.stage_frame(trace)
    assert "cost_known" not in frame.columns
    costs = dict(zip(frame["stage"], frame["cost_usd"], strict=True))
    assert costs["synthesize"] == "price unknown" and costs["retrieve"] == "$0.0000"


def test_rerank_table_has_a_section_column_only_when_sections_were_scored(paper_engine):
    from dataclasses import replace

    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import run

    trace = run(paper_engine, "How many epochs was the model trained for?", QuerySettings())
    bare = [replace(h, prior=None) for h in trace.candidates]
    final = [replace(h, prior=None) for h in trace.reranked]
    assert "section" not in score_tables.rerank_frame(final, bare).columns
    scored = [replace(h, prior=0.5) for h in trace.candidates]
    frame = score_tables.rerank_frame([replace(h, prior=0.5) for h in final], scored)
    assert frame["section"].tolist() == pytest.approx([0.5] * len(scored))


def test_score_tables_show_the_graph_column_only_when_a_graph_ran(paper_engine):
    from dataclasses import replace

    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import run

    trace = run(paper_engine, "How many epochs was the model trained for?", QuerySettings())
    assert "graph" not in score_tables.rerank_frame(trace.reranked, trace.candidates).columns
    assert "graph" not in score_tables.leaf_score_frame(trace.candidates).columns
    graphed = [replace(h, graph=0.25 if i % 2 else None) for i, h in enumerate(trace.candidates)]
    frame = score_tables.leaf_score_frame(graphed)
    assert frame["graph"].iloc[1] == 0.25 and frame["graph"].isna().iloc[0]
    pooled = score_tables.rerank_frame(trace.reranked, graphed)
    assert sorted(pooled["graph"].dropna().unique()) == [0.25]
    assert {"graph"} <= set(score_tables.score_columns(frame, "weighted"))
    assert "graph" in score_tables.rerank_columns(pooled)


def test_view_focus_is_the_picked_leaves_best_first_with_their_drawn_paths(big_index):
    leaves = [n.node_id for n in big_index.leaves() if n.heading in ("Item 2.1.1", "Item 15.4.2")]
    ranked = tuple(reversed(leaves))  # step 1 ranked the later one first
    marks = w.GraphMarks(picked=frozenset(leaves), ranked=ranked)
    view = w.graph_view(big_index, ["handbook.md"], marks)
    assert view.focus == list(ranked)
    for leaf in leaves:
        assert view.focus_paths[leaf] == [*reversed(big_index.ancestors(leaf)), leaf]  # root first
    # The leaf the answer cites comes first, picked by step 1 or not (step 2 found it).
    cited = next(n.node_id for n in big_index.leaves() if n.heading == "Item 7.3.1")
    marks = w.GraphMarks(picked=frozenset(leaves), ranked=ranked, cited=frozenset({cited}))
    view = w.graph_view(big_index, ["handbook.md"], marks)
    assert view.focus == [cited, *ranked]
    # Its path is a column, each ancestor right over it (the tree is wider than a desk panel
    # holds at the label floor): it fits a narrow view whole.
    x = {n["id"]: n["x"] for n in view.nodes}
    assert {x[a] for a in view.focus_paths[cited]} == {x[cited]}
    assert big_index.nodes[view.focus_paths[cited][0]].is_root
    # The component gets the focus with the readable-label floor it zooms to.
    assert w.MIN_LABEL_PX / w.FONT_PX < 1
    # No pick: the heading matches are the focus, so a search zooms to its hits.
    matches = w.heading_matches(big_index, ["handbook.md"], "Section 3.2")
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(matches=frozenset(matches)))
    assert view.focus == matches


def test_the_tree_component_ships_its_vis_network_build():
    html = (w.COMPONENT_DIR / "index.html").read_text(encoding="utf-8")
    assert '<script src="vis-network.min.js">' in html and '<script src="main.js">' in html
    head = (w.COMPONENT_DIR / "vis-network.min.js").read_text(encoding="utf-8")[:700]
    assert "@version 10.1.5" in head and "MIT" in head


def test_gold_needs_the_same_question_and_the_same_document_text():
    from ui.evaluate import gold
    from ui.evaluate.data import dev_set_folder

    if not dev_set_folder("qasper").is_dir():
        skip_unless_ci("eval-data test", "the qasper dev set is not beside the repo")
    name = "1908.10461.md"
    text = (resources.SAMPLE_DIR / name).read_text(encoding="utf-8")
    settings = IndexSettings(embedder="hashing")
    same = build_index([SourceDocument(name, text)], settings, get_embedder("hashing"))
    edited = build_index(
        [SourceDocument(name, "# Edited\n\nSomething else. " + text)],
        settings,
        get_embedder("hashing"),
    )
    question = "How big is the Parallel Meaning Bank?"
    found = gold.gold_for(question, same).gold
    assert found is not None and found.dataset == "qasper"
    assert gold.gold_for(question, edited).gold is None  # offsets no longer point at the gold
    assert gold.gold_for("How big is the Parallel Meaning Bank", same).gold is None


def test_dev_sets_come_from_treerag_eval_dirs_and_a_broken_one_is_named(tmp_path, monkeypatch):
    """With TREERAG_EVAL_DIRS set, the dev sets are read there (they once came from a second,
    fixed folder outside the allowed roots: UnsafePathError, swallowed, metrics gone)."""
    from ui.evaluate import data as eval_data
    from ui.evaluate import gold
    from ui.evaluate.data import dev_set_folder, resolve_folder, selected_folder

    real = dev_set_folder("qasper")
    if not real.is_dir():
        skip_unless_ci("eval-data test", "the qasper dev set is not beside the repo")
    name = "1908.10461.md"
    lines = (real / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    mine = [line for line in lines if f'"doc": "{name}"' in line]
    (tmp_path / "qasper" / "docs").mkdir(parents=True)
    (tmp_path / "qasper" / "questions.jsonl").write_text("\n".join(mine) + "\n", "utf-8")
    text = (real / "docs" / name).read_text(encoding="utf-8")
    (tmp_path / "qasper" / "docs" / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("TREERAG_EVAL_DIRS", str(tmp_path))
    assert selected_folder("qasper", "") == tmp_path / "qasper"
    assert resolve_folder({"dataset": "qasper"}) == tmp_path / "qasper"
    index = build_index([SourceDocument(name, text)], IndexSettings(embedder="hashing"),
                        get_embedder("hashing"))  # fmt: skip
    found = gold.gold_for("How big is the Parallel Meaning Bank?", index)
    assert found.gold is not None and found.problems == ()
    (tmp_path / "qasper" / "questions.jsonl").write_text("not json\n", encoding="utf-8")
    eval_data._dataset.clear()
    broken = gold.gold_for("How big is the Parallel Meaning Bank?", index)
    assert broken.gold is None and len(broken.problems) == 1
    assert broken.problems[0].startswith("dev set qasper: ")


def test_the_evaluate_metric_table_fits_the_page_width():
    from ui.evaluate import tables as eval_tables

    config = eval_tables.metric_columns()
    widths = [c["width"] for c in config.values()]
    assert all(isinstance(w, int) for w in widths), config
    # The main column at 1600×1000 with the sidebar open is ~990 px; keep 120 for "strategy".
    assert sum(widths) + 120 <= 990, sum(widths)
    # A small report's intervals are a second table of the same columns: it fits as well.
    spread = [c["width"] for c in eval_tables.interval_columns().values()]
    assert len(spread) == len(widths) - 3 and sum(spread) + 120 <= 990, sum(spread)


def test_every_offered_gold_example_has_its_gold_in_the_samples():
    from ui.common.examples import GOLD_EXAMPLES
    from ui.evaluate import gold
    from ui.evaluate.data import dev_set_folder

    if not dev_set_folder("qasper").is_dir() or not dev_set_folder("lecoqa_laws").is_dir():
        skip_unless_ci("eval-data test", "the dev sets are not beside the repo")
    settings = IndexSettings(embedder="hashing")
    for name, questions in GOLD_EXAMPLES.items():
        text = (resources.SAMPLE_DIR / name).read_text(encoding="utf-8")
        index = build_index([SourceDocument(name, text)], settings, get_embedder("hashing"))
        for question in questions:
            found = gold.gold_for(question, index)
            assert found.gold is not None, question
            assert found.gold.question.question == question and found.problems == ()


def test_presentation_mode_scales_the_graph_labels_and_fits_keep_a_margin(big_index):
    leaf = next(n for n in big_index.leaves() if n.heading == "Item 7.2.1").node_id
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(picked=frozenset({leaf})))
    plain, present = w.focus_spec(view), w.focus_spec(view, scale=w.PRESENT_SCALE)
    assert plain["max_zoom"] == 1.0 and plain["min_label_px"] == w.MIN_LABEL_PX
    # From the back of a room: labels never below 24 px, twice the desk's floor.
    assert present["min_label_px"] == w.PRESENT_LABEL_PX == 2 * w.MIN_LABEL_PX
    assert present["max_zoom"] == w.PRESENT_SCALE == 2.0
    assert present["min_label_px"] / present["font_px"] > 1  # a fit above the desk's 100 %
    assert plain["pad_px"] >= 8  # a fitted node's whole box stays clear of the edge
    assert not plain["present"] and present["present"]  # the floor holds in every fit
    present_px = w.graph_height(view, scale=w.PRESENT_SCALE)
    assert w.graph_height(view) <= present_px <= w.MAX_GRAPH_HEIGHT_PX  # within a 720 px screen


def test_view_names_the_inspected_node_for_the_component_to_keep_in_view(big_index):
    leaf = next(n for n in big_index.leaves() if n.heading == "Item 7.2.1").node_id
    view = w.graph_view(big_index, ["handbook.md"], w.GraphMarks(selected=leaf))
    assert view.selected == leaf  # a citation click sets it: the component pans to it
    assert w.graph_view(big_index, ["handbook.md"], w.GraphMarks()).selected is None
    # The wheel is the page's: vis-network's own wheel zoom is off (Ctrl + wheel, ± zoom).
    assert w.graph_config(400)["interaction"]["zoomView"] is False


def test_rerank_table_names_each_passage_document_and_scores_read_to_three_places(paper_engine):
    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import run

    trace = run(paper_engine, "How many epochs was the model trained for?", QuerySettings())
    frame = score_tables.rerank_frame(trace.reranked, trace.candidates)
    assert list(frame.columns[frame.columns.get_loc("leaf") :][:2]) == ["leaf", "document"]
    assert set(frame["document"]) == {"test_paper.md"}
    config = score_tables.rerank_columns(frame)
    shown = [c for c in ("fused", "section", "graph", "rerank") if c in config]
    assert len(shown) >= 3 and all(config[c]["type_config"]["format"] == "%.3f" for c in shown)


def test_score_columns_come_before_the_bounded_text_columns(paper_engine):
    """Scores first, text last and bounded in px: the scores fit 1280 px without scrolling."""
    from dataclasses import replace

    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import run
    from ui.ask import trace_panels

    trace = run(paper_engine, "How many epochs was the model trained for?", QuerySettings())
    pooled = [replace(h, prior=0.5, graph=0.2, minmax_forced=True) for h in trace.candidates]
    previous = {trace.reranked[0].chunk.chunk_id: 2}  # with the "since last" column too
    rerank = score_tables.rerank_frame(trace.reranked, pooled, previous)
    leaf = score_tables.leaf_score_frame(pooled)
    for frame, config in (
        (rerank, score_tables.rerank_columns(rerank)),
        (leaf, score_tables.score_columns(leaf, "weighted")),
    ):
        columns = list(frame.columns)
        scores = [c for c in columns if frame[c].dtype.kind == "f"]
        assert len(scores) >= 4 and "forced_1" in columns
        last = max(columns.index(c) for c in [*scores, "forced_1"])
        assert last < columns.index("text"), columns
        assert config["text"]["width"] == score_tables.TEXT_PX
        widths = [config[c]["width"] for c in columns[: last + 1]]
        # 818 px: the main column at 1280 px with the sidebar open
        assert all(isinstance(w, int) for w in widths) and sum(widths) <= 818, widths
    step1 = trace_panels.STEP1_COLUMNS
    assert step1.index("score") < min(step1.index("heading path"), step1.index("sub-query"))
    widths = [c["width"] for c in trace_panels.step1_columns().values()]
    assert all(isinstance(w, int) for w in widths)


def test_metric_headers_are_short_enough_to_read_with_the_full_name_in_help():
    from ui.evaluate import tables as eval_tables

    config = eval_tables.metric_columns()
    left_out = config[eval_tables.LEFT_OUT]
    assert left_out["label"] == "left out" and "left out" in left_out["help"]
    latency = config[eval_tables.headline_label("latency_ms.total.p50")]
    assert latency["label"] == "p50 ms" and "p50 latency (ms)" in latency["help"]


def test_a_rerank_read_entirely_from_the_cache_says_so():
    from ui.ask.trace_panels import rerank_time

    assert rerank_time(0.2) == "200 ms"
    assert rerank_time(0.0002).startswith("0 ms: every score cached")


def test_a_picked_passage_names_its_chunk_id_literally():
    """Selecting a Final passages row: the chunk id is a code span of its own text, never its
    Markdown escapes (the walkthrough read "0049\\_chunk\\_02")."""
    from treerag_core.base.types import Chunk
    from ui.ask.trace_panels import passage_heading

    chunk = Chunk("0049_chunk_02", "text", "0049", "3 Methods > 3.1 Data_set", "paper.md", 0, 4)
    line = passage_heading(chunk)
    assert "`0049_chunk_02`" in line and "\\" not in line.split("`")[1]
    assert "Data\\_set" in line  # the heading is Markdown text: escaped, shown literal


def test_the_graph_fits_the_picked_leaves_holding_cited_evidence_first():
    from ui.ask.story import focus_order

    assert focus_order(["a", "b", "c", "d"], {"c"}) == ["c", "a", "b", "d"]
    assert focus_order(["a", "b"], set()) == ["a", "b"]
    assert focus_order(["a", "b", "c"], {"c", "a", "z"}) == ["a", "c", "b"]


def test_marked_text_stays_one_html_block_whatever_the_document_holds():
    from markdown_it import MarkdownIt

    from ui.common.inspector import marked_text

    doc = "A cited line.\n\n[x](https://evil.example)\n\n![](https://tracker.example/p.png)\n<b>"
    out = marked_text(doc, 0, 13)
    assert "\n" not in out and "&lt;b&gt;" in out and '<mark id="cited">A cited line.</mark>' in out
    rendered = MarkdownIt("commonmark").render(out)
    # Read as one raw HTML block: no link or image is made from the document's Markdown.
    assert "<a href" not in rendered and "<img" not in rendered
    assert rendered.strip() == out
