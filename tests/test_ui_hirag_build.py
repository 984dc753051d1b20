"""The explorer's HiRAG build panel: offline without an LLM, the LLM extractor and reports
with one (a fake server through the real SDK), and the build's tokens shown per step."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from fake_anthropic import FakeAnthropicServer, reply
from streamlit.testing.v1 import AppTest

from tests.conftest import LLM_VARIABLES, sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import save_index
from treerag_core.strategies.hirag import build as hirag_build
from ui.documents.hirag_build import build_summary

KEY = "sk-ant-test-hirag-panel"
APP = "apps/hirag_build_app.py"


def responder(body) -> object:
    prompt = json.dumps(body, ensure_ascii=False)
    if "## L" in prompt:  # a report batch: answer every community asked for
        ids = [part.split("\\n")[0] for part in prompt.split("## ")[1:]]
        return reply(
            json.dumps({i: {"title": f"T {i}", "summary": "S", "findings": []} for i in ids})
        )
    found = [n for n in ("机器人", "电池", "指示灯") if n in prompt]
    lines = [f'("entity", "{n}", "部件", "{n}的说明")' for n in found]
    lines += [f'("relationship", "{a}", "{b}", "有", "{a}有{b}", 5)' for a, b in pairwise(found)]
    return reply("\n".join(lines))


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    index = build_index(
        sample_sources(["zh_sample.md"]), IndexSettings(embedder="hashing"), get_embedder("hashing")
    )
    save_index(index, tmp_path / "index")
    hirag_build._CACHE.clear()
    monkeypatch.setenv("HIRAG_TEST_INDEX", str(tmp_path / "index"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "index"


def _without_llm(monkeypatch) -> None:
    """No key or endpoint from the machine: the panel must offer the offline build only."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_without_an_llm_the_toggle_is_off_and_the_build_is_offline(folder, monkeypatch):
    _without_llm(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert at.toggle(key="hirag_llm").disabled
    assert any("Not built yet" in c.value for c in at.caption)
    at.button(key="hirag_build").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["step"][0] == "graph (offline)" and table["tokens in"].sum() == 0


def test_with_an_llm_the_graph_and_reports_come_from_it(folder, monkeypatch):
    with FakeAnthropicServer(responder=responder, api_key=KEY) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        at = AppTest.from_file(APP, default_timeout=120).run()
        toggle = at.toggle(key="hirag_llm")
        assert not toggle.disabled
        toggle.set_value(True).run()
        at.button(key="hirag_build").click().run()
        assert not at.exception and fake.requests
    table = at.dataframe[0].value
    assert table["step"][0].startswith("graph (llm:")
    assert table["tokens in"][0] > 0 and table["LLM calls"][0] > 0  # the graph
    assert table["tokens in"][2] > 0  # the reports
    assert any("(current)" in c.value for c in at.caption)


def test_summary_of_an_old_manifest_has_zeros():
    frame = build_summary({"counts": {"entities": 3}, "seconds": {}})
    assert list(frame["step"]) == ["graph (offline)", "communities (Leiden)", "reports"]
    assert frame["tokens in"].sum() == 0


def test_reports_the_build_could_not_read_are_shown(folder, monkeypatch):
    _without_llm(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.button(key="hirag_build").click().run()
    (folder / "hirag" / "reports.json").write_text("[{", encoding="utf-8")
    at.button(key="hirag_build").click().run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if "could not be read" in w.value]
    assert "reports.json is corrupt" in warning and ".hirag-unreadable" in warning
