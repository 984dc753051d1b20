"""The strategy registry: built-ins registered once, and a plug-in seen by every front end."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import sample_sources
from treerag_core.base.artifacts import read_json
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import ContextSection, LocatedLeaf, LocateResult
from treerag_core.cli import build_parser, main
from treerag_core.evaluation.harness import EvalConfig
from treerag_core.index.corpus import build_index, corpus_stats
from treerag_core.index.embedders import get_embedder
from treerag_core.index.parts import BuildCost, PartBuild, estimate_seconds, index_parts
from treerag_core.index.store import kept_on_rebuild, load_index, save_index
from treerag_core.pipeline import Engine, run
from treerag_core.strategies import (
    Family,
    QueryContext,
    Retrieval,
    families,
    family_of,
    get_strategy,
    option_types,
    register,
    register_family,
    strategy_names,
    unregister,
    unregister_family,
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


# ---- a family with its own index part and view: one folder's worth, registered at test time


LENGTHS_FILE = "leaf_lengths.json"
LENGTHS_NOTES = "leaf_lengths-notes.txt"  # a file the family keeps across rebuilds


class LeafLengthsPart:
    """The family's index part: each leaf's length (characters or tokens), stored as JSON."""

    key = "leaf-lengths"
    files = (LENGTHS_FILE,)
    kept_on_rebuild = (LENGTHS_NOTES,)
    inputs = ("length_unit",)  # a build_index keyword this part reads
    cost = BuildCost("leaf", 1e-6)

    def build(self, index, ctx: PartBuild) -> dict[str, int]:
        chars = ctx.inputs.get("length_unit", "chars") == "chars"
        out = {}
        for leaf in index.leaves():
            text = index.texts[leaf.doc_id][leaf.start : leaf.end]
            out[leaf.node_id] = len(text) if chars else len(text.split())
        return out

    def save(self, part, folder: Path, index) -> None:
        (folder / LENGTHS_FILE).write_text(json.dumps(part), encoding="utf-8")

    def load(self, folder: Path, index, hint: str) -> dict[str, int] | None:
        path = folder / LENGTHS_FILE
        if not path.is_file():
            return None
        data = read_json(path, dict, hint)
        if set(data) - set(index.nodes):
            raise IndexFormatError(f"{path} does not match this index; {hint}")
        return data

    def stats(self, part) -> dict[str, int]:
        return {"longest_leaf_measured": max((part or {}).values(), default=0)}

    def units(self, index) -> int:
        return len(index.leaves())


class LongestLeaves(FirstLeaves):
    """Locate the longest leaves by the family's part; search them with treerag's leaf search."""

    name = "longest-leaves"
    label = "The longest leaves (a test family with an index part)"
    options_type = FirstLeafOptions

    def locate(self, ctx: QueryContext) -> LocateResult:
        lengths = ctx.index.parts[LeafLengthsPart.key]
        options = ctx.settings.option(self.name, FirstLeafOptions())
        longest = sorted(lengths, key=lambda leaf: (-lengths[leaf], leaf))[: options.leaves]
        leaves = tuple(
            LocatedLeaf(leaf, ctx.index.nodes[leaf].heading_path, ctx.question, None, "long")
            for leaf in longest
        )
        return LocateResult(leaves, "The longest leaves.", "long")


LENGTHS_FAMILY = Family(
    name="leaf-lengths",
    strategies=(LongestLeaves.name,),
    part=LeafLengthsPart(),
    options_type=FirstLeafOptions,
    view="leaf-length-bars",
)


@pytest.fixture()
def lengths_family():
    from ui.ask import views

    drawn: list[tuple[str, int]] = []
    register_family(LENGTHS_FAMILY)
    register(LongestLeaves)
    views.register_view("leaf-length-bars", lambda trace, engine: drawn.append((trace.strategy, 1)))
    yield drawn
    views.unregister_view("leaf-length-bars")
    unregister(LongestLeaves.name)
    unregister_family(LENGTHS_FAMILY.name)


def test_a_family_with_an_index_part_and_a_view_is_one_registration(lengths_family, tmp_path):
    from ui.ask import views

    embedder = get_embedder("hashing")
    sources = sample_sources()
    settings = IndexSettings(embedder="hashing")
    # The index build finds the part and hands it its own keyword argument.
    index = build_index(sources, settings, embedder, length_unit="chars")
    lengths = index.parts[LeafLengthsPart.key]
    leaf = index.leaves()[0]
    assert lengths[leaf.node_id] == leaf.end - leaf.start and len(lengths) == len(index.leaves())
    assert corpus_stats(index)["longest_leaf_measured"] == max(lengths.values())
    assert estimate_seconds(index)[LeafLengthsPart.key] == pytest.approx(1e-6 * len(lengths))
    # The store writes it, loads it back, and keeps the family's kept file across a rebuild.
    folder = save_index(index, tmp_path / "idx")
    assert (folder / LENGTHS_FILE).is_file()
    (folder / LENGTHS_NOTES).write_text("kept", encoding="utf-8")
    loaded = load_index(folder)
    assert loaded.parts[LeafLengthsPart.key] == lengths
    rebuilt = build_index(sources, settings, embedder, previous=loaded, length_unit="words")
    assert rebuilt.parts[LeafLengthsPart.key] != lengths  # its input changed what it built
    save_index(rebuilt, folder)
    assert (folder / LENGTHS_NOTES).read_text(encoding="utf-8") == "kept"
    (folder / LENGTHS_FILE).write_text(json.dumps({"nope": 1}), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="does not match this index"):
        load_index(folder)
    # The registry knows the strategy's family; the pipeline runs it; the Ask page draws its view.
    assert family_of(LongestLeaves.name) is LENGTHS_FAMILY
    assert option_types()[LongestLeaves.name] is FirstLeafOptions
    engine = Engine(loaded, embedder)
    trace = run(engine, "router accuracy", MOCK, strategy=LongestLeaves.name)
    longest = sorted(lengths, key=lambda leaf_id: (-lengths[leaf_id], leaf_id))[:2]
    assert [leaf.node_id for leaf in trace.locate.leaves] == longest
    assert views.draw(trace, engine) and lengths_family == [(LongestLeaves.name, 1)]


def test_a_removed_family_leaves_the_index_as_before(lengths_family, hashing_index):
    unregister_family(LENGTHS_FAMILY.name)
    settings, embedder = IndexSettings(embedder="hashing"), get_embedder("hashing")
    index = build_index(sample_sources(), settings, embedder)
    assert LeafLengthsPart.key not in index.parts
    assert sorted(index.parts) == sorted(hashing_index.parts)
    with pytest.raises(TypeError, match="length_unit"):  # no part reads it any more
        build_index(sample_sources(), settings, embedder, length_unit="chars")


def test_each_builtin_family_declares_its_strategies_part_and_view():
    from ui.ask import views

    owned = [name for family in families() for name in family.strategies]
    assert sorted(owned) == sorted(strategy_names())  # every built-in has exactly one family
    with_view = [f for f in families() if f.view is not None]
    assert all(f.view in views.VIEWS for f in with_view)  # the explorer draws each one
    kept = kept_on_rebuild()
    assert "tree_edits.json" in kept
    for family in families():
        if family.part is not None:
            assert family.part.key in {p.key for p in index_parts()}
            assert set(family.part.kept_on_rebuild) <= set(kept)
            assert family.part.cost.seconds_per_unit > 0
    assert views.view_for(FirstLeaves.name) is None  # a strategy without a family: no view
