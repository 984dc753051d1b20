"""AppTest of the Evaluate page: a limited run, curves, question filters, opening a question's
trace on Ask, the coverage map, saved reports, and the errors a user can cause."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from tests.app_helpers import graph_nodes, open_app, page_text
from tests.conftest import keyless_app, sample_sources, skip_unless_ci
from treerag_core.base.config import IndexSettings
from treerag_core.evaluation.dataset import load_dataset
from treerag_core.evaluation.harness import dataset_index, oracle_leaves
from treerag_core.evaluation.report import load_report, write_report
from ui.common.tree_graph import PALETTE
from ui.evaluate import run_job

QASPER = Path(__file__).resolve().parents[2] / "shared" / "eval" / "qasper"
STRATEGIES = ["treerag", "flat-hybrid"]
LIMIT = 4
RATES = ["recall@1000c", "recall@2000c", "hit@5", "recall@5", "mrr@10"]


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("eval_app_data")) as data:
        yield data


@pytest.fixture(scope="module")
def qasper() -> Path:
    if not (QASPER / "questions.jsonl").is_file():
        skip_unless_ci("eval-data test", f"eval data not found beside the repo ({QASPER} missing)")
    return QASPER


def evaluate_page() -> AppTest:
    return open_app("pages/evaluate.py", timeout=120)


@pytest.fixture(scope="module")
def ran(qasper) -> AppTest:
    """The page after a run of treerag and flat-hybrid on the first 4 qasper questions."""
    at = evaluate_page()
    at.selectbox(key="ev_dataset").set_value("qasper")
    at.multiselect(key="ev_strategies").set_value(STRATEGIES)
    at.radio(key="ev_scope").set_value("doc")
    at.number_input(key="ev_limit").set_value(LIMIT)
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    # The index's load spinner and the progress bar were drawn over the earlier info box; they
    # now sit in one status box (collapsed once done), and the info box is gone.
    assert [b.label for b in at.status] == ["Evaluation done"]
    assert not [i for i in at.info if "Run evaluation" in i.value]
    return at


@pytest.fixture(scope="module")
def saved_report(ran, app_env) -> Path:
    path = app_env / "my-reports" / "qasper-run.json"  # reports load only from the app's folders
    write_report(path, ran.session_state["ev_report"])
    return path


def table(at: AppTest, column: str) -> pd.DataFrame:
    """The one dataframe that has `column` (AppTest dataframes carry no key)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a {column!r} column"
    return found[0]


def hit(record: dict) -> bool:
    return record["metrics"]["hit@5"] >= 1.0


def show(at: AppTest, view: str) -> AppTest:
    at.segmented_control(key="ev_view").set_value(view).run()
    assert not at.exception, at.exception
    return at


def job_of(at: AppTest) -> run_job.EvalJob | None:
    """The run kept under the page's workspace (not in its session: a reload finds it)."""
    return run_job.job_for(at.session_state["ws_id"])


def load_from_path(path: Path | str) -> AppTest:
    at = evaluate_page()
    at.text_input(key="ev_report_path").input(str(path))
    at.button(key="ev_load").click().run()
    assert not at.exception, at.exception
    return at


# ---- the page ---------------------------------------------------------------------------------


def test_page_renders_before_any_run(qasper):
    at = evaluate_page()
    assert at.title[0].value == "Evaluate"
    assert not at.error
    assert any("Run evaluation" in i.value for i in at.info)
    usable = len(load_dataset(qasper).usable_questions)
    assert any(f"{usable} usable of" in c.value for c in at.caption)
    dev_sets = ["qasper", "lecoqa_laws", "gitlab_handbook"]
    assert at.selectbox(key="ev_dataset").options[:3] == dev_sets


