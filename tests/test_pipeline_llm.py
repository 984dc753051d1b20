"""The pipeline's LLM path with the real Anthropic SDK against a local fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_anthropic import FakeAnthropicServer, delay, reply, status, stream

from treerag_core.base.settings import QuerySettings
from treerag_core.llm import make_client
from treerag_core.pipeline import Engine, rerun, run

pytestmark = pytest.mark.slow

KEY = "sk-ant-test-pipeline"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def engine(paper_engine, server, monkeypatch) -> Engine:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    return Engine(
        paper_engine.index, paper_engine.embedder, api_key=KEY, client_factory=make_client
    )


def fast() -> QuerySettings:
    return QuerySettings().set("llm.timeout", 2.0).set("llm.max_retries", 0)


def leaf_id(engine: Engine, heading: str) -> str:
    return next(n.node_id for n in engine.index.leaves() if n.heading == heading)


def locate_json(*picks: tuple[str, str]) -> str:
    results = [{"node_id": node, "sub_query": sub} for node, sub in picks]
    return json.dumps({"thinking": "the epoch count is in training", "results": results})


def test_llm_locates_and_streams_a_cited_answer(engine, server):
    training = leaf_id(engine, "3.3 Training Procedure")
    path = engine.index.nodes[training].heading_path
    server.push(
        reply("```json\n" + locate_json((training, "number of training epochs")) + "\n```"),
        stream(["The model was trained for ", "50 epochs ", f"[Source: {path}]."]),
    )
    trace = run(engine, "How many epochs was AdaRouter trained for?", fast())
    assert trace.locate.locator == "llm"
    assert [leaf.node_id for leaf in trace.locate.leaves] == [training]
    assert trace.locate.leaves[0].sub_query == "number of training epochs"
    assert trace.locate.thinking == "the epoch count is in training"
    [routed] = trace.locate.document_scores  # one document in scope: kept, by the LLM's pick
    assert routed.kept and routed.basis.endswith("the LLM picked the sections")
    assert trace.answer == f"The model was trained for 50 epochs [Source: {path}]."
    assert [c.node_ids for c in trace.citations] == [(training,)]
    assert trace.citations[0].supported
    assert trace.locate.usage.input_tokens > 0 and trace.answer_usage.output_tokens > 0
    assert trace.locate.usage.cost_usd > 0
    assert not trace.fallbacks
    # The tree went out as a prompt-cached block; the answer prompt carries the evidence.
    first, second = server.requests
    assert "cache_control" in json.dumps(first.body)
    assert "[Evidence 1] Source:" in second.prompt_text


def test_unsupported_citation_is_flagged(engine, server):
    training = leaf_id(engine, "3.3 Training Procedure")
    server.push(
        reply(locate_json((training, "epochs"))),
        stream(["It was 50 epochs [Source: 2 Related Work]."]),
    )
    trace = run(engine, "How many epochs was AdaRouter trained for?", fast())
    [citation] = trace.citations
    assert citation.node_ids and not citation.supported


def test_parent_id_is_expanded_and_unknown_id_dropped(engine, server):
    methods = next(n.node_id for n in engine.index.nodes.values() if n.heading == "3 Methods")
    server.push(reply(locate_json((methods, "router design"), ("9999", "nothing"))), stream(["ok"]))
    trace = run(engine, "How does the router decide?", fast())
    assert trace.locate.locator == "llm"
    picked = [leaf.node_id for leaf in trace.locate.leaves]
    assert picked and all(engine.index.nodes[p].is_leaf for p in picked)
    assert all(methods in engine.index.ancestors(p) for p in picked)
    notes = " ".join(trace.locate.notes)
    assert "expanded parent" in notes and "dropped unknown id 9999" in notes


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (reply("I think the answer is in training."), "invalid_json"),
        (reply('{"thinking": "x", "results": []}'), "empty_results"),
        (reply(locate_json(("9999", "x"))), "no_valid_ids"),
        (
            status(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}),
            "api_error",
        ),
        (status(429), "rate_limit"),
        (delay(5.0), "timeout"),
    ],
    ids=["invalid-json", "empty", "unknown-ids", "http-500", "http-429", "timeout"],
)
def test_locate_failures_fall_back_to_local_with_the_reason(engine, server, behaviour, reason):
    server.push(behaviour)
    server.push(stream(["Fifty epochs."]))
    trace = run(engine, "How many epochs was AdaRouter trained for?", fast())
    assert trace.locate.locator == "local"
    assert [(f.stage, f.reason) for f in trace.fallbacks] == [("locate", reason)]
    assert trace.reranked  # the rest of the pipeline still ran
    assert trace.answer == "Fifty epochs."


def test_answer_failure_falls_back_to_extractive(engine, server):
    training = leaf_id(engine, "3.3 Training Procedure")
    server.push(reply(locate_json((training, "epochs"))), status(500))
    trace = run(engine, "How many epochs was AdaRouter trained for?", fast())
    assert [(f.stage, f.reason) for f in trace.fallbacks] == [("synthesize", "api_error")]
    assert "[Source:" in trace.answer and "50" in trace.answer


def test_rerun_with_new_fusion_makes_no_llm_call(engine, server):
    training = leaf_id(engine, "3.3 Training Procedure")
    server.push(reply(locate_json((training, "epochs"))), stream(["Fifty."]))
    first = run(engine, "How many epochs was AdaRouter trained for?", fast())
    calls = len(server.requests)
    again = rerun(engine, first, fast().set("retrieve.fusion", "rrf"), synthesize=False)
    assert len(server.requests) == calls
    assert again.locate == first.locate and again.settings["retrieve"]["fusion"] == "rrf"


def test_llm_off_makes_no_call_even_with_a_key(engine, server):
    trace = run(
        engine, "How many epochs was AdaRouter trained for?", fast().set("llm.enabled", False)
    )
    assert server.requests == []
    assert trace.locate.locator == "local"


def test_prompt_budget_narrows_a_corpus_to_the_most_relevant_documents(
    hashing_index, server, monkeypatch
):
    from treerag_core.index.embedders import get_embedder

    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    engine = Engine(hashing_index, get_embedder("hashing"), api_key=KEY, client_factory=make_client)
    paper = next(d for d in hashing_index.documents if d.doc_id == "test_paper.md")
    training = next(
        n.node_id
        for n in hashing_index.leaves(paper.doc_id)
        if n.heading == "3.3 Training Procedure"
    )
    server.push(reply(locate_json((training, "epochs"))), stream(["ok"]))
    settings = fast().set("locate.budget_tokens", 50)  # far too small for four trees
    trace = run(engine, "AdaRouter training epochs EUR/USD router", settings)
    assert trace.locate.locator == "llm"
    [note] = [n for n in trace.locate.notes if "left out" in n]
    assert "left out 3 document(s)" in note and "test_paper.md" not in note
    assert any("the tree was cut after" in n for n in trace.locate.notes)
    prompt = server.requests[0].prompt_text
    assert f"[{paper.root_id}]" in prompt  # the most relevant document was kept
    others = [d.root_id for d in hashing_index.documents if d.doc_id != paper.doc_id]
    assert not any(f"[{root}]" in prompt for root in others)


def test_an_answer_citing_drilldowns_parent_context_is_traced_to_the_parent(
    hashing_index, server, monkeypatch
):
    from treerag_core.index.embedders import get_embedder
    from treerag_core.strategies.drilldown.search import DrilldownOptions

    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    engine = Engine(hashing_index, get_embedder("hashing"), api_key=KEY, client_factory=make_client)
    server.push(stream(["提前三十日 [来源: 父块上下文]。", "摘要 [来源: 文档摘要]。"]))
    settings = (
        QuerySettings(strategy="drilldown")
        .set("rerank.enabled", False)
        .with_option("drilldown", DrilldownOptions(1, 1, 3, "summary", "summary"))
    )
    trace = run(engine, "劳动者解除劳动合同需要提前多少天书面通知用人单位？", settings)
    parent_block, summary_block = trace.citations
    parents = trace.sections[1]
    leaves = {c.source_node_id for c in hashing_index.chunks if c.chunk_id in parents.chunk_ids}
    # The parent context was built from the chosen parent's passages: citing it is supported.
    assert parent_block.supported and set(parent_block.node_ids) == leaves
    # A document's summary is no passage of it: citing the summary stays unsupported.
    assert not summary_block.supported and summary_block.node_ids == ()
