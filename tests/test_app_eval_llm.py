"""AppTest of Evaluate's "Compare the LLM locator" (issue 26): against the fake Anthropic
server, a dev-like folder and the labelled questions get local and `+llm` rows with the
locator's tokens and cost, the calls are counted before the run, a failed LLM locator is
said as the CLI says it; without an LLM the toggle is disabled, with the reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropicServer, reply
from streamlit.testing.v1 import AppTest

from tests.app_helpers import open_app, page_text
from tests.conftest import keyless_app
from tests.test_eval_tune import QUESTIONS, TOPICS

DOC = "# Report\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in TOPICS)
N = 3  # questions run: one LLM call each for treerag, none for flat-hybrid


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("eval_llm_app_data")) as data:
        yield data


def _rows() -> list[dict]:
    return [
        {"id": f"q{i}", "doc": "report.md", "question": q, "evidence": [s]}
        for i, (q, s) in enumerate(QUESTIONS[:N])
    ]


@pytest.fixture(scope="module")
def tiny_set(app_env: Path) -> Path:
    """A dev set's format (questions.jsonl + docs/), inside the app's data folder."""
    folder = app_env / "tiny-set"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "report.md").write_text(DOC, encoding="utf-8")
    text = "".join(json.dumps(r) + "\n" for r in _rows())
    (folder / "questions.jsonl").write_text(text, encoding="utf-8")
    return folder


def locate_reply(body):
    """The locate prompt (it asks for thinking + results) gets the tree's last node."""
    text = json.dumps(body)
    ids = re.findall(r"\[(\d{4})\]", text)
    picked = [{"node_id": ids[-1], "sub_query": "q"}] if ids else []
    return reply(json.dumps({"thinking": "t", "results": picked}))


@pytest.fixture
def fake_llm(monkeypatch):
    """The fake Anthropic server as this server's own LLM (its key and endpoint)."""

    def start(responder):
        server = FakeAnthropicServer(responder=responder).start()
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        return server

    servers: list[FakeAnthropicServer] = []
    yield lambda responder: servers.append(start(responder)) or servers[-1]
    for server in servers:
        server.stop()


def _setup(at: AppTest) -> None:
    at.multiselect(key="ev_strategies").set_value(["treerag", "flat-hybrid"])
    at.toggle(key="ev_rerank").set_value(False)
    at.number_input(key="ev_limit").set_value(0)
    at.toggle(key="ev_llm").set_value(True).run()
    assert not at.exception, at.exception


def _run(at: AppTest) -> dict:
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at.session_state["ev_report"]


def _locator_table(at: AppTest):
    at.segmented_control(key="ev_view").set_value("Metrics").run()
    return next(d.value for d in at.dataframe if "locate tokens in" in d.value.columns)


def _check_llm_rows(at: AppTest, report: dict, calls: int) -> None:
    """`calls`: the LLM requests the run made."""
    assert list(report["strategies"]) == ["treerag", "treerag+llm", "flat-hybrid"]
    llm = report["strategies"]["treerag+llm"]
    assert llm["n_questions"] == N and llm["locate_usage"]["input_tokens"] > 0
    assert report["strategies"]["treerag"]["locate_usage"]["input_tokens"] == 0
    assert all(r["locator"] == "llm" for r in report["questions"]["treerag+llm"])
    assert calls == N  # the count said before the run; no answer written
    table = _locator_table(at).set_index("strategy")
    assert table.loc["treerag+llm", "locate tokens in"] > 0
    assert table.loc["treerag+llm", "locate cost $"] > 0
    assert table.loc["treerag", "locate tokens in"] == 0
    assert "section_hit@5" in table.columns and "recall@1000c" in table.columns
    assert "locate_usage.input_tokens" in page_text(at, "code")  # the Markdown table too


def test_without_an_llm_the_toggle_is_disabled_with_its_reason() -> None:
    at = open_app("pages/evaluate.py")
    toggle = at.toggle(key="ev_llm")
    assert toggle.disabled and toggle.value is False
    reason = "Off: no LLM is configured: type a key (ANTHROPIC_API_KEY) in Ask's sidebar (LLM)."
    assert reason in page_text(at, "caption", plain=True)


def test_a_dev_like_folder_gets_local_and_llm_rows_with_tokens(tiny_set, fake_llm) -> None:
    server = fake_llm(locate_reply)
    at = open_app("pages/evaluate.py")
    at.selectbox(key="ev_dataset").set_value("other").run()
    at.text_input(key="ev_folder").input(str(tiny_set)).run()
    _setup(at)
    warned = page_text(at, "warning")
    assert f"**{N} LLM calls** ({N} questions × 1 strategy using the locator: treerag)" in warned
    assert not server.requests  # nothing is called before Run
    report = _run(at)
    _check_llm_rows(at, report, len(server.requests))
    assert "was not used" not in page_text(at, "warning")


def test_a_failed_llm_locator_falls_back_and_says_so(tiny_set, fake_llm) -> None:
    fake_llm(lambda body: reply("not JSON at all"))
    at = open_app("pages/evaluate.py")
    at.selectbox(key="ev_dataset").set_value("other").run()
    at.text_input(key="ev_folder").input(str(tiny_set)).run()
    _setup(at)
    report = _run(at)
    assert report["strategies"]["treerag+llm"]["n_questions"] == N
    assert all(r["locator"] != "llm" for r in report["questions"]["treerag+llm"])
    notes = page_text(at, "warning", plain=True)
    assert f"the LLM locator was not used for {N} of {N} questions of treerag+llm" in notes
    assert "those used the local locator" in notes


def test_the_labelled_questions_get_local_and_llm_rows_with_tokens(fake_llm) -> None:
    server = fake_llm(locate_reply)
    at = open_app("pages/documents.py")
    at.file_uploader[0].set_value([("report.md", DOC.encode(), "text/markdown")]).run()
    assert not at.exception, at.exception
    at.switch_page("pages/evaluate.py").run()
    at.selectbox(key="ev_dataset").set_value("mine").run()
    data = "".join(json.dumps(r) + "\n" for r in _rows()).encode()
    at.file_uploader(key="my_import_0").set_value([("q.jsonl", data, "application/json")]).run()
    assert f"**{N}** labelled question(s)" in page_text(at, "caption", plain=True)
    _setup(at)
    assert f"**{N} LLM calls**" in page_text(at, "warning")
    before = len(server.requests)  # the upload's K-Type summary was written by the LLM
    report = _run(at)
    assert report["dataset"] == "my labelled questions"
    _check_llm_rows(at, report, len(server.requests) - before)