def test_limited_run_fills_the_metric_table_with_the_reports_numbers(ran):
    report = ran.session_state["ev_report"]
    show(ran, "Metrics")
    assert report["dataset"] == "qasper" and report["scope"] == "doc"
    frame = table(ran, "recall@1000c")
    assert list(frame["strategy"]) == STRATEGIES
    assert list(frame["n"]) == [LIMIT, LIMIT]
    for row in frame.to_dict("records"):
        metrics = report["strategies"][row["strategy"]]
        for column in RATES:
            assert 0.0 <= row[column] <= 1.0, (row["strategy"], column)
            assert row[column] == pytest.approx(metrics[column])
        assert row["ctx_chars@5"] > 0
        assert row["p50 latency (ms)"] == pytest.approx(metrics["latency_ms"]["total"]["p50"])
        # The mean in the table is the mean of the per-question records.
        records = report["questions"][row["strategy"]]
        assert row["hit@5"] == pytest.approx(sum(map(hit, records)) / len(records))
    tree, flat = frame.set_index("strategy").loc[STRATEGIES, "section_hit@5"]
    assert 0.0 <= tree <= 1.0
    assert math.isnan(flat)  # a flat strategy picks no section
    every = table(ran, "metric").set_index("metric")
    for k in (1, 3, 5, 10):
        assert every.loc[f"recall@{k}", "treerag"] == pytest.approx(
            report["strategies"]["treerag"][f"recall@{k}"]
        )
    assert "latency_ms.total.p95" in every.index


def test_the_run_time_is_the_whole_run_with_its_two_parts_named(ran):
    """A run that indexed for 59 s must not read "run here in 1.9 s" (the questions alone)."""
    import re

    from ui.evaluate.panels import run_time

    said = run_time({"seconds": 60.9, "prepare_seconds": 59.0, "question_seconds": 1.9,
                     "questions": 120})  # fmt: skip
    assert said == (
        "run here in 60.9 s (59.0 s indexing and loading models, 1.9 s answering 120 questions)"
    )
    assert run_time({"seconds": 2.0}) == "run here in 2.0 s"  # parts not known: the whole
    meta = ran.session_state["ev_meta"]
    assert meta["seconds"] >= meta["prepare_seconds"] + meta["question_seconds"] - 1e-6
    shown = page_text(ran, "caption")
    found = re.search(r"run here in ([\d.]+) s \(([\d.]+) s indexing and loading models, "
                      rf"([\d.]+) s answering {LIMIT} questions\)", shown)  # fmt: skip
    assert found, shown
    whole, prepare, questions = map(float, found.groups())
    assert whole + 0.15 >= prepare + questions


def chart_frame(at: AppTest) -> pd.DataFrame:
    [chart] = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    assert spec["encoding"]["x"]["field"] == "k"
    [dataset] = chart.proto.datasets
    return convert_arrow_bytes_to_pandas_df(dataset.data.data)


def test_curve_chart_plots_each_strategy_at_k_1_3_5_10(ran):
    report = ran.session_state["ev_report"]
    show(ran, "Metrics")
    for family in ("hit", "recall"):  # ends on the default, for the other tests
        ran.radio(key="ev_curve").set_value(family).run()
        data = chart_frame(ran)
        assert sorted(data["strategy"].unique()) == sorted(STRATEGIES)
        for row in data.to_dict("records"):
            assert row["k"] in (1, 3, 5, 10)
            expected = report["strategies"][row["strategy"]][f"{family}@{row['k']}"]
            assert row["value"] == pytest.approx(expected)
        assert len(data) == 4 * len(STRATEGIES)


def test_question_filters_change_the_list(ran):
    records = ran.session_state["ev_report"]["questions"]
    hits = {s: {r["id"]: hit(r) for r in records[s]} for s in STRATEGIES}
    ids = [r["id"] for r in records["treerag"]]
    expected = {
        "all": ids,
        "missed by all": [i for i in ids if not any(hits[s][i] for s in STRATEGIES)],
        "won by treerag": [i for i in ids if hits["treerag"][i] and not hits["flat-hybrid"][i]],
        "lost by treerag": [i for i in ids if hits["flat-hybrid"][i] and not hits["treerag"][i]],
    }
    assert len(ids) == LIMIT
    show(ran, "Questions")
    sizes = set()
    for name, want in expected.items():
        ran.radio(key="ev_filter").set_value(name).run()
        assert not ran.exception, ran.exception
        shown = table(ran, "gold sections")
        assert list(shown["id"]) == want, name
        sizes.add(len(shown))
    assert len(sizes) > 1  # some filter really narrows the list on this run
    ran.radio(key="ev_filter").set_value("all").run()
    shown = table(ran, "gold sections").set_index("id")
    for rec in records["treerag"]:
        row = shown.loc[rec["id"]]
        assert row["question"] == rec["question"] and row["doc"] == rec["doc"]
        assert row["treerag"] == rec["outcome"]
        assert row["picked sections"] == " · ".join(p["path"] for p in rec["picked"])
        assert row["gold sections"] == " · ".join(rec["gold_sections"])
    for rec in records["flat-hybrid"]:
        assert shown.loc[rec["id"], "flat-hybrid"] == rec["outcome"]


