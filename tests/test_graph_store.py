"""Leaf graphs round-trip through JSON exactly; corrupt or newer files are named errors."""

from __future__ import annotations

import json

import pytest

from treerag_core.chunking import chunk_leaf
from treerag_core.errors import IndexFormatError
from treerag_core.graph.extract import build_leaf_graph
from treerag_core.graph.store import dumps_graphs, load_graphs, loads_graphs, save_graphs
from treerag_core.types import TreeNode

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
    with pytest.raises(IndexFormatError, match="corrupt"):
        loads_graphs(json.dumps(data))
