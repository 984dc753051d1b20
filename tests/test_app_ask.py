"""AppTest of the Ask page: default view, a question, sliders, graph colours, clicks, override."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropicServer, reply
from streamlit.testing.v1 import AppTest

from treerag_core.strategies import strategy_names
from ui.tree_graph import PALETTE

APP = Path(__file__).resolve().parents[1] / "app.py"
PAPER_QUESTION = "How many epochs was the model trained for?"


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    """The hashing embedder (speed), a private data dir, and no API key from the machine."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TREERAG_EMBEDDER", "hashing")
        mp.setenv("TREERAG_DATA_DIR", str(tmp_path_factory.mktemp("app_data")))
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        mp.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield


def new_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    assert not at.exception, at.exception
    return at


def graph_nodes(at: AppTest) -> dict[str, dict]:
    """The node dicts handed to the graph component, by id."""
    [element] = at.get("component_instance")
    args = json.loads(element.proto.json_args)
    assert args["key"] == at.session_state["ask_graph_key"]
    return {n["id"]: n for n in json.loads(args["data"])["nodes"]}


def background(at: AppTest) -> dict[str, str]:
    return {i: n["color"]["background"] for i, n in graph_nodes(at).items()}


def ask(at: AppTest, question: str) -> AppTest:
    at.text_input(key="ask_question").input(question)
    at.button[0].click()  # the form's Ask button comes first on the page
    at.run()
    assert not at.exception, at.exception
    return at


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


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += (
        [w.value for w in at.warning] + [e.value for e in at.error] + [i.value for i in at.info]
    )
    return "\n".join(parts)


def test_default_page_shows_samples_tree_and_examples_without_a_key():
    at = new_app()
    assert at.title[0].value == "TreeRAG Explorer"
    labels = [b.label for b in at.button]
    assert "AdaRouter使用什么算法？" in labels  # the seed's questions are offered
    assert any("epoch" in label for label in labels)
    nodes = graph_nodes(at)
    assert len(nodes) >= 5
    # No question yet: nothing is picked, and the first sample's sections are open.
    assert PALETTE["picked"] not in background(at).values()
    assert any("Methods" in n["label"] for n in nodes.values())
    assert "No API key" in texts(at)
    assert not at.error


def test_graph_nodes_never_carry_a_title():
    """The component writes `title` into innerHTML and opens it as a URL on double-click."""
    at = new_app()
    assert all("title" not in n for n in graph_nodes(at).values())


