"""The evaluation harness end to end on a few real QASPER questions (hashing embedder)."""

from __future__ import annotations

import json
import re
from typing import ClassVar

import pytest
from fake_anthropic import FakeAnthropicServer, reply

from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.harness import EvalConfig, evaluate, oracle_leaves
from treerag_core.evaluation.report import (
    LOCATOR_KEYS,
    load_report,
    markdown_table,
    write_report,
)
from treerag_core.strategies.graph.part import graph_vectors_of, graphs_of

SETTINGS = IndexSettings(embedder="hashing")


def config(**changes) -> EvalConfig:
    base = {
        "strategies": ("treerag", "flat-hybrid", "oracle-sections"),
        "limit": 3,
        "index_settings": SETTINGS,
        "query_settings": QuerySettings()
        .set("answer.final_top_k", 10)
        .set("rerank.enabled", False),
    }
    return EvalConfig(**{**base, **changes})


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def report(eval_dir, index_cache):
    return evaluate(eval_dir / "qasper", config(), cache_dir=index_cache)


def test_report_has_every_metric_per_strategy(report):
    assert report["dataset"] == "qasper" and report["scope"] == "doc"
    assert not report["partial"]
    for name in ("treerag", "flat-hybrid", "oracle-sections"):
        metrics = report["strategies"][name]
        assert metrics["n_questions"] == 3
        for k in (1, 3, 5, 10):
            for key in (f"hit@{k}", f"recall@{k}", f"ctx_chars@{k}"):
                assert key in metrics
        assert 0.0 <= metrics["recall@1000c"] <= metrics["recall@2000c"] <= 1.0
        assert metrics["latency_ms"]["total"]["p50"] <= metrics["latency_ms"]["total"]["p95"]
        assert metrics["n_left_out"] == 0  # none among the first 3 (--limit walked them)
    assert "section_hit@5" in report["strategies"]["treerag"]
    assert "section_hit@5" not in report["strategies"]["flat-hybrid"]
    # The oracle picks the gold leaves, so its section hit is perfect by construction.
    assert report["strategies"]["oracle-sections"]["section_hit@1"] == 1.0


def test_budget_metrics_walk_the_whole_ranked_list(report):
    # Top-k 50 and one 40-candidate window for every strategy, both named in the report.
    assert report["settings"]["top_k"] == 50
    assert report["settings"]["candidate_window"] == 40
    flat = report["questions"]["flat-hybrid"]
    assert all(r["n_passages"] == 40 for r in flat)  # papers hold far more than 40 chunks
    assert all(r["n_passages"] <= 40 for r in report["questions"]["treerag"])
    assert max(r["n_passages"] for r in report["questions"]["treerag"]) > 10


def test_top_k_and_window_are_settings(eval_dir, tmp_path):
    small = config(strategies=("flat-hybrid",), limit=1, top_k=7)
    small = EvalConfig(
        **{
            **small.__dict__,
            "query_settings": small.query_settings.set("retrieve.candidate_window", 5),
        }
    )
    got = evaluate(eval_dir / "qasper", small, cache_dir=tmp_path)
    assert got["settings"]["top_k"] == 7 and got["settings"]["candidate_window"] == 5
    assert got["questions"]["flat-hybrid"][0]["n_passages"] == 5
    with pytest.raises(ValueError, match="top_k"):
        config(top_k=0)


def test_per_question_records_explain_each_outcome(report):
    records = report["questions"]["treerag"]
    # The first three usable QASPER questions, hashing embedder, no rerank: known outcomes.
    assert [r["outcome"] for r in records] == ["hit", "right section, wrong chunk", "hit"]
    second = records[1]["metrics"]
    assert (second["hit@5"], second["section_hit@5"]) == (0.0, 1.0)
    assert all(r["picked"] and r["gold_sections"] for r in records)
    # A strategy that picks no sections can only hit or miss.
    flat = report["questions"]["flat-hybrid"]
    assert [r["outcome"] for r in flat] == ["hit", "miss", "hit"]
    assert not any(r["picked"] for r in flat)


def test_report_round_trips_and_prints(report, tmp_path):
    path = tmp_path / "r.json"
    write_report(path, report)
    assert load_report(path, roots=[tmp_path]) == json.loads(json.dumps(report))
    lines = markdown_table(report).splitlines()
    # A header, its rule, then one row per strategy with its 3 questions and none left out.
    assert lines[0].startswith("| strategy | n | left out | ") and len(lines) == 2 + 3
    rows = [line.split(" | ")[:3] for line in lines[2:]]
    assert rows == [
        ["| treerag", "3", "0"],
        ["| flat-hybrid", "3", "0"],
        ["| oracle-sections", "3", "0"],
    ]


