"""The corpus graph from the LLM through the real SDK and a fake server: typed entities over
every leaf, cached by content key in the index folder, a failure midway keeps what was
extracted and the next build resumes with the rest; tokens recorded; queries use the build."""

from __future__ import annotations

import json
import re
from itertools import pairwise

import pytest
from fake_anthropic import FakeAnthropicServer, reply, status

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.llm import AnthropicClient
from treerag_core.strategies.hirag import build as hirag_build
from treerag_core.strategies.hirag.build import HiragBuildSettings, build_into_folder, load_or_build
from treerag_core.strategies.hirag.llm_graph import CACHE_FILE, load_graph_cache
from treerag_core.strategies.hirag.store import load_hirag

KEY = "sk-ant-test-hirag-graph"
MODEL = "claude-haiku-4-5"
# Entities of the robot manual (sample_docs/zh_sample.md); the model "finds" those in the block.
NAMES = {
    "机器人": "设备",
    "激光雷达": "部件",
    "电池": "部件",
    "调度服务器": "系统",
    "指示灯": "部件",
}
LLM = HiragBuildSettings(llm_graph=True)
BLOCK = 250  # characters per call: the small manual takes several batches


def graph_reply(body) -> object:
    prompt = json.dumps(body, ensure_ascii=False)
    found = [n for n in NAMES if n in prompt]
    lines = [f'("entity", "{n}", "{NAMES[n]}", "{n}的说明")' for n in found]
    lines += [
        f'("relationship", "{a}", "{b}", "关联", "{a}与{b}相关", 7)' for a, b in pairwise(found)
    ]
    lines.append('("entity", "火星基地", "地点", "不在原文中")')  # dropped: not in the text
    return reply("\n".join(lines))


def client(server) -> AnthropicClient:
    return AnthropicClient(KEY, base_url=server.base_url, timeout=5, max_retries=0)


@pytest.fixture()
def folder(tmp_path):
    index = build_index(
        sample_sources(["zh_sample.md"]), IndexSettings(embedder="hashing"), get_embedder("hashing")
    )
    save_index(index, tmp_path / "index")
    hirag_build._CACHE.clear()
    return tmp_path / "index"


def test_llm_graph_fails_midway_keeps_what_it_made_and_resumes(folder):
    index = load_index(folder)
    with FakeAnthropicServer(responder=graph_reply, api_key=KEY) as fake:
        fake.push(*(graph_reply(None) for _ in range(3)))  # scripted: 3 batches, then a 500
        fake.push(status(500))
        first = build_into_folder(index, folder, LLM, client=client(fake), graph_block_chars=BLOCK)
        meta = first.meta
        assert meta["extractor"] == f"llm:{MODEL}"
        assert meta["graph_llm_calls"] == 4 and meta["graph_llm_batches"] == 3
        batches = meta["graph_llm_batches"] + meta["graph_offline_batches"]
        assert meta["graph_offline_batches"] > 0 and "stopped (api_error)" in meta["notes"][0]
        assert meta["graph_usage"]["input_tokens"] > 0 and meta["graph_usage"]["cost_usd"] > 0
        cached = load_graph_cache(folder)
        assert len(cached) == 3  # every batch made before the failure is on disk
        assert all(g.extractor == f"llm:{MODEL}" for g in cached.values())

        calls = len(fake.requests)
        second = build_into_folder(index, folder, LLM, client=client(fake), graph_block_chars=BLOCK)
        meta = second.meta
        assert meta["graph_cached"] == 3 and meta["graph_offline_batches"] == 0
        assert meta["graph_llm_batches"] == batches
        assert len(fake.requests) - calls == meta["graph_llm_calls"] == batches - 3
        assert not meta["notes"]
        kinds = {e.kind for e in second.graph.entities}
        assert kinds <= set(NAMES.values()) and "机器人" in {e.name for e in second.graph.entities}
        assert "火星基地" not in {e.name for e in second.graph.entities}
        robot = second.graph.entity_map()["机器人"]
        assert robot.description.startswith("机器人的说明") and robot.chunk_ids
        assert all(r.weight >= 7 for r in second.graph.relations)  # LLM strengths, summed

        calls = len(fake.requests)
        third = build_into_folder(index, folder, LLM, client=client(fake), graph_block_chars=BLOCK)
        assert len(fake.requests) == calls and third.meta["graph_cached"] == batches
        assert third.graph == second.graph
    assert len((folder / CACHE_FILE).read_text(encoding="utf-8").splitlines()) == batches


