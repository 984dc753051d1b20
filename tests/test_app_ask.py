"""AppTest of the Ask page: default view, a question, sliders, graph colours, clicks, override."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time

import pytest
from fake_anthropic import FakeAnthropicServer, reply
from streamlit.testing.v1 import AppTest

from tests import app_helpers as app
from tests.app_helpers import APP, ask, open_app, page_text
from tests.app_helpers import unescape as unescape_text
from tests.conftest import SAMPLES, keyless_app, skip_unless_ci
from treerag_core.strategies import strategy_names
from ui.common.tree_graph import PALETTE

PAPER_QUESTION = "How many epochs was the model trained for?"


@pytest.fixture(scope="module")
def app_data(tmp_path_factory):
    return tmp_path_factory.mktemp("app_data")


@pytest.fixture(scope="module", autouse=True)
def app_env(app_data):
    with keyless_app(app_data) as data:
        yield data


def graph_nodes(at: AppTest) -> dict[str, dict]:
    """The node dicts handed to the Ask page's tree graph, by id."""
    return app.graph_nodes(at, key=at.session_state["ask_graph_key"])


def background(at: AppTest) -> dict[str, str]:
    return {i: n["color"]["background"] for i, n in graph_nodes(at).items()}


# AppTest dataframes carry no key, so tables are told apart by their columns and order.
SIGNATURES = {
    "step1": "sub-query",
    "stage": "stage",
    "rerank": "change",
    "leaf": "dense_norm",
    "chunks": "start",
    "compare": "section",
}


def tables(at: AppTest, kind: str) -> list:
    column = SIGNATURES[kind]
    return [d.value for d in at.dataframe if column in d.value.columns]


def table(at: AppTest, kind: str):
    found = tables(at, kind)
    assert len(found) == 1, f"{len(found)} {kind} tables"
    return found[0]


def leaf_tables(at: AppTest) -> dict:
    """Step 2's per-leaf tables, by leaf id (they follow the trace's leaf order)."""
    trace = at.session_state["ask_trace"]
    found = tables(at, "leaf")
    assert len(found) == len(trace.retrieved)
    return dict(zip([g.leaf_id or g.kind for g in trace.retrieved], found, strict=True))


def final_ranks(frame) -> list[int]:
    return [int(v) for v in frame["final"] if v]


def test_default_page_shows_samples_tree_and_examples_without_a_key():
    at = open_app()
    assert at.title[0].value == "TreeRAG Explorer"
    labels = [b.label for b in at.button]
    assert "AdaRouter使用什么算法？" in labels  # the seed's questions are offered
    assert any("epoch" in label for label in labels)
    nodes = graph_nodes(at)
    assert len(nodes) >= 5
    # No question yet: nothing is picked, and the first sample's sections are open.
    assert PALETTE["picked"] not in background(at).values()
    assert any("Methods" in n["label"] for n in nodes.values())
    assert "Off: this server has no ANTHROPIC_API_KEY" in page_text(at)  # the LLM panel
    assert at.toggle(key="qs_llm_enabled").value is False
    assert at.selectbox(key="qs_llm_provider").value == "anthropic"
    assert not at.error


def test_graph_nodes_never_carry_a_title():
    """The component writes `title` into innerHTML and opens it as a URL on double-click."""
    at = open_app()
    assert all("title" not in n for n in graph_nodes(at).values())