def test_report_keeps_paired_differences_from_flat_hybrid(report):
    # Both other strategies ran beside flat-hybrid on the same 3 questions; flat-structured
    # did not run, so treerag has no routing comparison here.
    diffs = report["differences"]
    assert set(diffs) == {"treerag", "oracle-sections"}
    # Each question against its own paper: nothing to route, and each record says so.
    assert all(r["routed"] == [] for r in report["questions"]["treerag"])
    assert set(diffs["treerag"]) == {"flat-hybrid"}
    for row in diffs:
        for key in ("recall@1000c", "recall@2000c", "hit@5"):
            cell = diffs[row]["flat-hybrid"][key]
            per = {q["id"]: q["metrics"][key] for q in report["questions"][row]}
            base = {q["id"]: q["metrics"][key] for q in report["questions"]["flat-hybrid"]}
            assert cell["mean"] == pytest.approx(sum(per[q] - base[q] for q in per) / 3)
            assert cell["low"] <= cell["mean"] <= cell["high"]


def test_ctrl_c_leaves_a_partial_valid_report(eval_dir, tmp_path):
    def interrupt(done: int, total: int) -> None:
        if done == 4:
            raise KeyboardInterrupt

    report = evaluate(eval_dir / "qasper", config(), cache_dir=tmp_path, progress=interrupt)
    assert report["partial"] is True
    assert report["strategies"]["treerag"]["n_questions"] == 1
    json.dumps(report, allow_nan=False)  # still valid JSON


def test_should_stop_ends_the_run_between_questions_with_a_partial_report(eval_dir, tmp_path):
    asked: list[int] = []

    def after_one_question() -> bool:
        asked.append(1)
        return len(asked) > 1  # asked before each question: the second one stops

    report = evaluate(
        eval_dir / "qasper", config(), cache_dir=tmp_path, should_stop=after_one_question
    )
    assert report["partial"] is True
    assert len(asked) == 2
    # Whole questions: every strategy ran on the first one and none on the second.
    assert {s["n_questions"] for s in report["strategies"].values()} == {1}
    json.dumps(report, allow_nan=False)


def test_oracle_leaves_hold_the_gold_evidence(eval_dir, tmp_path):
    from treerag_core.evaluation.dataset import load_dataset
    from treerag_core.evaluation.harness import dataset_index

    dataset = load_dataset(eval_dir / "qasper")
    index = dataset_index(dataset, SETTINGS, tmp_path)
    question = dataset.usable_questions[0]
    leaves = oracle_leaves(index, question)
    assert leaves
    for evidence in question.evidences[:1]:
        assert any(
            index.nodes[leaf].start < evidence.end and evidence.start < index.nodes[leaf].end
            for leaf in leaves
        )


def test_llm_runs_report_tokens_and_cost(eval_dir, tmp_path, monkeypatch):
    def respond(body):
        text = json.dumps(body)
        if "thinking" in text:  # the locate prompt asks for JSON with thinking + results
            ids = re.findall(r"\[(\d{4})\]", text)
            return reply(
                json.dumps({"thinking": "t", "results": [{"node_id": ids[-1], "sub_query": "q"}]})
            )
        return reply("An answer.")

    with FakeAnthropicServer(responder=respond) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        report = evaluate(
            eval_dir / "qasper",
            config(strategies=("treerag",), limit=2, use_llm=True),
            cache_dir=tmp_path,
            api_key="sk-ant-test",
        )
    # The LLM locator and the local one run on the same questions, side by side.
    local, llm = report["strategies"]["treerag"], report["strategies"]["treerag+llm"]
    assert local["n_questions"] == llm["n_questions"] == 2
    assert llm["locate_usage"]["input_tokens"] > 0 and llm["locate_usage"]["cost_usd"] > 0
    assert local["locate_usage"]["input_tokens"] == 0  # the local locator calls no model
    assert local["llm_usage"]["input_tokens"] > 0  # both still write an answer
    assert all(p["locator"] == "llm" for p in report["questions"]["treerag+llm"])
    assert len(server.requests) == 6  # local: answer; llm: locate + answer; 2 questions
    table = markdown_table(report, LOCATOR_KEYS)
    assert "treerag+llm" in table and "section_hit@3" in table