def test_queries_use_the_llm_build_and_a_reindex_keeps_the_caches(folder):
    index = load_index(folder)
    with FakeAnthropicServer(responder=graph_reply, api_key=KEY) as fake:
        built = build_into_folder(index, folder, LLM, client=client(fake), graph_block_chars=BLOCK)
    hirag_build._CACHE.clear()  # a new process: the query reads the folder
    stored, rebuilt = load_or_build(load_index(folder))
    assert not rebuilt and stored.meta["extractor"] == f"llm:{MODEL}"
    assert stored.graph == built.graph
    # A re-index replaces the folder; the LLM graph cache and the HiRAG folder stay with it.
    save_index(load_index(folder), folder)
    assert len(load_graph_cache(folder)) == built.meta["graph_llm_batches"]
    assert (folder / "hirag" / "manifest.json").is_file()


def test_offline_build_is_unchanged_without_the_flag(folder):
    index = load_index(folder)
    with FakeAnthropicServer(responder=graph_reply, api_key=KEY) as fake:
        built = build_into_folder(index, folder, HiragBuildSettings(), client=client(fake))
        assert fake.requests == [] and built.meta["extractor"] == "offline"
    assert built.meta["graph_llm_calls"] == 0 and not (folder / CACHE_FILE).exists()


def test_cached_batches_follow_shifted_ids_when_a_document_is_added(folder):
    with FakeAnthropicServer(responder=graph_reply, api_key=KEY) as fake:
        first = build_into_folder(
            load_index(folder), folder, LLM, client=client(fake), graph_block_chars=BLOCK
        )
        # test_paper.md sorts first: every leaf and chunk id of the manual shifts.
        bigger = build_index(
            sample_sources(["test_paper.md", "zh_sample.md"]),
            IndexSettings(embedder="hashing"),
            get_embedder("hashing"),
        )
        save_index(bigger, folder)
        calls = len(fake.requests)
        second = build_into_folder(
            load_index(folder), folder, LLM, client=client(fake), graph_block_chars=BLOCK
        )
        assert second.meta["graph_cached"] == first.meta["graph_llm_batches"]
        assert len(fake.requests) - calls == second.meta["graph_llm_calls"] > 0  # the paper
    chunks = {c.chunk_id: c for c in bigger.chunks}
    robot = second.graph.entity_map()["机器人"]
    assert robot.chunk_ids and all(chunks[c].doc_id == "zh_sample.md" for c in robot.chunk_ids)
    assert all("机器人" in chunks[c].text for c in robot.chunk_ids)


def test_llm_reports_fail_midway_and_the_next_build_asks_only_for_the_rest(folder):
    index = load_index(folder)
    failing = {"on": True}

    def reports(body) -> object:
        ids = re.findall(r"## (L\d+-\d+)", json.dumps(body, ensure_ascii=False))
        if failing["on"] and len(seen) >= 1:
            return status(500)
        seen.append(ids)
        return reply(json.dumps({i: {"title": f"T {i}", "summary": "S"} for i in ids}))

    seen: list[list[str]] = []
    settings = HiragBuildSettings(llm_reports=True)
    with FakeAnthropicServer(responder=reports, api_key=KEY) as fake:
        first = build_into_folder(index, folder, settings, client=client(fake))
        done = first.meta["counts"]["llm_reports"]
        assert done == len(seen[0]) and "LLM reports stopped" in first.meta["notes"][0]
        failing["on"] = False
        second = build_into_folder(index, folder, settings, client=client(fake))
    assert second.meta["report_cached"] == done
    assert second.meta["counts"]["llm_reports"] == second.meta["counts"]["communities"]
    assert not set(seen[0]) & {i for batch in seen[1:] for i in batch}  # never asked twice


