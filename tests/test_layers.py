"""Drill-down layers: built with the index, saved as JSON + .npy, chunk means for old indexes."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from treerag_core.base.errors import IndexFormatError
from treerag_core.index.store import load_index, save_index
from treerag_core.strategies.drilldown.layers import (
    LAYERS_JSON,
    chunk_mean_layers,
    ensure_layers,
    layer_points,
    layers_of,
    parent_text,
)


def test_layers_cover_every_document_and_section_with_chunks(hashing_index):
    layers = layers_of(hashing_index)
    assert layers.doc_ids == [d.doc_id for d in hashing_index.documents]
    with_chunks = {c.source_node_id for c in hashing_index.chunks}
    assert set(layers.parent_ids) == with_chunks
    assert layers.vectors.shape == (len(layers.texts), hashing_index.dim)
    assert np.allclose(np.linalg.norm(layers.vectors, axis=1), 1.0, atol=1e-5)
    first_parent = hashing_index.nodes[layers.parent_ids[0]]
    assert layers.texts[len(layers.doc_ids)] == parent_text(first_parent)


def test_round_trip_and_corruption(hashing_index, tmp_path):
    folder = save_index(hashing_index, tmp_path / "ix")
    loaded = load_index(folder)
    assert layers_of(loaded).texts == layers_of(hashing_index).texts
    assert np.array_equal(layers_of(loaded).vectors, layers_of(hashing_index).vectors)
    data = json.loads((folder / LAYERS_JSON).read_text(encoding="utf-8"))
    data["doc_ids"] = data["doc_ids"][::-1]
    (folder / LAYERS_JSON).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="does not match this index"):
        load_index(folder)
    (folder / LAYERS_JSON).write_text("{", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="corrupt"):
        load_index(folder)


def test_an_index_without_layers_gets_chunk_means(hashing_index):
    old = replace(hashing_index, parts={})
    layers = ensure_layers(old)
    assert layers.vectors_from == "chunk-mean" and "chunk means" in layers.notes[0]
    assert ensure_layers(old) is layers  # computed once
    assert layers.doc_ids == layers_of(hashing_index).doc_ids
    direct = chunk_mean_layers(hashing_index)
    assert np.allclose(direct.vectors, layers.vectors)


def test_points_of_three_kinds(hashing_index):
    points = layer_points(hashing_index)
    kinds = [p.kind for p in points]
    assert kinds.count("document") == len(hashing_index.documents)
    assert kinds.count("child") == len(hashing_index.chunks)
    child = next(p for p in points if p.kind == "child")
    assert child.parent_id == hashing_index.chunks[0].source_node_id and child.tokens
    assert len({p.id for p in points}) == len(points)  # no id collides