def test_coverage_table_has_every_leaf_of_the_document(ran, qasper, app_env):
    report = ran.session_state["ev_report"]
    show(ran, "Coverage map")
    doc = ran.selectbox(key="ev_cov_doc").value
    frame = table(ran, "pick rate")
    # The same index, loaded from the page's disk cache.
    dataset = load_dataset(qasper)
    index = dataset_index(dataset, IndexSettings(embedder="hashing"), app_env / "eval-cache")
    leaves = index.leaves(doc)
    assert list(frame["node"]) == [leaf.node_id for leaf in leaves]
    assert list(frame["section"]) == [leaf.heading_path for leaf in leaves]
    # Counts over the run's questions about this document, computed here from the records.
    by_id = {q.id: q for q in dataset.questions}
    about = [r for r in report["questions"]["treerag"] if doc in by_id[r["id"]].docs]
    picked = Counter(p["node_id"] for r in about for p in r["picked"])
    gold = Counter(i for r in about for i in oracle_leaves(index, by_id[r["id"]]))
    assert ran.selectbox(key="ev_cov_doc").options[0].endswith(f"{len(about)} question(s)")
    for row in frame.to_dict("records"):
        assert row["picked"] == picked[row["node"]]
        assert row["gold"] == gold[row["node"]]
        assert row["pick rate"] == pytest.approx(picked[row["node"]] / len(about))
        assert bool(row["flag"]) == (gold[row["node"]] > 0 and picked[row["node"]] == 0)
    assert frame["gold"].sum() > 0
    # The tree: leaves coloured by pick rate, never-picked gold flagged.
    nodes = graph_nodes(ran)
    for row in frame.to_dict("records"):
        node = nodes.get(row["node"])
        if node is None:
            continue  # collapsed
        if row["pick rate"] == 1.0:
            assert node["color"]["background"] == PALETTE["picked"]
        if row["picked"] == 0:
            assert node["color"]["background"] == "#FFFFFF"
        assert node["label"].startswith("⚠") == bool(row["flag"])


def test_opening_a_question_lands_on_ask_with_its_trace(saved_report):
    report = load_report(saved_report)
    at = load_from_path(saved_report)
    record = report["questions"]["treerag"][1]
    show(at, "Questions")
    at.selectbox(key="ev_pick").set_value(record["id"])
    at.button(key="ev_open_button").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "TreeRAG Explorer"  # the Ask page
    trace = at.session_state["ask_trace"]
    assert trace.question == record["question"]
    assert trace.strategy == "treerag" and trace.provider["llm"] is False
    assert trace.scope == [record["doc"]]
    # Re-run on the same index with the same settings: step 1 picks what the eval picked.
    assert [leaf.node_id for leaf in trace.locate.leaves] == [
        p["node_id"] for p in record["picked"]
    ]
    assert at.session_state["qs_corpus"] == "eval"
    assert at.session_state["ask_trace_corpus"] == at.session_state["ask_eval_corpus"].key
    assert "Eval set: qasper" in at.radio(key="qs_corpus").options
    # The graph draws that document's tree, with the picked leaves coloured.
    index = at.session_state["ask_eval_corpus"].index
    nodes = graph_nodes(at)
    assert {index.nodes[i].doc_id for i in nodes if i in index.nodes} == {record["doc"]}
    drawn_picked = [i for i in nodes if i in {p["node_id"] for p in record["picked"]}]
    assert drawn_picked
    assert all(nodes[i]["color"]["background"] == PALETTE["picked"] for i in drawn_picked)
    assert at.session_state["ask_inspect"] in index.nodes
    # The samples are one click away again. (AppTest reruns the page it was put on, not the
    # one the app switched to: put it on Ask, as the browser is.)
    at.switch_page("pages/ask.py").run()
    assert at.session_state["qs_corpus"] == "eval" and graph_nodes(at) == nodes
    at.radio(key="qs_corpus").set_value("samples").run()
    assert not at.exception, at.exception
    assert at.session_state["qs_corpus"] == "samples"
    assert at.session_state["ask_inspect"] is None  # an eval node id means nothing here
    docs = len(sample_sources())
    assert f"Sample documents: {docs} of {docs} document(s) in scope" in page_text(at, plain=True)
    # The graph is the samples' tree, as a fresh session first draws it; the eval corpus is
    # kept for the way back.
    assert {i: n["label"] for i, n in graph_nodes(at).items()} == {
        i: n["label"] for i, n in graph_nodes(open_app()).items()
    }
    assert at.session_state["ask_eval_corpus"].index is index


