"""The drill-down layers of an index: one K-Type vector per document, one vector per section."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treerag_core.base.artifacts import present, read_json, read_npy
from treerag_core.base.errors import IndexFormatError, LLMError
from treerag_core.base.types import TreeNode
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.base import VectorPoint, unit_rows
from treerag_core.strategies.drilldown.ktype import (
    KTypeLLM,
    KTypeSummary,
    document_key,
    english_words,
    extractive_ktype,
    llm_ktype,
)

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex

LAYERS_VERSION = 1
LAYERS_JSON = "layers.json"
LAYERS_NPY = "layers.npy"
PART = "drilldown"  # the family's key in CorpusIndex.parts
Embed = Callable[[list[str]], np.ndarray]


def parent_text(node: TreeNode) -> str:
    """What a parent (a leaf section) is embedded as: its heading path and its summary."""
    return f"{node.heading_path}\n{node.summary}".strip()


@dataclass
class Layers:
    """Document and parent vectors (rows: `doc_ids` then `parent_ids`) and the K-Type texts.

    `vectors_from` is "embedded" (the summaries' own vectors) or "chunk-mean" (an index built
    before layers existed: each document and section is the mean of its chunks' vectors).
    """

    summaries: dict[str, KTypeSummary]
    doc_ids: list[str]
    parent_ids: list[str]
    vectors: np.ndarray
    texts: list[str]  # what each row embeds: reused when unchanged on the next build
    ktype_cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    vectors_from: str = "embedded"
    notes: tuple[str, ...] = ()
    _tokens: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _doc_row: dict[str, int] = field(default_factory=dict, repr=False)
    _parent_row: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._doc_row = {d: i for i, d in enumerate(self.doc_ids)}
        self._parent_row = {p: len(self.doc_ids) + i for i, p in enumerate(self.parent_ids)}
        expected = (len(self.doc_ids) + len(self.parent_ids), self.vectors.shape[-1])
        if self.vectors.ndim != 2 or self.vectors.shape != expected:
            raise ValueError(f"layer vectors have shape {self.vectors.shape}, expected {expected}")
        if len(self.texts) != expected[0]:
            raise ValueError(f"{len(self.texts)} layer texts for {expected[0]} vectors")

    def doc_vectors(self, doc_ids: Sequence[str]) -> np.ndarray:
        return self.vectors[[self._doc_row[d] for d in doc_ids]]

    def parent_vectors(self, parent_ids: Sequence[str]) -> np.ndarray:
        return self.vectors[[self._parent_row[p] for p in parent_ids]]

    def has_parent(self, parent_id: str) -> bool:
        return parent_id in self._parent_row

    def tokens(self, text: str) -> list[str]:
        """`tokenize(text)`, once per text per index (layer BM25 re-reads the same summaries)."""
        got = self._tokens.get(text)
        if got is None:
            got = self._tokens[text] = tokenize(text)  # a racing duplicate computes the same
        return got


def _doc_freq(index: CorpusIndex) -> Counter[str]:
    freq: Counter[str] = Counter()
    for doc in index.documents:
        if doc.language == "en":
            freq.update(set(english_words(index.texts[doc.doc_id])))
    return freq


def ktype_summaries(
    index: CorpusIndex, summarizer: KTypeLLM | None = None, cache: dict | None = None
) -> tuple[dict[str, KTypeSummary], dict[str, dict], tuple[str, ...]]:
    """Each document's K-Type (LLM when a summarizer is given, else extractive), the LLM cache
    to keep in the index, and notes on what fell back."""
    freq = _doc_freq(index)
    n_docs = sum(d.language == "en" for d in index.documents)
    by_doc: dict[str, list[TreeNode]] = {}
    for node in index.nodes.values():
        by_doc.setdefault(node.doc_id, []).append(node)
    base = {
        d.doc_id: extractive_ktype(d, by_doc[d.doc_id], index.texts[d.doc_id], freq, n_docs)
        for d in index.documents
    }
    notes: list[str] = []
    got: dict[str, dict] = {}
    if summarizer is not None:
        try:
            got = summarizer([(d, by_doc[d.doc_id]) for d in index.documents])
        except LLMError as exc:
            notes.append(f"K-Type by LLM failed ({exc.reason}): extractive summaries kept")
    elif cache:
        got = dict(cache)
    out = {}
    for doc in index.documents:
        parsed = got.get(document_key(doc))
        out[doc.doc_id] = llm_ktype(base[doc.doc_id], parsed) if parsed else base[doc.doc_id]
    kept = {
        document_key(d): got[document_key(d)] for d in index.documents if document_key(d) in got
    }
    return out, kept, tuple(notes)


def _parents(index: CorpusIndex) -> list[str]:
    """Leaf sections that hold chunks, in document order: the parent layer."""
    return [
        n.node_id for n in index.nodes.values() if n.is_leaf and len(index.leaf_rows(n.node_id))
    ]


def build_layers(
    index: CorpusIndex,
    embed: Embed,
    summarizer: KTypeLLM | None = None,
    previous: Layers | None = None,
) -> Layers:
    """Summarise and embed the document and parent layers; vectors of unchanged texts are reused."""
    cache = previous.ktype_cache if previous is not None else None
    summaries, kept, notes = ktype_summaries(index, summarizer, cache)
    doc_ids = [d.doc_id for d in index.documents]
    parent_ids = _parents(index)
    texts = [summaries[d].text for d in doc_ids] + [parent_text(index.nodes[p]) for p in parent_ids]
    known: dict[str, np.ndarray] = {}
    if previous is not None and previous.vectors_from == "embedded":
        known = {t: previous.vectors[i] for i, t in enumerate(previous.texts)}
    vectors = np.zeros((len(texts), index.dim), dtype=np.float32)
    todo = [i for i, t in enumerate(texts) if t not in known]
    for i, t in enumerate(texts):
        if t in known:
            vectors[i] = known[t]
    if todo:
        vectors[todo] = unit_rows(embed([texts[i] for i in todo]))
    return Layers(summaries, doc_ids, parent_ids, vectors, texts, kept, "embedded", notes)


def chunk_mean_layers(index: CorpusIndex) -> Layers:
    """Layers without an embedder (an index built before layers): means of chunk vectors."""
    summaries, kept, _ = ktype_summaries(index)
    doc_ids = [d.doc_id for d in index.documents]
    parent_ids = _parents(index)
    rows_of_doc: dict[str, list[int]] = {}
    for row, chunk in enumerate(index.chunks):
        rows_of_doc.setdefault(chunk.doc_id, []).append(row)
    vectors = np.zeros((len(doc_ids) + len(parent_ids), index.dim), dtype=np.float32)
    for i, doc_id in enumerate(doc_ids):
        rows = rows_of_doc.get(doc_id, [])
        if rows:
            vectors[i] = index.embeddings[rows].mean(axis=0)
    for j, parent_id in enumerate(parent_ids):
        vectors[len(doc_ids) + j] = index.embeddings[index.leaf_rows(parent_id)].mean(axis=0)
    note = "index built without drill-down layers: document and section vectors are chunk means"
    texts = [summaries[d].text for d in doc_ids] + [parent_text(index.nodes[p]) for p in parent_ids]
    return Layers(
        summaries, doc_ids, parent_ids, unit_rows(vectors), texts, kept, "chunk-mean", (note,)
    )


_ensure_lock = threading.Lock()


def layers_of(index: CorpusIndex) -> Layers | None:
    """The index's drill-down layers as built or loaded (None: built or saved without)."""
    return index.parts.get(PART)


def ensure_layers(index: CorpusIndex) -> Layers:
    """The index's layers, computed once (as chunk means) for an index saved without them."""
    layers = layers_of(index)
    if layers is None:
        with _ensure_lock:
            layers = layers_of(index)
            if layers is None:
                layers = chunk_mean_layers(index)
                index.parts[PART] = layers
    return layers


# ---- persistence (JSON + .npy, no pickle) -------------------------------------------------


def save_layers(layers: Layers, folder: Path) -> None:
    data = {
        "version": LAYERS_VERSION,
        "vectors_from": layers.vectors_from,
        "doc_ids": layers.doc_ids,
        "parent_ids": layers.parent_ids,
        "texts": layers.texts,
        "summaries": [layers.summaries[d].to_dict() for d in layers.doc_ids],
        "ktype_cache": layers.ktype_cache,
        "notes": list(layers.notes),
    }
    (folder / LAYERS_JSON).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    np.save(folder / LAYERS_NPY, layers.vectors.astype(np.float32), allow_pickle=False)


def load_layers(folder: Path, dim: int, hint: str) -> Layers | None:
    """The saved layers, None when the index has none; IndexFormatError when corrupt."""
    json_path, npy_path = folder / LAYERS_JSON, folder / LAYERS_NPY
    if not present(json_path) and not present(npy_path):
        return None
    data = read_json(json_path, dict, hint)

    def bad(what: str) -> IndexFormatError:
        return IndexFormatError(f"{json_path} is corrupt ({what}); {hint}")

    if data.get("version") != LAYERS_VERSION:
        raise bad(f"layers version {data.get('version')!r}, expected {LAYERS_VERSION}")
    lists = {k: data.get(k) for k in ("doc_ids", "parent_ids", "texts", "notes")}
    lists["notes"] = data.get("notes", [])
    for key, value in lists.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad(f"{key} is not a list of strings")
    rows = len(lists["doc_ids"]) + len(lists["parent_ids"])
    if len(lists["texts"]) != rows:
        raise bad(f"{len(lists['texts'])} texts for {rows} rows")
    cache = data.get("ktype_cache", {})
    if not isinstance(cache, dict) or not all(isinstance(v, dict) for v in cache.values()):
        raise bad("ktype_cache is not an object of objects")
    vectors_from = data.get("vectors_from", "embedded")
    if not isinstance(vectors_from, str):
        raise bad("vectors_from is not a string")
    summaries = data.get("summaries")
    if not isinstance(summaries, list) or not all(isinstance(s, dict) for s in summaries):
        raise bad("summaries is not a list of objects")
    try:
        by_doc = {s["doc_id"]: KTypeSummary.from_dict(s) for s in summaries}
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"a summary: {exc!r}") from exc
    if sorted(by_doc) != sorted(lists["doc_ids"]):
        raise bad("its summaries are not one per document")
    vectors = read_npy(npy_path, dim, rows, hint=hint)
    return Layers(
        by_doc,
        lists["doc_ids"],
        lists["parent_ids"],
        vectors,
        lists["texts"],
        cache,
        vectors_from,
        tuple(lists["notes"]),
    )