def test_question_colours_picked_leaves_and_their_path():
    at = ask(open_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    picked = [leaf.node_id for leaf in trace.locate.leaves]
    assert picked, "step 1 picked nothing"
    n = len(picked)  # the heading says who picked them (a presenter's first question)
    title = f"① Locate · {n} section{'s' if n != 1 else ''} picked by the local locator"
    assert title in [h.value for h in at.subheader]
    colours = background(at)
    for leaf in picked:
        assert colours[leaf] == PALETTE["picked"]
    others = {i for i, c in colours.items() if c == PALETTE["picked"]}
    assert others == set(picked)
    # Every drawn ancestor of a picked leaf is on the emphasised path.
    nodes = graph_nodes(at)
    path_nodes = {i for i, c in colours.items() if c == PALETTE["path"]}
    assert path_nodes, "no ancestor emphasised"
    assert all(i not in picked for i in path_nodes)
    # The supported citations are marked on the tree: the local answer cites its evidence,
    # every cited node is drawn, and nothing is open in the inspector, so the border is green.
    cited = {i for c in trace.citations if c.supported for i in c.node_ids}
    assert cited, trace.answer
    assert cited <= set(nodes), cited - set(nodes)
    assert at.session_state["ask_inspect"] is None
    for node_id in cited:
        assert nodes[node_id]["color"]["border"] == PALETTE["cited"]
        assert nodes[node_id]["label"].startswith("✓")
    assert {i for i, n in nodes.items() if n["color"]["border"] == PALETTE["cited"]} == cited


def test_answer_fallback_tables_and_costs_are_shown(app_data):
    at = ask(open_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    shown = page_text(at)
    assert "LLM switched off: local locator" in shown.replace("\\", "")  # off: no key
    assert "50" in trace.answer and "[Source:" in trace.answer
    assert any("50" in m.value for m in at.markdown)  # the answer is on the page
    step1 = table(at, "step1")
    assert list(step1["node"]) == [leaf.node_id for leaf in trace.locate.leaves]
    stages = table(at, "stage")
    assert list(stages["stage"]) == ["locate", "retrieve", "rerank", "synthesize"]
    frames = leaf_tables(at)
    for group in trace.retrieved:
        hits = group.hits
        frame = frames[group.leaf_id or group.kind]
        assert len(frame) == len(hits)
        assert frame["fused"].tolist() == pytest.approx([h.fused for h in hits])
    rerank = table(at, "rerank")
    assert final_ranks(rerank) == list(range(1, len(trace.reranked) + 1))
    assert "None" not in rerank.astype(str).to_numpy()  # dropped rows show an empty rank
    assert at.get("download_button"), "no trace download"
    # Logged in the audit log (the app's own SQLite file): this question, this session.
    query_id = at.session_state["ask_trace_id"]
    assert isinstance(query_id, int)
    with contextlib.closing(sqlite3.connect(app_data / "audit.sqlite")) as db:
        row = db.execute(
            "SELECT question, workspace, strategy, answer FROM query WHERE id = ?", (query_id,)
        ).fetchone()
    assert row == (PAPER_QUESTION, at.session_state["ws_id"], trace.strategy, trace.answer)


def test_moving_a_slider_reruns_steps_2_3_from_the_stored_step_1():
    at = ask(open_app(), PAPER_QUESTION)
    before = at.session_state["ask_trace"]
    # treerag searches its scope as one window: one group, the same before and after.
    [(first_group, frame_before)] = leaf_tables(at).items()
    assert first_group == "scope"
    assert before.settings["retrieve"]["dense_weight"] == 0.5
    # Half and half: fused is the mean of the two normalised scores.
    mix = (frame_before["dense_norm"] + frame_before["bm25_norm"]) / 2
    assert frame_before["fused"].tolist() == pytest.approx(mix.tolist())
    started = time.perf_counter()
    at.slider(key="qs_dense_weight").set_value(1.0).run()
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert not at.exception, at.exception
    after = at.session_state["ask_trace"]
    assert after is not before
    # The local locator reads the fusion weights: the engine redid step 1, locally.
    assert after.locate.locator == "local" and after.settings["retrieve"]["dense_weight"] == 1.0
    [(group, frame)] = leaf_tables(at).items()
    assert group == first_group
    # With all weight on dense, fused equals the normalised dense score: every passage shown
    # before whose two scores differ has moved to its dense score.
    assert frame["fused"].tolist() == pytest.approx(frame["dense_norm"].tolist())
    was = dict(zip(frame_before["chunk"], frame_before["fused"], strict=True))
    now = dict(zip(frame["chunk"], frame["fused"], strict=True))
    scores = frame_before[["chunk", "dense_norm", "bm25_norm"]].itertuples(index=False)
    differ = {c for c, dense, bm25 in scores if dense != pytest.approx(bm25)}
    kept = [c for c in now if c in was]
    assert set(kept) & differ, (was, now)  # the same passages, with other scores
    for chunk in kept:
        assert (now[chunk] != pytest.approx(was[chunk])) == (chunk in differ), chunk
    rerun_ms = at.session_state["ask_rerun_ms"]
    assert isinstance(rerun_ms, float) and 0 < rerun_ms <= elapsed_ms  # timed inside that run
    assert f"Re-ran with the new settings in {rerun_ms:.0f} ms" in page_text(at)
    # RRF: another fusion method, other fused values.
    at.selectbox(key="qs_fusion").set_value("rrf").run()
    rrf = [v for frame in leaf_tables(at).values() for v in frame["fused"].tolist()]
    assert max(rrf) < 0.1  # 1/(k + rank) sums are small
    # A control the locator does not read (the answer's top-k) keeps the stored step 1.
    kept = at.session_state["ask_trace"].locate
    at.slider(key="qs_final_top_k").set_value(2).run()
    assert at.session_state["ask_trace"].locate is kept
    # The reranker is read by treerag's routing check: toggling it redoes step 1, locally.
    at.toggle(key="qs_rerank").set_value(False).run()
    assert at.session_state["ask_trace"].locate.locator == "local"


def test_top_k_slider_changes_table_length():
    at = ask(open_app(), PAPER_QUESTION)
    at.slider(key="qs_final_top_k").set_value(2).run()
    assert at.session_state["ask_trace"].settings["answer"]["final_top_k"] == 2
    assert final_ranks(table(at, "rerank")) == [1, 2]
    # What the move changed is said at the top of the answer and in the Evidence heading,
    # and the rows that moved are tinted in the table.
    said = page_text(at, plain=True)
    assert "Final top-k: 5 → 2" in said and "3 dropped out" in said, said
    assert any("② Evidence" in h.value and "3 dropped out" in h.value for h in at.subheader)
    [styled] = [d for d in at.dataframe if "since last" in d.value.columns]
    assert "background-color" in styled.proto.arrow_data.styler.styles
    # treerag ranks one window over the scope: the per-leaf top-k is not its control.
    per_leaf = at.slider(key="qs_top_k_per_leaf")
    assert per_leaf.disabled and "treerag-kg" in per_leaf.help


def test_a_strategy_change_waits_for_ask_and_never_claims_a_rewrite():
    at = ask(open_app(), PAPER_QUESTION)
    first = at.session_state["ask_trace"]
    assert first.strategy == "treerag"
    at.selectbox(key="qs_strategy").set_value("drilldown").run()
    assert not at.exception, at.exception
    # Nothing re-ran under the old strategy; the page says what waits for Ask.
    assert at.session_state["ask_trace"] is first
    shown = page_text(at, plain=True)
    assert "Not applied yet: Strategy: treerag → drilldown" in shown, shown
    assert "None" not in shown and "rewritten" not in shown
    # A slider moved meanwhile waits too: nothing is half applied.
    at.slider(key="qs_final_top_k").set_value(2).run()
    assert at.session_state["ask_trace"] is first
    assert "Final top-k: 5 → 2" in page_text(at, plain=True)
    # An override meanwhile keeps the trace's strategy and step 1: the change stays pending.
    target = first.locate.leaves[-1].node_id
    at.session_state[at.session_state["ask_graph_key"]] = target  # the component's click
    at.run()
    at.button(key="ask_inspector_remove").click().run()
    assert not at.exception, at.exception
    overridden = at.session_state["ask_trace"]
    assert overridden.strategy == "treerag" and overridden is not first
    assert "Not applied yet: Strategy: treerag → drilldown" in page_text(at, plain=True)
    at.selectbox(key="qs_strategy").set_value("treerag").run()  # back: nothing waits or reruns
    assert at.session_state["ask_trace"] is overridden and "Not applied" not in page_text(at)
    at.selectbox(key="qs_strategy").set_value("drilldown").run()
    # One click asks again with everything that waited.
    at.button(key="apply_pending").click().run()
    assert not at.exception, at.exception
    new = at.session_state["ask_trace"]
    assert new.strategy == "drilldown" and new.settings["answer"]["final_top_k"] == 2
    assert new.question == PAPER_QUESTION
    assert "Not applied yet" not in page_text(at)
    # Back to treerag: pending again (treerag's step 1 is not the drill-down's).
    at.selectbox(key="qs_strategy").set_value("treerag").run()
    assert at.session_state["ask_trace"] is new
    assert "Strategy: drilldown → treerag" in page_text(at, plain=True)


def test_a_scope_change_waits_for_ask():
    at = ask(open_app(), PAPER_QUESTION)
    first = at.session_state["ask_trace"]
    at.multiselect(key="qs_scope_samples").set_value(["test_paper.md"]).run()
    assert at.session_state["ask_trace"] is first
    assert "Not applied yet: Document scope" in page_text(at)


def test_describe_moves_never_shows_a_raw_none():
    from ui.common.query_controls import describe_moves

    before = {"strategy": "treerag", "answer": {"final_top_k": 5}}
    after = {"strategy": "drilldown", "answer": {"final_top_k": 5},
             "options": {"drilldown": {"documents": 3}}}  # fmt: skip
    paths = ["strategy", "answer.final_top_k", "options.drilldown.documents"]
    assert describe_moves(before, after, paths) == [
        "Strategy: treerag → drilldown",
        "Documents kept: (not used) → 3",
    ]
    assert describe_moves(before, after, paths, skip_new=True) == ["Strategy: treerag → drilldown"]
    assert describe_moves(after, before, paths[2:]) == ["Documents kept: 3 → (not used)"]


def test_slider_steps_are_compared_with_the_last_full_run_not_with_each_step():
    at = ask(open_app(), PAPER_QUESTION)
    for k in (4, 3, 2):  # arrow keys: one rerun per step
        at.slider(key="qs_final_top_k").set_value(k).run()
    said = page_text(at, plain=True)
    assert "Final top-k: 5 → 2" in said and "3 dropped out" in said, said
    assert "Final top-k: 3 → 2" not in said
    # Another control adds to the list; both still against the last full run.
    at.slider(key="qs_dense_weight").set_value(0.7).run()
    said = page_text(at, plain=True)
    assert "Dense weight: 0.5 → 0.7, Final top-k: 5 → 2" in said, said
    # Back where the question ran: nothing is reported as moved.
    at.slider(key="qs_final_top_k").set_value(5).run()
    at.slider(key="qs_dense_weight").set_value(0.5).run()
    assert "Since the last full run" not in page_text(at)
    # A new Ask is the new baseline.
    at.slider(key="qs_final_top_k").set_value(3).run()
    ask(at, PAPER_QUESTION)
    at.slider(key="qs_final_top_k").set_value(2).run()
    said = page_text(at, plain=True)
    assert "Final top-k: 3 → 2" in said and "1 dropped out" in said, said


def test_clicking_a_node_opens_the_inspector_and_override_reruns():
    at = open_app()
    at.slider(key="qs_max_leaves").set_value(3)  # leave room to add a leaf by hand
    at = ask(at, PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    picked = [leaf.node_id for leaf in trace.locate.leaves]
    candidates = [
        i
        for i, n in graph_nodes(at).items()
        if i not in picked and n["color"]["background"] == PALETTE["leaf"]
    ]
    assert candidates, "no unpicked leaf drawn"
    target = candidates[0]
    at.session_state[at.session_state["ask_graph_key"]] = target  # the component's click
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["ask_inspect"] == target
    assert graph_nodes(at)[target]["color"]["border"] == PALETTE["selected"]
    assert any(f"`{target}`" in m.value for m in at.markdown)  # the inspector header
    assert table(at, "chunks")["chunk"].str.startswith(target).all()
    add = at.button(key="ask_inspector_add")
    add.click().run()
    assert not at.exception, at.exception
    new = at.session_state["ask_trace"]
    assert [leaf.node_id for leaf in new.locate.leaves] == [*picked, target]
    assert new.locate.leaves[-1].source == "manual"
    assert "Manual override" in new.locate.thinking
    # The picked leaves are searched as one heading-aware window (one score across leaves).
    [group] = new.retrieved
    assert "picked leaves" in group.label
    assert {h.chunk.source_node_id for h in group.hits} <= {*picked, target}
    assert background(at)[target] == PALETTE["picked"]
    # And back: removing it restores the original leaf set.
    at.session_state[at.session_state["ask_graph_key"]] = target
    at.run()
    at.button(key="ask_inspector_remove").click().run()
    assert [leaf.node_id for leaf in at.session_state["ask_trace"].locate.leaves] == picked


def test_weakest_pick_is_the_lowest_score_unscored_first_ties_to_the_later():
    from ui.common.inspector import weakest_pick

    assert weakest_pick(["a", "b", "c"], {"a": 0.9, "b": 0.2, "c": 0.5}) == "b"
    assert weakest_pick(["a", "b", "c"], {"a": 0.9, "b": 0.2, "c": None}) == "c"  # by hand
    assert weakest_pick(["a", "b", "c"], {"a": 0.5, "b": 0.5, "c": 0.5}) == "c"


def test_adding_a_sixth_leaf_replaces_the_lowest_scored_pick_and_says_which():
    """Step 1 (and LocateSettings) allow at most 5 leaves: at the limit, the user's leaf
    still goes in, in place of the weakest pick, named before the click."""
    from ui.common.inspector import MAX_LEAVES, weakest_pick

    at = ask(open_app(), PAPER_QUESTION)  # max leaves: 5 (the seed)
    trace = at.session_state["ask_trace"]
    picked = [leaf.node_id for leaf in trace.locate.leaves]
    assert len(picked) == MAX_LEAVES, picked
    scores = {leaf.node_id: leaf.score for leaf in trace.locate.leaves}
    weakest = weakest_pick(picked, scores)
    target = next(
        i
        for i, n in graph_nodes(at).items()
        if i not in picked and n["color"]["background"] == PALETTE["leaf"]
    )
    at.session_state[at.session_state["ask_graph_key"]] = target  # the component's click
    at.run()
    add = at.button(key="ask_inspector_add")
    assert not add.disabled and weakest in add.label
    said = page_text(at, "caption", plain=True)
    assert "adding this one drops" in said and weakest in said and "lowest-scored" in said
    add.click().run()
    assert not at.exception, at.exception
    new = at.session_state["ask_trace"]
    leaves = [leaf.node_id for leaf in new.locate.leaves]
    assert len(leaves) == MAX_LEAVES and target in leaves and weakest not in leaves
    assert f"removed {weakest}" in new.locate.thinking  # the drop stays on the record


def test_a_cited_node_step_1_did_not_pick_is_explained_under_the_graph():
    """Grey with a green border = cited, not picked: the legend says so, and a note under
    the graph names those nodes and the search that found their passages."""
    at = open_app()
    at.selectbox(key="qs_strategy").set_value("flat-dense").run()  # no step-1 pick at all
    ask(at, PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    nodes = graph_nodes(at)
    loose = [i for i, n in nodes.items() if n["color"]["border"] == PALETTE["cited"]]
    assert loose and all(nodes[i]["color"]["background"] != PALETTE["picked"] for i in loose)
    said = page_text(at, "caption", plain=True)
    assert "grey with a green border: cited, not picked by step 1" in said  # the legend
    [note] = [c.value for c in at.caption if c.value.startswith("Grey with a green border")]
    assert all(f"`{i}`" in note for i in loose)
    note = unescape_text(note)
    assert trace.strategy in note and trace.retrieved[0].label in note
    # Every cited node picked: no note.
    at.selectbox(key="qs_strategy").set_value("drilldown").run()
    ask(at, PAPER_QUESTION)
    nodes = graph_nodes(at)
    cited = {i for i, n in nodes.items() if n["color"]["border"] == PALETTE["cited"]}
    picked = {leaf.node_id for leaf in at.session_state["ask_trace"].locate.leaves}
    assert cited and cited <= picked
    assert not [c for c in at.caption if c.value.startswith("Grey with a green border")]


def test_citation_chip_selects_its_node():
    at = ask(open_app(), PAPER_QUESTION)
    chips = [b for b in at.button if b.key and b.key.startswith("cite_")]
    assert chips, "no citation chips"
    chips[0].click().run()
    target = at.session_state["ask_inspect"]
    trace = at.session_state["ask_trace"]
    first = trace.citations[0]  # the first chip: the local answer cites its own evidence
    assert first.supported and target in first.node_ids
    node = graph_nodes(at)[target]  # inspected: a blue halo; the cited green border stays
    assert node["shadow"]["color"] == PALETTE["selected"]
    assert node["color"]["border"] == PALETTE["cited"]
    # The cited passage marked is the node's first passage in the evidence.
    passage = next(h.chunk for h in trace.reranked if h.chunk.source_node_id == target)
    assert at.session_state["ask_highlight"] == (passage.start, passage.end)


def in_page_order(at: AppTest) -> list:
    """Every element of the main area, top to bottom (columns and tabs read left to right)."""
    out, todo = [], [at.main]
    while todo:
        node = todo.pop()
        children = getattr(node, "children", None)
        if children:
            todo.extend(children[k] for k in sorted(children, reverse=True))
        else:
            out.append(node)
    return out


def test_a_citation_opens_the_inspector_above_the_evidence_and_scrolls_to_it_once():
    at = ask(open_app(), PAPER_QUESTION)
    assert not [h for h in at.get("html") if "scrollIntoView" in h.proto.body]  # nothing open
    next(b for b in at.button if b.key and b.key.startswith("cite_")).click().run()
    order = in_page_order(at)
    where = {
        kind: next(i for i, e in enumerate(order) if found(e))
        for kind, found in {
            "inspector": lambda e: getattr(e, "key", None) == "ask_inspector_remove",
            "evidence": lambda e: e.type == "dataframe" and "change" in e.value.columns,
        }.items()
    }
    assert where["inspector"] < where["evidence"], where  # not a screen below the tables
    scrolls = [h for h in at.get("html") if "scrollIntoView" in h.proto.body]
    assert len(scrolls) == 1 and "mark#cited" in scrolls[0].proto.body
    at.run()  # the same passage still open: no second jump
    assert not [h for h in at.get("html") if "scrollIntoView" in h.proto.body]


def test_heading_search_marks_matches():
    at = open_app()
    at.text_input(key="ask_find").input("Router").run()
    colours = background(at)
    matches = [i for i, c in colours.items() if c == PALETTE["match"]]
    # The samples have one heading with "router" in it (any case): "### 3.2.2 Router Design".
    headings = [
        line
        for path in sorted(SAMPLES.glob("*.md"))
        if path.name != "README.md"
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#") and "router" in line.casefold()
    ]
    assert headings == ["### 3.2.2 Router Design"]
    assert [graph_nodes(at)[i]["label"] for i in matches] == [
        f"{matches[0]} · 3.2.2\nRouter Design"
    ]


@pytest.mark.parametrize(
    ("question", "message"),
    [("   ", "the question is empty"), ("the of and?", "no searchable words")],
)
def test_bad_questions_give_an_error_not_a_traceback(question, message):
    at = ask(open_app(), question)
    assert any(message in e.value for e in at.error)
    assert at.session_state["ask_trace"] is None


@pytest.mark.parametrize(
    ("question", "message"),
    [("", "the question is empty"), ("the of and?", "no searchable words")],
)
def test_a_bad_question_after_an_answer_keeps_the_answer_on_screen(question, message):
    at = ask(open_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    answer_shown = [m.value for m in at.markdown if "[Source:" in m.value]
    assert answer_shown
    assert not any("Showing the previous" in i.value for i in at.info)
    ask(at, question)
    assert any(message in e.value for e in at.error), page_text(at)
    # What stays below is labelled as the earlier run, naming its question.
    [note] = [i.value for i in at.info if "Showing the previous question" in i.value]
    assert PAPER_QUESTION in note.replace("\\", "")
    assert at.session_state["ask_trace"] is trace  # nothing lost ...
    assert [m.value for m in at.markdown if "[Source:" in m.value] == answer_shown  # ... on screen
    assert final_ranks(table(at, "rerank")) == list(range(1, len(trace.reranked) + 1))
    assert PALETTE["picked"] in background(at).values()  # the graph keeps its picked leaves


def test_a_question_over_the_limit_is_refused_in_words_and_kept_in_the_box():
    from treerag_core.base.settings import QuerySettings

    limit = QuerySettings().max_question_chars
    at = open_app()
    box = at.text_input(key="ask_question")
    # No max_chars: a browser drops a longer paste without a word.
    assert not box.max_chars and f"Up to {limit:,} characters" in box.help
    too_long = "x " * limit
    at = ask(at, too_long)
    assert f"the limit is {limit}" in page_text(at)
    assert at.text_input(key="ask_question").value == too_long


def test_setting_moves_are_named_by_their_on_screen_labels():
    at = ask(open_app(), PAPER_QUESTION)
    at.toggle(key="qs_rerank_chinese").set_value(True).run()
    said = page_text(at, plain=True)
    assert "Rerank Chinese questions too: off → on" in said, said
    # An English question's evidence does not move: the note does not claim new evidence.
    assert "the same passages in the same order" in said
    assert "answer written again from the same evidence" in said
    assert "rewritten from the new evidence" not in said
    at.toggle(key="qs_rerank").set_value(False).run()
    said = page_text(at, plain=True)
    assert "Rerank (cross-encoder): on → off" in said, said
    assert "chinese" not in said and "enabled" not in said


def test_the_answer_context_budget_fills_to_n_characters_instead_of_top_k():
    at = ask(open_app(), PAPER_QUESTION)
    first = at.session_state["ask_trace"]
    assert first.settings["answer"]["context_chars"] == 0 and len(first.reranked) == 5
    assert any(c.value.startswith("Answer context: 5 passages") for c in at.caption)
    # A budget smaller than five passages: fewer of them, within it (a slider rerun).
    sizes = [len(h.chunk.text) for h in first.candidates]
    budget = 250 * max(1, (sizes[0] + sizes[1]) // 250)  # the slider's step is 250
    at.slider(key="qs_context_chars").set_value(budget).run()
    assert not at.exception, at.exception
    trace = at.session_state["ask_trace"]
    assert trace.settings["answer"]["context_chars"] == budget
    used = sum(len(h.chunk.text) for h in trace.reranked)
    assert 1 <= len(trace.reranked) < len(first.reranked) and used <= max(budget, sizes[0])
    assert final_ranks(table(at, "rerank")) == list(range(1, len(trace.reranked) + 1))
    said = page_text(at, plain=True)
    assert f"Answer context budget (characters): off → {budget}" in said, said
    assert f"{used:,} characters (filled to a budget of {budget:,} characters)" in said, said
    assert at.slider(key="qs_final_top_k").disabled  # not read while a budget is set
    # A large budget reads more than the top 5.
    at.slider(key="qs_context_chars").set_value(8000).run()
    assert len(at.session_state["ask_trace"].reranked) > 5


def test_flat_strategy_and_compare():
    at = app.include_hirag(ask(open_app(), PAPER_QUESTION))
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    compared = [c.value for c in at.caption if "shared with" in c.value]
    # Every registered strategy but treerag-kg, which needs an index built with graphs (off
    # by default) and says so instead of comparing.
    runnable = [s for s in strategy_names(runnable=True) if s != "treerag-kg"]
    assert len(compared) == len(runnable)
    paths = {h.chunk.heading_path for h in at.session_state["ask_trace"].reranked}
    assert any(
        p.replace(" ", "") in m.value.replace("\\", "").replace(" ", "")
        for p in paths
        for m in at.markdown
    )
    at.selectbox(key="qs_strategy").set_value("flat-hybrid").run()
    assert "Not applied yet: Strategy: treerag → flat-hybrid" in page_text(at, plain=True)
    ask(at, PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    assert trace.strategy == "flat-hybrid"
    assert PALETTE["picked"] not in background(at).values()
    assert "no locating, every chunk in scope is searched" in page_text(at, plain=True)


def test_compare_scores_each_strategy_on_a_dev_set_question_with_gold():
    from ui.evaluate.data import dev_set_folder
    from ui.evaluate.gold import SHOWN, strategy_metrics

    if not dev_set_folder("qasper").is_dir():
        skip_unless_ci("eval-data test", "the qasper dev set is not beside the repo")
    at = open_app()
    gold_buttons = [b for b in at.button if (b.key or "").startswith("gold_example_")]
    assert gold_buttons, "no dev-set example questions on the first screen"
    gold_buttons[0].click().run()  # the example asks at once
    at.run()
    assert not at.exception, at.exception
    trace = at.session_state["ask_trace"]
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    [metrics] = [d.value for d in at.dataframe if "Recall@1000c" in d.value.columns]
    results = at.session_state["ask_compare"]["results"]
    assert list(metrics["strategy"]) == [r.strategy for r in results if r.trace is not None]
    assert set(SHOWN.values()) <= set(metrics.columns)
    assert "None" not in metrics.astype(str).to_numpy()  # no value reads "—"
    flat = metrics[metrics["strategy"] == "flat-hybrid"].iloc[0]
    assert flat["Section hit@5"] == "—"  # it picks no sections
    lookup = at.session_state["ask_compare"]["gold"]
    gold = lookup.gold
    assert gold is not None and gold.dataset == "qasper" and lookup.problems == ()
    assert gold.question.question == trace.question
    row = metrics[metrics["strategy"] == "treerag"].iloc[0]
    tree = next(r.trace for r in results if r.strategy == "treerag")
    for label, value in strategy_metrics(gold, tree).items():
        assert float(row[label]) == pytest.approx(value, abs=0.005)
    # The ids sit in code spans, literal: no Markdown escapes ("lecoqa\\-371") inside them.
    line = f"this is question `{gold.question.id}` of the `{gold.dataset}` dev set"
    assert line in page_text(at), page_text(at)


def test_compare_names_a_dev_set_it_cannot_read(tmp_path, monkeypatch):
    """A broken dev set under TREERAG_EVAL_DIRS: Compare says why it has no metrics."""
    (tmp_path / "qasper").mkdir()
    (tmp_path / "qasper" / "questions.jsonl").write_text("not json\n", encoding="utf-8")
    monkeypatch.setenv("TREERAG_EVAL_DIRS", str(tmp_path))
    at = open_app()
    gold_buttons = [b for b in at.button if (b.key or "").startswith("gold_example_")]
    gold_buttons[0].click().run()
    at.run()
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    shown = [w.value for w in at.warning if "No gold metrics from a dev set" in w.value]
    assert len(shown) == 1 and "qasper" in shown[0]
    assert not [d for d in at.dataframe if "Recall@1000c" in d.value.columns]


def test_no_gold_no_metrics_table():
    at = ask(open_app(), PAPER_QUESTION)
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    # The compare ran and its summary is shown, one row per strategy that ran ...
    compare = at.session_state["ask_compare"]
    assert compare["gold"].gold is None and compare["gold"].problems == ()  # no dev set asks it
    ran = [r.strategy for r in compare["results"] if r.trace is not None]
    assert "treerag" in ran and "flat-hybrid" in ran
    [summary] = [d.value for d in at.dataframe if "top sections" in d.value.columns]
    assert list(summary["strategy"]) == ran
    # ... without the gold metrics.
    assert not [c for c in summary.columns if c.startswith(("Recall@", "Hit@", "Section hit"))]
    assert not [d for d in at.dataframe if "Recall@1000c" in d.value.columns]


def logged(app_data) -> int:
    """How many queries the audit log holds (a restore must add none)."""
    with contextlib.closing(sqlite3.connect(app_data / "audit.sqlite")) as db:
        return db.execute("SELECT COUNT(*) FROM query").fetchone()[0]


def test_a_reload_offers_the_last_question_and_restores_it_without_running_it(app_data):
    first = ask(open_app(), PAPER_QUESTION)
    ws_id = first.session_state["ws_id"]
    answer = first.session_state["ask_trace"].answer
    stranger = open_app()  # another workspace: the first one's question is not offered
    assert not [b for b in stranger.button if b.key == "ask_restore_last"]
    assert PAPER_QUESTION not in page_text(stranger)
    reloaded = open_app(ws=ws_id)  # F5: same ?ws=, a new session
    assert reloaded.session_state["ask_trace"] is None
    assert reloaded.text_input(key="ask_question").value == ""
    offer = page_text(reloaded, "info", plain=True)
    assert f"“{PAPER_QUESTION}”" in offer and "Your last question in this workspace" in offer
    count = logged(app_data)
    reloaded.button(key="ask_restore_last").click().run()
    assert not reloaded.exception, reloaded.exception
    trace = reloaded.session_state["ask_trace"]
    assert trace.question == PAPER_QUESTION and trace.answer == answer
    assert reloaded.text_input(key="ask_question").value == PAPER_QUESTION
    assert logged(app_data) == count  # nothing ran: no new query in the audit log
    assert not [b for b in reloaded.button if b.key == "ask_restore_last"]  # offered once
    assert tables(at=reloaded, kind="rerank")  # the evidence is back on screen


def _link(at: AppTest, name: str) -> list[str]:
    """A query parameter of the page's link, as a list (AppTest keeps one value or a list)."""
    value = at.query_params.get(name)
    return [] if value is None else value if isinstance(value, list) else [value]


def _scoped_question(at: AppTest) -> tuple[AppTest, list[str]]:
    """`at` after asking the paper question with the scope set to the paper alone."""
    scope = ["test_paper.md"]
    at.multiselect(key="qs_scope_samples").set_value(scope).run()
    return ask(at, PAPER_QUESTION), scope


def test_the_question_scope_and_result_survive_a_page_switch_even_if_the_widgets_lost_them():
    at = ask(open_app(), "What does the ablation study remove?")  # on all documents
    first_id = at.session_state["ask_trace_id"]
    at, scope = _scoped_question(at)
    trace = at.session_state["ask_trace"]
    at.switch_page("pages/documents.py").run()
    at.switch_page("pages/history.py").run()
    at.switch_page("pages/ask.py").run()
    assert not at.exception, at.exception
    assert at.text_input(key="ask_question").value == PAPER_QUESTION
    assert at.multiselect(key="qs_scope_samples").value == scope
    assert at.session_state["ask_trace"] is trace  # the last result, as it was
    # A run stopped midway by a page switch (leaving during an answer) can drop the widgets'
    # own state: the session copies bring both back.
    at.switch_page("pages/documents.py").run()
    del at.session_state["ask_question"]
    at.session_state["qs_scope_samples"] = []
    at.switch_page("pages/ask.py").run()
    assert at.text_input(key="ask_question").value == PAPER_QUESTION
    assert at.multiselect(key="qs_scope_samples").value == scope
    # On Ask itself, an emptied scope is the user's choice: not put back.
    at.multiselect(key="qs_scope_samples").set_value([]).run()
    at.run()
    assert at.multiselect(key="qs_scope_samples").value == []
    # A result reopened from History brings its own scope (all documents): kept, not the
    # scope Ask had before.
    at.multiselect(key="qs_scope_samples").set_value(scope).run()
    at.switch_page("pages/history.py").run()
    at.button(key=f"open_{first_id}").click().run()
    assert not at.exception, at.exception
    assert at.session_state["ask_trace"].question == "What does the ablation study remove?"
    assert at.multiselect(key="qs_scope_samples").value == []


def test_an_ask_stopped_by_a_page_switch_says_so_on_return_and_asks_again(monkeypatch):
    """Streamlit stops a script run when the user leaves the page: the new question's answer
    never arrives. Back on Ask, the page says so (the answer on screen is the previous
    question's) and one button asks it again."""
    import treerag_core

    at = ask(open_app(), PAPER_QUESTION)  # the previous result (and the models warm)
    real, slow = treerag_core.ask, {"on": True}

    def stalled(*args, **kwargs):
        for i, event in enumerate(real(*args, **kwargs)):
            if i == 1 and slow["on"]:
                time.sleep(3)  # the answer is still under way when the user leaves
            yield event

    monkeypatch.setattr(treerag_core, "ask", stalled)
    new = "What does the ablation study remove?"
    at.text_input(key="ask_question").input(new)
    at.button[0].click()
    with pytest.raises(RuntimeError, match="timed out"):  # AppTest stops the run, as a
        at.run(timeout=1.5)  # page switch does: at its next Streamlit call
    assert at.session_state["ask_running"]["question"] == new
    at.switch_page("pages/documents.py").run()
    at.switch_page("pages/ask.py").run()
    assert not at.exception, at.exception
    said = page_text(at, "warning", plain=True)
    assert f"Your question “{new}” was interrupted" in said
    assert f"previous question “{PAPER_QUESTION}”" in said  # what the answer below is
    assert at.text_input(key="ask_question").value == new
    slow["on"] = False
    at.button(key="ask_interrupted_again").click().run()
    assert not at.exception, at.exception
    trace = at.session_state["ask_trace"]
    assert trace.question == new and at.session_state["ask_trace_id"] is not None  # logged
    assert at.session_state["ask_running"] is None
    assert "was interrupted" not in page_text(at, "warning")
    # A finished Ask leaves nothing to say on the next visit.
    at.switch_page("pages/documents.py").run()
    at.switch_page("pages/ask.py").run()
    assert "was interrupted" not in page_text(at, "warning")


def test_a_reload_keeps_the_question_and_scope_in_the_link_and_shows_the_result_again(app_data):
    def reload(at: AppTest) -> AppTest:  # F5: the same link, a new session
        again = AppTest.from_file(str(APP), default_timeout=90)
        for name in ("ws", "q", "scope", "corpus"):
            if _link(at, name):
                again.query_params[name] = _link(at, name)
        again.run()
        assert not again.exception, again.exception
        return again

    at, scope = _scoped_question(open_app())
    trace = at.session_state["ask_trace"]
    # Written before the answer runs, so a reload midway has them too.
    assert _link(at, "q") == [PAPER_QUESTION] and _link(at, "scope") == scope
    count = logged(app_data)
    again = reload(at)
    assert again.text_input(key="ask_question").value == PAPER_QUESTION
    assert again.multiselect(key="qs_scope_samples").value == scope  # not "All documents"
    shown = again.session_state["ask_trace"]  # the last result, opened from the audit log
    assert shown is not None and shown.question == PAPER_QUESTION
    assert shown.answer == trace.answer and logged(app_data) == count  # nothing ran again
    assert tables(at=again, kind="rerank")
    # A reload mid-answer: the new question is in the link, not yet in the log. The box
    # and the scope come back; the last logged result is offered, not shown as this one's.
    again.query_params["q"] = "What datasets were used?"
    midway = reload(again)
    assert midway.text_input(key="ask_question").value == "What datasets were used?"
    assert midway.multiselect(key="qs_scope_samples").value == scope
    assert midway.session_state["ask_trace"] is None
    assert [b for b in midway.button if b.key == "ask_restore_last"]
    # A question too long for a link stays out of it (the session still keeps it).
    ask(midway, "x" * 2001)
    assert _link(midway, "q") == []


def _reload_link(at: AppTest, **link: str) -> AppTest:
    """F5 on `at`'s link (every parameter, as the browser keeps them), `link` written over."""
    again = AppTest.from_file(str(APP), default_timeout=90)
    for name, value in {**at.query_params, **link}.items():
        again.query_params[name] = value
    again.run()
    assert not again.exception, again.exception
    return again


def test_a_reload_keeps_the_step2_tuning_in_the_link_and_retunes_the_reopened_result(app_data):
    at = ask(open_app(), PAPER_QUESTION)
    assert not [k for k in at.query_params if k.startswith("qs_")]  # defaults stay out
    count = logged(app_data)
    at.slider(key="qs_final_top_k").set_value(3).run()
    at.slider(key="qs_dense_weight").set_value(0.7).run()
    assert _link(at, "qs_final_top_k") == ["3"] and _link(at, "qs_dense_weight") == ["0.7"]
    again = _reload_link(at)
    assert again.text_input(key="ask_question").value == PAPER_QUESTION
    assert again.slider(key="qs_final_top_k").value == 3
    assert again.slider(key="qs_dense_weight").value == 0.7
    shown = again.session_state["ask_trace"]  # the logged result, retuned to the link
    assert shown.question == PAPER_QUESTION and len(shown.reranked) == 3
    assert final_ranks(table(again, "rerank")) == [1, 2, 3]
    said = page_text(again, plain=True)  # named against the logged run
    assert "Dense weight: 0.5 → 0.7, Final top-k: 5 → 3" in said, said
    assert logged(app_data) == count  # nothing was asked again
    # Back to the default: out of the link, and a reload shows the logged run as it ran.
    again.slider(key="qs_final_top_k").set_value(5).run()
    assert _link(again, "qs_final_top_k") == [] and _link(again, "qs_dense_weight") == ["0.7"]
    # A value the widget cannot take is ignored (the link is anyone's): no crash, the default.
    for junk in ("abc", "999", "0", "2.5", "nan", ""):
        bad = _reload_link(at, qs_final_top_k=junk, qs_fusion="nope", qs_rerank="maybe")
        assert bad.slider(key="qs_final_top_k").value == 5, junk
        assert bad.selectbox(key="qs_fusion").value == "weighted"
        assert bad.toggle(key="qs_rerank").value is True
        assert bad.slider(key="qs_dense_weight").value == 0.7  # the valid value still counts
        assert len(bad.session_state["ask_trace"].reranked) == 5
        assert _link(bad, "qs_final_top_k") == [] and _link(bad, "qs_fusion") == []
    assert logged(app_data) == count


def test_a_linked_result_that_cannot_be_reopened_says_why_and_keeps_the_question(
    app_data, monkeypatch
):
    at, scope = _scoped_question(open_app())
    again = AppTest.from_file(str(APP), default_timeout=90)
    for name in ("ws", "q", "scope", "corpus"):
        if _link(at, name):
            again.query_params[name] = _link(at, name)

    def damaged(row_id):  # a row the audit log can no longer give back
        raise ValueError(f"row {row_id} is damaged")

    monkeypatch.setattr("ui.ask.kept.open_from_history", damaged)
    again.run()
    assert not again.exception, again.exception
    said = [w.value for w in again.warning if "could not be reopened" in w.value]
    assert said and "is damaged" in said[0], [w.value for w in again.warning]
    assert again.text_input(key="ask_question").value == PAPER_QUESTION
    assert again.multiselect(key="qs_scope_samples").value == scope
    assert again.session_state["ask_trace"] is None


def test_a_chinese_question_says_why_the_reranker_stayed_off_without_nested_brackets():
    at = ask(open_app(), "劳动合同的试用期最长是多久？")
    [said] = [c.value for c in at.caption if "fused order is kept" in c.value]
    said = app.unescape(said)
    assert said.startswith("No rerank: the English cross-encoder is not used for Chinese")
    assert "(" not in said and "Rerank Chinese questions too" in said, said
    assert "--rerank-chinese" not in said  # the explorer's own switch, not the CLI's flag
    at.toggle(key="qs_rerank").set_value(False).run()
    assert "Rerank is off. The fused order is kept." in [c.value for c in at.caption]


def _llm_responder(body):
    """Locate: pick the leaf named 'Training Procedure'; answer: cite it, plus a bogus path."""
    prompt = json.dumps(body, ensure_ascii=False)
    if "cache_control" in prompt:  # the locate call sends the tree as a cached prefix
        found = re.search(r"\[(\d{4})\][^\[]{0,40}?3\.3 Training Procedure", prompt)
        node = found.group(1) if found else "0001"
        return reply(
            json.dumps(
                {
                    "thinking": "Epochs are a training detail.",
                    "results": [{"node_id": node, "sub_query": "number of training epochs"}],
                }
            )
        )
    return reply(
        "It was trained for 50 epochs [Source: 3 Methods > 3.3 Training Procedure]. "
        "It also won a prize [Source: 5 Conclusion].",
        pause=0.0,
    )


def test_llm_path_then_slider_makes_no_new_llm_call(monkeypatch):
    with FakeAnthropicServer(responder=_llm_responder) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        at = open_app()
        welcome = page_text(at, "markdown")  # with an LLM on, no keyless promise
        assert "Try a question" in welcome and "no API key needed" not in welcome
        at.multiselect(key="qs_scope_samples").set_value(["test_paper.md"]).run()
        ask(at, PAPER_QUESTION)
        trace = at.session_state["ask_trace"]
        assert trace.locate.locator == "llm", trace.fallbacks
        assert any(h.value.endswith("picked by the LLM") for h in at.subheader)
        assert trace.locate.leaves[0].sub_query == "number of training epochs"
        assert len(server.requests) == 2  # locate + answer
        assert "test-key" not in json.dumps(trace.to_dict())
        assert any("Epochs are a training detail." in t.value for t in at.text)
        unsupported = [c for c in trace.citations if not c.supported]
        assert unsupported, "the bogus citation should be unsupported"
        chips = [b.label for b in at.button if b.key and b.key.startswith("cite_")]
        assert any("unsupported" in label for label in chips)
        stages = table(at, "stage")
        assert stages.loc[stages["stage"] == "locate", "input_tokens"].item() > 0
        # A slider move: steps 2-3 from the stored step 1, no LLM call, answer marked stale.
        at.slider(key="qs_dense_weight").set_value(0.8).run()
        assert not at.exception, at.exception
        assert len(server.requests) == 2
        assert at.session_state["ask_trace"].locate is trace.locate
        assert any("evidence changed" in wn.value for wn in at.warning)
        at.button(key="regenerate").click().run()
        assert len(server.requests) == 3  # only the answer was asked for again
        assert at.session_state["ask_stale_answer"] is None


def test_a_typed_endpoint_gets_only_a_typed_key_never_the_servers(monkeypatch):
    secret = "sk-ant-SERVER-SECRET"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    with FakeAnthropicServer(responder=_llm_responder) as server:
        at = open_app()
        at.multiselect(key="qs_scope_samples").set_value(["test_paper.md"]).run()
        at.text_input(key="qs_llm_base_url_anthropic").input(server.base_url).run()
        assert any("needs a key typed with it" in e.value for e in at.sidebar.error)
        ask(at, PAPER_QUESTION)
        assert server.requests == []  # the local locator ran; nothing reached the endpoint
        assert at.session_state["ask_trace"].locate.locator == "local"
        at.text_input(key="qs_llm_key_anthropic").input("sk-ant-typed").run()
        ask(at, PAPER_QUESTION)
        assert at.session_state["ask_trace"].locate.locator == "llm"
        assert {r.api_key for r in server.requests} == {"sk-ant-typed"}
        assert not any(secret in v for r in server.requests for v in r.headers.values())


def test_llm_error_falls_back_and_says_so(monkeypatch):
    from fake_anthropic import status

    with FakeAnthropicServer(default=status(401)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "bad-key")
        at = ask(open_app(), PAPER_QUESTION)
        trace = at.session_state["ask_trace"]
        assert trace.locate.locator == "local"
        assert [f.stage for f in trace.fallbacks][:1] == ["locate"]
        assert at.warning, "the fallback is not shown"
        assert not at.error
        assert "bad-key" not in page_text(at)


def test_llm_on_without_a_key_says_the_answer_is_extractive():
    at = open_app()
    at.toggle(key="qs_llm_enabled").set_value(True).run()
    ask(at, PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    assert trace.settings["llm"]["enabled"] and not trace.provider["llm"]
    said = [w.value.replace("\\", "") for w in at.warning]
    assert any("locate" in w and "no API key: local locator" in w for w in said), said
    assert any("synthesize" in w and "no API key: extractive answer" in w for w in said), said
    # A slider rerun writes the extractive answer again: still said.
    at.slider(key="qs_final_top_k").set_value(3).run()
    said = [w.value.replace("\\", "") for w in at.warning]
    assert any("no API key: extractive answer" in w for w in said), said


def test_ask_through_an_openai_compatible_server(monkeypatch):
    """The LLM panel's provider switch: locate and a streamed answer from the OpenAI fake."""
    from fake_openai import FakeOpenAIServer, stream

    calls: list[str] = []

    def responder(body):
        calls.append(body["model"])
        if len(calls) == 1:  # step 1 comes first: pick the leaf the question is about
            prompt = json.dumps(body, ensure_ascii=False)
            found = re.search(r"\[(\d{4})\][^\[]{0,40}?3\.3 Training Procedure", prompt)
            node = found.group(1) if found else "0001"
            return reply(json.dumps({"thinking": "training", "results": [{"node_id": node}]}))
        return stream(["Fifty ", "epochs [Source: 3 Methods > 3.3 Training Procedure]."])

    with FakeOpenAIServer(responder=responder) as fake:
        at = open_app()
        at.multiselect(key="qs_scope_samples").set_value(["test_paper.md"]).run()
        at.selectbox(key="qs_llm_provider").set_value("openai").run()
        at.text_input(key="qs_llm_base_url_openai").input(fake.base_url).run()
        at.text_input(key="qs_llm_locate_model_openai").input("llama3.2").run()
        at.text_input(key="qs_llm_answer_model_openai").input("llama3.2").run()
        assert f"Using {fake.base_url} with no key" in page_text(at)
        ask(at, PAPER_QUESTION)
        bodies = fake.bodies
    trace = at.session_state["ask_trace"]
    assert trace.settings["llm"]["provider"] == "openai"
    assert trace.locate.locator == "llm", trace.fallbacks
    assert len(bodies) == 2 and {b["model"] for b in bodies} == {"llama3.2"}
    assert trace.answer.startswith("Fifty epochs"), trace.fallbacks
    assert any("Fifty epochs" in m.value for m in at.markdown)  # the streamed answer


def test_an_off_topic_question_is_flagged_beside_the_answer():
    # Keyless: the answer's own verdict is the label (both readers doubt it: not answered).
    at = ask(open_app(), "What is the capital of France?")
    assert any("Not answered:" in w.value for w in at.warning), page_text(at)
    assert at.session_state["ask_trace"].verdict["verdict"] == "not_answered"
    on_topic = ask(open_app(), PAPER_QUESTION)
    assert not any(
        "Not answered:" in w.value or "Out of scope?" in w.value for w in on_topic.warning
    )
    assert not any("Sensitive question" in w.value for w in on_topic.warning)
    secret = ask(open_app(), "What API key did the model training use?")
    assert any("Sensitive question" in w.value and "credentials" in w.value for w in secret.warning)


def test_section_scores_and_routed_documents_are_shown():
    """A structure-aware trace: the rerank table gets a section column, step 1 its documents."""
    from dataclasses import replace

    at = ask(open_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    priors = {h.chunk.chunk_id: round(0.1 * (i % 10), 1) for i, h in enumerate(trace.candidates)}

    def with_prior(hits):
        return [replace(h, prior=priors[h.chunk.chunk_id]) for h in hits]

    at.session_state["ask_trace"] = replace(
        trace,
        candidates=with_prior(trace.candidates),
        reranked=with_prior(trace.reranked),
        locate=replace(trace.locate, documents=("test_paper.md",)),
    )
    at.run()
    assert not at.exception, at.exception
    frame = table(at, "rerank")
    assert frame["section"].tolist() == pytest.approx([priors[c] for c in frame["chunk"]])
    assert "Routed to 1 document(s): test_paper.md" in page_text(at, plain=True)


def _kg_app() -> None:
    """treerag-kg on the sample paper indexed with leaf graphs, drawn by the Ask story."""
    from pathlib import Path

    import streamlit as st

    from treerag_core.base.config import IndexSettings
    from treerag_core.base.settings import QuerySettings
    from treerag_core.index.corpus import SourceDocument, build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine, run
    from ui.ask import story as ask_story

    path = Path("sample_docs") / "test_paper.md"
    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=400)
    index = build_index([SourceDocument(path.name, path.read_text("utf-8"))], settings, embedder)
    engine = Engine(index, embedder)
    trace = run(engine, st.session_state["question"], QuerySettings(strategy="treerag-kg"))
    st.session_state["trace"] = trace
    ask_story.strategy_views(trace, engine)


def test_treerag_kg_traces_show_their_leaf_graphs(monkeypatch):
    monkeypatch.chdir(APP.parent)
    at = AppTest.from_function(_kg_app, default_timeout=60)
    at.session_state["question"] = PAPER_QUESTION
    at.run()
    assert not at.exception, at.exception
    graphed = [g.leaf_id for g in at.session_state["trace"].retrieved if g.kind == "graph"]
    assert graphed, "no leaf was searched with its graph"
    assert len(at.get("component_instance")) == len(graphed)  # one graph view each
    assert [e.label.split("]")[0] for e in at.expander] == [f"[{i}" for i in graphed]
    assert any("Paths" in m.value for m in at.markdown)


def test_drilldown_traces_show_the_ktype_card_and_the_layers():
    at = open_app()
    at.selectbox(key="qs_strategy").set_value("drilldown").run()
    ask(at, PAPER_QUESTION)
    assert at.session_state["ask_trace"].strategy == "drilldown"
    assert any(h.value.startswith("Drill-down: document") for h in at.subheader)
    assert at.metric, "no K-Type card"
    shown = page_text(at)
    assert all(f"{n}. " in shown for n in (1, 2, 3)), shown  # the three layers
    # Step 1 shows the document-routing table: every document in scope, kept or cut.
    routing = [e for e in at.expander if e.label.startswith("Document routing")]
    assert routing and "searched · scored by best passage" in routing[0].label
    [frame] = [d.value for d in at.dataframe if "searched" in d.value.columns][:1]
    scores = at.session_state["ask_trace"].locate.document_scores
    assert list(frame["document"]) == [s.name for s in scores]
    assert list(frame["searched"]) == ["kept" if s.kept else "cut" for s in scores]
    # The graph draws every chosen document with its root lit, the chosen sections picked.
    trace, colours = at.session_state["ask_trace"], background(at)
    assert {i for i, c in colours.items() if c == PALETTE["picked"]} == {
        leaf.node_id for leaf in trace.locate.leaves
    }
    roots = [i for i, n in graph_nodes(at).items() if n["level"] == 0]
    assert len(roots) == len(trace.locate.documents) == 3  # only the chosen documents drawn
    assert all(colours[r] == PALETTE["path"] for r in roots), colours
    # The per-layer limits are sidebar controls: one section kept re-runs at once, locally.
    at.slider(key="qs_dd_parents").set_value(1).run()
    assert not at.exception, at.exception
    again = at.session_state["ask_trace"]
    assert len(again.locate.leaves) == 1 and again.settings["options"]["drilldown"]["parents"] == 1
    assert again.locate.leaves[0] == trace.locate.leaves[0]


def test_hirag_traces_show_their_graph_neighbourhood():
    at = open_app()
    at.selectbox(key="qs_strategy").set_value("hirag-local").run()
    ask(at, PAPER_QUESTION)
    assert at.session_state["ask_trace"].strategy == "hirag-local"
    assert any(h.value == "HiRAG graph neighbourhood" for h in at.subheader)
    assert len(at.get("component_instance")) == 2  # the tree, and the HiRAG graph


def test_ask_keeps_the_workspace_in_the_url_and_a_reload_restores_it(app_data):
    at = open_app()
    ws_id = at.session_state["ws_id"]
    assert at.query_params["ws"] == ws_id
    # A visit writes nothing, so it leaves no workspace folder; the first question does.
    folder = app_data / "workspaces" / ws_id
    assert not folder.exists()
    ask(at, PAPER_QUESTION)
    assert folder.is_dir()
    again = open_app(ws=ws_id)
    assert again.session_state["ws_id"] == ws_id


def test_a_workspace_index_naming_a_model_folder_is_refused_not_loaded(
    app_data, hashing_index, model_trap
):
    from tests.conftest import name_index_embedder
    from treerag_core.index.store import save_index

    ws_id = "ab" * 16
    folder = app_data / "workspaces" / ws_id / "index"
    save_index(hashing_index, folder)
    name_index_embedder(folder, model_trap.name)
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.query_params["ws"] = ws_id
    at.run()  # Ask opens on the restored uploads, the workspace having documents
    assert at.radio(key="qs_corpus").value == "uploads"  # the way out stays on screen
    assert not at.exception, at.exception
    [error] = at.error
    said = error.value.replace("\\", "")  # shown as plain text: Markdown escapes
    assert "cannot choose" in said and f"TREERAG_EMBEDDER={model_trap.name}" in said
    assert model_trap.made == []


def test_the_per_leaf_top_k_slider_cuts_each_searched_leafs_table_under_treerag_kg(app_data):
    """treerag-kg reads `top_k_per_leaf` (each searched graph's table keeps its leaf's top k):
    moving the slider re-runs step 2 and every leaf's table holds that many passages, while
    the scope-wide window is not its control."""
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import save_index

    ws_id = "cd" * 16  # the workspace a reload finds: the paper indexed with leaf graphs
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=400)
    index = build_index(sample_sources(["test_paper.md"]), settings, get_embedder("hashing"))
    save_index(index, app_data / "workspaces" / ws_id / "index")
    at = open_app(ws=ws_id)
    assert at.radio(key="qs_corpus").value == "uploads"
    at.selectbox(key="qs_strategy").set_value("treerag-kg").run()
    slider = at.slider(key="qs_top_k_per_leaf")
    assert not slider.disabled and slider.value == 8
    ask(at, PAPER_QUESTION)
    before = at.session_state["ask_trace"]
    sizes = {leaf: len(frame) for leaf, frame in leaf_tables(at).items() if leaf != "scope"}
    assert sizes and max(sizes.values()) > 2, sizes  # a leaf with more than 2 passages
    scope_rows = len(leaf_tables(at)["scope"])

    at.slider(key="qs_top_k_per_leaf").set_value(2).run()
    assert not at.exception, at.exception
    after = at.session_state["ask_trace"]
    assert after is not before and after.settings["retrieve"]["top_k_per_leaf"] == 2
    assert after.locate.leaves == before.locate.leaves  # step 1 kept: same leaves searched
    tables_now = leaf_tables(at)
    assert {k: len(f) for k, f in tables_now.items() if k != "scope"} == {
        leaf: min(n, 2) for leaf, n in sizes.items()
    }
    assert len(tables_now["scope"]) == scope_rows


def _present_link(at: AppTest) -> str | None:
    value = at.query_params.get("present")
    return value[0] if isinstance(value, list) else value


def test_presentation_mode_is_kept_across_a_reload_as_present_1_in_the_link():
    def reload(present: str) -> AppTest:
        again = AppTest.from_file(str(APP), default_timeout=90)
        again.query_params["present"] = present
        again.run()
        assert not again.exception, again.exception
        return again

    at = open_app()
    assert not at.toggle(key="ask_present").value and _present_link(at) is None
    at.toggle(key="ask_present").set_value(True).run()
    assert _present_link(at) == "1"  # the link a reload opens
    kept = reload("1")
    assert kept.toggle(key="ask_present").value
    assert any("stDataFrame" in h.proto.body for h in kept.get("html"))  # the mode's CSS
    assert "sidebar" in kept.toggle(key="ask_present").help  # how to get the sidebar back
    # Presenting, the graph's view controls sit in one "View" popover beside the heading
    # (their row is height the graph needs), and they still work there.
    [view] = [p for p in kept.get("popover") if p.proto.popover.label == "View"]
    assert [w.key for w in view.children.values()] == ["ask_find", "ask_full", "ask_all_docs"]
    assert not [p for p in open_app().get("popover") if p.proto.popover.label == "View"]
    # Read once: turning the mode off removes it from the link, and it stays off.
    kept.toggle(key="ask_present").set_value(False).run()
    assert _present_link(kept) is None
    kept.run()
    assert not kept.toggle(key="ask_present").value
    for bad in ("0", "true", "1 ", "x" * 500):  # only "1" is accepted, the rest is dropped
        other = reload(bad)
        assert not other.toggle(key="ask_present").value and _present_link(other) is None


def test_step2_controls_sit_beside_the_evidence_inside_the_story_fragment():
    """Step 2's controls are on the page (a fragment cannot hold sidebar widgets), drawn before
    a first question too and above the evidence they change; step 1's stay in the sidebar."""
    at = open_app()
    in_sidebar = {s.key for s in at.sidebar.slider}
    assert "qs_max_leaves" in in_sidebar
    assert not in_sidebar & {"qs_final_top_k", "qs_dense_weight", "qs_context_chars"}
    assert at.main.slider(key="qs_final_top_k").value == 5  # before any question
    ask(at, PAPER_QUESTION)
    said = [e.label for e in at.main.expander]
    assert any(label.startswith("Step 2 · Retrieve and rerank") for label in said), said
    at.slider(key="qs_final_top_k").set_value(2).run()
    assert at.session_state["ask_trace"].settings["answer"]["final_top_k"] == 2
    assert at.session_state["ask_origin"] == "rerun"  # steps 2-3 from the stored step 1


def test_the_finished_status_is_st_status_without_its_sleep(monkeypatch):
    """The story's "Evidence ready" line is built by hand (st.status sleeps 50 ms, on every
    slider move): it must be the very element st.status sends, or a Streamlit upgrade moved
    the internals it copies (then the page falls back to st.status, 50 ms slower)."""
    from types import SimpleNamespace

    from streamlit.elements.lib import mutable_status_container

    def script() -> None:
        import streamlit as st

        from ui.ask import story

        story._ready_block(st.empty())  # the fast path itself: no fallback hides a drift
        story.evidence_ready(st.empty())
        st.empty().status(story.READY, state="complete", expanded=False)

    slept: list[float] = []
    monkeypatch.setattr(mutable_status_container, "time", SimpleNamespace(sleep=slept.append))
    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    fast, ready, public = at.status
    assert fast.label == ready.label == public.label == "Evidence ready"
    assert fast.proto == ready.proto == public.proto
    assert slept == [0.05]  # st.status's own sleep, and only that one