def test_a_saved_report_renders_the_same_table(ran, saved_report, app_env):
    show(ran, "Metrics")
    expected = table(ran, "recall@1000c")
    at = load_from_path(saved_report)
    assert not at.error, page_text(at, "error", plain=True)
    pd.testing.assert_frame_equal(table(at, "recall@1000c"), expected)
    assert any("loaded from qasper-run.json" in c.value.replace("\\", "") for c in at.caption)
    # An uploaded copy renders the same table.
    at = evaluate_page()
    at.file_uploader[0].set_value(
        [("mine.json", saved_report.read_bytes(), "application/json")]
    ).run()
    assert not at.exception, at.exception
    pd.testing.assert_frame_equal(table(at, "recall@1000c"), expected)
    # Saving on the server writes a report that loads back the same.
    ran.button(key="ev_save").click().run()
    [saved] = (app_env / "eval-reports").glob("*.json")
    assert load_report(saved) == ran.session_state["ev_report"]
    assert any(saved.name in s.value.replace("\\", "") for s in ran.success)


def test_a_report_with_unreadable_settings_keeps_its_metrics_and_replays_nothing(
    saved_report, app_env
):
    """Its questions are never replayed with the defaults under its name: the page says why."""
    report = load_report(saved_report)
    report["settings"]["query"]["retrieve"]["dense_weight"] = 7
    path = app_env / "my-reports" / "bad-settings.json"
    write_report(path, report)
    at = load_from_path(path)
    assert "saved query settings cannot be read" in page_text(at, "error", plain=True)
    assert any("rerank unknown" in c.value for c in at.caption)
    assert len(table(at, "recall@1000c")) == len(STRATEGIES)  # the metrics stand
    show(at, "Questions")
    at.selectbox(key="ev_pick").set_value(report["questions"]["treerag"][0]["id"])
    at.button(key="ev_open_button").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Evaluate" and at.session_state["ask_trace"] is None
    assert "saved query settings cannot be read" in page_text(at, "error", plain=True)


def test_a_run_goes_on_while_the_user_is_on_another_page_and_says_so_on_return(qasper, monkeypatch):
    """Streamlit stops a page's script run when the user leaves: the run itself goes on in its
    own thread. Back on Evaluate the page says it is still going (with its progress), then
    shows its report once it is done."""
    at, gate = _started_held(monkeypatch)
    job = job_of(at)
    assert job is not None and job.running
    at.switch_page("pages/ask.py").run()
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, at.exception
    said = page_text(at, "info", plain=True)
    assert "Your run of 2 strategies on 2 questions is still going" in said
    assert "Pick a dataset" not in said  # the run is not lost
    assert at.session_state["ev_report"] is None
    gate.set()
    assert job.finished.wait(120)
    at.run()  # the page's poll (a fragment every second) runs the page again once it is done
    assert not at.exception, at.exception
    assert "Your run of 2 strategies on 2 questions finished" in page_text(at, "success")
    report = at.session_state["ev_report"]
    assert report is not None and job_of(at) is None
    assert len(report["questions"]["treerag"]) == 2
    at.run()  # said once
    assert not at.success