# ---- points for a vector store -------------------------------------------------------------


def layer_points(index: CorpusIndex) -> list[VectorPoint]:
    """Every document, parent and child of the index as points (seed 001's three layers)."""
    layers = ensure_layers(index)
    lang = {d.doc_id: d.language for d in index.documents}
    points: list[VectorPoint] = []
    doc_vectors = layers.doc_vectors(layers.doc_ids)
    for doc_id, vector in zip(layers.doc_ids, doc_vectors, strict=True):
        summary = layers.summaries[doc_id]
        root = index.document(doc_id).root_id
        points.append(
            VectorPoint(
                "document",
                doc_id,
                root,
                vector,
                None,
                summary.title,
                lang[doc_id],
                summary.text,
                tuple(tokenize(summary.text)),
            )
        )
    parent_vectors = layers.parent_vectors(layers.parent_ids)
    for parent_id, vector in zip(layers.parent_ids, parent_vectors, strict=True):
        node = index.nodes[parent_id]
        points.append(
            VectorPoint(
                "parent",
                node.doc_id,
                parent_id,
                vector,
                None,
                node.heading_path,
                lang[node.doc_id],
                parent_text(node),
                tuple(tokenize(parent_text(node))),
            )
        )
    for row, chunk in enumerate(index.chunks):
        points.append(
            VectorPoint(
                "child",
                chunk.doc_id,
                chunk.chunk_id,
                index.embeddings[row],
                chunk.source_node_id,
                chunk.heading_path,
                lang[chunk.doc_id],
                chunk.text,
                tuple(index.tokens[row]),
            )
        )
    return points
