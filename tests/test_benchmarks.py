"""Smoke tests of the benchmark scripts on the sample documents with the hashing embedder."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_extractive, bench_index, bench_query, bench_retune, run_all
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_docs"
DOCS = ("test_paper.md", "zh_sample.md")
EN_QUESTIONS = (
    "How many epochs was the model trained for?",
    "Which routing algorithm does AdaRouter use?",
    "What accuracy does AdaRouter reach on EUR/USD?",
)


@pytest.fixture(scope="module")
def sources() -> list[SourceDocument]:
    return [SourceDocument(n, (SAMPLES / n).read_text(encoding="utf-8")) for n in DOCS]


@pytest.fixture(scope="module")
def index(sources):
    return build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))


def cases() -> list[bench_query.QueryCase]:
    return [bench_query.QueryCase(q, ("test_paper.md",)) for q in EN_QUESTIONS]


def test_embedders_side_by_side_on_the_same_chunk_texts(sources, index):
    texts = bench_index.chunk_texts(sources, most=5)
    assert texts == [c.text for c in index.chunks[:5]]  # what a build embeds, in its order
    assert len(bench_index.chunk_texts(sources, None)) == len(index.chunks)
    row = bench_index.embedder_figures("hashing", texts)
    assert row["texts"] == 5 and row["chunks_per_s"] > 0 and row["chunks_per_cpu_s"] > 0
    assert row["peak_rss_mb"] > 0
    table = bench_index.comparison_markdown(
        [{"dataset": "samples", **row, "all_chunks_per_s": [row["chunks_per_s"]] * 2}]
    )
    assert table.splitlines()[2].startswith("| samples | hashing | 5 | ")
    assert "CPU-second" in table and "shared with other jobs" in table


def test_index_bench_reports_rates_ratio_memory_and_stage_split(sources):
    result = bench_index.run_index_bench(sources, get_embedder("hashing"), repeats=1)
    assert result["documents"] == 2
    assert result["chunks"] > 10
    assert result["order"] == ["build", "embed"]
    assert result["build_chunks_per_s"] > 0 and result["embed_chunks_per_s"] > 0
    # model time is nested inside the build's time, so the same-pass ratio is in (0, 1]
    assert 0 < result["ratio"] <= 1.0
    assert result["ratio"] == min(result["ratio_in_pass"])
    assert result["target_met"] == (result["ratio"] >= bench_index.TARGET_RATIO)
    assert result["ratio_separate_passes"] > 0
    assert 0 < result["nonmodel_seconds"] < result["build_seconds"][0]
    stages = result["stages_seconds"]
    assert set(stages) == {"parse", "summarise", "chunk", "doc_info", "tokenise", "assemble"}
    assert all(v >= 0 for v in stages.values()) and stages["tokenise"] > 0
    mem = result["memory_mb"]
    assert mem["peak_during_build"] >= mem["rss_before_build"] > 0
    assert mem["embeddings"] == bench_index.embedding_mb(result["chunks"], 384)  # hashing: 384-d
    text = bench_index.to_markdown(result)
    assert "chunks/s" in text and "TARGET" in text and "| tokenise |" in text


def test_embedding_mb_counts_float32_rows():
    assert bench_index.embedding_mb(10_000, 384) == 14.6  # 15,360,000 bytes
    assert bench_index.embedding_mb(1_000_000, 512) == 1953.1


def test_index_verdict_says_a_miss_plainly():
    result = {
        "ratio": 0.8,
        "target_ratio": 0.85,
        "target_met": False,
        "ratio_in_pass": [0.8, 0.82],
        "ratio_separate_passes": 0.9,
        "embed_alone_spread": 1.4,
    }
    line = bench_index.verdict(result)
    assert line.startswith("TARGET MISSED")
    assert "20.0%" in line  # what everything but the model costs
    assert "separate-pass ratio says 0.900" in line


def test_null_embedder_matches_the_embedder_contract():
    vectors = bench_index.NullEmbedder(16).embed(["a", "b", "c"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


class SleepyReranker:
    """Takes a known time per call, so the proxy's attribution can be checked."""

    name = "sleepy"
    seconds = 0.005

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        time.sleep(self.seconds)
        return np.arange(len(passages), dtype=np.float64)


