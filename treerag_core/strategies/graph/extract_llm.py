"""The opt-in LLM extractor: typed entities and described relations, one call per leaf block.

Entities are kept only where their name occurs verbatim in the leaf, so every node and edge
maps back to chunks and offsets like the offline ones. A failed call does not lose the run:
that leaf and the rest get offline graphs, the LLM graphs made so far are kept (cached by
content key in the index), and the next build resumes with the leaves still missing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from treerag_core.base.errors import LLMError
from treerag_core.base.text_rules import sentence_spans
from treerag_core.base.types import Chunk, Language, TreeNode, Usage
from treerag_core.llm import LLMClient
from treerag_core.strategies.graph.extract import (
    MAX_EVIDENCE,
    build_leaf_graph,
    chunks_covering,
    content_key,
    normalise,
    segments,
)
from treerag_core.strategies.graph.prompts import (
    PROMPT_VERSION,
    build_graph_prompt,
    parse_graph_response,
)
from treerag_core.strategies.graph.types import Concept, ConceptRelation, LeafGraph, Span

BLOCK_CHARS = 6000  # leaf text per call: a 13k-character leaf takes three calls
MAX_TOKENS = 4096


Piece = tuple[int, str]  # (document offset, text): a stretch of the leaf without gaps


def blocks(chunks: Sequence[Chunk], size: int = BLOCK_CHARS) -> list[list[Piece]]:
    """The leaf's text in blocks of at most ~`size` characters, one LLM call each.

    A block is a list of gap-free pieces (chunking drops tiny paragraphs such as bare article
    numbers, so a leaf's text has gaps); a piece longer than `size` is cut at sentences.
    """
    pieces: list[Piece] = []
    for seg_start, seg_text in segments(chunks):
        start = 0
        for s, _e in sentence_spans(seg_text):
            if s - start >= size:
                pieces.append((seg_start + start, seg_text[start:s]))
                start = s
        pieces.append((seg_start + start, seg_text[start:]))
    out: list[list[Piece]] = []
    used = size  # forces a first block
    for piece in pieces:
        if not piece[1].strip():
            continue
        if used + len(piece[1]) > size:
            out.append([])
            used = 0
        out[-1].append(piece)
        used += len(piece[1]) + 2
    return out


def _occurrences(name: str, text: str, language: Language) -> list[tuple[int, int]]:
    # English: whole words in any case ("Transformer" matches "transformer", not "Transformers").
    word = rf"(?<![\w-]){re.escape(name)}(?![\w-])"
    pattern = re.escape(name) if language == "zh" else word
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, flags=re.IGNORECASE)]


def extract_llm(
    chunks: Sequence[Chunk],
    language: Language,
    client: LLMClient,
    model: str,
    prefix: str = "",
    block_chars: int = BLOCK_CHARS,
    on_usage: Callable[[Usage], None] | None = None,
) -> tuple[tuple[Concept, ...], tuple[ConceptRelation, ...], Usage]:
    """Concepts and relations of a leaf from the LLM, plus the tokens and cost spent.

    `on_usage` hears each call's usage as it is spent, so a leaf that fails on a later
    block still has its earlier calls counted.

    Raises:
        LLMError: an API failure (nothing of this leaf is kept; the caller falls back).
    """
    usage = Usage()
    found: dict[str, dict] = {}  # key -> name, kind, description, mentions
    rels: dict[tuple[str, str, str], dict] = {}
    for block in blocks(chunks, block_chars):
        prompt = build_graph_prompt("\n\n".join(text for _, text in block), language)
        reply, used = client.complete("", prompt, model, MAX_TOKENS)
        usage = usage + used
        if on_usage is not None:
            on_usage(used)
        entities, relations = parse_graph_response(reply)
        # The block's sentences as (document start, end, text); mentions found piece by piece.
        sentences = [
            (o + s, o + e, text[s:e]) for o, text in block for s, e in sentence_spans(text)
        ]
        names: dict[str, str] = {}  # key -> name as the model wrote it in this block
        for ent in entities:
            spans = [
                (o + s, o + e)
                for o, text in block
                for s, e in _occurrences(ent.name, text, language)
            ]
            key = normalise(ent.name, language)
            if not spans or not key:
                continue  # not in the text: it could not be traced to a chunk
            names[key] = ent.name
            entry = found.setdefault(
                key, {"name": ent.name, "kind": ent.kind, "description": ent.description, "at": []}
            )
            entry["at"].extend((s, e, "") for s, e in spans)
        for rel in relations:
            a, b = normalise(rel.source, language), normalise(rel.target, language)
            if a not in names or b not in names or a == b:
                continue
            both = [
                (s, e, t)
                for s, e, t in sentences
                if _occurrences(names[a], t, language) and _occurrences(names[b], t, language)
            ] or [(s, e, t) for s, e, t in sentences if _occurrences(names[a], t, language)]
            entry = rels.setdefault(
                (a, b, rel.label),
                {"description": rel.description, "weight": rel.strength, "count": 0, "at": []},
            )
            entry["count"] += 1
            entry["weight"] = max(entry["weight"], rel.strength)
            entry["at"].extend((s, e) for s, e, _ in both)
    order = sorted(found, key=lambda k: (min(m[0] for m in found[k]["at"]), k))
    ids = {key: f"{prefix}#c{i + 1}" for i, key in enumerate(order)}
    concepts = tuple(
        Concept(
            node_id=ids[key],
            key=key,
            name=found[key]["name"],
            kind=found[key]["kind"] or "entity",
            description=found[key]["description"],
            mentions=tuple(
                Span(s, e, chunks_covering(s, e, chunks))
                for s, e, _ in sorted(set(found[key]["at"]))
            ),
        )
        for key in order
    )
    relations = tuple(
        ConceptRelation(
            source=ids[a],
            target=ids[b],
            weight=float(entry["weight"]),
            count=entry["count"],
            evidence=tuple(
                Span(s, e, chunks_covering(s, e, chunks))
                for s, e in sorted(set(entry["at"]))[:MAX_EVIDENCE]
            ),
            label=label,
            description=entry["description"],
            directed=True,
        )
        for (a, b, label), entry in sorted(
            rels.items(), key=lambda kv: (order.index(kv[0][0]), order.index(kv[0][1]), kv[0][2])
        )
    )
    return concepts, relations, usage


class LLMGraphExtractor:
    """A `build_graphs` extractor calling the LLM per leaf; offline after the first failure.

    `failure` holds the first LLMError and `fallback_leaves` the leaves that got offline
    graphs because of it; `usage` sums every call.
    """

    def __init__(self, client: LLMClient, model: str, block_chars: int = BLOCK_CHARS) -> None:
        self.client = client
        self.model = model
        self.block_chars = block_chars
        self.version = f"llm:{model}:{PROMPT_VERSION}"
        self.failure: LLMError | None = None
        self.fallback_leaves: list[str] = []
        self.usage = Usage()

    def _spent(self, used: Usage) -> None:
        self.usage = self.usage + used

    def __call__(self, leaf: TreeNode, chunks: Sequence[Chunk], language: Language) -> LeafGraph:
        if self.failure is None:
            began = time.perf_counter()
            try:
                concepts, relations, usage = extract_llm(
                    chunks,
                    language,
                    self.client,
                    self.model,
                    leaf.node_id,
                    self.block_chars,
                    on_usage=self._spent,
                )
            except LLMError as exc:
                self.failure = exc  # the calls made before it are already in self.usage
            else:
                return LeafGraph(
                    leaf_id=leaf.node_id,
                    doc_id=leaf.doc_id,
                    content_key=content_key(chunks, self.version),
                    extractor=f"llm:{self.model}",
                    language=language,
                    concepts=concepts,
                    relations=relations,
                    build_seconds=time.perf_counter() - began,
                    usage=usage,
                )
        self.fallback_leaves.append(leaf.node_id)
        return build_leaf_graph(leaf.node_id, leaf.doc_id, chunks, language)
