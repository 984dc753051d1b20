"""Leaf graphs round-trip through JSON exactly; corrupt or newer files are named errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import TreeNode
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.strategies.graph.extract import build_leaf_graph
from treerag_core.strategies.graph.part import graph_vectors_of, graphs_of
from treerag_core.strategies.graph.store import (
    GRAPHS_FILE,
    dumps_graphs,
    load_graphs,
    loads_graphs,
    save_graphs,
)

TEXT = (
    "Graph encoders read dependency trees. Dependency trees help graph encoders. "
    "The decoder writes summaries with attention."
)


def _graph():
    leaf = TreeNode("0002", "d", "Leaf", 1, TEXT, 0, len(TEXT), "Leaf")
    return build_leaf_graph("0002", "d", chunk_leaf(leaf, TEXT, 60, 15, 5), "en")


def test_round_trip_is_exact(tmp_path):
    graph = _graph()
    assert load_graphs(tmp_path) is None  # an index built without graphs
    save_graphs([graph], tmp_path)
    loaded = load_graphs(tmp_path)
    assert loaded == {"0002": graph}


def test_corrupt_and_newer_files_are_index_format_errors():
    with pytest.raises(IndexFormatError, match="corrupt"):
        loads_graphs("{not json")
    data = json.loads(dumps_graphs([_graph()]))
    data["format"] = 99
    with pytest.raises(IndexFormatError, match="rebuild"):
        loads_graphs(json.dumps(data))
    del data["graphs"][0]["concepts"][0]["mentions"]
    data["format"] = 1
    with pytest.raises(IndexFormatError, match="leaf '0002': lacks the field 'mentions'"):
        loads_graphs(json.dumps(data))


# ---- a graphs.json from anyone: every reference is checked on load ---------------------------


def _damaged(change) -> str:
    data = json.loads(dumps_graphs([_graph()]))
    change(data["graphs"][0])
    return json.dumps(data)


def _relation_to_missing_concept(graph: dict) -> None:
    graph["relations"][0]["target"] = "0002#c999"


def _nan_weight(graph: dict) -> None:
    graph["relations"][0]["weight"] = float("nan")  # json.dumps writes NaN, json.loads reads it


def _infinite_weight(graph: dict) -> None:
    graph["relations"][0]["weight"] = float("inf")


def _backwards_span(graph: dict) -> None:
    span = graph["concepts"][0]["mentions"][0]
    span[0], span[1] = span[1] + 1, span[0]


def _negative_span(graph: dict) -> None:
    graph["relations"][0]["evidence"][0][0] = -1


def _float_offset(graph: dict) -> None:
    graph["concepts"][0]["mentions"][0][1] += 0.5


def _chunk_ids_string(graph: dict) -> None:
    graph["concepts"][0]["mentions"][0][2] = "0002-0"


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (_relation_to_missing_concept, "0002#c999"),
        (_nan_weight, "nan"),
        (_infinite_weight, "inf"),
        (_backwards_span, "start <= end"),
        (_negative_span, "start <= end"),
        (_float_offset, "start <= end"),
        (_chunk_ids_string, "not strings"),
    ],
)
def test_a_graph_that_contradicts_itself_is_refused_naming_the_entry(damage, named):
    assert len(_graph().relations) > 0
    with pytest.raises(IndexFormatError, match="rebuild") as info:
        loads_graphs(_damaged(damage), "idx/graphs.json")
    message = str(info.value)
    assert message.startswith("idx/graphs.json is corrupt (graph 0, leaf '0002'")
    assert named in message and "\n" not in message


@pytest.fixture(scope="module")
def graph_folder(tmp_path_factory) -> Path:
    """A small saved index with leaf graphs."""
    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=300)
    index = build_index(sample_sources(["test_paper.md"]), settings, embedder)
    assert graphs_of(index)
    return save_index(index, tmp_path_factory.mktemp("graphs") / "idx")


def _tampered(tmp_path: Path, source: Path, change) -> Path:
    folder = tmp_path / "idx"
    shutil.copytree(source, folder)
    path = folder / GRAPHS_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["graphs"][0])
    path.write_text(json.dumps(data), encoding="utf-8")
    return folder


def _unknown_chunk(graph: dict) -> None:
    graph["relations"][0]["evidence"][0][2] = ["9999-7"]


def _chunk_of_another_leaf(graph: dict, other: str = "") -> None:
    graph["concepts"][0]["mentions"][0][2] = [other]


def _span_past_the_text(graph: dict) -> None:
    graph["concepts"][-1]["mentions"][-1][1] = 10**9


def test_a_good_graph_folder_loads(graph_folder):
    index = load_index(graph_folder)
    assert graphs_of(index) and set(graph_vectors_of(index)) == set(graphs_of(index))


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (_unknown_chunk, "names chunk '9999-7', not a chunk of the leaf"),
        (_span_past_the_text, "outside document"),
    ],
)
def test_a_graph_that_contradicts_its_index_is_refused(tmp_path, graph_folder, damage, named):
    folder = _tampered(tmp_path, graph_folder, damage)
    with pytest.raises(IndexFormatError) as info:
        load_index(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / GRAPHS_FILE}: the graph of leaf ")
    assert named in message and "rebuild" in message and "\n" not in message


def test_a_chunk_of_another_leaf_is_refused(tmp_path, graph_folder):
    index = load_index(graph_folder)
    leaf_id = json.loads((graph_folder / GRAPHS_FILE).read_text())["graphs"][0]["leaf_id"]
    other = next(c.chunk_id for c in index.chunks if c.source_node_id != leaf_id)
    folder = _tampered(tmp_path, graph_folder, lambda g: _chunk_of_another_leaf(g, other))
    with pytest.raises(IndexFormatError, match=f"names chunk '{other}', not a chunk of the leaf"):
        load_index(folder)