def test_an_oversized_graph_cache_is_a_clear_error(tmp_path, monkeypatch):
    from treerag_core.base import artifacts
    from treerag_core.base.errors import IndexFormatError

    (tmp_path / CACHE_FILE).write_text("{}\n" * 100, encoding="utf-8")
    assert load_graph_cache(tmp_path) == {}  # bad lines only cost asking again
    monkeypatch.setattr(artifacts, "MAX_JSON_BYTES", 100)
    with pytest.raises(IndexFormatError, match=re.escape(CACHE_FILE) + ".*more than the 100"):
        load_graph_cache(tmp_path)


def report_reply(body) -> object:
    ids = re.findall(r"## (L\d+-\d+)", json.dumps(body, ensure_ascii=False))
    return reply(json.dumps({i: {"title": f"T {i}", "summary": "S"} for i in ids}))


def test_a_graph_failing_its_load_checks_still_lends_its_paid_reports(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        first = build_into_folder(index, folder, settings, client=client(fake))
        paid = first.meta["counts"]["llm_reports"]
        assert paid > 0
        # An older TreeRAG's graph, refused by today's checks (one token list too few).
        tokens = folder / "hirag" / "entity_tokens.json"
        tokens.write_text(json.dumps(json.loads(tokens.read_text("utf-8"))[1:]), "utf-8")
        with pytest.raises(IndexFormatError):
            load_hirag(folder)
        sent = len(fake.requests)
        second = build_into_folder(index, folder, settings, client=client(fake))
        assert len(fake.requests) == sent and second.meta["report_cached"] == paid
    assert second.meta["notes"] == []  # nothing was lost, so nothing to say


def test_unreadable_reports_are_said_and_kept_aside(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        build_into_folder(index, folder, settings, client=client(fake))
        damaged = b'[{"community_id": "L0-0", "tit'
        (folder / "hirag" / "reports.json").write_bytes(damaged)
        again = build_into_folder(index, folder, settings, client=client(fake))
    (note,) = [n for n in again.meta["notes"] if "could not be read" in n]
    assert "reports.json is corrupt (Unterminated string" in note  # the file and why
    (kept,) = (folder / ".hirag-unreadable").iterdir()
    assert kept.read_bytes() == damaged and str(kept.relative_to(folder)) in note
    assert load_hirag(folder).meta["notes"][0] == note  # in the manifest the explorer shows
    save_index(load_index(folder), folder)  # a re-index keeps the copy
    assert (folder / ".hirag-unreadable" / kept.name).read_bytes() == damaged
    # Reading the same damaged file again keeps one copy, not one per read.
    (folder / "hirag" / "reports.json").write_bytes(damaged)
    hirag_build.previous_llm_reports(folder)
    assert len(list((folder / ".hirag-unreadable").iterdir())) == 1


def test_an_offline_build_keeps_the_paid_reports_for_a_later_llm_build(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        paid = build_into_folder(index, folder, settings, client=client(fake))
        offline = build_into_folder(index, folder, HiragBuildSettings())
        assert offline.meta["counts"]["llm_reports"] == 0
        assert any("kept in .hirag-reports-partial.json" in n for n in offline.meta["notes"])
        sent = len(fake.requests)
        again = build_into_folder(index, folder, settings, client=client(fake))
    assert len(fake.requests) == sent
    assert again.meta["report_cached"] == paid.meta["counts"]["llm_reports"]


def test_a_query_replacing_a_stale_llm_build_keeps_its_paid_reports(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        paid = build_into_folder(index, folder, settings, client=client(fake))
        hirag_build._CACHE.clear()
        # Asked for other settings, a query rebuilds offline over the LLM build.
        other, rebuilt = load_or_build(index, settings=HiragBuildSettings(max_cluster_size=5))
        assert rebuilt and other.meta["counts"]["llm_reports"] == 0
        assert any("kept in .hirag-reports-partial.json" in n for n in other.meta["notes"])
        sent = len(fake.requests)
        again = build_into_folder(index, folder, settings, client=client(fake))
    assert len(fake.requests) == sent
    assert again.meta["report_cached"] == paid.meta["counts"]["llm_reports"]


def test_an_llm_build_keeps_the_paid_reports_it_does_not_reuse(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    partial = folder / ".hirag-reports-partial.json"
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        first = build_into_folder(index, folder, settings, client=client(fake))
        paid = first.meta["counts"]["llm_reports"]
        build_into_folder(index, folder, HiragBuildSettings())  # keeps them in the checkpoint
        other = HiragBuildSettings(llm_reports=True, max_cluster_size=3)
        second = build_into_folder(index, folder, other, client=client(fake))
        assert second.meta["report_llm_calls"] > 0  # other reports
        mine = {r.content_key for r in second.reports.values()}
        left = {row["content_key"] for row in json.loads(partial.read_text("utf-8"))}
        assert left and not left & mine  # what reports.json lacks stays, nothing else
        (note,) = [n for n in second.meta["notes"] if "kept in" in n]
        assert note.startswith(f"{len(left)} LLM reports of earlier builds are kept")
        sent = len(fake.requests)
        again = build_into_folder(index, folder, settings, client=client(fake))
    assert len(fake.requests) == sent  # back to the first settings: nothing paid again
    assert again.meta["report_cached"] == paid


def test_a_damaged_checkpoint_is_set_aside_and_an_offline_build_goes_on(folder):
    index = load_index(folder)
    partial = folder / ".hirag-reports-partial.json"
    partial.write_text("[{", encoding="utf-8")
    built = build_into_folder(index, folder, HiragBuildSettings())
    (note,) = [n for n in built.meta["notes"] if "could not be read" in n]
    (kept,) = (folder / ".hirag-unreadable").iterdir()
    assert kept.read_text("utf-8") == "[{" and str(kept.relative_to(folder)) in note
    assert "a later build with LLM reports asks for them again" in note  # not "this build"
    assert not partial.exists()


def test_a_query_rebuild_sets_a_damaged_checkpoint_aside_and_keeps_the_paid_reports(folder):
    index, settings = load_index(folder), HiragBuildSettings(llm_reports=True)
    partial = folder / ".hirag-reports-partial.json"
    with FakeAnthropicServer(responder=report_reply, api_key=KEY) as fake:
        paid = build_into_folder(index, folder, settings, client=client(fake))
        partial.write_text("[{", encoding="utf-8")
        hirag_build._CACHE.clear()
        other, _ = load_or_build(index, settings=HiragBuildSettings(max_cluster_size=5))
        assert any(".hirag-unreadable" in n for n in other.meta["notes"])
        assert any("kept in .hirag-reports-partial.json" in n for n in other.meta["notes"])
        sent = len(fake.requests)
        again = build_into_folder(index, folder, settings, client=client(fake))
    assert len(fake.requests) == sent
    assert again.meta["report_cached"] == paid.meta["counts"]["llm_reports"]


def test_an_offline_build_does_not_say_it_writes_unreadable_reports_again(folder):
    index = load_index(folder)
    build_into_folder(index, folder, HiragBuildSettings())
    (folder / "hirag" / "reports.json").write_text("[{", encoding="utf-8")
    again = build_into_folder(index, folder, HiragBuildSettings())
    (note,) = [n for n in again.meta["notes"] if "could not be read" in n]
    assert "this build" not in note and "a later build with LLM reports" in note