def test_graph_indexes_add_graphs_to_the_cached_plain_index(eval_dir, tmp_path):
    from dataclasses import replace

    import numpy as np

    from treerag_core.evaluation.dataset import dataset_sources, load_dataset
    from treerag_core.evaluation.harness import dataset_index, index_cache_key
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder

    dataset = load_dataset(eval_dir / "qasper")
    with_graphs = replace(SETTINGS, graph_min_leaf_chars=6000)
    index = dataset_index(dataset, with_graphs, tmp_path)
    assert (tmp_path / index_cache_key(dataset, SETTINGS) / "manifest.json").is_file()
    assert (tmp_path / index_cache_key(dataset, with_graphs) / "graphs.json").is_file()
    fresh = build_index(dataset_sources(dataset), with_graphs, get_embedder("hashing"))
    assert graphs_of(index) and sorted(graphs_of(index)) == sorted(graphs_of(fresh))
    for leaf_id, graph in graphs_of(fresh).items():
        assert graphs_of(index)[leaf_id].concepts == graph.concepts
        assert graphs_of(index)[leaf_id].relations == graph.relations
        np.testing.assert_allclose(
            graph_vectors_of(index)[leaf_id], graph_vectors_of(fresh)[leaf_id]
        )
    again = dataset_index(dataset, with_graphs, tmp_path)  # from the cache now
    assert again.settings.graph_min_leaf_chars == 6000 and sorted(graphs_of(again)) == sorted(
        graphs_of(index)
    )


def test_an_index_naming_a_model_folder_the_run_did_not_name_is_refused(
    eval_dir, hashing_index, model_trap
):
    from dataclasses import replace

    from treerag_core.base.errors import EmbedderError

    index = replace(hashing_index, embedder_name=model_trap.name)
    with pytest.raises(EmbedderError, match="cannot choose"):
        evaluate(eval_dir / "qasper", config(limit=1), index=index)
    assert model_trap.made == []


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused_not_a_dropped_question(limit):
    # questions[:-1] would silently drop the last question, questions[:0] run nothing.
    with pytest.raises(ValueError, match=f"limit must be >= 1.*got {limit}"):
        config(limit=limit)


def test_a_broken_cached_index_is_rebuilt_and_the_reason_said(tmp_path, capsys):
    from treerag_core.evaluation.dataset import load_dataset
    from treerag_core.evaluation.harness import dataset_index, index_cache_key

    folder = tmp_path / "tiny"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text(
        "# A\n\n## Routing\n\nThe router sends each question to one section.\n", encoding="utf-8"
    )
    row = {"id": "q1", "doc": "a.md", "question": "router?", "evidence": ["router sends"]}
    (folder / "questions.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    data, plain = load_dataset(folder), IndexSettings(embedder="hashing", graph_min_leaf_chars=0)
    cache = tmp_path / "cache"
    built = dataset_index(data, plain, cache)
    manifest = cache / index_cache_key(data, plain) / "manifest.json"
    manifest.write_text("{broken", encoding="utf-8")
    notes: list[str] = []
    again = dataset_index(data, plain, cache, note=notes.append)
    assert len(notes) == 1 and notes[0].startswith("rebuilding the cached eval index tiny-")
    assert "manifest.json" in notes[0]  # the reason load_index gave
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in built.chunks]
    json.loads(manifest.read_text(encoding="utf-8"))  # the cache was written again
    manifest.write_text("{broken", encoding="utf-8")
    dataset_index(data, plain, cache)  # the CLI's default: one line on stderr
    err = capsys.readouterr().err
    assert err.startswith("note: rebuilding the cached eval index tiny-") and err.count("\n") == 1


def test_the_cache_key_changes_with_the_chunker(eval_dir, monkeypatch):
    from treerag_core.base.config import IndexSettings
    from treerag_core.evaluation import harness
    from treerag_core.evaluation.dataset import load_dataset

    dataset = load_dataset(eval_dir / "lecoqa_laws")
    settings = IndexSettings(embedder="hashing")
    before = harness.index_cache_key(dataset, settings)
    monkeypatch.setattr(harness, "CHUNKER_VERSION", "next")
    assert harness.index_cache_key(dataset, settings) != before


class SpyCrossEncoder:
    """Stands in for the bundled model: scores by length and logs every pair it scored."""

    name = "spy"
    scored: ClassVar[list[tuple[str, str]]] = []

    def score(self, query, passages, batch_size=16):
        import numpy as np

        SpyCrossEncoder.scored.extend((query, p) for p in passages)
        return np.array([float(len(p) % 97) for p in passages])


@pytest.fixture
def spy_model(monkeypatch):
    from treerag_core.search import rerank

    SpyCrossEncoder.scored = []
    monkeypatch.setattr(rerank, "OnnxCrossEncoder", SpyCrossEncoder)
    rerank.get_reranker.cache_clear()  # the real CachedReranker, around the spy
    yield SpyCrossEncoder
    rerank.get_reranker.cache_clear()