def test_question_colours_picked_leaves_and_their_path():
    at = ask(new_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    picked = [leaf.node_id for leaf in trace.locate.leaves]
    assert picked, "step 1 picked nothing"
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
    # The supported citations are marked on the tree.
    cited = {i for c in trace.citations if c.supported for i in c.node_ids}
    for node_id in cited & set(nodes):
        assert nodes[node_id]["color"]["border"] in (PALETTE["cited"], PALETTE["selected"])
        assert nodes[node_id]["label"].startswith("✓")


def test_answer_fallback_tables_and_costs_are_shown():
    at = ask(new_app(), PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    shown = texts(at)
    assert "no API key: local locator" in shown.replace("\\", "")
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
    assert at.session_state["ask_trace_id"] is not None  # logged in the audit log


def test_moving_a_slider_reruns_steps_2_3_from_the_stored_step_1():
    at = ask(new_app(), PAPER_QUESTION)
    before = at.session_state["ask_trace"]
    first_group = next(iter(leaf_tables(at)))  # a picked leaf, or the scope it searched
    fused_before = leaf_tables(at)[first_group]["fused"].tolist()
    assert before.settings["retrieve"]["dense_weight"] == 0.5
    at.slider(key="qs_dense_weight").set_value(1.0).run()
    assert not at.exception, at.exception
    after = at.session_state["ask_trace"]
    assert after is not before
    # The local locator reads the fusion weights: the engine redid step 1, locally.
    assert after.locate.locator == "local" and after.settings["retrieve"]["dense_weight"] == 1.0
    group, frame = next(iter(leaf_tables(at).items()))
    assert frame["fused"].tolist() != fused_before or group != first_group
    # With all weight on dense, fused equals the normalised dense score.
    assert frame["fused"].tolist() == pytest.approx(frame["dense_norm"].tolist())
    assert at.session_state["ask_rerun_ms"] is not None
    assert "Re-ran with the new settings" in texts(at)
    # RRF: another fusion method, other fused values.
    at.selectbox(key="qs_fusion").set_value("rrf").run()
    rrf = [v for frame in leaf_tables(at).values() for v in frame["fused"].tolist()]
    assert max(rrf) < 0.1  # 1/(k + rank) sums are small
    # A control the locator does not read (rerank) keeps the stored step 1 as it is.
    kept = at.session_state["ask_trace"].locate
    at.toggle(key="qs_rerank").set_value(False).run()
    assert at.session_state["ask_trace"].locate is kept


def test_top_k_slider_changes_table_length():
    at = ask(new_app(), PAPER_QUESTION)
    at.slider(key="qs_final_top_k").set_value(2).run()
    assert at.session_state["ask_trace"].settings["answer"]["final_top_k"] == 2
    assert final_ranks(table(at, "rerank")) == [1, 2]
    at.slider(key="qs_top_k_per_leaf").set_value(1).run()
    groups = {g.leaf_id or g.kind: g.kind for g in at.session_state["ask_trace"].retrieved}
    assert all(len(f) <= 1 for g, f in leaf_tables(at).items() if groups[g] == "leaf")


def test_clicking_a_node_opens_the_inspector_and_override_reruns():
    at = new_app()
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


def test_citation_chip_selects_its_node():
    at = ask(new_app(), PAPER_QUESTION)
    chips = [b for b in at.button if b.key and b.key.startswith("cite_")]
    assert chips, "no citation chips"
    chips[0].click().run()
    target = at.session_state["ask_inspect"]
    trace = at.session_state["ask_trace"]
    assert target in {i for c in trace.citations for i in c.node_ids}
    node = graph_nodes(at)[target]  # inspected: a blue halo; the cited green border stays
    assert node["shadow"]["color"] == PALETTE["selected"]
    assert node["color"]["border"] in (PALETTE["cited"], PALETTE["selected"])
    assert at.session_state["ask_highlight"] is not None  # the cited passage is marked


def test_heading_search_marks_matches():
    at = new_app()
    at.text_input(key="ask_find").input("Router").run()
    colours = background(at)
    matches = [i for i, c in colours.items() if c == PALETTE["match"]]
    assert matches
    assert all("Router" in graph_nodes(at)[i]["label"] for i in matches)


@pytest.mark.parametrize(
    ("question", "message"),
    [("   ", "the question is empty"), ("the of and?", "no searchable words")],
)
def test_bad_questions_give_an_error_not_a_traceback(question, message):
    at = ask(new_app(), question)
    assert any(message in e.value for e in at.error)
    assert at.session_state["ask_trace"] is None


def test_flat_strategy_and_compare():
    at = ask(new_app(), PAPER_QUESTION)
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
    assert "press **Ask** to locate again" in texts(at)
    ask(at, PAPER_QUESTION)
    trace = at.session_state["ask_trace"]
    assert trace.strategy == "flat-hybrid"
    assert PALETTE["picked"] not in background(at).values()
    assert "no locating, every chunk in scope is searched" in texts(at).replace("\\", "")


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
        at = new_app()
        at.multiselect(key="qs_scope_samples").set_value(["test_paper.md"]).run()
        ask(at, PAPER_QUESTION)
        trace = at.session_state["ask_trace"]
        assert trace.locate.locator == "llm", trace.fallbacks
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


def test_llm_error_falls_back_and_says_so(monkeypatch):
    from fake_anthropic import status

    with FakeAnthropicServer(default=status(401)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "bad-key")
        at = ask(new_app(), PAPER_QUESTION)
        trace = at.session_state["ask_trace"]
        assert trace.locate.locator == "local"
        assert [f.stage for f in trace.fallbacks][:1] == ["locate"]
        assert at.warning, "the fallback is not shown"
        assert not at.error
        assert "bad-key" not in texts(at)
