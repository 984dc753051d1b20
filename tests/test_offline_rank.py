"""The offline ranking aids of issue 9: orders over a dumped window, scored by the harness."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import offline_rank, zh_scorers
from treerag_core.evaluation.dataset import load_dataset


def _cand(doc: str, start: int, end: int, leaf: str = "l", **scores: float) -> dict:
    return {"doc": doc, "start": start, "end": end, "leaf": leaf, **scores}


def test_ranks_rrf_and_ties_keep_the_window_order():
    assert offline_rank.ranks(np.asarray([0.1, 0.9, 0.1])).tolist() == [2, 1, 3]
    q = {
        "windows": {"structured": [2, 0, 1]},
        "candidates": [_cand("d", 0, 1, a=1.0), _cand("d", 1, 2, a=3.0), _cand("d", 2, 3, a=1.0)],
    }
    assert offline_rank.ordered(q, "structured", offline_rank.col("a")) == [1, 2, 0]
    assert offline_rank.window_order("structured")(q) == [2, 0, 1]
    # A missing window (a routed one where the scope holds <= 2 documents) is the unrouted one.
    assert offline_rank.window_order("route2")(q) == [2, 0, 1]
    fused = offline_rank.rrf(offline_rank.col("a"), offline_rank.col("a"))
    assert offline_rank.ordered(q, "structured", fused) == [1, 2, 0]


def test_evaluate_scores_dumped_orders_with_the_harness_metrics(eval_dir, tmp_path):
    dataset = load_dataset(eval_dir / "qasper")
    question = dataset.usable_questions[0]
    gold = question.evidences[0]
    record = {
        "id": question.id,
        "windows": {"structured": [0, 1]},
        "candidates": [
            _cand(gold.doc, 0, 0, a=1.0),  # an empty span never hits
            _cand(gold.doc, gold.start, gold.end, a=0.0),
        ],
    }
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"questions": [record]}))
    methods = {
        "by a": offline_rank.by("structured", offline_rank.col("a")),
        "reversed": offline_rank.by("structured", lambda q, c: -offline_rank.col("a")(q, c)),
    }
    got = offline_rank.evaluate(eval_dir / "qasper", dump, methods)
    assert got["by a"][question.id]["mrr@10"] == 0.5
    assert got["reversed"][question.id]["mrr@10"] == 1.0
    table = offline_rank.report(got).splitlines()
    assert table[2].startswith("| by a | 1 |") and table[3].startswith("| reversed | 1 |")


def test_checked_route_keeps_the_flat_window_when_the_best_is_elsewhere():
    # Documents a and b hold most of the window, but the best chunk is in c.
    score = np.asarray([1.0, 0.99, 0.99, 0.99, 0.98, 0.98, 0.5, 0.1])
    docs = ("c", "a", "a", "a", "b", "b", "b", "a")
    assert zh_scorers.checked_route(score, docs, 7).tolist() == [0, 1, 2, 3, 4, 5, 6]
    # When the best is in a kept document the window is taken again inside a and b.
    docs = ("a", "a", "a", "c", "b", "b", "b", "a")
    assert zh_scorers.checked_route(score, docs, 7).tolist() == [0, 1, 2, 4, 5, 6, 7]


def test_the_dumped_scores_are_the_engines_windows(hashing_index):
    from benchmarks.dump_window_features import scope_scores
    from treerag_core.base.settings import QuerySettings
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine, run
    from treerag_core.search.structure import window

    question = "How many epochs was the model trained for?"
    settings = QuerySettings().set("rerank.enabled", False)
    engine = Engine(hashing_index, get_embedder("hashing"))
    qvec = engine.query_vector(question)
    rows, _, _, flat, structured = scope_scores(
        hashing_index, question, qvec, None, settings.retrieve
    )
    size = settings.retrieve.candidate_window
    flat_window = rows[np.argsort(-flat, kind="stable")[:size]]
    for strategy, expected in (
        ("flat-hybrid", flat_window),
        ("flat-structured", rows[window(structured, size)]),
    ):
        trace = run(engine, question, settings, strategy=strategy, synthesize=False)
        got = [hashing_index.chunk_row(h.chunk.chunk_id) for h in trace.candidates]
        assert sorted(got) == sorted(expected.tolist()), strategy


def test_section_penalty_spreads_the_order_over_sections():
    q = {
        "windows": {"structured": [0, 1, 2]},
        "candidates": [
            _cand("d", 0, 1, leaf="x", a=3.0),
            _cand("d", 1, 2, leaf="x", a=2.5),
            _cand("d", 2, 3, leaf="y", a=2.0),
        ],
    }
    # Without a penalty the order is by score; with one logit per placed passage of the same
    # section, y's 2.0 beats x's second passage (2.5 - 1).
    assert offline_rank.section_penalty("structured", "a", 0.0)(q) == [0, 1, 2]
    assert offline_rank.section_penalty("structured", "a")(q) == [0, 2, 1]


def test_minmax_over_takes_the_range_among_the_masked_rows():
    values = np.asarray([0.0, 1.0, 2.0, 3.0])
    among = np.asarray([False, True, True, False])
    assert zh_scorers.minmax_over(values, among).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert (
        zh_scorers.minmax_over(values, np.asarray([True, False, False, False])).tolist()
        == [0.0] * 4
    )


def test_best_neighbour_looks_only_inside_the_same_section():
    from types import SimpleNamespace

    chunks = [
        SimpleNamespace(doc_id="d", source_node_id="a", start=0),
        SimpleNamespace(doc_id="d", source_node_id="a", start=10),
        SimpleNamespace(doc_id="d", source_node_id="b", start=20),  # a new section: no link
        SimpleNamespace(doc_id="d", source_node_id="a", start=5),  # between rows 0 and 1
    ]
    index = SimpleNamespace(chunks=chunks)
    rows = np.asarray([0, 1, 2, 3])
    score = np.asarray([1.0, 2.0, 9.0, 4.0])
    # Text order in section a is rows 0, 3, 1; row 2 is alone in section b.
    assert zh_scorers.best_neighbour(index, rows, score).tolist() == [4.0, 4.0, 0.0, 2.0]
    # Rows outside the scope are nobody's neighbour.
    assert zh_scorers.best_neighbour(index, np.asarray([0, 1]), score[:2]).tolist() == [2.0, 1.0]


def test_zh_scorers_prints_each_variant_minus_the_baseline_with_its_interval(capsys):
    base = [{"recall@1000c": 0.0, "recall@2000c": 0.0, "hit@5": 0.0}] * 4
    better = [{"recall@1000c": 1.0, "recall@2000c": 0.0, "hit@5": 0.0}] * 4
    zh_scorers.print_differences({"flat-structured": base, "variant": better}, "flat-structured")
    out = capsys.readouterr().out
    assert "| minus flat-structured | recall@1000c | recall@2000c | hit@5 |" in out
    assert (
        "| variant | **+100.0 [+100.0, +100.0]** | +0.0 [+0.0, +0.0] | +0.0 [+0.0, +0.0] |" in out
    )
    assert "| flat-structured |" not in out.split("minus flat-structured")[1]