def test_query_bench_reports_stage_percentiles_and_overhead_share(index):
    # The real cross-encoder runs in the run_all test; here a fake with a known cost.
    result = bench_query.run_query_bench(
        index, get_embedder("hashing"), cases(), reranker_factory=lambda model: SleepyReranker()
    )
    assert result["questions"] == 3
    for scope in ("doc", "corpus"):
        for strategy in ("treerag", "flat-hybrid"):
            s = result["summary"][scope][strategy]
            assert s["n"] == 3
            for stage in bench_query.STAGES:
                assert 0 <= s[stage]["p50"] <= s[stage]["p95"], (scope, strategy, stage)
            assert s["total"]["p50"] > 0
            assert s["rerank_model"]["p50"] >= SleepyReranker.seconds * 1000
            assert s["rerank"]["p50"] >= s["rerank_model"]["p50"]  # the stage holds the call
            assert s["embed_calls_mean"] >= 1 and s["rerank_pairs_mean"] >= 1
            assert 0 < s["overhead_share"] < 1
        ratios = result["vs_baseline"][scope]["treerag"]
        assert ratios["total_p50_ratio"] > 0
    for rows in result["records"].values():
        for records in rows.values():
            for r in records:
                model = r["embed_model"] + r["rerank_model"]
                assert r["overhead"] == pytest.approx(r["total"] - model, abs=1e-6)
                assert r["locate"] + r["retrieve"] + r["rerank"] <= r["total"] + 1e-6
    text = bench_query.to_markdown(result)
    assert "| treerag | 3 |" in text and "| flat-hybrid | 3 |" in text
    assert len(bench_query.verdicts(result)) == 2


class PerPairReranker:
    """Costs a known time per pair, so the cache's saving shows in the retune's time."""

    name = "per-pair"
    seconds = 0.002

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        time.sleep(self.seconds * len(passages))
        return np.array([float(len(p) % 7) for p in passages])


def test_retune_bench_scores_only_unseen_passages_when_cached(index):
    questions = [(q, ["test_paper.md"]) for q in EN_QUESTIONS[:2]]
    result = bench_retune.run_retune_bench(
        index, get_embedder("hashing"), questions, reranker_factory=lambda m: PerPairReranker()
    )
    n = len(bench_retune.MOVES) * 2
    assert result["n_retunes"] == n and len(result["ms"]["uncached"]) == n
    pairs = result["pairs_scored_median"]
    assert pairs["uncached"] >= 1 and pairs["cached"] < pairs["uncached"]
    assert result["median_ms"]["cached"] < result["median_ms"]["uncached"]
    assert result["median_ratio_uncached_over_cached"] > 1
    assert len(result["load_average"]) == 3 and isinstance(result["meets_target"], bool)


def test_query_bench_without_rerank_spends_no_cross_encoder_time(index):
    settings = QuerySettings().set("llm.enabled", False).set("rerank.enabled", False)
    result = bench_query.run_query_bench(
        index, get_embedder("hashing"), cases()[:2], scopes=("corpus",), settings=settings
    )
    s = result["summary"]["corpus"]["treerag"]
    assert s["rerank_model"]["p95"] == 0 and s["rerank_pairs_mean"] == 0
    assert s["embed_model"]["p50"] > 0