def _started_held(monkeypatch, let_first_question: bool = True):
    """Run evaluation pressed, its run held at its start until the returned gate is set, and
    the page's script run stopped (as a page switch or a click does); with
    `let_first_question`, a Stop pressed meanwhile takes effect from the second question."""
    import threading

    import treerag_core

    real, gate = treerag_core.evaluate, threading.Event()

    def held(*args, **kwargs):
        assert gate.wait(60), "the test never let the run go on"
        stop, asked = kwargs["should_stop"], []

        def late() -> bool:
            asked.append(1)
            return (len(asked) > 1 or not let_first_question) and stop()

        return real(*args, **{**kwargs, "should_stop": late})

    monkeypatch.setattr(treerag_core, "evaluate", held)
    at = evaluate_page()
    at.selectbox(key="ev_dataset").set_value("qasper")
    at.multiselect(key="ev_strategies").set_value(STRATEGIES)
    at.number_input(key="ev_limit").set_value(2)
    at.button(key="ev_run").click()
    with pytest.raises(RuntimeError, match="timed out"):  # AppTest stops the run, as a page
        at.run(timeout=3)  # switch does: at its next Streamlit call
    return at, gate


def _held_run(monkeypatch, let_first_question: bool):
    """`_started_held`, then the page's next run: it finds the run still going, with Stop."""
    at, gate = _started_held(monkeypatch, let_first_question)
    at.run()
    return at, gate


def test_stop_keeps_the_questions_already_run_as_a_partial_report(qasper, monkeypatch):
    at, gate = _held_run(monkeypatch, let_first_question=True)
    job = job_of(at)
    assert job is not None
    at.button(key="ev_stop").click().run()
    assert job.stop.is_set() and job.running
    assert "Stopping" in job.text()
    assert at.button(key="ev_stop").disabled  # pressed once is enough
    gate.set()
    assert job.finished.wait(120)
    at.run()
    assert not at.exception, at.exception
    assert "Your run of 2 strategies on 2 questions stopped" in page_text(at, "success")
    assert "This report is partial" in page_text(at, "warning")
    report = at.session_state["ev_report"]
    assert report["partial"] is True
    # Whole questions: every strategy scored on the same one, so their differences hold.
    assert {len(rows) for rows in report["questions"].values()} == {1}
    assert "answering 1 of 2 questions" in page_text(at, "caption")  # not "2 questions"


def test_stop_before_any_question_says_there_is_nothing_to_report(qasper, monkeypatch):
    at, gate = _held_run(monkeypatch, let_first_question=False)
    job = job_of(at)
    assert job is not None
    at.button(key="ev_stop").click().run()
    gate.set()
    assert job.finished.wait(120)
    at.run()
    assert not at.exception, at.exception
    assert "Stopped before any question had run" in page_text(at, "info")
    assert at.session_state["ev_report"] is None and job_of(at) is None


def test_a_reload_finds_the_run_still_going_refuses_a_second_one_then_shows_its_report(
    qasper, monkeypatch, app_env
):
    """A reload opens a new session: the run is kept under the workspace (its `?ws=` link),
    so the reloaded page says it is still going, refuses a second Run, then shows its report
    once."""
    at, gate = _held_run(monkeypatch, let_first_question=True)
    ws_id = at.session_state["ws_id"]
    job = job_of(at)
    assert job is not None and job.running
    assert (app_env / "workspaces" / ws_id).is_dir()  # so the reload adopts the link's id
    again = open_app("pages/evaluate.py", ws=ws_id, timeout=120)  # F5: same ?ws=, new session
    assert again.session_state["ws_id"] == ws_id
    said = page_text(again, "info", plain=True)
    assert "Your run of 2 strategies on 2 questions is still going" in said
    assert "Pick a dataset" not in said
    assert not again.button(key="ev_stop").disabled
    again.button(key="ev_run").click().run()  # a second run is refused, the first goes on
    assert not again.exception, again.exception
    assert "Nothing new was run: your earlier run is still going" in page_text(again, "info")
    assert job_of(again) is job
    gate.set()
    assert job.finished.wait(120)
    again.run()
    assert not again.exception, again.exception
    assert "Your run of 2 strategies on 2 questions finished" in page_text(again, "success")
    report = again.session_state["ev_report"]
    assert report is not None and len(report["questions"]["treerag"]) == 2
    assert job_of(again) is None  # adopted: dropped from the registry
    again.run()  # said once
    assert not again.success