def _pairs_scored(eval_dir, cache, strategies, scope: str = "doc") -> int:
    reranked = QuerySettings().set("answer.final_top_k", 10)  # rerank on, bundled-en
    SpyCrossEncoder.scored = []
    evaluate(
        eval_dir / "qasper",
        config(strategies=strategies, limit=2, query_settings=reranked, scope=scope),
        cache_dir=cache,
    )
    return len(SpyCrossEncoder.scored)


def test_each_strategy_run_starts_from_a_cold_score_cache(eval_dir, index_cache, spy_model):
    # Both read `heading path + passage` and pool many of the same passages: with one warm
    # cache shared between runs, the second would read the first's scores and its rerank
    # latency would mean nothing.
    tree = _pairs_scored(eval_dir, index_cache, ("treerag",))
    flat = _pairs_scored(eval_dir, index_cache, ("flat-structured",))
    assert tree > 0 and flat > 0
    both = _pairs_scored(eval_dir, index_cache, ("treerag", "flat-structured"))
    assert both == tree + flat


def test_one_run_still_reuses_its_own_scores(eval_dir, index_cache, spy_model):
    # Corpus scope: treerag's routing check (more than 2 documents) scores the unrouted
    # window, and step 2b reads the routed window's passages it already scored from the
    # cache; each question's pairs are scored once.
    _pairs_scored(eval_dir, index_cache, ("treerag",), scope="corpus")
    questions = {q for q, _ in spy_model.scored}
    assert len(questions) == 2
    assert len(spy_model.scored) == len(set(spy_model.scored))


@pytest.mark.parametrize(("limit", "n_left_out"), [(4, 0), (5, 1), (None, 6)])
def test_left_out_counts_the_questions_a_limit_walks(eval_dir, limit, n_left_out):
    from treerag_core.evaluation.dataset import load_dataset
    from treerag_core.evaluation.harness import considered_questions

    dataset = load_dataset(eval_dir / "qasper")
    questions, counted = considered_questions(dataset, limit)
    assert questions == list(dataset.usable_questions[:limit])
    # The set's fifth question is left out: a limit of 5 usable ones walks past it.
    assert not dataset.questions[4].usable
    assert sum(counted.values()) == n_left_out
    if limit is None:
        assert counted == {k: n for k, n in dataset.left_out.items() if n}


def test_an_eval_leaves_the_shared_score_cache_alone(eval_dir, index_cache, spy_model):
    # Evaluate runs inside the explorer's process: its cold runs must not empty the cache
    # the Ask sessions read from.
    from treerag_core.search import rerank

    shared = rerank.get_reranker(rerank.BUNDLED_EN)
    shared.score("an Ask question", ["a passage the explorer scored"])
    _pairs_scored(eval_dir, index_cache, ("treerag",))
    SpyCrossEncoder.scored = []
    shared.score("an Ask question", ["a passage the explorer scored"])
    assert SpyCrossEncoder.scored == []  # still cached: nothing was scored again


def test_oracle_leaves_of_page_gold_hold_text_on_the_gold_pages():
    from treerag_core.evaluation.dataset import EvalQuestion, GoldPage
    from treerag_core.index.corpus import SourceDocument, build_index
    from treerag_core.index.embedders import get_embedder

    text = (
        "# Revenue\n\nRevenue grew to 12 billion dollars in the year.\n\n"
        "# Costs\n\nCosts were flat at 3 billion dollars.\n\n"
        "# Outlook\n\nThe outlook for next year is stable.\n"
    )
    costs = text.index("# Costs")
    # Page 1: Revenue and the start of Costs; page 2: the rest of Costs and Outlook.
    pages = (0, costs + 12)
    doc = SourceDocument("filing.pdf", text, page_starts=pages)
    index = build_index([doc], IndexSettings(embedder="hashing"), get_embedder("hashing"))
    paths = {leaf.node_id: leaf.heading_path for leaf in index.leaves("filing.pdf")}

    def asked(*gold: int) -> list[str]:
        question = EvalQuestion(
            id="q",
            question="What were the costs?",
            doc="filing.pdf",
            docs=("filing.pdf",),
            answers=("3 billion",),
            evidences=(),
            n_evidence_missing=0,
            evidence_sections=(),
            gold_pages=tuple(GoldPage("filing.pdf", p) for p in gold),
        )
        return [paths[leaf].split(" > ")[-1] for leaf in oracle_leaves(index, question)]

    # Page 2 holds most of Costs and all of Outlook: Outlook has more characters there.
    assert asked(2) == ["Outlook", "Costs"]
    assert asked(1) == ["Revenue", "Costs"]
    assert asked(3) == []  # a page the document does not have holds no leaf
