"""The strategy registry: built-ins registered once, and a plug-in seen by every front end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import ContextSection, LocatedLeaf, LocateResult
from treerag_core.cli import build_parser, main
from treerag_core.evaluation.harness import EvalConfig
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine, run
from treerag_core.strategies import (
    QueryContext,
    Retrieval,
    get_strategy,
    option_types,
    register,
    strategy_names,
    unregister,
)
from treerag_core.strategies.treerag.strategy import leaf_search

MOCK = QuerySettings().set("llm.enabled", False).set("rerank.enabled", False)


@dataclass(frozen=True)
class FirstLeafOptions:
    """The plug-in's own settings: how many leaves of the first document to search."""

    leaves: int = 2


class FirstLeaves:
    """A tiny strategy: search the first N leaves of the first document in scope."""

    name = "first-leaves"
    label = "The first leaves of the first document (a test plug-in)"
    reads_structure = True
    locates = True
    needs_gold_leaves = False
    searches_each_leaf = True  # leaf_search keeps each leaf's top_k_per_leaf
    uses_locator = False
    options_type = FirstLeafOptions

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        return settings.with_(strategy=self.name)

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        return {"leaves": settings.option(self.name, FirstLeafOptions()).leaves}

    def locate(self, ctx: QueryContext) -> LocateResult:
        options = ctx.settings.option(self.name, FirstLeafOptions())
        doc = ctx.scope[0] if ctx.scope else ctx.index.documents[0].doc_id
        leaves = tuple(
            LocatedLeaf(n.node_id, n.heading_path, ctx.question, None, "first")
            for n in ctx.index.leaves(doc)[: options.leaves]
        )
        return LocateResult(leaves, "The first leaves.", "first")

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        searched = leaf_search(ctx, located)  # treerag's own in-leaf search, reused
        note = ContextSection("note", "Plug-in note", "Searched the first leaves only.")
        return Retrieval(searched.groups, searched.candidates, (note,))


@pytest.fixture()
def plugin():
    register(FirstLeaves)
    yield get_strategy("first-leaves")
    unregister("first-leaves")


def test_builtins_are_registered_in_menu_order():
    names = strategy_names()
    builtins = StrategyName.values()
    assert names[: len(builtins)] == list(builtins) and names[0] == "treerag"
    assert "oracle-sections" not in strategy_names(runnable=True)
    assert not get_strategy("flat-hybrid").reads_structure
    assert get_strategy("treerag").reads_structure
    assert get_strategy("flat-structured").reads_structure  # the same ranking, no routing
    assert not get_strategy("flat-structured").locates


def test_unknown_strategy_lists_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown strategy .nope.; choose one of treerag, "):
        get_strategy("nope")


def test_a_registered_plugin_runs_and_shows_in_the_trace(plugin, hashing_index):
    engine = Engine(hashing_index, get_embedder("hashing"))
    settings = MOCK.with_option("first-leaves", FirstLeafOptions(leaves=1))
    trace = run(
        engine, "router accuracy", settings, strategy="first-leaves", scope=["test_paper.md"]
    )
    assert trace.strategy == "first-leaves" and len(trace.locate.leaves) == 1
    assert trace.settings["options"] == {"first-leaves": {"leaves": 1}}
    assert [s.title for s in trace.sections] == ["Plug-in note"]
    assert trace.locate.inputs == {"leaves": 1}
    assert option_types()["first-leaves"] is FirstLeafOptions


def test_the_cli_offers_a_registered_plugin(plugin, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["query", "--help"])
    assert "first-leaves" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse refuses a name outside the registry
        main(["query", "--index", "missing", "--query", "q", "--strategy", "nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_the_harness_accepts_a_registered_plugin(plugin):
    assert EvalConfig(strategies=("first-leaves", "flat-hybrid")).strategies[0] == "first-leaves"
    with pytest.raises(ValueError, match="unknown strategies"):
        EvalConfig(strategies=("nope",))


def test_the_explorer_menus_read_the_registry(plugin, hashing_index):
    from treerag_core.compare import compare_strategies
    from ui.common.query_controls import runnable_strategies

    # The Ask page's strategy menu and the Compare list are built from the registry.
    assert "first-leaves" in runnable_strategies()
    engine = Engine(hashing_index, get_embedder("hashing"))
    compared = compare_strategies(engine, "router accuracy", MOCK, scope=["test_paper.md"])
    assert "first-leaves" in [c.strategy for c in compared]


def test_a_plugin_missing_a_protocol_member_is_refused_by_name():
    class Incomplete:
        name = "incomplete"
        label = "misses two members"
        reads_structure = locates = needs_gold_leaves = uses_locator = False
        options_type = None

        def effective_settings(self, settings):
            return settings

        def locate_inputs(self, settings, locator):
            return {}

        def locate(self, ctx):  # no retrieve, no searches_each_leaf
            raise NotImplementedError

    with pytest.raises(ValueError, match=r"incomplete.*lacks searches_each_leaf, retrieve"):
        register(Incomplete)
    assert "incomplete" not in strategy_names()


@pytest.mark.parametrize(
    "name", [s for s in strategy_names() if not get_strategy(s).searches_each_leaf]
)
def test_strategies_that_do_not_search_each_leaf_ignore_the_per_leaf_top_k(name, hashing_index):
    # The explorer greys the slider out for them: moving it must change nothing there.
    engine = Engine(hashing_index, get_embedder("hashing"))
    question = "How many epochs was the model trained for?"
    runs = [
        run(engine, question, MOCK.set("retrieve.top_k_per_leaf", k), strategy=name) for k in (1, 8)
    ]
    shown = [[[h.chunk.chunk_id for h in g.hits] for g in t.retrieved] for t in runs]
    reranked = [[h.chunk.chunk_id for h in t.reranked] for t in runs]
    assert shown[0] == shown[1] and reranked[0] == reranked[1]