def test_stop_pressed_after_a_reload_stops_the_run_and_shows_its_partial_report(
    qasper, monkeypatch
):
    at, gate = _held_run(monkeypatch, let_first_question=True)
    job = job_of(at)
    assert job is not None
    again = open_app("pages/evaluate.py", ws=at.session_state["ws_id"], timeout=120)
    again.button(key="ev_stop").click().run()
    assert job.stop.is_set() and job.running
    assert again.button(key="ev_stop").disabled
    gate.set()
    assert job.finished.wait(120)
    again.run()
    assert not again.exception, again.exception
    assert "Your run of 2 strategies on 2 questions stopped" in page_text(again, "success")
    assert again.session_state["ev_report"]["partial"] is True
    at.run()  # the first session finds nothing left to show: the report was shown once
    assert not at.exception, at.exception
    assert at.session_state["ev_report"] is None and not at.success


def test_a_report_of_another_dataset_than_the_sidebars_says_whose_it_is(saved_report):
    at = load_from_path(saved_report)  # a qasper report, qasper in the sidebar: nothing said
    assert "This report is of" not in page_text(at, "info")
    at.selectbox(key="ev_dataset").set_value("mine").run()
    assert not at.exception, at.exception
    said = page_text(at, "info", plain=True)
    assert "This report is of qasper, not of My labelled questions" in said.replace("*", "")
    assert at.session_state["ev_report"] is not None  # kept, not discarded


def test_a_missing_folder_shows_an_error_and_runs_nothing(app_env):
    at = evaluate_page()
    at.selectbox(key="ev_dataset").set_value("other").run()
    at.text_input(key="ev_folder").input(str(app_env / "no-such-set")).run()
    assert "No questions.jsonl" in page_text(at, "error", plain=True)
    assert "Pick one of the dev sets" in page_text(at, "error", plain=True)
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    assert "Nothing was run" in page_text(at, "error", plain=True)
    assert at.session_state["ev_report"] is None


def test_bad_report_files_show_an_error(app_env):
    tmp_path = app_env / "bad-reports"  # inside the data folder: the only place paths load from
    tmp_path.mkdir(exist_ok=True)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json", encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    for path, message in (
        (garbage, "not valid UTF-8 JSON"),
        (other, "is not an eval report"),
        (tmp_path / "missing.json", "No eval report at"),
    ):
        at = load_from_path(path)
        assert message in page_text(at, "error", plain=True), path.name
        assert "Run button" in page_text(at, "error", plain=True)  # what to do next
        assert at.session_state["ev_report"] is None
    at = evaluate_page()
    at.file_uploader[0].set_value([("bad.json", b"\xff\xfe", "application/json")]).run()
    assert not at.exception, at.exception
    assert "not valid UTF-8 JSON" in page_text(at, "error", plain=True)


@pytest.mark.parametrize("typed", ["/etc", "/dev", "../../../tmp"])
def test_a_dataset_folder_outside_the_allowed_roots_is_refused(typed):
    at = evaluate_page()
    at.selectbox(key="ev_dataset").set_value("other").run()
    at.text_input(key="ev_folder").input(typed).run()
    assert "outside the folders this app reads from" in page_text(at, "error", plain=True)
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    assert "Nothing was run" in page_text(at, "error", plain=True)
    assert at.session_state["ev_report"] is None


@pytest.mark.parametrize("typed", ["/dev/zero", "/etc/hostname", "../../../etc/passwd"])
def test_report_path_outside_the_app_folders_is_refused(typed):
    at = load_from_path(typed)
    errors = page_text(at, "error", sep=" ", plain=True)
    assert "outside the folders this app reads from" in errors
    assert at.session_state["ev_report"] is None