def _tiny_eval(root: Path) -> Path:
    """Two one-document eval sets named like the dev sets, with verbatim evidence."""
    paper = (SAMPLES / "test_paper.md").read_text(encoding="utf-8")
    zh = (SAMPLES / "zh_sample.md").read_text(encoding="utf-8")
    sets = {
        "qasper": (
            "test_paper.md",
            paper,
            [
                ("How many epochs was the model trained for?", "for 50 epochs with the Adam"),
                ("Which routing algorithm does AdaRouter use?", "LinUCB, to route decisions"),
            ],
        ),
        "lecoqa_laws": (
            "zh_sample.md",
            zh,
            [
                ("X3 的额定载重是多少？", "X3 的额定载重为 600 公斤"),
                ("自检需要多长时间？", "自检约需 90 秒"),
            ],
        ),
    }
    for name, (doc, text, questions) in sets.items():
        folder = root / name
        (folder / "docs").mkdir(parents=True)
        (folder / "docs" / doc).write_text(text, encoding="utf-8")
        lines = []
        for i, (question, evidence) in enumerate(questions):
            assert evidence in text, evidence
            row = {"id": f"{name}-{i}", "doc": doc, "question": question}
            row |= {"answers": [evidence], "evidence": [evidence], "evidence_sections": []}
            lines.append(json.dumps(row, ensure_ascii=False))
        (folder / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.slow  # the real cross-encoder ranks the tiny sets
def test_extractive_bench_scores_both_answers_and_calibrates_per_language(tmp_path):
    data = _tiny_eval(tmp_path / "eval")
    out, rows = tmp_path / "extractive.json", tmp_path / "rows.jsonl"
    args = ["--data", str(data), "--cache", str(tmp_path / "cache"), "--embedder", "hashing"]
    args += ["--sets", "qasper", "lecoqa_laws", "--limit", "2", "--out", str(out)]
    assert bench_extractive.main([*args, "--rows", str(rows)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    for name in ("qasper", "lecoqa_laws"):
        first = report["first_sentence_holds_gold"][name]
        assert first["n"] == 2
        assert 0 <= first["new"] <= first["new_any_sentence"] <= 1
        assert 0 <= first["three_quotes"] <= first["three_quotes_any_sentence"] <= 1
    kinds = {json.loads(line)["set"] for line in rows.read_text(encoding="utf-8").splitlines()}
    assert {"qasper", "lecoqa_laws", "qasper->lecoqa_laws", "lecoqa_laws->qasper"} <= kinds
    for verdict in report["not_answered"].values():  # the Chinese questions asked of the paper
        assert verdict["best_threshold"] in bench_extractive.THRESHOLDS
        assert set(verdict["at_current"]) >= {"answered_when_gold_retrieved", "balanced"}
    assert bench_extractive.wrong_doc(["a.md", "b.md", "c.md"], ["c.md"]) == "a.md"
    assert bench_extractive.wrong_doc(["a.md"], ["a.md"]) is None


@pytest.mark.slow  # the full script end to end (cross-encoder included) on tiny data
def test_run_all_writes_one_report_with_every_table(tmp_path):
    data = _tiny_eval(tmp_path / "eval")
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--cache", str(tmp_path / "cache")]
    assert run_all.main([*args, "--embedder", "hashing", "--quick"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["mode"] == "quick" and report["limit"] == run_all.QUICK_LIMIT
    assert report["index"]["chunks"] > 0
    assert {k: q["questions"] for k, q in report["query"].items()} == {
        "qasper": 2,
        "lecoqa_laws": 2,
    }
    # the real bundled cross-encoder ran on the English questions, timed by the proxy;
    # Chinese questions skip it (rerank_chinese is off)
    assert report["query"]["qasper"]["summary"]["doc"]["treerag"]["rerank_model"]["p50"] > 0
    assert report["query"]["lecoqa_laws"]["summary"]["doc"]["treerag"]["rerank_model"]["p95"] == 0
    assert set(report["quality"]) == {
        "qasper/doc",
        "qasper/corpus",
        "lecoqa_laws/doc",
        "lecoqa_laws/corpus",
    }
    for quality in report["quality"].values():
        assert set(quality["strategies"]) == set(run_all.STRATEGIES)
        for metrics in quality["strategies"].values():
            assert metrics["n_questions"] == 2 and 0 <= metrics["hit@5"] <= 1
    assert 0 < report["timings_s"]["total"] < run_all.TIME_BUDGET_S
    text = (out / "report.md").read_text(encoding="utf-8")
    for heading in (
        "## Index build",
        "## Query latency (qasper)",
        "## Query latency (lecoqa_laws)",
        "### qasper/doc",
        "### lecoqa_laws/corpus",
    ):
        assert heading in text
    # headline + detail table, four runs; then its paired difference from flat-hybrid in each
    assert text.count("| oracle-sections | flat-hybrid |") == 4
    assert text.count("| oracle-sections |") == 8 + 4
    assert "within the 15-minute budget" in text


def test_heading_recovery_scoring_and_round_trip_without_chromium() -> None:
    from benchmarks import bench_convert
    from treerag_core.ingest.convert import convert_bytes
    from treerag_core.ingest.parsing import scan_headings

    markdown = (SAMPLES / "test_paper.md").read_text(encoding="utf-8")
    truth = [(h.hashes, h.text) for h in scan_headings(markdown)]
    for fmt, data in (
        ("html", bench_convert.to_html(markdown, "t").encode()),
        ("docx", bench_convert.to_docx(markdown)),
    ):
        doc = convert_bytes(f"t.{fmt}", data, 10 * 1024 * 1024)
        got = [(h.level, h.text) for h in doc.headings]
        score = bench_convert.score(truth, got)
        assert score["matched"] == score["truth"] == len(truth), fmt
    assert bench_convert.score([(1, "A"), (2, "B")], [(1, "a"), (1, "B"), (3, "C")]) == {
        "truth": 2,
        "found": 3,
        "matched": 2,
        "leveled": 1,
    }


@pytest.fixture(scope="module")
def eval_cache(tmp_path_factory) -> Path:
    """One eval index cache for the graph scripts' tests (each index is built once)."""
    return tmp_path_factory.mktemp("eval_cache")


def test_graph_subsets_split_a_report_by_where_the_gold_lies(eval_dir, eval_cache, capsys):
    from benchmarks import graph_subsets
    from treerag_core.evaluation.harness import EvalConfig, evaluate
    from treerag_core.evaluation.report import write_report

    config = EvalConfig(
        strategies=("treerag-kg", "treerag"),
        limit=6,
        index_settings=IndexSettings(embedder="hashing", graph_min_leaf_chars=3000),
        query_settings=QuerySettings().set("rerank.enabled", False),
    )
    report = evaluate(eval_dir / "qasper", config, cache_dir=eval_cache)
    out = eval_cache / "report.json"
    write_report(out, report)
    args = ["--data", str(eval_dir / "qasper"), "--report", str(out), "--cache", str(eval_cache)]
    assert graph_subsets.main(args) == 0
    printed = capsys.readouterr().out
    assert "| treerag-kg (3000) | all | 6 |" in printed and "| treerag | all | 6 |" in printed
    rows = [line.split(" | ") for line in printed.splitlines() if "| treerag | " in line]
    n = {row[1]: int(row[2]) for row in rows}
    assert n["gold in long leaf"] + n["gold elsewhere"] == 6


def test_graph_weights_runs_one_row_per_option(eval_dir, eval_cache, capsys):
    from benchmarks import graph_weights

    args = ["--data", str(eval_dir / "qasper"), "--cache", str(eval_cache), "--limit", "3"]
    args += ["--embedder", "hashing", "--weights", "0,0.3", "--graph-min-leaf-chars", "3000"]
    assert graph_weights.main(args) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if ", weight " in line]
    assert [row.split(" | ")[0] for row in rows] == [
        "| within, weight 0",
        "| within, weight 0.3",
        "| added, weight 0",
        "| added, weight 0.3",
    ]
    assert all(" | 3 | " in row for row in rows)


def test_bench_hirag_llm_counts_calls_and_a_second_build_sends_nothing(index, tmp_path):
    from benchmarks import bench_hirag_llm
    from treerag_core.index.store import save_index

    save_index(index, tmp_path / "index")
    row = bench_hirag_llm.measure(tmp_path / "index", "hashing")
    assert row["graph_calls"] >= row["graph_batches"] > 0 and row["report_calls"] > 0
    assert row["graph_usage"]["input_tokens"] > 0 and row["hirag_bytes"] > 0
    assert row["second_build_calls"] == 0
    assert row["second_build_cached"] == [row["graph_batches"], row["counts"]["communities"]]
